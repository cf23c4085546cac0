// The queueing model alone: Erlang C against known values, and a pool fed a Poisson
// stream of exponential requests whose mean wait matches the M/M/c formula.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/engine/random.h"
#include "sim/model/cpu_pool.h"

namespace cpscale::model {
namespace {

using engine::Duration;
using engine::TimePoint;

TEST(ErlangC, KnownValues) {
  // One server: the probability of waiting is the utilization.
  EXPECT_NEAR(erlangC(1, 0.3), 0.3, 1e-12);
  EXPECT_NEAR(erlangC(1, 0.9), 0.9, 1e-12);
  // Two servers at a = 1: 1/3.
  EXPECT_NEAR(erlangC(2, 1), 1.0 / 3, 1e-12);
  // Textbook: c = 3, a = 2 -> 4/9.
  EXPECT_NEAR(erlangC(3, 2), 4.0 / 9, 1e-12);
  EXPECT_EQ(erlangC(2, 0), 0);
  EXPECT_EQ(erlangC(2, 2), 1);
  EXPECT_EQ(erlangC(2, 5), 1);
  // Mean wait: C * S / (c - a).
  EXPECT_NEAR(meanWait(2, 1, 0.01), 1.0 / 3 * 0.01 / 1, 1e-12);
  EXPECT_TRUE(std::isinf(meanWait(2, 2, 0.01)));
}

// Poisson arrivals at rate lambda with Exp(S) service on a pool of c cores for
// `duration`; the mean wait of the arrivals after `warmup`.
double simulatedMeanWait(double c, double lambda, double s, double duration, double warmup, std::uint64_t seed) {
  CpuPoolOptions o;
  o.cores = c;
  o.seed = seed;
  CpuPool pool(o);
  engine::RandomStream rng(seed * 7 + 1);
  double t = 0, sum = 0;
  std::size_t n = 0;
  while (t < duration) {
    t += rng.exponential(1 / lambda);
    const double wait = pool.arrive(TimePoint{Duration{static_cast<std::int64_t>(t * 1e9)}}, rng.exponential(s));
    if (t >= warmup) {
      sum += wait;
      ++n;
    }
  }
  return sum / static_cast<double>(n);
}

TEST(CpuPool, MeanWaitMatchesMMcAtHalfLoad) {
  const double c = 2, s = 0.001, lambda = 0.5 * c / s;
  const double expected = meanWait(c, lambda * s, s);
  const double got = simulatedMeanWait(c, lambda, s, 200, 5, 1);
  EXPECT_NEAR(got, expected, 0.05 * expected) << "expected " << expected;
}

TEST(CpuPool, MeanWaitMatchesMMcAtEightyPercent) {
  const double c = 2, s = 0.001, lambda = 0.8 * c / s;
  const double expected = meanWait(c, lambda * s, s);
  const double got = simulatedMeanWait(c, lambda, s, 200, 5, 2);
  EXPECT_NEAR(got, expected, 0.05 * expected) << "expected " << expected;
}

TEST(CpuPool, UtilizationAndServiceTimeAreMeasured) {
  CpuPoolOptions o;
  o.cores = 4;
  o.idleCores = 0.5;
  CpuPool pool(o);
  // 1000 requests/s of 1 ms: one core of demand, plus the idle half core.
  for (int i = 0; i < 10'000; ++i) pool.arrive(TimePoint{std::chrono::milliseconds(i)}, 0.001);
  const TimePoint end{std::chrono::milliseconds(10'000)};
  EXPECT_NEAR(pool.offeredLoad(end), 1.5, 0.05);
  EXPECT_NEAR(pool.utilization(end), 1.5 / 4, 0.02);
  EXPECT_NEAR(pool.meanServiceTime(end), 0.001, 1e-9);
  EXPECT_NEAR(pool.chargedCoreSeconds(), 10, 1e-6);
  EXPECT_EQ(pool.backlog(end), 0);
}

TEST(CpuPool, WeightedArrivalsCountAsMany) {
  CpuPoolOptions o;
  o.cores = 2;
  CpuPool a(o), b(o);
  // 100/s of weight 10 is the load of 1000/s of weight 1.
  for (int i = 0; i < 1000; ++i) a.arrive(TimePoint{std::chrono::milliseconds(10 * i)}, 10 * 0.001, 10);
  for (int i = 0; i < 10'000; ++i) b.arrive(TimePoint{std::chrono::milliseconds(i)}, 0.001, 1);
  const TimePoint end{std::chrono::seconds(10)};
  EXPECT_NEAR(a.offeredLoad(end), b.offeredLoad(end), 1e-9);
  EXPECT_NEAR(a.meanServiceTime(end), b.meanServiceTime(end), 1e-12);
}

TEST(CpuPool, SaturationMakesWaitsGrowLinearly) {
  // rho = 1.2 on 2 cores: 0.4 core-seconds of backlog per second, 0.2 s more wait per second.
  CpuPoolOptions o;
  o.cores = 2;
  CpuPool pool(o);
  engine::RandomStream rng(5);
  const double s = 0.001, lambda = 1.2 * 2 / s;
  double t = 0;
  double waitAt[3] = {0, 0, 0};
  std::size_t count[3] = {0, 0, 0};
  const double marks[3] = {10, 20, 40};
  while (t < 41) {
    t += rng.exponential(1 / lambda);
    const double w = pool.arrive(TimePoint{Duration{static_cast<std::int64_t>(t * 1e9)}}, rng.exponential(s));
    for (int k = 0; k < 3; ++k) {
      if (t >= marks[k] && t < marks[k] + 1) {
        waitAt[k] += w;
        ++count[k];
      }
    }
  }
  for (int k = 0; k < 3; ++k) waitAt[k] /= static_cast<double>(count[k]);
  // Roughly 0.2 s per second of overload (less the window it takes to see it).
  EXPECT_NEAR(waitAt[2] - waitAt[1], 0.2 * 20, 0.2 * 20 * 0.15);
  EXPECT_NEAR(waitAt[1] - waitAt[0], 0.2 * 10, 0.2 * 10 * 0.15);
  EXPECT_GT(waitAt[0], 1.0);
}

TEST(CpuPool, SameSeedSameWaits) {
  CpuPoolOptions o;
  o.cores = 2;
  o.seed = 9;
  CpuPool a(o), b(o);
  for (int i = 0; i < 5000; ++i) {
    const TimePoint t{std::chrono::microseconds(700 * i)};
    ASSERT_EQ(a.arrive(t, 0.001), b.arrive(t, 0.001));
  }
}

}  // namespace
}  // namespace cpscale::model
