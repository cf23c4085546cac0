// What the workloads measured themselves, reported as figures: their summaries merged
// across engine workers, and the figures drawn from them (the kubelet fleet's view of
// the node lifecycle controller through its node watch).
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/metrics/figures.h"
#include "sim/result/result.h"

namespace cpscale::run {

// Merges one worker's summary into `merged`: numbers add up, a flag holds only if it
// holds on every worker, arrays concatenate (per-actor samples), objects merge key by
// key by the same rules; anything else (a string) is kept from the first worker that
// has it.
void mergeSummary(nlohmann::json& merged, const nlohmann::json& part);

// Each summary's figures, as its kind draws them (WorkloadKind::figures in
// workloads/<kind>_kind.cc; the list is in workloads/README.md): labelled {workload:
// <name>}, window run, source client; a figure whose number the summary lacks is
// unavailable with the reason. The kind then trims what it took in full (the fleet's
// per-node samples) so result.json does not carry one number per node.
std::vector<metrics::Figure> workloadFigures(std::vector<result::WorkloadSummary>& summaries);

}  // namespace cpscale::run
