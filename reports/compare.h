// `cpscale compare A.json B.json`: per figure, how B differs from A, whether that is
// worse or better for a control plane, and whether it moved further than its noise.
// The verdict rests on the headline figures of the axes that ran (headline.h); every
// other figure is a detail. Also the Markdown section a run writes when it compares
// two profiles.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/result/result.h"

namespace cpscale::reports {

struct CompareOptions {
  // |relative change| above this crosses the tolerance...
  double relativeTolerance = 0.10;
  // ...and so must the absolute change, by more than a figure's noise: a rate ("1/s")
  // or a count that moved by this many events or fewer over its window (the shorter of
  // the two runs' windows) did not move (0.114/s vs 0.129/s over 60 s is one event).
  double minEvents = 20;
  // Latencies closer than this are the same (histogram buckets and scheduling jitter).
  double latencyFloorSeconds = 0.001;
  // Ratios (shares) closer than this many percentage points / 100 are the same.
  double ratioFloor = 0.01;
  // Per figure: keyed by the full key ("write_qps{resource=leases}") or by the name
  // ("client_latency_p99"); the full key wins.
  std::map<std::string, double, std::less<>> overrides;
};

// Whether a larger value is bad news for the control plane.
enum class Polarity { kHigherIsWorse, kLowerIsWorse, kNeutral };
Polarity polarityOf(std::string_view figureName, const metrics::Labels& labels);

enum class Direction { kWorse, kBetter, kNeutral };
std::string_view toString(Direction d);

struct FigureChange {
  std::string key;  // name{labels}
  std::string name;
  metrics::Labels labels;
  metrics::Window window = metrics::Window::kSteady;
  // Part of the headline of A or B: "writes", "node-bound", "churn-bound",
  // "state-bound" or "setup"; empty for a detail. The verdict rests on these only.
  std::string section;
  std::string unit;
  std::optional<double> a;
  std::optional<double> b;
  bool comparable = false;
  // Set exactly when !comparable: "only in A", "available in A, unavailable in B: why",
  // "unavailable in A (why), available in B", "unavailable in A and B: why".
  std::string notComparableReason;
  double absoluteChange = 0;  // b - a
  // (b - a) / |a|; nullopt when a is 0 (any change from 0 is then beyond tolerance).
  std::optional<double> relativeChange;
  Direction direction = Direction::kNeutral;
  double tolerance = 0;          // relative
  double absoluteTolerance = 0;  // in the figure's unit; 0: none
  // |relative| beyond `tolerance` and |absolute| beyond `absoluteTolerance`.
  bool crossedTolerance = false;

  bool headline() const { return !section.empty(); }
};

struct Comparison {
  std::string aName;  // run id or file, as the caller labels them
  std::string bName;
  std::vector<FigureChange> changes;  // headline first, each part in A's order, then B's own
  CompareOptions options;             // the tolerances the changes were judged by

  // A headline figure got worse by more than its tolerance: `cpscale compare` exits 1.
  // Details never decide it.
  bool regressed() const;
};

// Figures are matched by name, labels and window. One unavailable on either side, or
// present on one side only, is listed as not comparable with the reason. Headline
// figures come first (writes, then the axes, then setup), then the details.
Comparison compareResults(const result::RunResult& a, const result::RunResult& b, const CompareOptions& options = {});

// Aligned plain text for a terminal, no wider than 100 columns: every headline figure
// with its verdict, then the details that moved beyond tolerance or could not be
// compared (the ones within tolerance are only counted), and a verdict.
std::string renderComparisonText(const Comparison& c);

// A Markdown section ("## <title>") with the same content, for summary.md of a run
// that compares two profiles.
std::string renderComparisonMarkdown(const Comparison& c, std::string_view title);

}  // namespace cpscale::reports
