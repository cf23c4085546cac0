#include "sim/run/supervisor.h"

#include <chrono>

#include "sim/common/duration.h"

namespace cpscale::run {

std::string_view toString(Stage s) {
  switch (s) {
    case Stage::kSetup: return "setup";
    case Stage::kSettle: return "settle";
    case Stage::kWarmup: return "warmup";
    case Stage::kSteady: return "steady";
    case Stage::kOver: return "over";
  }
  return "?";
}

std::string_view toString(EndReason r) {
  switch (r) {
    case EndReason::kNone: return "none";
    case EndReason::kWindowRan: return "window-ran";
    case EndReason::kLadderOver: return "ladder-over";
    case EndReason::kInterrupted: return "interrupted";
    case EndReason::kMemberExited: return "member-exited";
    case EndReason::kSetupTimedOut: return "setup-timed-out";
    case EndReason::kShardsNotReady: return "shards-not-ready";
    case EndReason::kGrowthSetupTimedOut: return "growth-setup-timed-out";
    case EndReason::kLoadDeadline: return "load-deadline";
  }
  return "?";
}

double secondsAt(engine::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

Supervisor::Supervisor(SupervisorOptions options, SupervisedRun& run, LadderPolicy* ladder, ShardPolicy* shards,
                       FaultPolicy* faults)
    : o_(std::move(options)), run_(run), ladder_(ladder), shards_(shards), faults_(faults) {}

std::string Supervisor::stageName() const {
  if (ladder_ && stage_ == Stage::kSteady) return "step/" + ladder_->stepName(step_);
  if (ladder_ && step_ > 0 && stage_ != Stage::kOver) return "grow/" + ladder_->stepName(step_);
  return std::string(toString(stage_));
}

std::string Supervisor::controllersBehind() const {
  return "the controller-manager's workqueues were not empty after " + formatDuration(o_.settleLimit) +
         "; the window started anyway";
}

void Supervisor::enter(Stage s, engine::TimePoint now) {
  stage_ = s;
  transitions_.push_back({s, step_, now});
}

bool Supervisor::tick(engine::TimePoint now) {
  if (!started_) {
    started_ = true;
    transitions_.push_back({Stage::kSetup, 0, now});
  }
  if (stage_ == Stage::kOver) return false;
  if (run_.interrupted()) return cut(now, EndReason::kInterrupted, "interrupted");
  if (auto how = run_.crashed()) return memberExited(now, *how);
  // One pass may go through several stages (no warmup, controllers already idle).
  if (stage_ == Stage::kSetup) setup(now);
  if (stage_ == Stage::kSettle) settle(now);
  if (stage_ == Stage::kWarmup && !warmup(now)) return false;
  if (stage_ == Stage::kSetup && !setupTimedOut(now)) return false;
  if (stage_ == Stage::kSteady) return window(now);
  return true;
}

void Supervisor::loadOver(engine::TimePoint now) {
  if (tl_.end) return;
  tl_.end = now;
  tl_.endReason = EndReason::kLoadDeadline;
  enter(Stage::kOver, now);
}

bool Supervisor::cut(engine::TimePoint now, EndReason why, std::string detail) {
  tl_.end = now;
  tl_.endReason = why;
  tl_.cut = std::move(detail);
  run_.stopLoad(now, true);
  enter(Stage::kOver, now);
  return false;
}

bool Supervisor::memberExited(engine::TimePoint now, const std::string& how) {
  const std::string member = how.substr(0, how.find(' '));
  // Rehearsing faults, a member that exits in the steady window (a controller that lost
  // its leader Lease while its apiserver was down) is started again, as its kubelet
  // would, and the run goes on.
  if (faults_ && tl_.steadyStart) {
    faults_->recover(member, how);
    return true;
  }
  tl_.incidents.push_back({"member-exited", member, secondsAt(now), how, std::nullopt});
  return cut(now, EndReason::kMemberExited, member + " exited during the run");
}

void Supervisor::setup(engine::TimePoint now) {
  if (!run_.setupComplete()) return;
  workloadsReady_ = now;
  run_.startSettling();
  enter(Stage::kSettle, now);
}

void Supervisor::settle(engine::TimePoint now) {
  const bool settled = run_.controllersSettled();
  if (!settled && now < *workloadsReady_ + o_.settleLimit) return;
  ready_ = now;
  settled_ = settled;
  if (step_ == 0) {
    tl_.workloadsReady = workloadsReady_;
    tl_.ready = now;
    tl_.settledInTime = settled;
  }
  enter(Stage::kWarmup, now);
}

bool Supervisor::warmup(engine::TimePoint now) {
  if (now < *ready_ + o_.warmup) return true;
  if (shards_ && !sharedStart_) {
    sharedStart_ = shards_->sharedStart(now);
    if (!sharedStart_ && now >= *ready_ + o_.warmup + o_.setupTimeout) {
      const auto late = shards_->notReady();
      std::string list;
      for (std::size_t i : late) list += (list.empty() ? "" : ", ") + std::to_string(i);
      return cut(now, EndReason::kShardsNotReady,
                 "shard" + std::string(late.size() == 1 ? " " : "s ") + list + " did not become ready within " +
                     formatDuration(o_.setupTimeout));
    }
  }
  if (step_ == 0 && o_.earliestSteadyStart && now < *o_.earliestSteadyStart) return true;
  if (shards_ && (!sharedStart_ || now < *sharedStart_)) return true;
  windowStart_ = now;
  run_.windowStarts(now, step_);
  if (step_ == 0) {
    tl_.steadyStart = now;
    if (faults_) faults_->strikeFrom(now);
  } else {
    ladderPhases_.push_back({"grow/" + ladder_->stepName(step_), secondsAt(stageStart_), secondsAt(now), true,
                             settled_ ? "" : controllersBehind()});
  }
  enter(Stage::kSteady, now);
  return true;
}

bool Supervisor::setupTimedOut(engine::TimePoint now) {
  if (now < stageStart_ + o_.setupTimeout) return true;
  if (step_ == 0)
    return cut(now, EndReason::kSetupTimedOut,
               "setup did not finish within " + formatDuration(o_.setupTimeout) + " (" +
                   std::to_string(run_.setupPending()) + " of " + std::to_string(o_.instances) +
                   " workload instances still setting up; see the workloads' summaries)");
  ladderPhases_.push_back(
      {"grow/" + ladder_->stepName(step_), secondsAt(stageStart_), secondsAt(now), false, "setup did not finish"});
  return cut(now, EndReason::kGrowthSetupTimedOut,
             "growing " + ladder_->knob() + " to " + ladder_->stepName(step_) + " did not finish its setup within " +
                 formatDuration(o_.setupTimeout));
}

bool Supervisor::window(engine::TimePoint now) {
  if (now < *windowStart_ + (ladder_ ? ladder_->hold() : o_.duration)) return true;
  if (!ladder_) return cut(now, EndReason::kWindowRan, "");
  const LadderPolicy::Verdict v = ladder_->judge(step_, *windowStart_, now);
  ladderPhases_.push_back({"step/" + ladder_->stepName(step_), secondsAt(*windowStart_), secondsAt(now), true,
                           v.held ? "held" : "did not hold: " + v.brokeBy});
  if (!v.held || step_ + 1 == ladder_->steps()) {
    tl_.end = now;
    tl_.endReason = EndReason::kLadderOver;
    run_.stopLoad(now, false);
    enter(Stage::kOver, now);
    return false;
  }
  // Grow in place: the next window waits for the growth's setup, as the first waited
  // for the scenario's.
  ++step_;
  stageStart_ = now;
  workloadsReady_.reset();
  ready_.reset();
  windowStart_.reset();
  ladder_->grow(step_);
  enter(Stage::kSetup, now);
  return true;
}

}  // namespace cpscale::run
