// Figures measured by cpscale itself (source: client): latency per (resource, verb)
// from the engine's request statistics, corrected for coordinated omission (from the
// scheduled send) and uncorrected (from the actual send), request counts beside the
// apiserver's, and whether the generator kept its schedule.
#pragma once

#include <vector>

#include "sim/engine/clock.h"
#include "sim/load/request_stats.h"
#include "sim/metrics/figures.h"

namespace cpscale::metrics {

// client_latency_{p50,p90,p99,p99.9,max}{resource, verb, measured_from="scheduled"|"sent"}
// in seconds, over every response whatever its status (transport errors excluded:
// they have no server latency; so are watches, whose duration is the stream's life). A (resource, verb) with only
// transport errors gets unavailable latency figures saying so.
std::vector<Figure> clientLatencyFigures(const load::RequestStats& stats);

// client_requests{resource, verb, outcome} (count) per outcome class ("2xx", "4xx",
// "transport_error", ...); client_write_requests and client_write_qps{resource, verb}
// for write verbs, over `window` (the measured run time), to set beside the
// apiserver's write_qps; client_errors{outcome} summed over resources, and
// client_errors_by_code{code} by exact HTTP status ("none": no response);
// client_error_ratio: the requests (watches apart) answered 5xx or not at all, over all.
std::vector<Figure> clientCountFigures(const load::RequestStats& stats, engine::Duration window);

struct GeneratorHealthOptions {
  double quantile = 0.99;
  engine::Duration lagThreshold = std::chrono::milliseconds(100);
};
// schedule_lag_{p50,p99,max} (s), generator_limited (1 or 0): whether the generator,
// not the server, set the pace (load::generatorLimit), and its cause as
// generator_limited_by_schedule / generator_limited_by_concurrency (1 or 0). Unavailable when nothing was sent.
std::vector<Figure> generatorHealthFigures(const load::RequestStats& stats, const GeneratorHealthOptions& options = {});

}  // namespace cpscale::metrics
