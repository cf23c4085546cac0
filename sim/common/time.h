// The time types of a run: integer nanoseconds since its start. Here, below everything,
// so that parsing a duration needs no engine; the clocks that tell this time are
// sim/engine/clock.h.
#pragma once

#include <chrono>

namespace cpscale {

using Duration = std::chrono::nanoseconds;

// Tag for time points on the run's timeline (0 = the run's origin).
struct RunEpoch {};
using TimePoint = std::chrono::time_point<RunEpoch, Duration>;

}  // namespace cpscale
