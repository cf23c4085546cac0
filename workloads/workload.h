// A workload is one population of synthetic actors that loads one scale axis: the
// kubelet fleet (node-bound), CRD churn actors (mutation-bound), dormant objects and
// their watchers (state-bound). `cpscale run` builds workloads from a scenario's
// `workloads:` list, prepares them once, then starts one instance per engine worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/common/yaml_reader.h"
#include "sim/engine/simulator.h"
#include "sim/engine/worker_pool.h"
#include "sim/kube/api_client.h"
#include "sim/kube/resource.h"

namespace cpscale::workloads {

// The label every object a run creates carries; its value is the run id.
inline constexpr const char* kRunLabel = "cpscale.io/run";

// What a workload's actors run on: one engine worker's simulator and client.
struct WorkloadContext {
  engine::Simulator& sim;
  // Asynchronous calls on `sim`, through the worker's open-loop driver.
  kube::ApiClient& api;
  std::string runId;
  std::uint64_t seed = 0;
  // Actors are sharded across workers: an instance creates only the actors whose id
  // the worker owns. Null: this instance owns every actor.
  const engine::Worker* worker = nullptr;
  bool owns(const std::string& actorId) const { return worker == nullptr || worker->owns(actorId); }
};

// One worker's share of a workload's actors.
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
  // are Established). Throws UnavailableError when the server refuses.
  virtual void prepare(kube::ApiClient& api, const std::string& runId) = 0;
  // Creates this worker's actors and schedules their first events from ctx.sim.now().
  virtual std::unique_ptr<WorkloadInstance> start(WorkloadContext& ctx) = 0;
  // Every resource this workload may create objects of (for cleanup by label).
  virtual std::vector<kube::GroupVersionResource> resources() const = 0;
};

// Builds a workload from one entry of a scenario's `workloads:` list, validating every
// parameter. Throws ConfigError naming the file, line and field.
std::unique_ptr<Workload> makeWorkload(const YamlField& spec);

}  // namespace cpscale::workloads
