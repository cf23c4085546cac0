// One capacity step, as the model's search and a live ladder build and read it: the
// step's scenario from the probe, and the steps a finished run held.
#include "sim/run/capacity_step.h"

#include <gtest/gtest.h>

#include "test/support/scenario_files.h"

namespace cpscale::run {
namespace {

using namespace std::chrono_literals;

const char* kProbe =
    "name: probe\n"
    "duration: 60s\n"
    "warmup: 5s\n"
    "workloads:\n"
    "  - kind: kubelets\n"
    "    name: fleet\n"
    "    count: 10\n"
    "capacity:\n"
    "  knob: workloads.fleet.count\n"
    "  start: 100\n"
    "  max: 800\n"
    "  hold: 20s\n"
    "  settle: 10s\n"
    "  gates: [\"write_qps <= 600\"]\n";

class CapacityStepTest : public scenario::testing::ScenarioFileTest {};

TEST_F(CapacityStepTest, AStepAloneHoldsForHoldAfterSettleAndWarmupAGrowingOneSetsTheKnobOnly) {
  const scenario::Scenario probe = scenario::loadScenario(write(kProbe));
  const scenario::Scenario alone = stepScenario(probe, 400, StepRun::kAlone);
  EXPECT_EQ(alone.effective["workloads"][0]["count"], 400);
  EXPECT_EQ(alone.duration, 20s);
  EXPECT_EQ(alone.warmup, 15s);
  ASSERT_TRUE(alone.capacity);
  EXPECT_EQ(alone.capacity->knob, probe.capacity->knob);
  const scenario::Scenario growing = stepScenario(probe, 400, StepRun::kGrowing);
  EXPECT_EQ(growing.effective["workloads"][0]["count"], 400);
  EXPECT_EQ(growing.duration, 60s);
  EXPECT_EQ(growing.warmup, 5s);
  // As the file with the same values set as text would say it (what result.json records).
  EXPECT_EQ(
      alone.effective,
      scenario::loadScenario(write(kProbe), {{"workloads.fleet.count", "400"}, {"duration", "20s"}, {"warmup", "15s"}})
          .effective);
  // The probe is as it was.
  EXPECT_EQ(probe.effective["workloads"][0]["count"], 10);
  EXPECT_EQ(probe.duration, 60s);
  EXPECT_EQ(probe.warmup, 5s);
}

// A run that ended with `status`; its steady window [12 s, 32 s] wrote `steadyWriteQps`.
result::RunResult finished(result::RunStatus status, double steadyWriteQps) {
  result::RunResult r;
  r.status = status;
  r.statusDetail = status == result::RunStatus::kCompleted ? "" : "stopped";
  r.phases.push_back({"setup", 0, 12, true, ""});
  r.phases.push_back({"steady", 12, 32, true, ""});
  auto add = [&](metrics::Window w, double v) {
    r.figures.push_back(metrics::Figure::measured("write_qps", {}, v, "1/s", metrics::Source::kModel));
    r.figures.back().window = w;
  };
  add(metrics::Window::kSetup, 1e6);  // not the step's
  add(metrics::Window::kSteady, steadyWriteQps);
  return r;
}

TEST_F(CapacityStepTest, ARunAloneIsTheStepOverItsSteadyWindow) {
  const scenario::Scenario probe = scenario::loadScenario(write(kProbe));
  StepsOutcome o = stepsOf(finished(result::RunStatus::kCompleted, 700), 400, *probe.capacity);
  ASSERT_EQ(o.steps.size(), 1u);
  EXPECT_FALSE(o.stopped);
  EXPECT_EQ(o.steps[0].value, 400);
  EXPECT_EQ(o.steps[0].startSeconds, 12);
  EXPECT_EQ(o.steps[0].endSeconds, 32);
  EXPECT_FALSE(o.steps[0].held);  // write_qps <= 600
  EXPECT_NE(o.steps[0].brokeBy.find("write_qps <= 600"), std::string::npos) << o.steps[0].brokeBy;
  ASSERT_EQ(o.steps[0].figures.size(), 1u);
  EXPECT_EQ(o.steps[0].figures[0].window, metrics::Window::kSteady);
  EXPECT_TRUE(stepsOf(finished(result::RunStatus::kCompleted, 500), 400, *probe.capacity).steps[0].held);

  o = stepsOf(finished(result::RunStatus::kInterrupted, 100), 400, *probe.capacity);
  EXPECT_TRUE(o.steps.empty());
  EXPECT_EQ(o.stopped, result::CapacityLimit::kInterrupted);
  EXPECT_EQ(o.detail, "stopped");
}

TEST_F(CapacityStepTest, AGrowingRunGivesTheStepsItJudged) {
  const scenario::Scenario probe = scenario::loadScenario(write(kProbe));
  result::RunResult r = finished(result::RunStatus::kFailed, 100);
  r.capacity.emplace();
  r.capacity->steps.resize(2);
  r.capacity->steps[0].value = 100;
  r.capacity->steps[1].value = 200;
  StepsOutcome o = stepsOf(r, 100, *probe.capacity);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[1].value, 200);
  EXPECT_EQ(o.stopped, result::CapacityLimit::kFailed);
  EXPECT_EQ(o.detail, "stopped");
}

}  // namespace
}  // namespace cpscale::run
