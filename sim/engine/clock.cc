#include "sim/engine/clock.h"

#include <thread>

namespace cpscale::engine {

void WallClock::sleepUntil(TimePoint t) { std::this_thread::sleep_until(origin_ + t.time_since_epoch()); }

}  // namespace cpscale::engine
