#include "sim/metrics/time_series.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include <cmath>

namespace cpscale::metrics {
namespace {

using testing::at;
using testing::series;

TEST(TimeSeries, CounterIncreasesHandleReset) {
  // 100 -> 130 (+30), restart: 20 (+20), 50 (+30)
  TimeSeries c = series({{0, 100}, {5, 130}, {10, 20}, {15, 50}});
  EXPECT_EQ(counterIncreases(c), series({{5, 30}, {10, 20}, {15, 30}}));
  EXPECT_EQ(totalIncrease(c), 80);
  EXPECT_EQ(counterRates(c), series({{5, 6}, {10, 4}, {15, 6}}));
  EXPECT_EQ(totalIncrease(series({{0, 7}})), 0);
}

TEST(TimeSeries, RatesUseEachIntervalsLength) {
  // A missed scrape leaves a 10 s interval.
  EXPECT_EQ(counterRates(series({{0, 0}, {5, 10}, {15, 30}})), series({{5, 2}, {15, 2}}));
}

TEST(TimeSeries, SumCounterRatesAcrossReplicas) {
  TimeSeries a = series({{0, 0}, {5, 50}, {10, 100}, {15, 150}});  // 10/s
  TimeSeries b = series({{0, 0}, {15, 60}});                       // 4/s, two missed scrapes
  TimeSeries c = series({{10, 0}, {15, 5}});                       // 1/s from t=10 on
  std::vector<TimeSeries> all{a, b, c};
  EXPECT_EQ(sumCounterRates(all), series({{5, 14}, {10, 14}, {15, 15}}));
}

TEST(TimeSeries, SumGaugesCarriesLastValueForward) {
  std::vector<TimeSeries> g{series({{0, 1}, {10, 3}}), series({{5, 10}})};
  EXPECT_EQ(sumGauges(g), series({{0, 1}, {5, 11}, {10, 13}}));
}

TEST(TimeSeries, SumGaugesDropsAReplicaThatStoppedAnswering) {
  TimeSeries a = series({{0, 100}, {5, 100}, {10, 100}, {15, 100}, {20, 100}});
  TimeSeries b = series({{0, 10}, {5, 10}});  // stops answering after 5
  std::vector<TimeSeries> g{a, b};
  // One missed scrape (10) carries b; the second (15) drops it.
  EXPECT_EQ(sumGauges(g), series({{0, 110}, {5, 110}, {10, 110}, {15, 100}, {20, 100}}));
  EXPECT_EQ(sumGauges(g, 3), series({{0, 110}, {5, 110}, {10, 110}, {15, 110}, {20, 100}}));
  EXPECT_EQ(sumGauges(g, 0), series({{0, 110}, {5, 110}, {10, 110}, {15, 110}, {20, 110}}));
  // b answers again at 25: back in the sum.
  g[1].push(at(25), 20);
  g[0].push(at(25), 100);
  EXPECT_EQ(sumGauges(g).values.back(), 120);
}

TEST(TimeSeries, SumGaugesCountsRoundsEveryReplicaMissed) {
  TimeSeries a = series({{0, 100}, {5, 100}, {10, 100}});
  TimeSeries b = series({{0, 10}, {5, 10}});
  std::vector<TimeSeries> g{a, b};
  std::vector<engine::TimePoint> rounds{at(0), at(5), at(10), at(15), at(20)};  // etcd still answered at 15, 20
  // 15: b has missed two rounds, a one; 20: both two or more, nothing is left to sum.
  EXPECT_EQ(sumGauges(g, 2, rounds), series({{0, 110}, {5, 110}, {10, 110}, {15, 100}}));
  EXPECT_EQ(missedBefore(b, rounds, at(5)), 0u);
  EXPECT_EQ(missedBefore(b, rounds, at(20)), 3u);
  EXPECT_EQ(missedBefore(series({{10, 1}}), rounds, at(5)), 2u);  // none yet: every round up to t
}

TEST(TimeSeries, RatioOnCommonTimes) {
  EXPECT_EQ(ratio(series({{5, 1}, {10, 2}, {15, 3}}), series({{5, 4}, {15, 0}})), series({{5, 0.25}}));
}

TEST(TimeSeries, FitLineExact) {
  // heap = 2 GB base + 1500 bytes per object
  std::vector<double> x{0, 10'000, 20'000, 50'000, 100'000};
  std::vector<double> y;
  for (double v : x) y.push_back(2e9 + 1500 * v);
  auto f = fitLine(x, y);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->slope, 1500, 1e-6);
  EXPECT_NEAR(f->intercept, 2e9, 1e-3);
  EXPECT_DOUBLE_EQ(f->r2, 1.0);
  EXPECT_EQ(f->points, 5u);
}

TEST(TimeSeries, FitLineQuality) {
  // y = x with residuals +1, -1, -1, +1: slope 1, intercept 0, SSres 4, SStot 24.
  std::vector<double> x{0, 2, 4, 6}, y{1, 1, 3, 7};
  auto f = fitLine(x, y);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->slope, 1.0);
  EXPECT_DOUBLE_EQ(f->intercept, 0.0);
  EXPECT_DOUBLE_EQ(f->r2, 1.0 - 4.0 / 24.0);
}

TEST(TimeSeries, FitLineUndefined) {
  std::vector<double> same{3, 3, 3}, y{1, 2, 3}, one{1};
  EXPECT_FALSE(fitLine(same, y));
  EXPECT_FALSE(fitLine(one, one));
}

TEST(TimeSeries, HistogramQuantileLikePrometheus) {
  // 100 observations: 50 <= 0.1, 40 in (0.1, 0.5], 9 in (0.5, 1], 1 in (1, +Inf).
  std::vector<Bucket> b{{0.5, 90}, {0.1, 50}, {HUGE_VAL, 100}, {1, 99}};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(histogramQuantile(0.5, b), 0.1);                       // rank 50 ends bucket 1
  EXPECT_DOUBLE_EQ(histogramQuantile(0.25, b), 0.05);                     // halfway into [0, 0.1]
  EXPECT_DOUBLE_EQ(histogramQuantile(0.7, b), 0.1 + 0.4 * (20.0 / 40.0));
  EXPECT_DOUBLE_EQ(histogramQuantile(0.9, b), 0.5);
  EXPECT_DOUBLE_EQ(histogramQuantile(0.95, b), 0.5 + 0.5 * (5.0 / 9.0));
  EXPECT_DOUBLE_EQ(histogramQuantile(0.999, b), 1.0);  // in +Inf: the highest finite bound
  EXPECT_TRUE(std::isnan(histogramQuantile(0.5, {{0.1, 0}, {HUGE_VAL, 0}})));
  EXPECT_TRUE(std::isnan(histogramQuantile(0.5, {{0.1, 1}, {1, 2}})));  // no +Inf
  EXPECT_TRUE(std::isnan(histogramQuantile(1.5, b)));
  // Non-monotonic counts (read mid-update) are repaired, not trusted.
  EXPECT_DOUBLE_EQ(histogramQuantile(0.5, {{0.1, 10}, {0.2, 8}, {HUGE_VAL, 10}}), 0.05);
}

}  // namespace
}  // namespace cpscale::metrics
