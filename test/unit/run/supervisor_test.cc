// The run's supervisor in virtual time: a scripted run (when setup completes, when the
// controllers settle, when a member exits or Ctrl-C comes) and the supervisor polled
// every 10 ms on an engine, as a virtual run polls it. Each test asserts the stages it
// went through, at their exact times, and why the load stopped.
#include "sim/run/supervisor.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/simulator_impl.h"

namespace cpscale::run {
namespace {

using namespace std::chrono_literals;
using engine::TimePoint;

TimePoint at(engine::Duration d) { return TimePoint{d}; }

// The run as a script on the engine's clock.
struct ScriptedRun final : SupervisedRun {
  explicit ScriptedRun(engine::VirtualSimulator& s) : sim(s) {}
  engine::VirtualSimulator& sim;
  // Setup completes at each of these times in turn (one per stage: the scenario's, then
  // each growth's, counted from the stage's start); never when empty.
  std::vector<engine::Duration> setupTakes;
  std::optional<engine::Duration> settleTakes;  // after settling starts; never when unset
  std::optional<TimePoint> interruptAt;
  std::optional<TimePoint> crashAt;
  std::string crash = "etcd-main exited with status 2";

  std::size_t stage = 0;
  TimePoint stageStart{};
  std::optional<TimePoint> settlingSince;
  std::vector<std::pair<TimePoint, std::size_t>> windows;
  std::vector<std::pair<TimePoint, bool>> stops;

  bool interrupted() override { return interruptAt && sim.now() >= *interruptAt; }
  std::optional<std::string> crashed() override {
    if (crashAt && sim.now() >= *crashAt) return crash;
    return std::nullopt;
  }
  bool setupComplete() override { return stage < setupTakes.size() && sim.now() >= stageStart + setupTakes[stage]; }
  std::size_t setupPending() override { return 3; }
  void startSettling() override { settlingSince = sim.now(); }
  bool controllersSettled() override {
    return settleTakes && settlingSince && sim.now() >= *settlingSince + *settleTakes;
  }
  void windowStarts(TimePoint now, std::size_t step) override { windows.emplace_back(now, step); }
  void stopLoad(TimePoint now, bool boundaryRound) override { stops.emplace_back(now, boundaryRound); }
};

struct Ladder final : LadderPolicy {
  explicit Ladder(ScriptedRun& r) : run(r) {}
  ScriptedRun& run;
  std::vector<double> values{100, 200, 400};
  std::vector<bool> holds{true, true, true};
  std::vector<std::pair<std::size_t, TimePoint>> judgedAt;
  std::vector<std::size_t> grownTo;
  std::size_t steps() const override { return values.size(); }
  std::string stepName(std::size_t step) const override { return std::to_string(static_cast<int>(values[step])); }
  std::string knob() const override { return "fleet.nodes"; }
  engine::Duration hold() const override { return 20s; }
  Verdict judge(std::size_t step, TimePoint, TimePoint end) override {
    judgedAt.emplace_back(step, end);
    return {holds[step], holds[step] ? "" : "write_qps >= 50"};
  }
  void grow(std::size_t toStep) override {
    grownTo.push_back(toStep);
    run.stage = toStep;
    run.stageStart = run.sim.now();
    run.settlingSince.reset();
  }
};

struct Shards final : ShardPolicy {
  std::optional<TimePoint> publishedAt;  // shard 0 publishes then ...
  TimePoint start{};                     // ... this start
  std::vector<std::size_t> late{1, 2};
  engine::VirtualSimulator* sim = nullptr;
  std::optional<TimePoint> sharedStart(TimePoint now) override {
    if (publishedAt && now >= *publishedAt) return start;
    return std::nullopt;
  }
  std::vector<std::size_t> notReady() const override { return late; }
};

struct Faults final : FaultPolicy {
  std::optional<TimePoint> strikesFrom;
  std::vector<std::string> recovered;
  void strikeFrom(TimePoint windowStart) override { strikesFrom = windowStart; }
  void recover(const std::string& member, const std::string&) override { recovered.push_back(member); }
};

SupervisorOptions options() {
  SupervisorOptions o;
  o.setupTimeout = 60s;
  o.warmup = 10s;
  o.duration = 30s;
  o.settleLimit = 2min;
  o.instances = 4;
  return o;
}

// An engine, and the run scripted on its clock.
class SupervisorTest : public ::testing::Test {
 protected:
  engine::VirtualSimulator sim;
  ScriptedRun run{sim};
};

// Polls the supervisor every 10 ms from t = 0 until it says the load is over (at most
// an hour of virtual time).
void supervise(engine::VirtualSimulator& sim, Supervisor& sup) {
  std::function<void()> pass = [&] {
    if (sup.tick(sim.now())) sim.scheduleAfter(10ms, pass);
  };
  sim.scheduleAfter(0ms, pass);
  sim.runUntil(at(1h));
}

using Stages = std::vector<std::pair<std::string, TimePoint>>;
Stages stagesOf(const Supervisor& sup) {
  Stages out;
  for (const auto& t : sup.transitions()) out.emplace_back(std::string(toString(t.stage)), t.at);
  return out;
}

TEST_F(SupervisorTest, ASteadyRunGoesThroughEveryStageOnTime) {
  run.setupTakes = {3s};
  run.settleTakes = 2s;
  Supervisor sup(options(), run);
  supervise(sim, sup);
  EXPECT_EQ(
      stagesOf(sup),
      (Stages{{"setup", at(0s)}, {"settle", at(3s)}, {"warmup", at(5s)}, {"steady", at(15s)}, {"over", at(45s)}}));
  const RunTimeline& tl = sup.timeline();
  EXPECT_EQ(tl.endReason, EndReason::kWindowRan);
  EXPECT_EQ(tl.cut, "");
  EXPECT_EQ(tl.workloadsReady, at(3s));
  EXPECT_EQ(tl.ready, at(5s));
  EXPECT_TRUE(tl.settledInTime);
  EXPECT_EQ(tl.steadyStart, at(15s));
  EXPECT_EQ(tl.end, at(45s));
  EXPECT_EQ(run.windows, (std::vector<std::pair<TimePoint, std::size_t>>{{at(15s), 0}}));
  // The end takes a boundary round.
  EXPECT_EQ(run.stops, (std::vector<std::pair<TimePoint, bool>>{{at(45s), true}}));
  EXPECT_TRUE(sup.ladderPhases().empty());
  // Over is over: a later pass does nothing.
  EXPECT_FALSE(sup.tick(at(50s)));
  EXPECT_EQ(run.stops.size(), 1u);
}

TEST_F(SupervisorTest, ControllersThatNeverSettleDelayTheWindowBySettleLimitOnly) {
  run.setupTakes = {3s};
  Supervisor sup(options(), run);
  supervise(sim, sup);
  EXPECT_EQ(sup.timeline().ready, at(123s));
  EXPECT_FALSE(sup.timeline().settledInTime);
  EXPECT_EQ(sup.timeline().steadyStart, at(133s));
  EXPECT_EQ(sup.timeline().endReason, EndReason::kWindowRan);
}

TEST_F(SupervisorTest, NoWarmupAndIdleControllersStartTheWindowInTheSamePass) {
  run.setupTakes = {3s};
  run.settleTakes = 0s;
  SupervisorOptions o = options();
  o.warmup = 0s;
  Supervisor sup(o, run);
  supervise(sim, sup);
  EXPECT_EQ(stagesOf(sup),
            (Stages{{"setup", at(0s)}, {"settle", at(3s)}, {"warmup", at(3s)}, {"steady", at(3s)}, {"over", at(33s)}}));
}

TEST_F(SupervisorTest, ASetupThatNeverFinishesIsCutAtTheTimeoutSayingHowManyAreLeft) {
  Supervisor sup(options(), run);
  supervise(sim, sup);
  const RunTimeline& tl = sup.timeline();
  EXPECT_EQ(tl.endReason, EndReason::kSetupTimedOut);
  EXPECT_EQ(tl.end, at(60s));
  EXPECT_EQ(tl.cut,
            "setup did not finish within 1m (3 of 4 workload instances still setting up; see the workloads' "
            "summaries)");
  EXPECT_FALSE(tl.steadyStart);
  EXPECT_TRUE(run.windows.empty());
  EXPECT_EQ(run.stops, (std::vector<std::pair<TimePoint, bool>>{{at(60s), true}}));
}

TEST_F(SupervisorTest, CtrlCCutsTheWindow) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  run.interruptAt = at(20s);
  Supervisor sup(options(), run);
  supervise(sim, sup);
  EXPECT_EQ(sup.timeline().endReason, EndReason::kInterrupted);
  EXPECT_EQ(sup.timeline().cut, "interrupted");
  EXPECT_EQ(sup.timeline().end, at(20s));
  EXPECT_EQ(sup.timeline().steadyStart, at(11s));
}

TEST_F(SupervisorTest, AMemberThatExitsCutsTheRunWithAnIncident) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  run.crashAt = at(30s);
  Supervisor sup(options(), run);
  supervise(sim, sup);
  const RunTimeline& tl = sup.timeline();
  EXPECT_EQ(tl.endReason, EndReason::kMemberExited);
  EXPECT_EQ(tl.cut, "etcd-main exited during the run");
  EXPECT_EQ(tl.end, at(30s));
  ASSERT_EQ(tl.incidents.size(), 1u);
  EXPECT_EQ(tl.incidents[0].kind, "member-exited");
  EXPECT_EQ(tl.incidents[0].member, "etcd-main");
  EXPECT_DOUBLE_EQ(tl.incidents[0].atSeconds, 30);
}

TEST_F(SupervisorTest, RehearsingFaultsAMemberThatExitsInTheWindowIsStartedAgain) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  run.crashAt = at(30s);
  Faults faults;
  Supervisor sup(options(), run, nullptr, nullptr, &faults);
  // The member is back after one pass.
  sim.scheduleAt(at(30s) + 5ms, [&] { run.crashAt.reset(); });
  supervise(sim, sup);
  EXPECT_EQ(faults.strikesFrom, at(11s));
  EXPECT_EQ(faults.recovered, (std::vector<std::string>{"etcd-main"}));
  EXPECT_EQ(sup.timeline().endReason, EndReason::kWindowRan);
  EXPECT_EQ(sup.timeline().end, at(41s));
}

TEST_F(SupervisorTest, RehearsingFaultsAMemberThatExitsDuringSetupStillCutsTheRun) {
  run.setupTakes = {20s};
  run.crashAt = at(5s);
  Faults faults;
  Supervisor sup(options(), run, nullptr, nullptr, &faults);
  supervise(sim, sup);
  EXPECT_TRUE(faults.recovered.empty());
  EXPECT_FALSE(faults.strikesFrom);
  EXPECT_EQ(sup.timeline().endReason, EndReason::kMemberExited);
}

TEST_F(SupervisorTest, TheWindowWaitsForTheEarliestStartAValidationAsksFor) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  SupervisorOptions o = options();
  o.earliestSteadyStart = at(40s);
  Supervisor sup(o, run);
  supervise(sim, sup);
  EXPECT_EQ(sup.timeline().steadyStart, at(40s));
  EXPECT_EQ(sup.timeline().end, at(70s));
}

TEST_F(SupervisorTest, ACapacityLadderGrowsAfterEachStepThatHeldAndStopsAtTheFirstThatDidNot) {
  run.setupTakes = {2s, 4s, 4s};
  run.settleTakes = 1s;
  Ladder ladder(run);
  ladder.holds = {true, false, true};
  Supervisor sup(options(), run, &ladder);
  supervise(sim, sup);
  // step 100: setup 2 s, settle 1 s, warmup 10 s, hold 20 s: 13 s .. 33 s; grow to 200:
  // setup 4 s, settle 1 s, warmup 10 s: window 48 s .. 68 s, did not hold.
  EXPECT_EQ(stagesOf(sup), (Stages{{"setup", at(0s)},
                                   {"settle", at(2s)},
                                   {"warmup", at(3s)},
                                   {"steady", at(13s)},
                                   {"setup", at(33s)},
                                   {"settle", at(37s)},
                                   {"warmup", at(38s)},
                                   {"steady", at(48s)},
                                   {"over", at(68s)}}));
  EXPECT_EQ(ladder.grownTo, (std::vector<std::size_t>{1}));
  EXPECT_EQ(ladder.judgedAt, (std::vector<std::pair<std::size_t, TimePoint>>{{0, at(33s)}, {1, at(68s)}}));
  EXPECT_EQ(run.windows, (std::vector<std::pair<TimePoint, std::size_t>>{{at(13s), 0}, {at(48s), 1}}));
  // The judged step took the boundary round.
  EXPECT_EQ(run.stops, (std::vector<std::pair<TimePoint, bool>>{{at(68s), false}}));
  const RunTimeline& tl = sup.timeline();
  EXPECT_EQ(tl.endReason, EndReason::kLadderOver);
  EXPECT_EQ(tl.cut, "");
  EXPECT_EQ(tl.steadyStart, at(13s));
  const auto& ph = sup.ladderPhases();
  ASSERT_EQ(ph.size(), 3u);
  EXPECT_EQ(ph[0].name, "step/100");
  EXPECT_EQ(ph[0].detail, "held");
  EXPECT_EQ(ph[1].name, "grow/200");
  EXPECT_DOUBLE_EQ(ph[1].startSeconds, 33);
  EXPECT_DOUBLE_EQ(ph[1].endSeconds, 48);
  EXPECT_EQ(ph[2].name, "step/200");
  EXPECT_EQ(ph[2].detail, "did not hold: write_qps >= 50");
}

TEST_F(SupervisorTest, ALadderWhoseEveryStepHeldEndsAfterTheLast) {
  run.setupTakes = {1s, 1s, 1s};
  run.settleTakes = 0s;
  Ladder ladder(run);
  Supervisor sup(options(), run, &ladder);
  supervise(sim, sup);
  EXPECT_EQ(ladder.grownTo, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(ladder.judgedAt.size(), 3u);
  EXPECT_EQ(sup.timeline().endReason, EndReason::kLadderOver);
  EXPECT_EQ(sup.timeline().end, at(3 * 31s));
}

TEST_F(SupervisorTest, AGrowthWhoseSetupNeverFinishesCutsTheLadder) {
  run.setupTakes = {1s};  // the growth to 200 never completes
  run.settleTakes = 0s;
  Ladder ladder(run);
  Supervisor sup(options(), run, &ladder);
  supervise(sim, sup);
  const RunTimeline& tl = sup.timeline();
  EXPECT_EQ(tl.endReason, EndReason::kGrowthSetupTimedOut);
  EXPECT_EQ(tl.end, at(31s + 60s));
  EXPECT_EQ(tl.cut, "growing fleet.nodes to 200 did not finish its setup within 1m");
  const auto& ph = sup.ladderPhases();
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[1].name, "grow/200");
  EXPECT_FALSE(ph[1].complete);
  EXPECT_EQ(ph[1].detail, "setup did not finish");
}

TEST_F(SupervisorTest, AShardedRunStartsItsWindowAtTheSharedStart) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  Shards shards;
  shards.publishedAt = at(20s);
  shards.start = at(22s);
  Supervisor sup(options(), run, nullptr, &shards);
  supervise(sim, sup);
  EXPECT_EQ(sup.timeline().steadyStart, at(22s));
  EXPECT_EQ(sup.timeline().end, at(52s));
}

TEST_F(SupervisorTest, AShardThatNeverBecomesReadyCutsTheRunNamingIt) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  Shards shards;
  Supervisor sup(options(), run, nullptr, &shards);
  supervise(sim, sup);
  const RunTimeline& tl = sup.timeline();
  EXPECT_EQ(tl.endReason, EndReason::kShardsNotReady);
  // Ready at 1 s, warmup 10 s, then setupTimeout.
  EXPECT_EQ(tl.end, at(71s));
  EXPECT_EQ(tl.cut, "shards 1, 2 did not become ready within 1m");
  EXPECT_FALSE(tl.steadyStart);
}

TEST_F(SupervisorTest, TheLoadRunningOutOfItsBudgetEndsTheTimelineThere) {
  run.setupTakes = {1s};
  run.settleTakes = 0s;
  Supervisor sup(options(), run);
  EXPECT_TRUE(sup.tick(at(0s)));
  EXPECT_TRUE(sup.tick(at(0s)));
  sup.loadOver(at(5s));
  EXPECT_EQ(sup.stage(), Stage::kOver);
  EXPECT_EQ(sup.timeline().end, at(5s));
  EXPECT_EQ(sup.timeline().endReason, EndReason::kLoadDeadline);
  EXPECT_FALSE(sup.tick(at(6s)));
  // A supervisor that had ended the load keeps its end.
  sup.loadOver(at(9s));
  EXPECT_EQ(sup.timeline().end, at(5s));
}

TEST_F(SupervisorTest, StageNamesFollowTheLadder) {
  run.setupTakes = {0s, 60s};
  run.settleTakes = 0s;
  Ladder ladder(run);
  Supervisor sup(options(), run, &ladder);
  EXPECT_EQ(sup.stageName(), "setup");
  sup.tick(at(0s));
  sup.tick(at(10s));
  EXPECT_EQ(sup.stageName(), "step/100");
  sup.tick(at(30s));
  EXPECT_EQ(sup.stageName(), "grow/200");
}

}  // namespace
}  // namespace cpscale::run
