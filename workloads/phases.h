// The run's phases as the workloads report them. Each workload instance says when its
// setup is over (nodes registered, population created, watchers synced), so the runner
// starts the measured steady window only once every instance is ready; an instance may
// also mark ramps of its own inside setup (one per object kind of a dormant
// population) so figures can be fitted per ramp. Thread-safe: instances run on their
// workers' threads while the runner reads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/clock.h"

namespace cpscale::workloads {

class PhaseLog {
 public:
  // A named ramp across every instance that marked it: from the earliest begin to the
  // latest end; open while any instance has begun it and not ended it.
  struct Span {
    std::string name;
    engine::TimePoint start{};
    engine::TimePoint end{};
    int open = 0;
    bool ended() const { return open == 0; }
  };

  // Runs once each time the setup phase completes (the last pending instance reports),
  // outside the lock. The default gives the heap's free pages back to the system:
  // setup (registration bodies, creation answers) frees far more than the steady load
  // ever allocates again, and glibc keeps what it freed, so without it the generator's
  // resident memory per node would be the setup's, not the load's.
  using SetupCompleteHook = std::function<void()>;
  static void releaseFreeMemory();

  // `instances`: how many reports of setupDone() complete the setup phase.
  explicit PhaseLog(std::size_t instances = 0, SetupCompleteHook onSetupComplete = releaseFreeMemory)
      : pending_(instances), onSetupComplete_(std::move(onSetupComplete)) {}

  // Once per instance, when its setup is over.
  void setupDone() {
    bool completed = false;
    {
      std::lock_guard lock(mu_);
      if (pending_ > 0) completed = --pending_ == 0;
    }
    if (completed && onSetupComplete_) onSetupComplete_();
  }
  // `instances` more reports complete setup again (a capacity step's growth starts).
  void expect(std::size_t instances) {
    std::lock_guard lock(mu_);
    pending_ += instances;
  }
  bool setupComplete() const { return setupPending() == 0; }
  std::size_t setupPending() const {
    std::lock_guard lock(mu_);
    return pending_;
  }

  void begin(const std::string& name, engine::TimePoint at) {
    std::lock_guard lock(mu_);
    Span* s = find(name);
    if (!s) {
      spans_.push_back(Span{name, at, at, 0});
      s = &spans_.back();
    }
    s->start = std::min(s->start, at);
    ++s->open;
  }
  void end(const std::string& name, engine::TimePoint at) {
    std::lock_guard lock(mu_);
    Span* s = find(name);
    if (!s || s->open == 0) return;
    --s->open;
    s->end = std::max(s->end, at);
  }
  // In order of first begin.
  std::vector<Span> spans() const {
    std::lock_guard lock(mu_);
    return spans_;
  }

 private:
  Span* find(const std::string& name) {
    for (Span& s : spans_)
      if (s.name == name) return &s;
    return nullptr;
  }

  mutable std::mutex mu_;
  std::size_t pending_;
  SetupCompleteHook onSetupComplete_;
  std::vector<Span> spans_;
};

}  // namespace cpscale::workloads
