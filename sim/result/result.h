// The result document of one run: everything a report is rendered from, in one
// versioned JSON file (result.json). `cpscale report` and `cpscale compare` read only
// this file, so whatever a report shows must be in here, measured, not recomputed from
// configuration.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics/figures.h"
#include "sim/metrics/gate.h"
#include "sim/result/capacity.h"

namespace cpscale::result {

inline constexpr int kResultSchemaVersion = 2;
inline constexpr std::string_view kResultApiVersion = "cpscale.io/v1alpha1";
inline constexpr std::string_view kResultKind = "RunResult";

struct ScenarioInfo {
  std::string name;
  std::string description;
  std::string sourceFile;
  nlohmann::json effectiveConfig;  // after --set overrides and defaults
  bool operator==(const ScenarioInfo&) const = default;
};

struct ProfileInfo {
  std::string name;
  std::string description;
  std::string source;
  // true: the local plane was started from this profile; false: the run went to a
  // user's cluster and the profile is only recorded beside it.
  bool applied = false;
  nlohmann::json spec;
  bool operator==(const ProfileInfo&) const = default;
};

struct TargetMember {
  std::string name;
  // "kube-apiserver" | "etcd" | "kube-controller-manager" | "kube-scheduler" (recorded
  // and scraped), or "kube-apiserver-endpoint" (a user's cluster's endpoints, recorded)
  std::string role;
  std::string url;
  std::string version;
  // An apiserver of the local plane: whose requests it serves ("workloads",
  // "kube-controller-manager", "kube-scheduler", comma-separated). A controller
  // component: the apiserver it talks to. Empty when not known (a user's cluster).
  std::string serves;
  bool operator==(const TargetMember&) const = default;
};

struct TargetInfo {
  std::string kind = "local";  // "local" | "cluster"
  std::string server;
  std::string context;
  std::vector<TargetMember> members;
  std::string kubernetesVersion;
  std::string etcdVersion;
  bool operator==(const TargetInfo&) const = default;
};

struct EnvironmentInfo {
  std::string cpscaleVersion;
  std::string host;
  int cpus = 0;
  std::uint64_t memoryBytes = 0;
  std::string startedAt;  // RFC 3339
  std::string endedAt;    // RFC 3339
  // The CPUs each role was pinned to (role -> `taskset -c` list: "kube-apiserver" ->
  // "1"); empty when nothing was pinned.
  std::map<std::string, std::string> placement;
  bool operator==(const EnvironmentInfo&) const = default;
};

// A sharded run's part (`cpscale run --shard I/N`): shard `index` of `count`. Shard 0
// set the run up, scraped the servers and cleaned up; every shard drove its share of
// each population, and its client figures are its share's.
struct ShardInfo {
  std::size_t index = 0;
  std::size_t count = 1;
  bool operator==(const ShardInfo&) const = default;
};

enum class RunStatus { kCompleted, kInterrupted, kFailed };
std::string_view toString(RunStatus s);  // "completed" | "interrupted" | "failed"

struct WorkloadSummary {
  std::string kind;
  std::string name;
  nlohmann::json summary;  // the workload's own account of what it did
  bool operator==(const WorkloadSummary&) const = default;
};

// A part of the run's timeline, in seconds since the run started (the time base of
// every figure's overTime). The run's own phases are "setup" (registration, population
// creation, CRDs served, watchers synced: recorded, not the headline) and "steady" (the
// measured window, `duration` long); a workload may add ramps of its own inside setup
// ("ramp/<workload>/<kind>", e.g. one per object kind of a dormant population).
struct Phase {
  std::string name;
  double startSeconds = 0;
  double endSeconds = 0;
  // false: the phase was cut short (setup timed out, the run was interrupted, a member
  // died); `detail` says why.
  bool complete = true;
  std::string detail;
  bool operator==(const Phase&) const = default;
};

// Something that happened to the target during the run: a member that exited, a fault.
// Drawn on every chart and listed in the report.
struct Incident {
  std::string kind;    // "member-exited", "fault", ...
  std::string member;  // e.g. kube-apiserver-1
  double atSeconds = 0;
  std::string detail;
  // A window rather than an instant: a fault, from when it struck to when the member
  // was ready again (or the run ended).
  std::optional<double> untilSeconds;
  bool operator==(const Incident&) const = default;
};

struct RunResult {
  int schemaVersion = kResultSchemaVersion;
  std::string runId;
  ScenarioInfo scenario;
  ProfileInfo profile;
  TargetInfo target;
  EnvironmentInfo environment;
  RunStatus status = RunStatus::kCompleted;
  std::string statusDetail;
  // Length of the steady window that was measured (less than `duration` when cut short).
  double measuredSeconds = 0;
  std::vector<Phase> phases;
  std::vector<Incident> incidents;
  // Time series inside are stored as seconds since the run started.
  std::vector<metrics::Figure> figures;
  std::vector<WorkloadSummary> workloads;
  std::vector<metrics::GateResult> gates;
  int exitCode = 0;
  // `cpscale capacity`: the search this run was, step by step (its steps' windows are
  // phases "step/<value>"); unset for a plain run.
  std::optional<CapacitySearch> capacity;
  // `cpscale simulate`: the model the run ran against in virtual time (target.kind
  // "model"): the calibration it used (file, machine, versions, its measured error
  // against live runs) and the sampling (each simulated actor stood for `weight`).
  // Null for a live run.
  nlohmann::json model;
  // Unset for an unsharded run.
  std::optional<ShardInfo> shard;
  // A shard's client request statistics over its steady window, every histogram's
  // cells (sim/result/client_stats.h): what `cpscale merge` adds up. Null otherwise.
  nlohmann::json clientStats;
  // `cpscale merge`: how many shards' results this one is made of; 0 otherwise.
  std::size_t mergedShards = 0;
};

// A sharded run's part, as reports say it; "" for an unsharded run.
std::string shardLine(const RunResult& r);

// What a target kind is called in reports: "local plane", "cluster", "model".
std::string targetKindText(const std::string& kind);

// The phase with this name, or null.
const Phase* findPhase(const RunResult& r, std::string_view name);

// Field by field, figures and gates included (they have no operator== of their own).
bool operator==(const RunResult& a, const RunResult& b);

// The JSON document and back. Numbers that JSON cannot hold (NaN, +Inf, -Inf) are
// written as those strings. `where` names the document in errors.
nlohmann::json toJson(const RunResult& r);
// Throws ConfigError(where, json path such as "/figures/3/value", what is wrong).
RunResult fromJson(const nlohmann::json& j, const std::string& where);

// Writes atomically (a temporary file renamed into place), creating parent
// directories, so an interrupted run never leaves half a document behind. Throws
// std::runtime_error naming the file when it cannot be written.
void writeResult(const RunResult& r, const std::filesystem::path& path);
// Throws ConfigError naming the file and the field (JSON path) for a file that is
// missing, malformed, of another kind or of another schema version.
RunResult readResult(const std::filesystem::path& path);

// The file names of a run's output directory (`--out DIR`).
inline constexpr std::string_view kResultFile = "result.json";
inline constexpr std::string_view kSummaryFile = "summary.md";
inline constexpr std::string_view kHtmlFile = "report.html";
inline constexpr std::string_view kJunitFile = "junit.xml";

}  // namespace cpscale::result
