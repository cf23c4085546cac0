// The narrow view of the event engine that components outside sim/engine/ need:
// what time it is, and "run this at time t". The Simulator implements it; tests may
// implement it over a VirtualClock. Callbacks run on the engine's thread.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/engine/clock.h"

namespace cpscale::engine {

// Identifies a scheduled event so it can be cancelled; 0 is never a valid id.
using EventId = std::uint64_t;

class Scheduler {
 public:
  using Callback = std::function<void()>;
  virtual ~Scheduler() = default;
  virtual TimePoint now() const = 0;
  virtual EventId scheduleAt(TimePoint t, Callback fn) = 0;
  EventId scheduleAfter(Duration d, Callback fn) { return scheduleAt(now() + d, std::move(fn)); }
  // Cancelling an event that already ran or was cancelled is a no-op.
  virtual void cancel(EventId id) = 0;
};

}  // namespace cpscale::engine
