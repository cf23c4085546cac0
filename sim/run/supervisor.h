// The run's supervisor: an explicit state machine over a run's stages, on whatever
// clock the run has (a thread polling the wall clock live, an event on the engine in
// virtual time). It only decides; what a decision does to the load, the scrapes and
// the target is the run's (SupervisedRun), and the capacity ladder, the shards' shared
// window and fault recovery are policies it consults when the run has them.
//
//   setup ──▶ settle ──▶ warmup ──▶ steady ──▶ over
//     ▲                                │  (a capacity ladder: the window is step/N;
//     └──────────── grow/N+1 ◀─────────┘   a step that held grows the knob in place)
//
//   setup    every workload instance of the stage reports its setup done
//            (cut: setupTimeout from the stage's start)
//   settle   the controller-manager's workqueues empty twice in a row, or settleLimit
//   warmup   warmup after that; a sharded run waits for the start shard 0 publishes
//            (cut: a shard not ready within setupTimeout), and a validation run for
//            earliestSteadyStart
//   steady   the measured window: `duration`, or a ladder step's `hold`
//   over     the load stopped: the window ran its course, the ladder is over, or the
//            run was cut (Ctrl-C, a member that exited, a setup that never finished)
//
// A member that exits in the steady window of a run rehearsing faults is started
// again (the fault policy) and the run goes on; anywhere else it cuts the run.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/result/result.h"

namespace cpscale::run {

enum class Stage { kSetup, kSettle, kWarmup, kSteady, kOver };
std::string_view toString(Stage s);

// Why the load stopped. The first two are a run that ran its course.
enum class EndReason {
  kNone,                 // not over yet
  kWindowRan,            // the steady window ran its duration
  kLadderOver,           // a capacity ladder's last step held, or a step did not
  kInterrupted,          // Ctrl-C
  kMemberExited,         // a member of the target exited
  kSetupTimedOut,        // the scenario's setup did not finish within setupTimeout
  kShardsNotReady,       // a shard did not become ready within setupTimeout
  kGrowthSetupTimedOut,  // a capacity step's growth did not finish its setup
  kLoadDeadline,         // the load ran out of its time budget before the supervisor ended it
};
std::string_view toString(EndReason r);

// What the supervisor saw: when setup was over, when the steady window started and
// when the load stopped, and why it stopped early if it did.
struct RunTimeline {
  std::optional<engine::TimePoint> workloadsReady;  // every workload's setup was over
  std::optional<engine::TimePoint> ready;           // ... and the controllers had settled (or settleLimit passed)
  bool settledInTime = true;
  std::optional<engine::TimePoint> steadyStart;  // ready + warmup
  std::optional<engine::TimePoint> end;          // the load stopped
  EndReason endReason = EndReason::kNone;
  std::string cut;  // set when the run was cut short: what the user is told
  std::vector<result::Incident> incidents;
};

// What the supervisor reads of the run and does to it.
class SupervisedRun {
 public:
  virtual ~SupervisedRun() = default;
  virtual bool interrupted() = 0;
  // A member of the target that exited ("etcd-main exited ..."), or none.
  virtual std::optional<std::string> crashed() = 0;
  // Whether every workload instance of the current stage reported its setup done, and
  // how many have not (for the message of a setup that never finishes).
  virtual bool setupComplete() = 0;
  virtual std::size_t setupPending() = 0;
  // Settling: start watching the controllers; whether they are idle.
  virtual void startSettling() = 0;
  virtual bool controllersSettled() = 0;
  // The window of `step` (0 without a ladder) starts at `now`.
  virtual void windowStarts(engine::TimePoint now, std::size_t step) = 0;
  // The load stops at `now`; `boundaryRound`: take a scrape round at the end (a
  // ladder's judged step took one already).
  virtual void stopLoad(engine::TimePoint now, bool boundaryRound) = 0;
};

// A capacity ladder: each step holds for `hold()`, is judged when it ends, and one
// that held grows the knob to the next step in place.
class LadderPolicy {
 public:
  struct Verdict {
    bool held = false;
    std::string brokeBy;  // the gate that did not hold
  };
  virtual ~LadderPolicy() = default;
  virtual std::size_t steps() const = 0;
  virtual std::string stepName(std::size_t step) const = 0;  // the knob's value
  virtual std::string knob() const = 0;
  virtual engine::Duration hold() const = 0;
  virtual Verdict judge(std::size_t step, engine::TimePoint start, engine::TimePoint end) = 0;
  virtual void grow(std::size_t toStep) = 0;
};

// A sharded run: every shard's window starts at the instant shard 0 publishes once
// every shard is ready.
class ShardPolicy {
 public:
  virtual ~ShardPolicy() = default;
  // Called on each pass once this shard could start; the shared start once known.
  virtual std::optional<engine::TimePoint> sharedStart(engine::TimePoint now) = 0;
  virtual std::vector<std::size_t> notReady() const = 0;
};

// A run rehearsing faults: they strike on the window's clock, and a member that exits
// in the window is started again.
class FaultPolicy {
 public:
  virtual ~FaultPolicy() = default;
  virtual void strikeFrom(engine::TimePoint windowStart) = 0;
  virtual void recover(const std::string& member, const std::string& how) = 0;
};

struct SupervisorOptions {
  engine::Duration setupTimeout{};
  engine::Duration warmup{};
  engine::Duration duration{};                           // the steady window (without a ladder)
  engine::Duration settleLimit{};                        // how long settling waits for the controllers
  std::optional<engine::TimePoint> earliestSteadyStart;  // the first window, no earlier
  std::size_t instances = 0;                             // workload instances (for the setup-timeout message)
};

class Supervisor {
 public:
  struct Transition {
    Stage stage;
    std::size_t step;
    engine::TimePoint at;
  };

  Supervisor(SupervisorOptions options, SupervisedRun& run, LadderPolicy* ladder = nullptr,
             ShardPolicy* shards = nullptr, FaultPolicy* faults = nullptr);

  // One pass at `now`; false once the load is over.
  bool tick(engine::TimePoint now);
  // The load is over whatever the supervisor decided (its time budget ran out, or the
  // workers failed): records `now` as the end unless it has one.
  void loadOver(engine::TimePoint now);

  Stage stage() const { return stage_; }
  std::size_t step() const { return step_; }
  // "setup", "steady", ... ; with a ladder "grow/<value>" and "step/<value>".
  std::string stageName() const;
  const RunTimeline& timeline() const { return tl_; }
  // A ladder's phases: each growth ("grow/<value>") and each judged step ("step/<value>").
  const std::vector<result::Phase>& ladderPhases() const { return ladderPhases_; }
  // Every stage entered, in order, with the step and the time.
  const std::vector<Transition>& transitions() const { return transitions_; }
  // The message of a step that waited settleLimit for the controllers.
  std::string controllersBehind() const;
  engine::Duration settleLimit() const { return o_.settleLimit; }

 private:
  void enter(Stage s, engine::TimePoint now);
  bool cut(engine::TimePoint now, EndReason why, std::string detail);
  bool memberExited(engine::TimePoint now, const std::string& how);
  void setup(engine::TimePoint now);
  void settle(engine::TimePoint now);
  bool warmup(engine::TimePoint now);
  bool window(engine::TimePoint now);
  bool setupTimedOut(engine::TimePoint now);

  SupervisorOptions o_;
  SupervisedRun& run_;
  LadderPolicy* ladder_;
  ShardPolicy* shards_;
  FaultPolicy* faults_;

  Stage stage_ = Stage::kSetup;
  bool started_ = false;
  std::size_t step_ = 0;
  // The current stage (the scenario's, or a growth's from stageStart_).
  engine::TimePoint stageStart_{};
  std::optional<engine::TimePoint> workloadsReady_, ready_, windowStart_, sharedStart_;
  bool settled_ = true;
  RunTimeline tl_;
  std::vector<result::Phase> ladderPhases_;
  std::vector<Transition> transitions_;
};

double secondsAt(engine::TimePoint t);

}  // namespace cpscale::run
