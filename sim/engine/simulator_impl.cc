#include "sim/engine/simulator_impl.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace cpscale::engine {

SimulatorBase::SimulatorBase(Clock& clock, TimePoint start, EventQueueOptions queue)
    : clock_(clock), queue_(queue), now_(start.time_since_epoch().count()) {}

TimePoint SimulatorBase::now() const {
  if (idle_) return std::min(clock_.now(), idleDeadline_);
  return TimePoint{Duration{now_}};
}

EventId SimulatorBase::scheduleAt(TimePoint t, Callback fn) {
  std::uint32_t index;
  if (freeOneShot_ != kNone) {
    index = freeOneShot_;
    freeOneShot_ = oneShots_[index].nextFree;
  } else {
    if (oneShots_.size() >= kTimerRef) throw std::length_error("Simulator: too many pending events");
    index = static_cast<std::uint32_t>(oneShots_.size());
    oneShots_.emplace_back();
  }
  OneShotSlot& slot = oneShots_[index];
  slot.fn = std::move(fn);
  ++liveOneShots_;
  const std::int64_t at = std::max(t.time_since_epoch().count(), now().time_since_epoch().count());
  queue_.push(QueuedEvent{at, nextSeq(), nullptr, index, slot.gen});
  return (static_cast<EventId>(slot.gen) << 32) | (static_cast<EventId>(index) + 1);
}

void SimulatorBase::cancel(EventId id) {
  const std::uint64_t low = id & 0xffff'ffffu;
  if (low == 0 || low > oneShots_.size()) return;
  const auto index = static_cast<std::uint32_t>(low - 1);
  OneShotSlot& slot = oneShots_[index];
  if (slot.gen != static_cast<std::uint32_t>(id >> 32) || !slot.fn) return;
  // Bumping the generation is the cancel flag: the queued entry no longer matches.
  slot.fn = nullptr;
  ++slot.gen;
  slot.nextFree = freeOneShot_;
  freeOneShot_ = index;
  --liveOneShots_;
  ++stats_.cancelled;
}

void SimulatorBase::armTimer(PeriodicTimer& timer, TimePoint at) {
  if (timer.armed()) disarmTimer(timer);
  std::uint32_t index;
  if (freeTimer_ != kNone) {
    index = freeTimer_;
    freeTimer_ = timers_[index].nextFree;
  } else {
    if (timers_.size() >= kTimerRef) throw std::length_error("Simulator: too many timers");
    index = static_cast<std::uint32_t>(timers_.size());
    timers_.emplace_back();
  }
  timer.slot_ = index;
  ++armedTimers_;
  const std::int64_t t = std::max(at.time_since_epoch().count(), now().time_since_epoch().count());
  queue_.push(QueuedEvent{t, nextSeq(), &timer, index | kTimerRef, timers_[index].gen});
}

void SimulatorBase::disarmTimer(PeriodicTimer& timer) {
  TimerSlot& slot = timers_[timer.slot_];
  ++slot.gen;
  slot.nextFree = freeTimer_;
  freeTimer_ = timer.slot_;
  timer.slot_ = PeriodicTimer::kNoSlot;
  --armedTimers_;
}

bool SimulatorBase::dropStale() {
  while (!queue_.empty()) {
    const QueuedEvent& e = queue_.top();
    const bool live = (e.ref & kTimerRef) ? timers_[e.ref & ~kTimerRef].gen == e.gen : oneShots_[e.ref].gen == e.gen;
    if (live) return true;
    queue_.pop();
  }
  return false;
}

void SimulatorBase::dispatch(const QueuedEvent& e) {
  now_ = e.time;
  const std::int64_t actual = clock_.now().time_since_epoch().count();
  if (actual > e.time) {
    stats_.lag.addValue(static_cast<std::uint64_t>(actual - e.time));
  } else {
    ++onTime_;
  }
  ++stats_.eventsRun;
  if (e.ref & kTimerRef) {
    PeriodicTimer& timer = *static_cast<PeriodicTimer*>(e.target);
    ++stats_.timerFires;
    // Re-arm first, in place (same slot and generation, a new sequence number): the
    // action may then stop or restart its own timer, which simply makes this stale.
    queue_.push(QueuedEvent{e.time + timer.nextGap(), nextSeq(), e.target, e.ref, e.gen});
    timer.action_.fn(timer.action_.target);
  } else {
    OneShotSlot& slot = oneShots_[e.ref];
    Callback fn = std::move(slot.fn);
    slot.fn = nullptr;
    ++slot.gen;
    slot.nextFree = freeOneShot_;
    freeOneShot_ = e.ref;
    --liveOneShots_;
    fn();
  }
}

// With 10^6 timers, each fire's timer and actor are cache misses at random addresses.
// The queue knows which events come next, and a timer's entry carries its address, so
// that memory is requested several events early: the timer (and its slot's
// generation) first, then, once the timer has arrived, the actor its action targets.
// The misses then overlap instead of stalling one after another.
// Inlined on purpose: as an out-of-line call GCC sees a function that only reads
// memory and returns nothing, and deletes the call (prefetches are not side effects).
[[gnu::always_inline]] inline void SimulatorBase::prefetchUpcoming() const {
  if (const QueuedEvent* e = queue_.peekAhead(kPrefetchTimer)) {
    if (e->ref & kTimerRef) {
      __builtin_prefetch(e->target);
      __builtin_prefetch(static_cast<const char*>(e->target) + sizeof(PeriodicTimer) - 1);
      __builtin_prefetch(&timers_[e->ref & ~kTimerRef]);
    } else {
      __builtin_prefetch(&oneShots_[e->ref]);
    }
  }
  // Reading the timer needs it alive: a live generation says it has not been stopped
  // (a destroyed timer stops itself), so its memory is still the timer.
  if (const QueuedEvent* e = queue_.peekAhead(kPrefetchActor);
      e != nullptr && (e->ref & kTimerRef) && timers_[e->ref & ~kTimerRef].gen == e->gen) {
    __builtin_prefetch(static_cast<const PeriodicTimer*>(e->target)->action_.target, 1);
  }
}

void SimulatorBase::loop(bool bounded, TimePoint until) {
  const std::int64_t end = until.time_since_epoch().count();
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } depth(loopDepth_);
  while (!stopRequested()) {
    if (!dropStale()) {
      if (!bounded) return;
      // Nothing pending: wait for the end (paced mode polls the network meanwhile).
      if (reach(until)) break;
      continue;
    }
    const QueuedEvent e = queue_.top();
    if (bounded && e.time > end) {
      if (reach(until)) break;
      continue;
    }
    if (!reach(TimePoint{Duration{e.time}})) continue;
    queue_.pop();
    prefetchUpcoming();
    dispatch(e);
  }
  flushLag();
  // Cleared on the way out, not on entry, so a stop() that races ahead of run() holds.
  if (stopRequested_.exchange(false, std::memory_order_relaxed)) return;
  if (bounded) now_ = std::max(now_, end);
}

std::size_t SimulatorBase::memoryBytes() const {
  return queue_.memoryBytes() + oneShots_.capacity() * sizeof(OneShotSlot) + timers_.capacity() * sizeof(TimerSlot);
}

VirtualSimulator::VirtualSimulator(EventQueueOptions queue) : SimulatorBase(virtualClock_, TimePoint{}, queue) {}

bool VirtualSimulator::reach(TimePoint t) {
  virtualClock_.advanceTo(t);
  return true;
}

PacedSimulator::PacedSimulator(Clock& clock, EventQueueOptions queue) : SimulatorBase(clock, clock.now(), queue) {}

bool PacedSimulator::reach(TimePoint t) {
  if (clock_.now() >= t) return true;
  if (stopRequested()) return false;
  if (idleHook_) {
    idle_ = true;
    idleDeadline_ = t;
    idleHook_(t);
    idle_ = false;
    return false;  // the hook may have scheduled something before t: look again
  }
  // Sleep in short slices so that stop() from another thread is noticed.
  clock_.sleepUntil(std::min(t, clock_.now() + std::chrono::milliseconds(10)));
  return false;
}

}  // namespace cpscale::engine
