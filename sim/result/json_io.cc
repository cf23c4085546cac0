#include "sim/result/json_io.h"

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace cpscale::result::jsonio {

using metrics::Figure;
using metrics::Gate;
using metrics::GateOp;
using metrics::GateResult;
using metrics::Label;
using metrics::Labels;
using metrics::Source;
using metrics::TimeSeries;

namespace {

constexpr Source kSources[] = {Source::kClient,    Source::kApiserver, Source::kEtcd, Source::kControllerManager,
                               Source::kScheduler, Source::kModel};
constexpr metrics::Window kWindows[] = {metrics::Window::kSteady, metrics::Window::kSetup, metrics::Window::kRun};
constexpr GateOp kOps[] = {GateOp::kLt, GateOp::kLe, GateOp::kGt, GateOp::kGe, GateOp::kEq, GateOp::kNe};
constexpr metrics::GateFold kFolds[] = {metrics::GateFold::kMax, metrics::GateFold::kMin, metrics::GateFold::kSum};

}  // namespace

// ---- writing ----

// JSON has no NaN or infinities; Prometheus' spelling of them keeps them exact.
json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return v;
}

json labelsJson(const Labels& labels) {
  json j = json::object();
  for (const Label& l : labels) j[l.name] = l.value;
  return j;
}

double secondsSinceStart(engine::TimePoint t) { return static_cast<double>(t.time_since_epoch().count()) / 1e9; }

json figureJson(const Figure& f) {
  json j = {{"name", f.name},
            {"labels", labelsJson(f.labels)},
            {"unit", f.unit},
            {"source", std::string(metrics::toString(f.source))},
            {"window", std::string(metrics::toString(f.window))}};
  if (f.value) {
    j["value"] = number(*f.value);
  } else {
    j["value"] = nullptr;
    j["unavailable"] = f.unavailableReason;
  }
  if (!f.overTime.empty()) {
    json t = json::array(), v = json::array();
    for (std::size_t i = 0; i < f.overTime.size(); ++i) {
      t.push_back(secondsSinceStart(f.overTime.times[i]));
      v.push_back(number(f.overTime.values[i]));
    }
    // Two parallel arrays rather than [t, v] pairs: a third of the size for long runs.
    j["overTime"] = {{"seconds", std::move(t)}, {"values", std::move(v)}};
  }
  return j;
}

json gateJson(const GateResult& g) {
  json gate = {{"text", g.gate.text},
               {"figure", g.gate.figure},
               {"selector", labelsJson(g.gate.selector)},
               {"op", std::string(metrics::toString(g.gate.op))},
               {"threshold", number(g.gate.threshold)},
               {"thresholdText", g.gate.thresholdText}};
  // Written only for max(...)/min(...)/sum(...): results without one read as before.
  if (g.gate.fold != metrics::GateFold::kNone) gate["fold"] = std::string(toString(g.gate.fold));
  return {{"gate", gate},
          {"measured", g.measured ? number(*g.measured) : json(nullptr)},
          {"passed", g.passed},
          {"reason", g.reason}};
}

// ---- reading: every accessor knows its JSON path, so an error names the field ----

Labels readLabels(const Reader& r) {
  Labels out;
  for (auto& [k, v] : r.object().items()) {
    if (!v.is_string()) r.at(k).fail("expected a string label value");
    out.push_back(Label{k, v.get<std::string>()});
  }
  // json objects iterate in key order, which is the order Labels promise.
  return out;
}

engine::TimePoint fromSeconds(double s) {
  // Exact for any run shorter than a few weeks: nanoseconds below 2^53 survive the
  // trip through a double.
  return engine::TimePoint{engine::Duration{std::llround(s * 1e9)}};
}

Figure readFigure(const Reader& r) {
  Figure f;
  f.name = r.at("name").str();
  f.labels = readLabels(r.at("labels"));
  f.unit = r.at("unit").str();
  f.source = readEnum(r.at("source"), kSources, "source");
  f.window = readEnum(r.at("window"), kWindows, "window");
  f.value = r.at("value").optionalNum();
  if (!f.value) {
    if (!r.has("unavailable")) r.at("value").fail("is null but no \"unavailable\" reason is given");
    f.unavailableReason = r.at("unavailable").str();
  } else if (r.has("unavailable")) {
    r.at("unavailable").fail("is set on a figure that has a value");
  }
  if (r.has("overTime")) {
    Reader ot = r.at("overTime");
    Reader ts = ot.at("seconds"), vs = ot.at("values");
    if (ts.array().size() != vs.array().size())
      vs.fail("has " + std::to_string(vs.raw().size()) + " values for " + std::to_string(ts.raw().size()) + " times");
    for (std::size_t i = 0; i < ts.raw().size(); ++i) {
      engine::TimePoint t = fromSeconds(ts.at(i).num());
      if (!f.overTime.empty() && t <= f.overTime.times.back()) ts.at(i).fail("times must strictly increase");
      f.overTime.push(t, vs.at(i).num());
    }
  }
  return f;
}

GateResult readGate(const Reader& r) {
  GateResult g;
  Reader gate = r.at("gate");
  g.gate.text = gate.at("text").str();
  g.gate.figure = gate.at("figure").str();
  g.gate.selector = readLabels(gate.at("selector"));
  g.gate.op = readEnum(gate.at("op"), kOps, "operator");
  g.gate.threshold = gate.at("threshold").num();
  g.gate.thresholdText = gate.at("thresholdText").str();
  if (gate.has("fold")) g.gate.fold = readEnum(gate.at("fold"), kFolds, "fold");
  g.measured = r.at("measured").optionalNum();
  g.passed = r.at("passed").boolean();
  g.reason = r.strOr("reason");
  return g;
}

bool sameNumber(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
bool sameNumber(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || sameNumber(*a, *b));
}

bool sameFigure(const Figure& a, const Figure& b) {
  if (a.name != b.name || a.labels != b.labels || a.unit != b.unit || a.source != b.source || a.window != b.window ||
      !sameNumber(a.value, b.value) || a.unavailableReason != b.unavailableReason ||
      a.overTime.times != b.overTime.times || a.overTime.values.size() != b.overTime.values.size())
    return false;
  for (std::size_t i = 0; i < a.overTime.values.size(); ++i)
    if (!sameNumber(a.overTime.values[i], b.overTime.values[i])) return false;
  return true;
}

bool sameGate(const GateResult& a, const GateResult& b) {
  return a.gate.text == b.gate.text && a.gate.figure == b.gate.figure && a.gate.selector == b.gate.selector &&
         a.gate.op == b.gate.op && sameNumber(a.gate.threshold, b.gate.threshold) &&
         a.gate.thresholdText == b.gate.thresholdText && a.gate.fold == b.gate.fold &&
         sameNumber(a.measured, b.measured) && a.passed == b.passed && a.reason == b.reason;
}

void writeFile(const std::filesystem::path& path, std::string_view content) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create directory " + path.parent_path().string() + ": " + ec.message());
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
  }
}

json readJsonFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string(), "", "cannot be read (does it exist?)");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(path.string(), "", std::string("is not valid JSON: ") + e.what());
  }
}

}  // namespace cpscale::result::jsonio
