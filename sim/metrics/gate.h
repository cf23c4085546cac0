// Gates: pass/fail thresholds over a run's figures, e.g.
//   write_qps{resource=leases} <= 600
//   lease_write_share >= 0.5
//   client_latency_p99{verb=PUT,resource=leases} <= 1s
//   bytes_per_object{apiserver=kube-apiserver-0} <= 4KiB
//   generator_limited == false
//   max(apiserver_heap_inuse_bytes_peak) <= 2GiB     (the largest of the matching figures)
// max(...), min(...) and sum(...) fold every figure the selector matches into one
// number; without them a selector must pick one figure, or figures that add up.
// A gate over a figure that was unavailable fails with that reason: it never passes
// silently. Thresholds take units: s/ms/us (to seconds), KiB/MiB/GiB/KB/MB/GB (to
// bytes), % (to a ratio), true/false (1/0).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "sim/metrics/figures.h"

namespace cpscale::metrics {

enum class GateOp { kLt, kLe, kGt, kGe, kEq, kNe };
std::string_view toString(GateOp op);
enum class GateFold { kNone, kMax, kMin, kSum };
// "max", "min", "sum" as a gate writes them; "" for kNone.
std::string_view toString(GateFold fold);

struct Gate {
  std::string text;    // as written
  std::string figure;  // figure name
  Labels selector;     // labels the figure must have (sorted by name)
  GateOp op = GateOp::kLe;
  double threshold = 0;
  std::string thresholdText;        // as written, for reports
  std::string where, field;         // where it was written (file:line, field), for errors
  GateFold fold = GateFold::kNone;  // max(...), min(...), sum(...) around the figure
};

// Throws ConfigError(where, field, ...) naming what is wrong.
Gate parseGate(const std::string& text, const std::string& where, const std::string& field);

struct GateResult {
  Gate gate;
  std::optional<double> measured;
  bool passed = false;
  std::string reason;  // why it failed when it did not compare (unavailable, no match, ambiguous)
};

// How a selector picks its number: a figure whose labels equal the selector exactly;
// otherwise the figures whose labels include the selector, summed when the unit adds
// up (rates, counts, bytes, objects) and all share one label set shape; anything else
// is ambiguous and fails, naming the labels to add. With a fold, every figure whose
// labels include the selector counts: max and min of any unit, sum of units that add
// up; one unavailable among them makes the gate fail with its reason.
GateResult evaluateGate(const Gate& gate, std::span<const Figure> figures);

}  // namespace cpscale::metrics
