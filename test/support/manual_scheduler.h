// A Scheduler over a VirtualClock that tests step by hand: events run in (time,
// sequence) order and running one moves the clock to its time.
#pragma once

#include <map>
#include <utility>

#include "sim/engine/clock.h"
#include "sim/engine/scheduler.h"

namespace cpscale::kube::testing {

class ManualScheduler final : public engine::Scheduler {
 public:
  explicit ManualScheduler(engine::VirtualClock& clock) : clock_(clock) {}
  engine::TimePoint now() const override { return clock_.now(); }
  engine::EventId scheduleAt(engine::TimePoint t, Callback fn) override {
    engine::EventId id = ++next_;
    events_.emplace(std::make_pair(std::max(t, clock_.now()), id), std::move(fn));
    return id;
  }
  void cancel(engine::EventId id) override {
    for (auto it = events_.begin(); it != events_.end(); ++it) {
      if (it->first.second == id) {
        events_.erase(it);
        return;
      }
    }
  }
  bool runNext() {
    if (events_.empty()) return false;
    auto it = events_.begin();
    clock_.advanceTo(it->first.first);
    Callback fn = std::move(it->second);
    events_.erase(it);
    fn();
    return true;
  }
  std::size_t runAll() {
    std::size_t n = 0;
    while (runNext()) ++n;
    return n;
  }
  std::size_t pending() const { return events_.size(); }

 private:
  engine::VirtualClock& clock_;
  std::map<std::pair<engine::TimePoint, engine::EventId>, Callback> events_;
  engine::EventId next_ = 0;
};

}  // namespace cpscale::kube::testing
