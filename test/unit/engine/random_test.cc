#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <vector>

#include "sim/engine/random.h"
#include "sim/engine/stable_hash.h"

namespace cpscale::engine {
namespace {

using namespace std::chrono_literals;

TEST(StableHash, IsFnv1a64) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(RandomStream, SameSeedAndActorSameDrawsDifferentActorDifferentDraws) {
  RandomStream a(42, "node-1"), b(42, "node-1"), c(42, "node-2"), d(43, "node-1");
  std::vector<std::uint64_t> va, vb, vc, vd;
  for (int i = 0; i < 100; ++i) {
    va.push_back(a.next());
    vb.push_back(b.next());
    vc.push_back(c.next());
    vd.push_back(d.next());
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  EXPECT_NE(va, vd);
}

TEST(RandomStream, UniformStaysInRange) {
  RandomStream r(1);
  for (int i = 0; i < 100000; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const Duration d = r.uniformDuration(10ms, 11ms);
    ASSERT_GE(d, 10ms);
    ASSERT_LT(d, 11ms);
    ASSERT_LT(r.below(7), 7u);
  }
  EXPECT_EQ(r.uniformDuration(5ms, 5ms), 5ms);
}

// A Poisson process at rate λ over T seconds has N ~ Poisson(λT): with λT = 10^5 the
// count lies within 4 standard deviations (±1265) with probability > 0.9999.
TEST(RandomStream, PoissonArrivalsMatchTheRate) {
  RandomStream r(2024, "churn-actor-7");
  const double rate = 1000.0;  // per second
  Duration t{0};
  std::uint64_t n = 0;
  while ((t += r.interArrival(rate)) < 100s) ++n;
  EXPECT_NEAR(static_cast<double>(n), 100000.0, 4 * std::sqrt(100000.0));
}

TEST(RandomStream, ExponentialAndPoissonMoments) {
  RandomStream r(7);
  const int n = 200000;
  double sum = 0, sumsq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = r.exponential(2.0);
    sum += x;
    sumsq += x * x;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 2.0, 4 * 2.0 / std::sqrt(n));  // sd of the mean = 2 / sqrt(n)
  EXPECT_NEAR(sumsq / n - mean * mean, 4.0, 0.1);
  for (double m : {0.5, 3.0, 20.0, 500.0}) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += static_cast<double>(r.poisson(m));
    EXPECT_NEAR(s / n, m, 5 * std::sqrt(m / n)) << "mean " << m;
  }
  EXPECT_EQ(r.poisson(0), 0u);
}

TEST(RandomStream, LognormalMedianAndSpread) {
  RandomStream r(11);
  std::vector<double> xs;
  for (int i = 0; i < 100001; ++i) xs.push_back(r.lognormal(std::log(4096.0), 0.5));
  std::nth_element(xs.begin(), xs.begin() + 50000, xs.end());
  EXPECT_NEAR(xs[50000] / 4096.0, 1.0, 0.02);  // median = e^mu
  EXPECT_GT(*std::min_element(xs.begin(), xs.end()), 0.0);
}

TEST(StreamSeed, ManyActorsGetDistinctSeeds) {
  std::set<std::uint64_t> seeds;
  for (int i = 0; i < 100000; ++i) seeds.insert(streamSeed(1, "node-" + std::to_string(i)));
  EXPECT_EQ(seeds.size(), 100000u);
}

}  // namespace
}  // namespace cpscale::engine
