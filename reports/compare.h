// `cpscale compare A.json B.json`: per figure, how B differs from A, whether that is
// worse or better for a control plane, and whether it moved further than the
// tolerance. Also the Markdown section a run writes when it compares two profiles.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/result.h"

namespace cpscale::reports {

struct CompareOptions {
  // |relative change| above this crosses the tolerance.
  double relativeTolerance = 0.10;
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
  std::string unit;
  std::optional<double> a;
  std::optional<double> b;
  bool comparable = false;
  std::string notComparableReason;  // set exactly when !comparable
  double absoluteChange = 0;        // b - a
  // (b - a) / |a|; nullopt when a is 0 (any change from 0 is then beyond tolerance).
  std::optional<double> relativeChange;
  Direction direction = Direction::kNeutral;
  double tolerance = 0;
  bool crossedTolerance = false;
};

struct Comparison {
  std::string aName;  // run id or file, as the caller labels them
  std::string bName;
  std::vector<FigureChange> changes;  // A's figure order, then figures only B has

  // Some figure got worse by more than its tolerance: `cpscale compare` exits 1.
  bool regressed() const;
};

// Figures are matched by name and labels. One unavailable on either side, or present
// on one side only, is listed as not comparable with the reason.
Comparison compareResults(const RunResult& a, const RunResult& b, const CompareOptions& options = {});

// Aligned plain text for a terminal: the figures that crossed their tolerance first,
// then the rest, then the ones that could not be compared, and a one-line verdict.
std::string renderComparisonText(const Comparison& c);

// A Markdown section ("## <title>") with the same content, for summary.md of a run
// that compares two profiles.
std::string renderComparisonMarkdown(const Comparison& c, std::string_view title);

}  // namespace cpscale::reports
