// A workload is one population of synthetic actors that loads one scale axis: the
// kubelet fleet (node-bound), CRD churn actors (mutation-bound), dormant objects and
// their watchers (state-bound). `cpscale run` builds workloads from a scenario's
// `workloads:` list, prepares them once, then starts one instance per engine worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/common/yaml_reader.h"
#include "sim/engine/simulator.h"
#include "sim/kube/api_client.h"
#include "sim/kube/resource.h"
#include "sim/load/worker.h"
#include "workloads/phases.h"

namespace cpscale::workloads {

// The label every object a run creates carries; its value is the run id. CRDs a run
// installs carry it too, which is how cleanup finds them.
inline constexpr const char* kRunLabel = "cpscale.io/run";
// Which scenario entry created an object (its `name`), for reading results by workload.
inline constexpr const char* kWorkloadLabel = "cpscale.io/workload";
// Which shard of a sharded run created an object ("0".."N-1"); absent when unsharded.
inline constexpr const char* kShardLabel = "cpscale.io/shard";

// What a workload's actors run on: one engine worker's simulator and client.
struct WorkloadContext {
  engine::Simulator& sim;
  // Asynchronous calls on `sim`, through the worker's open-loop driver.
  kube::ApiClient& api;
  std::string runId;
  std::uint64_t seed = 0;
  // Actors are sharded across workers: an instance creates only the actors whose id
  // the worker owns. Null: this instance owns every actor.
  const load::Worker* worker = nullptr;
  // Unix time (ns) of the run's TimePoint 0: timestamps written into objects (a Lease's
  // renewTime, condition heartbeats) are epochUnixNanos + sim.now(). Set it from the
  // system clock for live runs; virtual runs may leave it at 0.
  std::int64_t epochUnixNanos = 0;
  // Where the instance reports the end of its setup and marks ramps of its own; null
  // (unit tests that do not look) ignores the reports.
  PhaseLog* phases = nullptr;
  // Once, when this instance's setup is over: every actor that needed registering or
  // creating was answered (success or failure) and watchers hold their first list. A
  // workload with nothing to set up calls it from start().
  void setupDone() const {
    if (phases) phases->setupDone();
  }
  void beginPhase(const std::string& name) const {
    if (phases) phases->begin(name, sim.now());
  }
  void endPhase(const std::string& name) const {
    if (phases) phases->end(name, sim.now());
  }
  // Sharded generation (`cpscale run --shard I/N`): this process is shard `shard` of
  // `shards`, and its workers split only the shard's share. Every population is
  // partitioned over the shards x workers slots (slot = shard x workers + worker), so the
  // shares of all the shards' workers are exact and disjoint, and add up to what one
  // process with one worker would drive.
  std::size_t shard = 0;
  std::size_t shards = 1;

  bool owns(const std::string& actorId) const { return load::Worker::shardOf(actorId, workers()) == workerIndex(); }
  // This instance's share of a population-wide rate (rates are split evenly).
  double share(double rate) const { return rate / static_cast<double>(workers()); }
  // This instance's slot among every shard's workers, and how many slots there are.
  std::size_t workerIndex() const { return shard * localWorkers() + (worker == nullptr ? 0 : worker->index()); }
  std::size_t workers() const { return shards * localWorkers(); }
  // The labels every object an actor creates carries: the run's and the workload's,
  // and the shard's when the run is sharded.
  nlohmann::json labels(const std::string& workload) const;

 private:
  std::size_t localWorkers() const { return worker == nullptr ? 1 : worker->workers(); }
};

// One worker's share of a workload's actors.
// Owns its actors; `ctx.sim` and `ctx.api` must outlive it. Destroying it cancels the
// calls its actors still have in flight (their handlers then only count).
class WorkloadInstance {
 public:
  virtual ~WorkloadInstance() = default;
  // Stops every actor's timers: no new requests after this returns.
  virtual void stop() = 0;
  // Counts the workload alone knows (nodes registered, sessions completed, ...).
  // Summed across instances by key.
  virtual nlohmann::json summary() const = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // "kubelets", "churn", "dormant": the scenario's `kind`.
  virtual std::string kind() const = 0;
  // The scenario's `name` for this entry (defaults to the kind).
  virtual std::string name() const = 0;
  // Once, before the clock starts, synchronously: namespaces, CRDs (waiting until they
  // are Established, polling on `clock`). Throws UnavailableError when the server
  // refuses, ConfigError for a run id that cannot name objects.
  virtual void prepare(kube::ApiClient& api, engine::Clock& clock, const std::string& runId) = 0;
  // Creates this worker's actors and schedules their first events from ctx.sim.now().
  virtual std::unique_ptr<WorkloadInstance> start(WorkloadContext& ctx) = 0;
  // Every resource this workload may create objects of (for cleanup by label).
  virtual std::vector<kube::GroupVersionResource> resources() const = 0;
  // The load between `from` and `to` (> from) of numeric field `field` of this entry
  // (e.g. "count" of kubelets), as a workload of its own that adds to this one in place:
  // started after this workload (on the same run id and workers), the two together behave
  // as this entry with field = to would. Null when the field cannot grow in place (the
  // caller then restarts the whole run per step). Throws ConfigError(where, field, ...)
  // for a value the field does not accept. What each kind does is in workloads/README.md
  // ("Growing a workload in place") and at the top of its header.
  virtual std::unique_ptr<Workload> growth(const std::string& /*field*/, double /*from*/, double /*to*/) const {
    return nullptr;
  }
  // Fields growth() supports, for error messages and docs.
  virtual std::vector<std::string> growableFields() const { return {}; }
  // Whether the workload sends requests on a schedule once it is set up (renewals,
  // sessions, updates, relists): only then does the steady window have the generator's
  // health (generator_limited, schedule_lag_*) and client latencies to judge.
  virtual bool loadsSteadyWindow() const = 0;
  // How many of its watch streams the workload wants on one HTTP/2 connection (e.g. a
  // node's streams: one connection per kubelet); 0: no preference. The worker's
  // transport takes the smallest preference of the scenario's workloads.
  virtual long watchStreamsPerConnection() const { return 0; }
  // For a figure of the workload's own kind (see figureKindOf): "" when this entry, as
  // configured, measures it; otherwise why it cannot (a gate on it is refused when the
  // scenario loads).
  virtual std::string whyNotMeasured(const std::string& /*figure*/) const { return ""; }
};

// The workload kind whose own summary a figure comes from (labelled {workload: NAME},
// sim/run/workload_figures.cc): "kubelets" for lease_renewals_* and the node lifecycle
// figures seen through the fleet's node watch, "churn" for session_*, "dormant" for
// dormant_*; "" for any other figure.
std::string figureKindOf(const std::string& figure);
// The figures a workload of `kind` reports of itself (empty for another kind), and ""
// when `figure` is one of them, or why not (listing them).
const std::vector<std::string>& ownFigures(const std::string& kind);
std::string notOwnFigure(const std::string& kind, const std::string& figure);

using WorkloadPtr = std::unique_ptr<Workload>;

// Builds a workload from one entry of a scenario's `workloads:` list, validating every
// parameter (templates included) without touching the server. Throws ConfigError
// naming the file, line and field. The entry's fields are documented in
// workloads/README.md and at the top of each workload's header.
WorkloadPtr makeWorkload(const YamlField& spec);

// For growth(): throws ConfigError (where: "workload '<name>'", field: `field`) unless
// 0 <= from < to <= max, for a count (`whole`) both are whole numbers, and from >= own
// (the base's own value: `ownWhat` below it, e.g. "nodes", belong to the base).
void checkGrowth(const Workload& w, const std::string& field, double from, double to, double max, bool whole,
                 double own = 0, std::string_view ownWhat = "");

}  // namespace cpscale::workloads
