#include "sim/metrics/time_series.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace cpscale::metrics {

double seconds(engine::Duration d) { return static_cast<double>(d.count()) / 1e9; }

TimeSeries counterIncreases(const TimeSeries& counter) {
  TimeSeries out;
  for (std::size_t i = 1; i < counter.size(); ++i) {
    double prev = counter.values[i - 1];
    double cur = counter.values[i];
    out.push(counter.times[i], cur >= prev ? cur - prev : cur);
  }
  return out;
}

double totalIncrease(const TimeSeries& counter) {
  double sum = 0;
  for (double v : counterIncreases(counter).values) sum += v;
  return sum;
}

TimeSeries counterRates(const TimeSeries& counter) {
  TimeSeries inc = counterIncreases(counter);
  for (std::size_t i = 0; i < inc.size(); ++i) {
    double dt = seconds(inc.times[i] - counter.times[i]);  // counter.times[i] is the interval start
    inc.values[i] = dt > 0 ? inc.values[i] / dt : 0;
  }
  return inc;
}

namespace {
std::vector<engine::TimePoint> unionOfTimes(std::span<const TimeSeries> all) {
  std::vector<engine::TimePoint> times;
  for (const TimeSeries& s : all) times.insert(times.end(), s.times.begin(), s.times.end());
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}
}  // namespace

TimeSeries sumCounterRates(std::span<const TimeSeries> counters) {
  std::vector<TimeSeries> rates;
  rates.reserve(counters.size());
  for (const TimeSeries& c : counters) rates.push_back(counterRates(c));
  std::vector<engine::TimePoint> times = unionOfTimes(rates);
  TimeSeries out;
  for (engine::TimePoint t : times) {
    double sum = 0;
    bool any = false;
    for (std::size_t k = 0; k < counters.size(); ++k) {
      const TimeSeries& c = counters[k];
      // Interval i of the rates is (c.times[i], c.times[i + 1]].
      auto it = std::lower_bound(c.times.begin(), c.times.end(), t);
      if (it == c.times.end() || it == c.times.begin()) continue;
      sum += rates[k].values[static_cast<std::size_t>(it - c.times.begin()) - 1];
      any = true;
    }
    if (any) out.push(t, sum);
  }
  return out;
}

std::size_t missedBefore(const TimeSeries& series, std::span<const engine::TimePoint> timeline, engine::TimePoint t) {
  auto it = std::upper_bound(series.times.begin(), series.times.end(), t);
  auto until = std::upper_bound(timeline.begin(), timeline.end(), t);
  auto from = timeline.begin();
  if (it != series.times.begin()) from = std::upper_bound(timeline.begin(), timeline.end(), *std::prev(it));
  return from < until ? static_cast<std::size_t>(until - from) : 0;
}

TimeSeries sumGauges(std::span<const TimeSeries> gauges, std::size_t staleAfter,
                     std::span<const engine::TimePoint> rounds) {
  std::vector<engine::TimePoint> timeline = unionOfTimes(gauges);
  if (!rounds.empty()) {
    timeline.insert(timeline.end(), rounds.begin(), rounds.end());
    std::sort(timeline.begin(), timeline.end());
    timeline.erase(std::unique(timeline.begin(), timeline.end()), timeline.end());
  }
  TimeSeries out;
  for (engine::TimePoint t : timeline) {
    double sum = 0;
    bool any = false;
    for (const TimeSeries& g : gauges) {
      auto it = std::upper_bound(g.times.begin(), g.times.end(), t);
      if (it == g.times.begin()) continue;
      if (staleAfter > 0 && missedBefore(g, timeline, t) >= staleAfter) continue;
      sum += g.values[static_cast<std::size_t>(it - g.times.begin()) - 1];
      any = true;
    }
    if (any) out.push(t, sum);
  }
  return out;
}

TimeSeries ratio(const TimeSeries& a, const TimeSeries& b) {
  TimeSeries out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto it = std::lower_bound(b.times.begin(), b.times.end(), a.times[i]);
    if (it == b.times.end() || *it != a.times[i]) continue;
    double den = b.values[static_cast<std::size_t>(it - b.times.begin())];
    if (den != 0) out.push(a.times[i], a.values[i] / den);
  }
  return out;
}

std::optional<LinearFit> fitLine(std::span<const double> x, std::span<const double> y) {
  std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return std::nullopt;
  // Two passes around the means: heap sizes (1e9) times object counts (1e5) would lose
  // the slope to cancellation in the one-pass sum-of-products form.
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx == 0) return std::nullopt;
  LinearFit f;
  f.points = n;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double ssres = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double e = y[i] - (f.slope * x[i] + f.intercept);
    ssres += e * e;
  }
  f.r2 = syy == 0 ? 1.0 : std::max(0.0, 1.0 - ssres / syy);
  return f;
}

double histogramQuantile(double q, std::vector<Bucket> buckets) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (!(q >= 0 && q <= 1) || buckets.size() < 2) return kNaN;
  std::sort(buckets.begin(), buckets.end(),
            [](const Bucket& a, const Bucket& b) { return a.upperBound < b.upperBound; });
  if (!std::isinf(buckets.back().upperBound) || buckets.back().upperBound < 0) return kNaN;
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    buckets[i].cumulativeCount = std::max(buckets[i].cumulativeCount, buckets[i - 1].cumulativeCount);
  }
  double total = buckets.back().cumulativeCount;
  if (!(total > 0)) return kNaN;
  double rank = q * total;
  std::size_t b = 0;
  while (b + 1 < buckets.size() && buckets[b].cumulativeCount < rank) ++b;
  if (b == buckets.size() - 1) return buckets[b - 1].upperBound;
  if (b == 0 && buckets[0].upperBound <= 0) return buckets[0].upperBound;
  double start = b == 0 ? 0 : buckets[b - 1].upperBound;
  double below = b == 0 ? 0 : buckets[b - 1].cumulativeCount;
  double inBucket = buckets[b].cumulativeCount - below;
  if (inBucket <= 0) return buckets[b].upperBound;
  return start + (buckets[b].upperBound - start) * ((rank - below) / inBucket);
}

}  // namespace cpscale::metrics
