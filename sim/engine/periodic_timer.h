// An actor's repeating timer (lease renewal, status report, resync). It lives inside
// the actor and is re-armed in place by the engine, so a fire allocates nothing and
// an idle actor costs only its timers' 56 bytes plus the engine's 40 bytes of slot
// and queue entry per timer.
//
//   class Kubelet {
//     engine::PeriodicTimer lease_{sim, engine::PeriodicTimer::bind<&Kubelet::renew>(this),
//                                  10s, 400ms, seed};
//   };
//
// Fires at first, then every period + U[0, jitter) after the previous *scheduled* fire
// (like wait.JitterUntil in Kubernetes), so lag never accumulates into drift.
#pragma once

#include <cstdint>
#include <type_traits>

#include "sim/engine/clock.h"
#include "sim/engine/random.h"

namespace cpscale::engine {

class Simulator;

class PeriodicTimer {
 public:
  // What a fire calls: a plain function and its argument (16 bytes, no allocation).
  struct Action {
    void (*fn)(void* target) = nullptr;
    void* target = nullptr;
  };
  // Binds a member function `void Owner::method()` on `owner`.
  template <auto Method, class Owner>
  static Action bind(Owner* owner) {
    static_assert(std::is_invocable_v<decltype(Method), Owner&>);
    return Action{[](void* p) { (static_cast<Owner*>(p)->*Method)(); }, owner};
  }

  // Throws ConfigError if period <= 0 or jitter < 0. `jitterSeed` seeds the timer's own
  // jitter stream: derive it from (run seed, actor id) with streamSeed().
  PeriodicTimer(Simulator& sim, Action action, Duration period, Duration jitter = Duration{0},
                std::uint64_t jitterSeed = 0);
  ~PeriodicTimer() { stop(); }
  // The engine holds the timer's address.
  PeriodicTimer(const PeriodicTimer&) = delete;
  PeriodicTimer& operator=(const PeriodicTimer&) = delete;

  // (Re)arms the timer to fire first at `first` (now() if in the past).
  void start(TimePoint first);
  void startAfter(Duration delay);
  // Disarms; a no-op when not armed. Safe from inside the timer's own action.
  void stop();
  bool armed() const { return slot_ != kNoSlot; }

  Duration period() const { return Duration{period_}; }
  Duration jitter() const { return Duration{jitter_}; }
  // Takes effect from the next re-arm. Throws ConfigError like the constructor.
  void setPeriod(Duration period, Duration jitter);

 private:
  friend class SimulatorBase;
  static constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};
  // The delay from one scheduled fire to the next.
  std::int64_t nextGap() {
    return jitter_ == 0
               ? period_
               : period_ + static_cast<std::int64_t>(toUnitInterval(rng_.next()) * static_cast<double>(jitter_));
  }

  Simulator* sim_;
  Action action_;
  std::int64_t period_;
  std::int64_t jitter_;
  SplitMix64 rng_;
  std::uint32_t slot_ = kNoSlot;  // index in the engine's timer table while armed
};

}  // namespace cpscale::engine
