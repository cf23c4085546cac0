// Time for everything in cpscale: integer nanoseconds since the start of a run.
// Nothing calls std::chrono::*_clock::now() directly; code that needs time takes a
// Clock&, so every actor can run in virtual time in tests and in the model.
#pragma once

#include <chrono>
#include <cstdint>

#include "sim/common/time.h"

namespace cpscale::engine {

using cpscale::Duration;
using cpscale::RunEpoch;
using cpscale::TimePoint;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Blocks (wall clock) or jumps (virtual clock) until `t`; returns at once if past.
  virtual void sleepUntil(TimePoint t) = 0;
  void sleepFor(Duration d) { sleepUntil(now() + d); }
};

// Virtual time: moves only when told to. Used by the model and by tests.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(TimePoint start = TimePoint{}) : now_(start) {}
  TimePoint now() const override { return now_; }
  void sleepUntil(TimePoint t) override { advanceTo(t); }
  void advanceTo(TimePoint t) {
    if (t > now_) now_ = t;
  }
  void advance(Duration d) { advanceTo(now_ + d); }

 private:
  TimePoint now_;
};

// Wall time: a monotonic clock whose origin is the moment it was constructed.
class WallClock final : public Clock {
 public:
  WallClock() : origin_(std::chrono::steady_clock::now()) {}
  // Several clocks with one origin share one timeline (a run's scraper and its workers).
  explicit WallClock(std::chrono::steady_clock::time_point origin) : origin_(origin) {}
  TimePoint now() const override {
    return TimePoint{std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - origin_)};
  }
  void sleepUntil(TimePoint t) override;

 private:
  std::chrono::steady_clock::time_point origin_;
};

}  // namespace cpscale::engine
