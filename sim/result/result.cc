#include "sim/result/result.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "sim/common/error.h"
#include "sim/result/json_io.h"

namespace cpscale::result {

using metrics::Figure;
using metrics::Gate;
using metrics::GateOp;
using metrics::GateResult;
using metrics::Label;
using metrics::Labels;
using metrics::Source;
using metrics::TimeSeries;
using nlohmann::json;

std::string_view toString(RunStatus s) {
  switch (s) {
    case RunStatus::kCompleted: return "completed";
    case RunStatus::kInterrupted: return "interrupted";
    case RunStatus::kFailed: return "failed";
  }
  return "?";
}

namespace {

using namespace jsonio;
constexpr RunStatus kStatuses[] = {RunStatus::kCompleted, RunStatus::kInterrupted, RunStatus::kFailed};

}  // namespace

bool operator==(const RunResult& a, const RunResult& b) {
  return a.schemaVersion == b.schemaVersion && a.runId == b.runId && a.scenario == b.scenario &&
         a.profile == b.profile && a.target == b.target && a.environment == b.environment && a.status == b.status &&
         a.statusDetail == b.statusDetail && sameNumber(a.measuredSeconds, b.measuredSeconds) && a.phases == b.phases &&
         a.incidents == b.incidents && sameAll(a.figures, b.figures, sameFigure) && a.workloads == b.workloads &&
         sameAll(a.gates, b.gates, sameGate) && a.exitCode == b.exitCode &&
         a.capacity.has_value() == b.capacity.has_value() &&
         (!a.capacity || toJson(*a.capacity) == toJson(*b.capacity)) && a.model == b.model && a.shard == b.shard &&
         a.clientStats == b.clientStats && a.mergedShards == b.mergedShards;
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
    phases.push_back({{"name", p.name},
                      {"startSeconds", number(p.startSeconds)},
                      {"endSeconds", number(p.endSeconds)},
                      {"complete", p.complete},
                      {"detail", p.detail}});
  json incidents = json::array();
  for (const Incident& i : r.incidents) {
    json in = {{"kind", i.kind}, {"member", i.member}, {"atSeconds", number(i.atSeconds)}, {"detail", i.detail}};
    if (i.untilSeconds) in["untilSeconds"] = number(*i.untilSeconds);
    incidents.push_back(std::move(in));
  }
  json j = {
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
        {"endedAt", r.environment.endedAt},
        {"placement", r.environment.placement}}},
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
  if (r.capacity) j["capacity"] = toJson(*r.capacity);
  if (!r.model.is_null()) j["model"] = r.model;
  if (r.shard) j["shard"] = {{"index", r.shard->index}, {"count", r.shard->count}};
  if (!r.clientStats.is_null()) j["clientStats"] = r.clientStats;
  if (r.mergedShards > 0) j["mergedShards"] = r.mergedShards;
  return j;
}

std::string shardLine(const RunResult& r) {
  if (r.mergedShards > 0)
    return "merged from " + std::to_string(r.mergedShards) +
           " shards (client figures: every shard's requests together; server figures: shard 0's; generator health "
           "per shard)";
  if (!r.shard) return "";
  return "shard " + std::to_string(r.shard->index) + " of " + std::to_string(r.shard->count) +
         (r.shard->index == 0 ? " (set the run up, scraped the servers, cleaned up)"
                              : " (its share of the load; the servers' figures and their gates are shard 0's)");
}

std::string targetKindText(const std::string& kind) {
  if (kind == "local") return "local plane";
  if (kind == "model") return "model, virtual time";
  return "cluster";
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
    root.at("schemaVersion")
        .fail("is " + std::to_string(r.schemaVersion) + "; this cpscale reads version " +
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
  if (r.target.kind != "local" && r.target.kind != "cluster" && r.target.kind != "model")
    t.at("kind").fail("is '" + r.target.kind + "' (one of local, cluster, model)");
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
  if (e.has("placement")) {
    Reader pl = e.at("placement");
    for (const auto& [role, v] : pl.object().items()) {
      (void)v;
      r.environment.placement[role] = pl.at(role).str();
    }
  }

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
    Incident inc{in.at("kind").str(), in.strOr("member"), in.at("atSeconds").num(), in.strOr("detail"), std::nullopt};
    if (in.has("untilSeconds")) {
      inc.untilSeconds = in.at("untilSeconds").num();
      if (*inc.untilSeconds < inc.atSeconds) in.at("untilSeconds").fail("is before atSeconds");
    }
    r.incidents.push_back(std::move(inc));
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
  if (root.has("capacity")) r.capacity = capacitySearchFromJson(root.at("capacity").raw(), where, "/capacity");
  if (root.has("model")) r.model = root.at("model").raw();
  if (root.has("shard")) {
    Reader sh = root.at("shard");
    ShardInfo info{static_cast<std::size_t>(sh.at("index").unsignedInteger()),
                   static_cast<std::size_t>(sh.at("count").unsignedInteger())};
    if (info.count == 0 || info.index >= info.count) sh.at("index").fail("must be below shard.count (at least 1)");
    r.shard = info;
  }
  if (root.has("clientStats")) r.clientStats = root.at("clientStats").raw();
  if (root.has("mergedShards")) r.mergedShards = static_cast<std::size_t>(root.at("mergedShards").unsignedInteger());
  return r;
}

const Phase* findPhase(const RunResult& r, std::string_view name) {
  for (const Phase& p : r.phases)
    if (p.name == name) return &p;
  return nullptr;
}

void writeResult(const RunResult& r, const std::filesystem::path& path) { writeFile(path, toJson(r).dump(2) + "\n"); }

RunResult readResult(const std::filesystem::path& path) { return fromJson(readJsonFile(path), path.string()); }

}  // namespace cpscale::result
