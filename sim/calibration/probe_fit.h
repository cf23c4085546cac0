// From the live probes' results to a Calibration: the pure half of `cpscale
// calibrate`, so the fits are tested on stored probe results without a plane.
//
// Each probe is one run (run::executeRun) of a scenario under scenarios/calibration/ on
// the local plane, stored as its run directory (result.json and the reports) plus
// probe.json: which probe it was and the load generator's own CPU sampled while it ran.
//
// What is fitted, from which probe (every window is a steady window, or each step's
// window of a probe run as a capacity ladder):
//   apiserver CPU (cores, per replica) = idle + cLease leaseWrites/s + cWrite otherWrites/s
//       + cRead reads/s + cWatch watchEvents/s: one observation per scrape interval of
//       every window of every probe (apiserver_cpu_cores{apiserver} over time against
//       write_qps by resource and verb, apiserver_request_qps, apiserver_write_qps and
//       apiserver_watch_events_total_per_second over the same intervals); every
//       coefficient non-negative. A regressor no probe exercised is held at 0, noted.
//   etcd CPU (cores, per member) = idle + cProposal proposals/s, likewise per interval.
//   generator CPU per request: the cpscale process's CPU rate against its completed
//       request rate, between consecutive samples within the steady window.
//   heap per object and per byte: bytes_per_object of each state probe's ramps (one
//       per kind, and the whole population's; two probes with different payload
//       sizes) against the objects' JSON size (payload + envelopeBytes).
//   heap base: the idle probe's heap (after GC where measured), mean and its interval.
//   nodes' heap: heap against the node count over the node probe's steps; the lease's
//       share is the per-object rule at kLeaseBytes, the rest is the node's.
//   etcd db bytes per write: the in-use db growth of each window against its writes.
// Measured, not fitted: unloaded latencies (client p50 from the sent time, in the
// least loaded window that has requests of the class; the server's p50 otherwise),
// background write rates (the idle probe's write_qps by resource and verb), RSS over
// heap, etcd's fsync (mean WAL fsync) and empty db size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/calibration.h"
#include "sim/result/result.h"

namespace cpscale::calibration {

// kReads: probes whose load is reads: informers on a busy resource (watch events sent
// per watcher) and informers that relist (objects a LIST returns, LIST calls).
enum class ProbeKind { kIdle, kNode, kChurn, kState, kReads, kWrites };
std::string_view toString(ProbeKind k);  // "idle" | "node" | "churn" | "state" | "reads" | "writes"
std::optional<ProbeKind> parseProbeKind(std::string_view s);

// The load generator's CPU, sampled while a probe ran.
struct GeneratorSample {
  double seconds = 0;          // since the probe started (monotonic clock)
  double cpuSeconds = 0;       // user + system CPU of the cpscale process (getrusage)
  std::uint64_t requests = 0;  // requests completed so far
  bool steady = false;         // taken within the steady window
  bool operator==(const GeneratorSample&) const = default;
};

struct ProbeResult {
  std::string name;  // "idle", "node", "churn", "state-small", ...
  ProbeKind kind = ProbeKind::kIdle;
  result::RunResult result;
  std::vector<GeneratorSample> generator;
};

inline constexpr std::string_view kProbeFile = "probe.json";

// probe.json into `dir` (result.json is the run's own: executeRun writes it there).
void writeProbeFile(const ProbeResult& p, const std::filesystem::path& dir);
// A probe's run directory: result.json and probe.json. Throws ConfigError naming the
// file and field.
ProbeResult readProbe(const std::filesystem::path& dir);
// Every subdirectory of `dir` holding a probe.json, in name order. Throws ConfigError
// when there is none.
std::vector<ProbeResult> readProbes(const std::filesystem::path& dir);

struct CalibrationFitOptions {
  double confidence = 0.95;
  // What the apiserver stores beside a dormant object's payload (metadata with labels,
  // uid, resourceVersion, timestamps, managedFields, apiVersion and kind), bytes of JSON.
  double envelopeBytes = 700;
  // A node Lease's JSON size (holder identity, durations, timestamps, managedFields).
  double leaseBytes = 600;
};

// The calibration measured by `probes` (at least one idle, one node, one churn and two
// state probes with different payload sizes; fewer leave some fits impossible, which
// throws FitError naming the fit and what it lacked). Where and when: host, cpus,
// versions and profile from the results, measuredAt the last probe's end; cpuModel is
// left empty (the results do not record it).
model::Calibration fitCalibration(const std::vector<ProbeResult>& probes, const CalibrationFitOptions& options = {});

// The parameters with their intervals, the fits' quality and the notes, as a text table.
std::string renderCalibrationSummary(const model::Calibration& c);

}  // namespace cpscale::calibration
