// What the workloads measured themselves, reported as figures: their summaries merged
// across engine workers, and the figures drawn from them (the kubelet fleet's view of
// the node lifecycle controller through its node watch).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics/figures.h"
#include "sim/result/result.h"

namespace cpscale::cli {

// Merges one worker's summary into `merged`: numbers add up, a flag holds only if it
// holds on every worker, arrays concatenate (per-actor samples), objects merge key by
// key by the same rules; anything else (a string) is kept from the first worker that
// has it.
void mergeSummary(nlohmann::json& merged, const nlohmann::json& part);

// From each merged summary that has a `nodeLifecycle` object (the kubelet fleet's),
// labelled {workload: <name>}, window run, source client:
//   node_not_ready_transitions (count)   Ready -> not True, as the node watch saw it
//   node_not_ready_seconds_p50, _max (s) per failed node: last answered Lease write to
//                                        the first event showing Ready != True
//   node_ready_transitions (count)       not True -> True
//   node_ready_again_seconds_p50, _max (s) per returned node: return to Ready True seen
//   nodes_not_ready_at_end (count)
// From each kubelet fleet's and churn workload's merged summary, labelled likewise:
//   lease_renewals_answered, lease_renewals_missed (count)  renewals answered 2xx, and
//                            those failed or not sent (the previous still in flight)
//   session_write_failures (count)  session creations and writes that failed for good
// From each dormant workload's merged summary, labelled {workload: <name>}, window run,
// source client, counts:
//   dormant_objects, _created, _missing   asked (every kind and RBAC/core object),
//                                         created, and asked - created
//   dormant_watchers, _synced, _unsynced  opened, holding their first list, and the
//                                         rest (unavailable when it opens none)
// p50 is the nearest-rank median of the per-node samples. Without failures, or without
// a NotReady seen, the seconds figures are unavailable with the reason. The per-node
// sample arrays are then dropped from the summaries (their counts stay), so result.json
// does not carry one number per node.
std::vector<metrics::Figure> workloadFigures(std::vector<reports::WorkloadSummary>& workloads);

}  // namespace cpscale::cli
