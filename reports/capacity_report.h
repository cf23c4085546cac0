// How capacity searches read: the pieces summary.md and report.html share for a
// capacity run (its result in words, the steps in order of value, where it broke, each
// step's figures), and the capacity index's own pages, capacity.md and capacity.html.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/metrics/figures.h"
#include "sim/result/capacity.h"

namespace cpscale::reports {

// The result with its unit: "2,400 nodes" (the largest value that held), "at least
// 4,800 nodes" (every step up to the max held), "none held", "generator-limited at
// 9,600 nodes (held 4,800)", "at least 600 nodes (interrupted)", "none held (the
// search failed)".
std::string capacityResultText(const result::CapacitySearch& s);

// What a limit means, in one sentence without a final period.
std::string describeLimit(result::CapacityLimit l);

// "yes", "no" or "generator-limited".
std::string_view stepHeldText(const result::CapacityStep& step);

// The steps in order of value: a bisection step falls between the ladder's steps.
std::vector<const result::CapacityStep*> stepsByValue(const result::CapacitySearch& s);

// How many steps bisection added (those that ran after a larger value).
std::size_t bisectionSteps(const result::CapacitySearch& s);

// Where the search broke: the lowest value that failed on the server (a server limit),
// or at which the generator fell behind (a generator limit); otherwise the lowest value
// that did not hold. Null when every step held.
const result::CapacityStep* breakingStep(const result::CapacitySearch& s);

// The label of the breaking point on charts: "broke", or "generator-limited".
std::string_view breakLabel(const result::CapacityStep& step);

// The figure the break was judged by: the breaking step's first failed gate as a key
// (client_latency_p99{resource=leases,verb=PUT}), generator_limited_by_schedule when the
// generator fell behind, else the search's brokeBy; "" when nothing broke.
std::string brokeFirst(const result::CapacitySearch& s);

// A step's figures, as the steps table and the charts show them; null when the step's
// figures have none (notInStep says so).
struct StepFigures {
  const metrics::Figure* pressure = nullptr;    // axis_pressure{axis=<the search's axis>}
  const metrics::Figure* writeQps = nullptr;    // write_qps{}
  const metrics::Figure* leaseShare = nullptr;  // lease_write_share{}
  // The highest client_latency_p99{measured_from=scheduled} of any resource and verb;
  // when none was measured, one of the unavailable ones (for its reason).
  const metrics::Figure* clientP99 = nullptr;
  const metrics::Figure* heap = nullptr;  // apiserver_heap_inuse_bytes_all_replicas{}
};
StepFigures stepFigures(const result::CapacityStep& step, std::string_view axis);

// The keys of those figures, as a reader would write them in a gate.
std::string pressureKey(std::string_view axis);
inline constexpr std::string_view kStepWriteQpsKey = "write_qps";
inline constexpr std::string_view kStepLeaseShareKey = "lease_write_share";
inline constexpr std::string_view kStepClientP99Key = "client_latency_p99{measured_from=scheduled}";
inline constexpr std::string_view kStepHeapKey = "apiserver_heap_inuse_bytes_all_replicas";

// Why a step shows no value for `key`: "the step's figures have no <key>".
std::string notInStep(std::string_view key);

// "PUT leases": the verb and resource a latency figure is of.
std::string verbResource(const metrics::Figure& f);

// ---- the capacity index ----

// "measured on <machine>, Kubernetes <v>, etcd <v>, cpscale <v>, <date>", each part
// saying so when the index did not record it.
std::string measuredOnLine(const result::CapacityIndex& idx);

// The recipes in the order the index first lists them.
std::vector<std::string> indexRecipes(const result::CapacityIndex& idx);

// capacity.md: the "measured on" line, a table of recipes (rows) by axis (node, churn,
// state) with the largest load each held, and under it, numbered, per search what
// broke first, the axis pressure at what held and a link to its result.json.
std::string renderCapacityIndexMarkdown(const result::CapacityIndex& idx);

// capacity.html: the same as one self-contained page, each cell with its result, what
// broke first and the link, then every search's knob, limit and detail.
std::string renderCapacityIndexHtml(const result::CapacityIndex& idx);

inline constexpr std::string_view kCapacityIndexMarkdownFile = "capacity.md";
inline constexpr std::string_view kCapacityIndexHtmlFile = "capacity.html";

// Writes capacity.json (writeCapacityIndex), capacity.md and capacity.html into `dir`
// (created if needed), each atomically. Throws std::runtime_error naming the file.
void writeCapacityIndexOutputs(const result::CapacityIndex& idx, const std::filesystem::path& dir);

}  // namespace cpscale::reports
