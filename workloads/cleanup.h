// `cpscale cleanup --run ID`: removes everything a run created, found by its label
// alone (no record of the run is needed): objects of every resource a workload may
// create, the run's namespaces, and the CRDs the run installed (which takes their
// custom resources with them), then waits, bounded, until they are gone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"
#include "sim/kube/resource.h"

namespace cpscale::workloads {

struct CleanupOptions {
  // Deadline for the whole cleanup, from the first request: deleting, then waiting for
  // deleted objects (namespaces above all) to disappear. What is left then is reported
  // as remaining, for `cpscale cleanup --run ID` to finish later.
  engine::Duration timeout = std::chrono::seconds(120);
  engine::Duration pollInterval = std::chrono::milliseconds(250);
};

struct CleanupResult {
  // Objects found with the run's label whose deletion the server accepted, by resource
  // ("nodes", "agentsessions.churn.cpscale.io", "namespaces",
  // "customresourcedefinitions"). A refused or failed delete is not counted.
  std::map<std::string, std::int64_t> deleted;
  // Still present when the cleanup ended (empty on success), same keys.
  std::map<std::string, std::int64_t> remaining;
  // Requests that failed, one line each, and the deadline when it cut the cleanup
  // short. A list that failed is here: it never reads as "nothing left".
  std::vector<std::string> errors;
  std::int64_t totalDeleted() const;
  bool complete() const { return remaining.empty() && errors.empty(); }
};

// The built-in resources any workload may create objects of.
std::vector<kube::GroupVersionResource> builtinRunResources();

// True if a kube-controller-manager (and with it the namespace controller) runs on the
// target: its leader-election Lease in kube-system was renewed within twice its
// duration.
bool controllerManagerRuns(kube::ApiClient& api);

// Deletes every object labelled cpscale.io/run=<runId> of `resources` plus the
// built-in ones and the custom resources of CRDs carrying the label, then the run's
// namespaces and CRDs. Pods are deleted with grace period 0 (no kubelet is there to
// confirm); namespaces emptied of the run's objects are finalized by cpscale only
// where no controller-manager runs (controllerManagerRuns) and none touched them. Stops at options.timeout. Outcomes
// are values; throws ConfigError for a bad run id only.
CleanupResult cleanupRun(kube::ApiClient& api, engine::Clock& clock, const std::string& runId,
                         const std::vector<kube::GroupVersionResource>& resources = {},
                         const CleanupOptions& options = {});

}  // namespace cpscale::workloads
