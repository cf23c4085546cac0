// `cpscale job`: a sharded run (cpscale run --shard I/N) as a Kubernetes Indexed Job
// whose pod I is shard I, with what it needs to run in the cluster: the scenario as a
// ConfigMap, a ServiceAccount, and a ClusterRole (bound to it) granting what the
// scenario's workloads, their setup and cleanup, the shards' meeting and published
// results and the servers' scrapes send, derived from the workloads themselves.
//
// Every object is named cpscale-<run id>[-scenario] and labelled cpscale.io/job=<run
// id>, not cpscale.io/run: shard 0's cleanup deletes what carries that, and the
// role and its binding must outlive it until every shard has published its result.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/kube/rbac.h"
#include "workloads/workload.h"

namespace cpscale::run {

inline constexpr const char* kJobLabel = "cpscale.io/job";
// The image's numeric user and group (sim/image/Dockerfile): not root, in no group
// that owns anything.
inline constexpr int kImageUser = 65532;

// The rules a run of `workloads` needs in a cluster, least privilege (one rule per API
// group and verb set):
//  - what each workload sends, as its kind grants it (WorkloadKind::grant: custom
//    resources by the groups its resources() name; for the dormant kind's Roles and
//    bindings `escalate` and `bind`, without which the apiserver refuses roles granting
//    what the creator does not hold);
//  - the run's cleanup: list and delete every resource it may have created, by label;
//  - the shards' meeting and results: ConfigMaps;
//  - reading the `kubernetes` Endpoints and the servers' /metrics.
// /version is granted to every client already (system:public-info-viewer).
std::vector<kube::PolicyRule> runRules(const std::vector<workloads::WorkloadPtr>& entries);

struct JobSpec {
  std::string runId;
  std::size_t shards = 2;
  std::string image;
  std::string ns = "default";
  // The scenario as its file holds it (the pods parse it as `cpscale run` does), the
  // name it has in the ConfigMap and under /scenario, and the --set overrides given.
  std::string scenarioFile;
  std::string scenarioText;
  std::vector<std::string> overrides;
  // The scenario's workers per shard: each runs a thread that may take a core.
  std::size_t workers = 1;
  // Longest the run may take, for the collect step's --timeout.
  std::chrono::seconds expectedDuration{0};
  std::vector<kube::PolicyRule> rules;
};

// The container's arguments: run /scenario/<file> --in-cluster --yes --shard
// $(JOB_COMPLETION_INDEX)/N --run-id R --publish-result --out /work/out [--set k=v]...
// The Job controller gives every container of an Indexed Job's pod JOB_COMPLETION_INDEX
// (from the pod's batch.kubernetes.io/job-completion-index label) and the kubelet
// expands $(VAR) in args from the container's whole environment. A `$(` the user wrote
// is escaped as `$$(`, so that the kubelet leaves it as it was.
std::vector<std::string> jobArgs(const JobSpec& spec);

// The objects in the order they must be created: the scenario's ConfigMap, the
// ServiceAccount, the ClusterRole, the ClusterRoleBinding, the Job.
std::vector<nlohmann::ordered_json> jobManifests(const JobSpec& spec);

// The collect step: `cpscale collect --run-id R --shards N --timeout T` plus
// `targetArgs` (the options naming the cluster, as given to `cpscale job`).
std::string collectCommand(const JobSpec& spec, const std::string& targetArgs);

// One YAML document (block style): strings that would read as something else (a
// number, a boolean, null) or need escaping are double-quoted, multi-line ones literal
// blocks, so that the document reads back as exactly `doc`.
std::string toYaml(const nlohmann::ordered_json& doc);

}  // namespace cpscale::run
