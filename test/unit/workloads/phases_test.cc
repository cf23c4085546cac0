// The run's phase log as workload instances on several workers report into it.
#include "workloads/phases.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace cpscale::workloads {
namespace {

using std::chrono::seconds;
engine::TimePoint at(int s) { return engine::TimePoint{seconds(s)}; }

TEST(PhaseLog, SetupCompletesWhenEveryInstanceReported) {
  PhaseLog log(3);
  EXPECT_FALSE(log.setupComplete());
  log.setupDone();
  log.setupDone();
  EXPECT_EQ(log.setupPending(), 1u);
  EXPECT_FALSE(log.setupComplete());
  log.setupDone();
  EXPECT_TRUE(log.setupComplete());
  log.setupDone();  // an extra report changes nothing
  EXPECT_EQ(log.setupPending(), 0u);
}

TEST(PhaseLog, ASpanCoversEveryInstanceFromFirstBeginToLastEnd) {
  PhaseLog log(2);
  log.begin("ramp/platform/configmaps", at(5));
  log.begin("ramp/platform/configmaps", at(4));
  log.end("ramp/platform/configmaps", at(9));
  auto spans = log.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_FALSE(spans[0].ended());  // the second instance is still creating
  log.end("ramp/platform/configmaps", at(8));
  log.begin("ramp/platform/widgets.op0", at(9));
  log.end("ramp/platform/widgets.op0", at(12));
  spans = log.spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_TRUE(spans[0].ended());
  EXPECT_EQ(spans[0].start, at(4));
  EXPECT_EQ(spans[0].end, at(9));
  EXPECT_EQ(spans[1].name, "ramp/platform/widgets.op0");
  log.end("never-begun", at(1));
  EXPECT_EQ(log.spans().size(), 2u);
}

TEST(PhaseLog, ReportsFromManyThreads) {
  PhaseLog log(64);
  std::vector<std::thread> ts;
  for (int i = 0; i < 64; ++i)
    ts.emplace_back([&log, i] {
      log.begin("ramp", at(i));
      log.end("ramp", at(100 + i));
      log.setupDone();
    });
  for (auto& t : ts) t.join();
  EXPECT_TRUE(log.setupComplete());
  auto spans = log.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].start, at(0));
  EXPECT_EQ(spans[0].end, at(163));
  EXPECT_TRUE(spans[0].ended());
}

}  // namespace
}  // namespace cpscale::workloads
