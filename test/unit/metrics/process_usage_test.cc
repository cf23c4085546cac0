#include "sim/metrics/process_usage.h"

#include <gtest/gtest.h>

#include <chrono>

namespace cpscale::metrics {
namespace {

const Figure& named(const std::vector<Figure>& figs, std::string_view name) {
  for (const Figure& f : figs)
    if (f.name == name) return f;
  static const Figure none;
  ADD_FAILURE() << name << " missing";
  return none;
}

// The generator's CPU over a window is the CPU seconds it used over the wall seconds
// between the samples; memory is the end sample's.
TEST(ProcessUsage, CoresAreCpuSecondsOverWallSeconds) {
  ProcessSample from, to;
  from.at = std::chrono::steady_clock::time_point(std::chrono::seconds(100));
  to.at = from.at + std::chrono::seconds(60);
  from.cpuSeconds = 12.0;
  to.cpuSeconds = 27.0;
  to.rssBytes = 50 << 20;
  to.peakRssBytes = 80 << 20;
  const auto figs = generatorResourceFigures(from, to, "");
  EXPECT_DOUBLE_EQ(*named(figs, "generator_cpu_cores").value, 0.25);
  EXPECT_EQ(named(figs, "generator_cpu_cores").source, Source::kClient);
  EXPECT_EQ(*named(figs, "generator_rss_bytes").value, 50 << 20);
  EXPECT_EQ(*named(figs, "generator_rss_bytes_peak").value, 80 << 20);
}

TEST(ProcessUsage, AMissingSampleOrAnEmptyWindowIsUnavailableWithTheReason) {
  ProcessSample s;
  auto figs = generatorResourceFigures(std::nullopt, s, "no /proc");
  EXPECT_FALSE(named(figs, "generator_cpu_cores").available());
  EXPECT_EQ(named(figs, "generator_rss_bytes").unavailableReason, "no /proc");
  figs = generatorResourceFigures(s, s, "");
  EXPECT_EQ(named(figs, "generator_cpu_cores").unavailableReason, "the window had no length");
}

// This process, read from the kernel: it is resident, its peak is at least what it holds
// now, and its CPU time does not run backwards.
TEST(ProcessUsage, SelfSampleIsThisProcess) {
  const auto a = sampleSelf();
  ASSERT_TRUE(a.has_value());
  volatile double x = 0;
  for (int i = 0; i < 1000000; ++i) x = x + i;
  const auto b = sampleSelf();
  ASSERT_TRUE(b.has_value());
  EXPECT_GT(a->rssBytes, 0);
  EXPECT_GE(b->peakRssBytes, b->rssBytes);
  EXPECT_GE(b->cpuSeconds, a->cpuSeconds);
  EXPECT_GE(b->at, a->at);
}

}  // namespace
}  // namespace cpscale::metrics
