#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/common/error.h"
#include "sim/engine/hdr_histogram.h"
#include "sim/engine/random.h"

namespace cpscale::engine {
namespace {

// The exact nearest-rank quantile of sorted data.
std::uint64_t exactQuantile(const std::vector<std::uint64_t>& sorted, double q) {
  const auto rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(q * sorted.size())));
  return sorted[rank - 1];
}

TEST(HdrHistogram, EmptyIsAllZero) {
  HdrHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.quantile(0.99), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.memoryBytes(), 0u);
}

TEST(HdrHistogram, SmallValuesAreExact) {
  HdrHistogram h;
  for (std::uint64_t v = 0; v < 2048; ++v) h.addValue(v);
  EXPECT_EQ(h.quantile(0.5), 1023u);
  EXPECT_EQ(h.quantile(1.0), 2047u);
  EXPECT_EQ(h.quantile(0.0), 0u);
  EXPECT_DOUBLE_EQ(h.mean(), 1023.5);
}

TEST(HdrHistogram, CellsCoverEveryValueWithinOnePartIn1024) {
  for (std::uint64_t v :
       {1ULL, 2047ULL, 2048ULL, 2049ULL, 4095ULL, 4096ULL, 123456789ULL, 59'999'999'999ULL, 60'000'000'000ULL}) {
    const auto lo = HdrHistogram::lowestEquivalent(v);
    const auto hi = HdrHistogram::highestEquivalent(v);
    EXPECT_LE(lo, v);
    EXPECT_GE(hi, v);
    EXPECT_LE(static_cast<double>(hi - lo), static_cast<double>(v) / 1024.0) << v;
  }
}

// Lognormal latencies spanning ~1 µs to ~10 s against exact order statistics.
TEST(HdrHistogram, QuantilesMatchExactPercentilesToThreeDigits) {
  RandomStream r(99);
  HdrHistogram h;
  std::vector<std::uint64_t> data;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<std::uint64_t>(r.lognormal(std::log(2e6), 2.0));
    data.push_back(v);
    h.addValue(v);
  }
  std::sort(data.begin(), data.end());
  for (double q : {0.0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
    const double exact = static_cast<double>(exactQuantile(data, q));
    const double got = static_cast<double>(h.quantile(q));
    EXPECT_GE(got, exact) << q;  // upper edge of the cell: never understates
    EXPECT_LE(got - exact, exact / 1024.0 + 1) << q;
  }
  EXPECT_EQ(h.min(), data.front());
  EXPECT_EQ(h.max(), data.back());
  EXPECT_EQ(h.count(), data.size());
}

TEST(HdrHistogram, MergeEqualsRecordingEverythingInOne) {
  RandomStream r(5);
  HdrHistogram all, a, b, c;
  for (int i = 0; i < 30000; ++i) {
    const auto v = static_cast<std::uint64_t>(r.exponential(1e7));
    all.addValue(v);
    (i % 3 == 0 ? a : i % 3 == 1 ? b : c).addValue(v);
  }
  HdrHistogram merged;
  merged.merge(a);
  merged.combine(b);  // through the Statistic interface
  merged.merge(c);
  merged.merge(HdrHistogram{});  // merging an empty one changes nothing
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_NEAR(merged.mean(), all.mean(), 1e-6 * all.mean());
  for (double q = 0; q <= 1.0; q += 0.01) EXPECT_EQ(merged.quantile(q), all.quantile(q)) << q;
}

TEST(HdrHistogram, ValuesAboveTheRangeSaturate) {
  HdrHistogram h;
  h.addValue(120'000'000'000ULL);
  h.record(5, 3);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.saturated(), 1u);
  EXPECT_EQ(h.max(), HdrHistogram::kDefaultHighest);
  EXPECT_EQ(h.quantile(0.5), 5u);
}

TEST(HdrHistogram, RejectsTinyRangeAndMismatchedMerge) {
  try {
    HdrHistogram h(100);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "highestTrackable");
  }
  HdrHistogram a, b(1'000'000);
  b.addValue(1);
  EXPECT_THROW(a.merge(b), std::invalid_argument);
}

}  // namespace
}  // namespace cpscale::engine
