#include "reports/result.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "reports/html.h"
#include "reports/junit.h"
#include "reports/summary.h"
#include "sim/common/error.h"

namespace cpscale::reports {

using nlohmann::json;
using metrics::Figure;
using metrics::Label;
using metrics::Labels;
using metrics::Source;
using metrics::TimeSeries;
using scenario::Gate;
using scenario::GateOp;
using scenario::GateResult;

std::string_view toString(RunStatus s) {
  switch (s) {
    case RunStatus::kCompleted: return "completed";
    case RunStatus::kInterrupted: return "interrupted";
    case RunStatus::kFailed: return "failed";
  }
  return "?";
}

namespace {

constexpr Source kSources[] = {Source::kClient, Source::kApiserver, Source::kEtcd, Source::kControllerManager,
                               Source::kScheduler, Source::kModel};
constexpr metrics::Window kWindows[] = {metrics::Window::kSteady, metrics::Window::kSetup, metrics::Window::kRun};
constexpr GateOp kOps[] = {GateOp::kLt, GateOp::kLe, GateOp::kGt, GateOp::kGe, GateOp::kEq, GateOp::kNe};
constexpr RunStatus kStatuses[] = {RunStatus::kCompleted, RunStatus::kInterrupted, RunStatus::kFailed};

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

double secondsSinceStart(engine::TimePoint t) {
  return static_cast<double>(t.time_since_epoch().count()) / 1e9;
}

json figureJson(const Figure& f) {
  json j = {{"name", f.name}, {"labels", labelsJson(f.labels)}, {"unit", f.unit},
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
  return {{"gate",
           {{"text", g.gate.text},
            {"figure", g.gate.figure},
            {"selector", labelsJson(g.gate.selector)},
            {"op", std::string(scenario::toString(g.gate.op))},
            {"threshold", number(g.gate.threshold)},
            {"thresholdText", g.gate.thresholdText}}},
          {"measured", g.measured ? number(*g.measured) : json(nullptr)},
          {"passed", g.passed},
          {"reason", g.reason}};
}

// ---- reading: every accessor knows its JSON path, so an error names the field ----

class Reader {
 public:
  Reader(const json& j, std::string where, std::string path = "")
      : j_(j), where_(std::move(where)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(where_, path_.empty() ? "/" : path_, what);
  }
  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }

  Reader at(std::string_view key) const {
    if (!j_.is_object()) fail("expected an object");
    auto it = j_.find(key);
    std::string p = path_ + "/" + std::string(key);
    if (it == j_.end()) throw ConfigError(where_, p, "is missing");
    return Reader(*it, where_, p);
  }
  bool has(std::string_view key) const { return j_.is_object() && j_.contains(key); }
  Reader at(std::size_t i) const { return Reader(j_.at(i), where_, path_ + "/" + std::to_string(i)); }

  const json& array() const {
    if (!j_.is_array()) fail("expected an array");
    return j_;
  }
  const json& object() const {
    if (!j_.is_object()) fail("expected an object");
    return j_;
  }
  std::string str() const {
    if (!j_.is_string()) fail("expected a string");
    return j_.get<std::string>();
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("expected true or false");
    return j_.get<bool>();
  }
  double num() const {
    if (j_.is_number()) return j_.get<double>();
    if (j_.is_string()) {
      const auto& s = j_.get_ref<const std::string&>();
      if (s == "NaN") return std::nan("");
      if (s == "+Inf") return INFINITY;
      if (s == "-Inf") return -INFINITY;
    }
    fail("expected a number (or \"NaN\", \"+Inf\", \"-Inf\")");
  }
  std::optional<double> optionalNum() const {
    if (j_.is_null()) return std::nullopt;
    return num();
  }
  std::int64_t integer() const {
    if (!j_.is_number_integer()) fail("expected an integer");
    return j_.get<std::int64_t>();
  }
  std::uint64_t unsignedInteger() const {
    if (!j_.is_number_unsigned() && !(j_.is_number_integer() && j_.get<std::int64_t>() >= 0))
      fail("expected a non-negative integer");
    return j_.get<std::uint64_t>();
  }
  // Optional members default: an older writer of the same schema may leave them out.
  std::string strOr(std::string_view key, std::string dflt = "") const { return has(key) ? at(key).str() : dflt; }
  json jsonOr(std::string_view key) const { return has(key) ? j_.at(std::string(key)) : json(); }

 private:
  const json& j_;
  std::string where_;
  std::string path_;
};

Labels readLabels(const Reader& r) {
  Labels out;
  for (auto& [k, v] : r.object().items()) {
    if (!v.is_string()) r.at(k).fail("expected a string label value");
    out.push_back(Label{k, v.get<std::string>()});
  }
  // json objects iterate in key order, which is the order Labels promise.
  return out;
}

template <typename Enum, std::size_t N>
Enum readEnum(const Reader& r, const Enum (&all)[N], std::string_view what) {
  std::string s = r.str();
  std::string known;
  for (Enum e : all) {
    if (toString(e) == s) return e;
    known += (known.empty() ? "" : ", ") + std::string(toString(e));
  }
  r.fail("unknown " + std::string(what) + " '" + s + "' (one of " + known + ")");
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
         a.gate.thresholdText == b.gate.thresholdText && sameNumber(a.measured, b.measured) &&
         a.passed == b.passed && a.reason == b.reason;
}

template <typename T, typename Eq>
bool sameAll(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), eq);
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

}  // namespace

bool operator==(const RunResult& a, const RunResult& b) {
  return a.schemaVersion == b.schemaVersion && a.runId == b.runId && a.scenario == b.scenario &&
         a.profile == b.profile && a.target == b.target && a.environment == b.environment && a.status == b.status &&
         a.statusDetail == b.statusDetail && sameNumber(a.measuredSeconds, b.measuredSeconds) &&
         a.phases == b.phases && a.incidents == b.incidents && sameAll(a.figures, b.figures, sameFigure) &&
         a.workloads == b.workloads &&
         sameAll(a.gates, b.gates, sameGate) && a.exitCode == b.exitCode;
}

json toJson(const RunResult& r) {
  json members = json::array();
  for (const TargetMember& m : r.target.members) {
    json mj = {{"name", m.name}, {"role", m.role}, {"url", m.url}, {"version", m.version}};
    if (!m.serves.empty()) mj["serves"] = m.serves;
    members.push_back(std::move(mj));
  }
  json figures = json::array();
  for (const Figure& f : r.figures) figures.push_back(figureJson(f));
  json workloads = json::array();
  for (const WorkloadSummary& w : r.workloads)
    workloads.push_back({{"kind", w.kind}, {"name", w.name}, {"summary", w.summary}});
  json gates = json::array();
  for (const GateResult& g : r.gates) gates.push_back(gateJson(g));
  json phases = json::array();
  for (const Phase& p : r.phases)
    phases.push_back({{"name", p.name}, {"startSeconds", number(p.startSeconds)}, {"endSeconds", number(p.endSeconds)},
                      {"complete", p.complete}, {"detail", p.detail}});
  json incidents = json::array();
  for (const Incident& i : r.incidents)
    incidents.push_back({{"kind", i.kind}, {"member", i.member}, {"atSeconds", number(i.atSeconds)}, {"detail", i.detail}});
  return {
      {"apiVersion", std::string(kResultApiVersion)},
      {"kind", std::string(kResultKind)},
      {"schemaVersion", r.schemaVersion},
      {"runId", r.runId},
      {"scenario",
       {{"name", r.scenario.name},
        {"description", r.scenario.description},
        {"sourceFile", r.scenario.sourceFile},
        {"effectiveConfig", r.scenario.effectiveConfig}}},
      {"profile",
       {{"name", r.profile.name},
        {"description", r.profile.description},
        {"source", r.profile.source},
        {"applied", r.profile.applied},
        {"spec", r.profile.spec}}},
      {"target",
       {{"kind", r.target.kind},
        {"server", r.target.server},
        {"context", r.target.context},
        {"members", std::move(members)},
        {"kubernetesVersion", r.target.kubernetesVersion},
        {"etcdVersion", r.target.etcdVersion}}},
      {"environment",
       {{"cpscaleVersion", r.environment.cpscaleVersion},
        {"host", r.environment.host},
        {"cpus", r.environment.cpus},
        {"memoryBytes", r.environment.memoryBytes},
        {"startedAt", r.environment.startedAt},
        {"endedAt", r.environment.endedAt}}},
      {"status", std::string(toString(r.status))},
      {"statusDetail", r.statusDetail},
      {"measuredSeconds", number(r.measuredSeconds)},
      {"phases", std::move(phases)},
      {"incidents", std::move(incidents)},
      {"figures", std::move(figures)},
      {"workloads", std::move(workloads)},
      {"gates", std::move(gates)},
      {"exitCode", r.exitCode},
  };
}

RunResult fromJson(const json& j, const std::string& where) {
  Reader root(j, where);
  root.object();
  // Identify the document before reading anything else: a wrong file should say so,
  // not complain about its third field.
  if (std::string v = root.at("apiVersion").str(); v != kResultApiVersion)
    root.at("apiVersion").fail("is '" + v + "'; this cpscale reads " + std::string(kResultApiVersion));
  if (std::string k = root.at("kind").str(); k != kResultKind)
    root.at("kind").fail("is '" + k + "', not a " + std::string(kResultKind));
  RunResult r;
  r.schemaVersion = static_cast<int>(root.at("schemaVersion").integer());
  if (r.schemaVersion != kResultSchemaVersion)
    root.at("schemaVersion").fail("is " + std::to_string(r.schemaVersion) + "; this cpscale reads version " +
                                  std::to_string(kResultSchemaVersion));
  r.runId = root.at("runId").str();

  Reader s = root.at("scenario");
  r.scenario = {s.at("name").str(), s.strOr("description"), s.strOr("sourceFile"), s.jsonOr("effectiveConfig")};

  Reader p = root.at("profile");
  r.profile.name = p.at("name").str();
  r.profile.description = p.strOr("description");
  r.profile.source = p.strOr("source");
  r.profile.applied = p.at("applied").boolean();
  r.profile.spec = p.jsonOr("spec");

  Reader t = root.at("target");
  r.target.kind = t.at("kind").str();
  if (r.target.kind != "local" && r.target.kind != "cluster")
    t.at("kind").fail("is '" + r.target.kind + "' (one of local, cluster)");
  r.target.server = t.strOr("server");
  r.target.context = t.strOr("context");
  if (t.has("members")) {
    Reader ms = t.at("members");
    for (std::size_t i = 0; i < ms.array().size(); ++i) {
      Reader m = ms.at(i);
      r.target.members.push_back(
          {m.at("name").str(), m.at("role").str(), m.strOr("url"), m.strOr("version"), m.strOr("serves")});
    }
  }
  r.target.kubernetesVersion = t.strOr("kubernetesVersion");
  r.target.etcdVersion = t.strOr("etcdVersion");

  Reader e = root.at("environment");
  r.environment.cpscaleVersion = e.strOr("cpscaleVersion");
  r.environment.host = e.strOr("host");
  r.environment.cpus = e.has("cpus") ? static_cast<int>(e.at("cpus").integer()) : 0;
  r.environment.memoryBytes = e.has("memoryBytes") ? e.at("memoryBytes").unsignedInteger() : 0;
  r.environment.startedAt = e.strOr("startedAt");
  r.environment.endedAt = e.strOr("endedAt");

  r.status = readEnum(root.at("status"), kStatuses, "status");
  r.statusDetail = root.strOr("statusDetail");
  r.measuredSeconds = root.at("measuredSeconds").num();
  Reader ps = root.at("phases");
  for (std::size_t i = 0; i < ps.array().size(); ++i) {
    Reader p = ps.at(i);
    Phase ph{p.at("name").str(), p.at("startSeconds").num(), p.at("endSeconds").num(), p.at("complete").boolean(),
             p.strOr("detail")};
    if (ph.endSeconds < ph.startSeconds) p.at("endSeconds").fail("is before startSeconds");
    r.phases.push_back(std::move(ph));
  }
  Reader is = root.at("incidents");
  for (std::size_t i = 0; i < is.array().size(); ++i) {
    Reader in = is.at(i);
    r.incidents.push_back({in.at("kind").str(), in.strOr("member"), in.at("atSeconds").num(), in.strOr("detail")});
  }

  Reader fs = root.at("figures");
  for (std::size_t i = 0; i < fs.array().size(); ++i) r.figures.push_back(readFigure(fs.at(i)));
  if (root.has("workloads")) {
    Reader ws = root.at("workloads");
    for (std::size_t i = 0; i < ws.array().size(); ++i) {
      Reader w = ws.at(i);
      r.workloads.push_back({w.at("kind").str(), w.at("name").str(), w.jsonOr("summary")});
    }
  }
  Reader gs = root.at("gates");
  for (std::size_t i = 0; i < gs.array().size(); ++i) r.gates.push_back(readGate(gs.at(i)));
  r.exitCode = static_cast<int>(root.at("exitCode").integer());
  return r;
}

const Phase* findPhase(const RunResult& r, std::string_view name) {
  for (const Phase& p : r.phases)
    if (p.name == name) return &p;
  return nullptr;
}

void writeResult(const RunResult& r, const std::filesystem::path& path) {
  writeFile(path, toJson(r).dump(2) + "\n");
}

RunResult readResult(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string(), "", "cannot be read (does it exist?)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(path.string(), "", std::string("is not valid JSON: ") + e.what());
  }
  return fromJson(j, path.string());
}

void writeRunOutputs(const RunResult& r, const std::filesystem::path& dir) {
  writeResult(r, dir / kResultFile);
  writeFile(dir / kSummaryFile, renderSummary(r));
  writeFile(dir / kHtmlFile, renderHtml(r));
  writeFile(dir / kJunitFile, renderJunit(r));
}

}  // namespace cpscale::reports
