// The discrete-event engine every synthetic actor runs on. One interface, two engines
// (after ns-3's DefaultSimulatorImpl / RealtimeSimulatorImpl):
//   virtual  time jumps to the next event; runs as fast as the CPU allows (model, tests)
//   paced    an event runs once the wall clock reaches its time; while waiting, an idle
//            hook drives network I/O instead of sleeping. When behind, events run as
//            soon as possible in order (best effort) and the lag is recorded.
// Events are ordered by (time, sequence of scheduling), so one seed gives one order.
//
// Costs (n events pending; see event_queue.h for the calendar queue underneath):
//   scheduleAt / scheduleAfter   O(1) amortized; the callback's std::function may
//                                allocate if its captures exceed 16 bytes
//   cancel                       O(1): flags the event, the stale entry is dropped lazily
//   PeriodicTimer fire + re-arm  O(1) amortized, no allocation
//   run loop, per event          O(1) amortized (each 16.8 ms bucket is radix-sorted
//                                once when reached)
//   memory                       32 B per queued entry; 40 B per one-shot slot and
//                                8 B per timer slot (slots are reused)
//   measured (bench_engine, 1 core): see test/bench/README.md
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "sim/engine/clock.h"
#include "sim/engine/hdr_histogram.h"
#include "sim/engine/scheduler.h"

namespace cpscale::engine {

class PeriodicTimer;

enum class SimulatorMode { kVirtual, kPaced };

// What the engine did. Lag is actual run time minus scheduled time, in ns: always 0
// in virtual mode unless something else moved the clock (a slow fake generator).
struct SimulatorStats {
  std::uint64_t eventsRun = 0;  // one-shot callbacks and timer fires
  std::uint64_t timerFires = 0;
  std::uint64_t cancelled = 0;  // cancel() calls that hit a pending event
  HdrHistogram lag;
};

// Paced mode: called while the next event (or the end of runUntil) at `deadline` is
// still in the future. Should do useful waiting, e.g. transport.poll(deadline - now),
// and return by `deadline`; it may schedule events (response handlers).
using IdleHook = std::function<void(TimePoint deadline)>;

class Simulator : public Scheduler {
 public:
  // The time of the event being run (its scheduled time, even when it runs late, so an
  // actor's schedule never drifts with the generator's lag); between events, the time
  // the run has reached. For the actual time, ask clock().
  TimePoint now() const override = 0;
  // A time in the past runs at now(), after the events already due then.
  EventId scheduleAt(TimePoint t, Callback fn) override = 0;
  void cancel(EventId id) override = 0;

  virtual SimulatorMode mode() const = 0;
  // Actual time: the virtual clock the engine jumps, or the wall clock it waits for.
  virtual Clock& clock() = 0;
  // Runs until no event is pending or stop() is called.
  virtual void run() = 0;
  // Runs every event due at or before `t`, then leaves now() at `t` (paced: waits for it).
  virtual void runUntil(TimePoint t) = 0;
  void runFor(Duration d) { runUntil(now() + d); }
  // Makes run()/runUntil() return after the current event, or the next call return at
  // once if none is running. Safe from any thread; in paced mode it takes effect when
  // the idle hook returns (make the hook wakeable, e.g. Transport::wakeup()).
  virtual void stop() = 0;
  // Whether run()/runUntil() is executing (an event, or the idle hook, is on the stack).
  // Code that may be called both from events and from outside the loop (a transport's
  // poll in virtual time) asks this before driving the engine itself.
  virtual bool running() const = 0;
  // Live one-shot events plus armed timers (cancelled ones are not counted).
  virtual std::size_t pending() const = 0;
  virtual const SimulatorStats& stats() const = 0;
  // Bytes the engine itself holds for pending events and timers.
  virtual std::size_t memoryBytes() const = 0;
  virtual void setIdleHook(IdleHook hook) = 0;

 protected:
  friend class PeriodicTimer;
  virtual void armTimer(PeriodicTimer& timer, TimePoint at) = 0;
  virtual void disarmTimer(PeriodicTimer& timer) = 0;
};

}  // namespace cpscale::engine
