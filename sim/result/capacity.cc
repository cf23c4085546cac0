#include "sim/result/capacity.h"

#include <fstream>

#include "sim/common/error.h"
#include "sim/result/json_io.h"

namespace cpscale::result {

using namespace jsonio;

namespace {

constexpr CapacityLimit kLimits[] = {CapacityLimit::kServer, CapacityLimit::kGenerator, CapacityLimit::kMaxReached,
                                     CapacityLimit::kInterrupted, CapacityLimit::kFailed};

CapacityStep readStep(const Reader& r) {
  CapacityStep s;
  s.value = r.at("value").num();
  s.startSeconds = r.at("startSeconds").num();
  s.endSeconds = r.at("endSeconds").num();
  if (s.endSeconds < s.startSeconds) r.at("endSeconds").fail("is before startSeconds");
  s.held = r.at("held").boolean();
  s.generatorLimited = r.at("generatorLimited").boolean();
  s.brokeBy = r.strOr("brokeBy");
  Reader fs = r.at("figures");
  for (std::size_t i = 0; i < fs.array().size(); ++i) s.figures.push_back(readFigure(fs.at(i)));
  Reader gs = r.at("gates");
  for (std::size_t i = 0; i < gs.array().size(); ++i) s.gates.push_back(readGate(gs.at(i)));
  return s;
}

CapacitySearch readSearch(const Reader& r) {
  CapacitySearch s;
  s.profile = r.at("profile").str();
  s.scenario = r.at("scenario").str();
  s.axis = r.at("axis").str();
  if (s.axis != "node" && s.axis != "churn" && s.axis != "state")
    r.at("axis").fail("is '" + s.axis + "' (one of node, churn, state)");
  s.knob = r.at("knob").str();
  s.unit = r.strOr("unit");
  Reader steps = r.at("steps");
  for (std::size_t i = 0; i < steps.array().size(); ++i) s.steps.push_back(readStep(steps.at(i)));
  s.held = r.at("held").optionalNum();
  s.limit = readEnum(r.at("limit"), kLimits, "limit");
  s.brokeBy = r.strOr("brokeBy");
  s.detail = r.strOr("detail");
  s.resultFile = r.strOr("resultFile");
  return s;
}

}  // namespace

std::string_view toString(CapacityLimit l) {
  switch (l) {
    case CapacityLimit::kServer: return "server";
    case CapacityLimit::kGenerator: return "generator";
    case CapacityLimit::kMaxReached: return "max";
    case CapacityLimit::kInterrupted: return "interrupted";
    case CapacityLimit::kFailed: return "failed";
  }
  return "?";
}

std::optional<CapacityLimit> parseCapacityLimit(std::string_view s) {
  for (CapacityLimit l : kLimits)
    if (toString(l) == s) return l;
  return std::nullopt;
}

std::vector<metrics::Figure> pressureAtHeld(const CapacitySearch& s) {
  std::vector<metrics::Figure> out;
  if (!s.held) return out;
  for (const CapacityStep& step : s.steps) {
    if (!step.held || step.value != *s.held) continue;
    for (const metrics::Figure& f : step.figures)
      if (f.name == "axis_pressure") out.push_back(f);
    break;
  }
  return out;
}

CapacitySearch indexEntry(const CapacitySearch& s) {
  CapacitySearch out = s;
  for (CapacityStep& step : out.steps) {
    std::vector<metrics::Figure> kept;
    for (metrics::Figure& f : step.figures) {
      bool keep =
          f.name == "axis_pressure" || f.name == "lease_write_share" ||
          f.name == "apiserver_heap_inuse_bytes_all_replicas" || (f.name == "write_qps" && f.labels.empty()) ||
          (f.name == "client_latency_p99" && metrics::findFigure({&f, 1}, f.name, {{"measured_from", "scheduled"}}));
      for (const auto& g : step.gates) keep = keep || metrics::findFigure({&f, 1}, g.gate.figure, g.gate.selector);
      if (!keep) continue;
      f.overTime = {};
      kept.push_back(std::move(f));
    }
    step.figures = std::move(kept);
  }
  return out;
}

nlohmann::json toJson(const CapacityStep& s) {
  json figures = json::array();
  for (const auto& f : s.figures) figures.push_back(figureJson(f));
  json gates = json::array();
  for (const auto& g : s.gates) gates.push_back(gateJson(g));
  return {{"value", number(s.value)},
          {"startSeconds", number(s.startSeconds)},
          {"endSeconds", number(s.endSeconds)},
          {"held", s.held},
          {"generatorLimited", s.generatorLimited},
          {"brokeBy", s.brokeBy},
          {"figures", std::move(figures)},
          {"gates", std::move(gates)}};
}

nlohmann::json toJson(const CapacitySearch& s) {
  json steps = json::array();
  for (const auto& st : s.steps) steps.push_back(toJson(st));
  return {{"profile", s.profile},
          {"scenario", s.scenario},
          {"axis", s.axis},
          {"knob", s.knob},
          {"unit", s.unit},
          {"steps", std::move(steps)},
          {"held", s.held ? number(*s.held) : json(nullptr)},
          {"limit", std::string(toString(s.limit))},
          {"brokeBy", s.brokeBy},
          {"detail", s.detail},
          {"resultFile", s.resultFile}};
}

nlohmann::json toJson(const CapacityIndex& idx) {
  json searches = json::array();
  for (const auto& s : idx.searches) searches.push_back(toJson(s));
  json j = {{"apiVersion", "cpscale.io/v1alpha1"},
            {"kind", std::string(kCapacityIndexKind)},
            {"schemaVersion", idx.schemaVersion},
            {"environment",
             {{"cpscaleVersion", idx.cpscaleVersion},
              {"host", idx.host},
              {"cpus", idx.cpus},
              {"machine", idx.machine},
              {"kubernetesVersion", idx.kubernetesVersion},
              {"etcdVersion", idx.etcdVersion},
              {"measuredAt", idx.measuredAt}}},
            {"searches", std::move(searches)}};
  if (!idx.projection.is_null()) j["projection"] = idx.projection;
  return j;
}

CapacitySearch capacitySearchFromJson(const nlohmann::json& j, const std::string& where, const std::string& path) {
  return readSearch(Reader(j, where, path));
}

CapacityIndex capacityIndexFromJson(const nlohmann::json& j, const std::string& where) {
  Reader root(j, where);
  root.object();
  if (std::string k = root.at("kind").str(); k != kCapacityIndexKind)
    root.at("kind").fail("is '" + k + "', not a " + std::string(kCapacityIndexKind) +
                         " (write one with `cpscale capacity`)");
  CapacityIndex idx;
  idx.schemaVersion = static_cast<int>(root.at("schemaVersion").integer());
  if (idx.schemaVersion != kCapacitySchemaVersion)
    root.at("schemaVersion")
        .fail("is " + std::to_string(idx.schemaVersion) + "; this cpscale reads version " +
              std::to_string(kCapacitySchemaVersion));
  if (root.has("environment")) {
    Reader e = root.at("environment");
    idx.cpscaleVersion = e.strOr("cpscaleVersion");
    idx.host = e.strOr("host");
    idx.cpus = e.has("cpus") ? static_cast<int>(e.at("cpus").integer()) : 0;
    idx.machine = e.strOr("machine");
    idx.kubernetesVersion = e.strOr("kubernetesVersion");
    idx.etcdVersion = e.strOr("etcdVersion");
    idx.measuredAt = e.strOr("measuredAt");
  }
  if (root.has("projection")) {
    root.at("projection").object();
    idx.projection = j.at("projection");
  }
  Reader ss = root.at("searches");
  for (std::size_t i = 0; i < ss.array().size(); ++i) idx.searches.push_back(readSearch(ss.at(i)));
  return idx;
}

void writeCapacityIndex(const CapacityIndex& idx, const std::filesystem::path& path) {
  writeFile(path, toJson(idx).dump(2) + "\n");
}

CapacityIndex readCapacityIndex(const std::filesystem::path& path) {
  return capacityIndexFromJson(readJsonFile(path), path.string());
}

}  // namespace cpscale::result
