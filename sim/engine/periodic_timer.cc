#include "sim/engine/periodic_timer.h"

#include "sim/common/error.h"
#include "sim/engine/simulator.h"

namespace cpscale::engine {
namespace {

void validate(Duration period, Duration jitter) {
  if (period <= Duration{0}) throw ConfigError("PeriodicTimer", "period", "must be > 0");
  if (jitter < Duration{0}) throw ConfigError("PeriodicTimer", "jitter", "must be >= 0");
}

}  // namespace

PeriodicTimer::PeriodicTimer(Simulator& sim, Action action, Duration period, Duration jitter, std::uint64_t jitterSeed)
    : sim_(&sim), action_(action), period_(period.count()), jitter_(jitter.count()), rng_(jitterSeed) {
  validate(period, jitter);
  if (action.fn == nullptr) throw ConfigError("PeriodicTimer", "action", "must be set");
}

void PeriodicTimer::start(TimePoint first) { sim_->armTimer(*this, first); }

void PeriodicTimer::startAfter(Duration delay) { start(sim_->now() + delay); }

void PeriodicTimer::stop() {
  if (armed()) sim_->disarmTimer(*this);
}

void PeriodicTimer::setPeriod(Duration period, Duration jitter) {
  validate(period, jitter);
  period_ = period.count();
  jitter_ = jitter.count();
}

}  // namespace cpscale::engine
