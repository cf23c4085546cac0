// Numeric building blocks of the derived figures, free of any scraping: a time series,
// counter increases with reset handling, rates, step-aligned sums across replicas, a
// least-squares line fit and Prometheus' histogram_quantile. Pure functions, so every
// figure can be tested on synthetic series with exact expected results.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "sim/engine/clock.h"

namespace cpscale::metrics {

struct TimeSeries {
  std::vector<engine::TimePoint> times;  // strictly increasing
  std::vector<double> values;

  std::size_t size() const { return times.size(); }
  bool empty() const { return times.empty(); }
  void push(engine::TimePoint t, double v) {
    times.push_back(t);
    values.push_back(v);
  }
  bool operator==(const TimeSeries&) const = default;
};

double seconds(engine::Duration d);

// The increase of a cumulative counter over each interval between consecutive points,
// one point per interval at its end. A value below its predecessor means the process
// restarted and the counter began again at 0 (a restarted apiserver), so the increase
// over that interval is the new value itself, as Prometheus' increase() assumes.
TimeSeries counterIncreases(const TimeSeries& counter);
// The sum of counterIncreases(); 0 for fewer than two points.
double totalIncrease(const TimeSeries& counter);
// Per-second rate over each interval (increase / interval length).
TimeSeries counterRates(const TimeSeries& counter);

// The summed per-second rate of several replicas' counters on one timeline: at each
// distinct time t at which any replica was scraped (after its first scrape), a replica
// contributes the rate of its interval (t_prev, t_i] that covers t, nothing if none
// does. Replicas are scraped in the same round but answer at different times, and a
// failed scrape leaves one longer interval: this keeps the sum right in both cases.
TimeSeries sumCounterRates(std::span<const TimeSeries> counters);

// Sums gauges of several replicas onto one timeline: at each distinct time t of the
// timeline, a replica contributes its latest value at or before t (nothing before its
// first point), unless it is stale there: `staleAfter` or more times of the timeline
// lie after its latest point, up to t (scrapes it missed while others answered). A
// replica that stopped answering thus drops out of the sum instead of carrying its
// last value forever; staleAfter 0 never drops one. The timeline is every time of any
// input, plus `rounds` when given (every scrape round of the target, so a round all
// the replicas missed still counts as missed).
TimeSeries sumGauges(std::span<const TimeSeries> gauges, std::size_t staleAfter = 2,
                     std::span<const engine::TimePoint> rounds = {});

// The number of times of `timeline` (sorted) after the last point of `series` at or
// before t, up to t: how many scrapes in a row a replica has missed at t. 0 when it has
// a point at t; the whole count up to t when it has none at or before t.
std::size_t missedBefore(const TimeSeries& series, std::span<const engine::TimePoint> timeline, engine::TimePoint t);

// Element-wise a / b on the timeline of `a`, where b has a point at the same time and
// b != 0.
TimeSeries ratio(const TimeSeries& a, const TimeSeries& b);

// Ordinary least squares y = slope * x + intercept, with the coefficient of
// determination r2 (1 - SSres/SStot). nullopt for fewer than 2 points or when x does
// not vary (the slope is then undefined). r2 is 1 when y does not vary and the fit is
// exact.
struct LinearFit {
  double slope = 0;
  double intercept = 0;
  double r2 = 0;
  std::size_t points = 0;
};
std::optional<LinearFit> fitLine(std::span<const double> x, std::span<const double> y);

// One cumulative histogram bucket: observations <= upperBound.
struct Bucket {
  double upperBound = 0;
  double cumulativeCount = 0;
};

// Prometheus' histogram_quantile(q, ...): sorts by bound, repairs non-monotonic counts
// (rounding between bucket reads) by taking the running maximum, finds the bucket
// holding rank q * count and interpolates linearly inside it, the lowest bucket
// starting at 0. A rank in the +Inf bucket answers the highest finite bound.
// NaN when there are no observations, no +Inf bucket or q is outside [0, 1].
double histogramQuantile(double q, std::vector<Bucket> buckets);

}  // namespace cpscale::metrics
