// The two Simulator engines. They share the queue, the slot tables and the run loop
// (SimulatorBase) and differ only in how they reach an event's time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sim/engine/event_queue.h"
#include "sim/engine/huge_page_allocator.h"
#include "sim/engine/periodic_timer.h"
#include "sim/engine/simulator.h"

namespace cpscale::engine {

class SimulatorBase : public Simulator {
 public:
  TimePoint now() const override;
  EventId scheduleAt(TimePoint t, Callback fn) override;
  void cancel(EventId id) override;
  void run() override { loop(false, TimePoint{}); }
  void runUntil(TimePoint t) override { loop(true, t); }
  void stop() override { stopRequested_.store(true, std::memory_order_relaxed); }
  bool running() const override { return loopDepth_ > 0; }
  std::size_t pending() const override { return liveOneShots_ + armedTimers_; }
  // From the engine's thread, or from any thread once run()/runUntil() has returned.
  const SimulatorStats& stats() const override {
    flushLag();
    return stats_;
  }
  std::size_t memoryBytes() const override;
  void setIdleHook(IdleHook hook) override { idleHook_ = std::move(hook); }

 protected:
  // `clock` may be a member of the derived class: it is not used here.
  SimulatorBase(Clock& clock, TimePoint start, EventQueueOptions queue);
  // Returns true once clock() has reached `t`; false if the caller should look at the
  // queue again first (an idle hook ran and may have scheduled something earlier).
  virtual bool reach(TimePoint t) = 0;

  void armTimer(PeriodicTimer& timer, TimePoint at) override;
  void disarmTimer(PeriodicTimer& timer) override;

  bool stopRequested() const { return stopRequested_.load(std::memory_order_relaxed); }

  Clock& clock_;
  IdleHook idleHook_;
  // Paced mode, inside the idle hook: now() is the actual time, capped at the deadline
  // so that it never passes an event that has not run yet.
  bool idle_ = false;
  TimePoint idleDeadline_{};

 private:
  static constexpr std::uint32_t kTimerRef = 0x8000'0000u;
  struct OneShotSlot {
    Callback fn;
    std::uint32_t gen = 1;
    std::uint32_t nextFree = 0;
  };
  // A timer's queued entry carries the timer's address; the slot only says whether
  // that entry is still live (its generation), so a stopped or destroyed timer is
  // never dereferenced. 8 bytes: 10^6 of them are 8 MB, mostly cache-resident.
  struct TimerSlot {
    std::uint32_t gen = 1;
    std::uint32_t nextFree = 0;
  };
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  // How many events ahead prefetchUpcoming() requests a timer, and its actor.
  // 24 events ahead (a few us at the target rate) covers a TLB-missing access on the
  // 2-core VM the benchmark was tuned on; 12 leaves time for the actor after that.
  static constexpr std::size_t kPrefetchTimer = 24;
  static constexpr std::size_t kPrefetchActor = 12;

  void loop(bool bounded, TimePoint until);
  // Pops entries whose event was cancelled; false when the queue is then empty.
  bool dropStale();
  void dispatch(const QueuedEvent& e);
  void prefetchUpcoming() const;
  std::uint64_t nextSeq() { return seq_++; }

  EventQueue queue_;
  std::vector<OneShotSlot, HugePageHintAllocator<OneShotSlot>> oneShots_;
  std::uint32_t freeOneShot_ = kNone;
  std::vector<TimerSlot, HugePageHintAllocator<TimerSlot>> timers_;
  std::uint32_t freeTimer_ = kNone;
  std::size_t liveOneShots_ = 0;
  std::size_t armedTimers_ = 0;
  std::uint64_t seq_ = 0;
  std::int64_t now_ = 0;
  int loopDepth_ = 0;  // run()/runUntil() calls on the stack
  std::atomic<bool> stopRequested_{false};
  // Events that ran on time, not yet added to stats_.lag: recording a zero per event
  // cost more than the rest of a fire, and a histogram does not care about order.
  void flushLag() const {
    if (onTime_ != 0) stats_.lag.record(0, std::exchange(onTime_, 0));
  }
  mutable std::uint64_t onTime_ = 0;
  mutable SimulatorStats stats_;
};

// Jumps from event to event. Owns its virtual clock; tests may advance it to play a
// generator that is slower than its schedule (events then run late and record lag).
class VirtualSimulator final : public SimulatorBase {
 public:
  explicit VirtualSimulator(EventQueueOptions queue = {});
  SimulatorMode mode() const override { return SimulatorMode::kVirtual; }
  Clock& clock() override { return virtualClock_; }
  VirtualClock& virtualClock() { return virtualClock_; }

 private:
  bool reach(TimePoint t) override;
  VirtualClock virtualClock_;
};

// Waits for `clock` (normally a WallClock shared by all workers, so their timelines
// agree) to reach each event's time, running the idle hook meanwhile.
class PacedSimulator final : public SimulatorBase {
 public:
  explicit PacedSimulator(Clock& clock, EventQueueOptions queue = {});
  SimulatorMode mode() const override { return SimulatorMode::kPaced; }
  Clock& clock() override { return clock_; }

 private:
  bool reach(TimePoint t) override;
};

using SimulatorPtr = std::unique_ptr<Simulator>;

}  // namespace cpscale::engine
