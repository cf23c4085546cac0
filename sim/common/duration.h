// Durations as people write them in YAML and on the command line, Go style:
// "250ms", "10s", "5m", "1h30m", "1.5s" (units ns, us, ms, s, m, h; "0" alone is
// allowed; no sign). Bare numbers are not accepted: a unit is always required, so
// "10" is never silently read as 10 ns or 10 s.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/common/time.h"
#include "sim/common/yaml_reader.h"

namespace cpscale {

// nullopt if `text` is not a duration.
std::optional<Duration> parseDuration(std::string_view text);
// "1m30s", "250ms", "0s": the shortest exact form.
std::string formatDuration(Duration d);
// A YAML field holding a duration; ConfigError naming file:line and field otherwise.
// With `positive`, zero and negative durations are rejected too.
Duration asDuration(const YamlField& field, bool positive = true);

// The current time of day, UTC, RFC 3339 to the second ("2026-12-02T16:42:00Z"), for
// records people read (plane.json, result.json); never for measuring.
std::string utcNowRfc3339();
// The current Unix time in ns: for instants shared with other processes (a sharded
// run's window start) and written into objects; never for measuring intervals.
std::int64_t unixNowNanos();
// A Kubernetes timestamp ("2026-12-02T16:42:00Z", or a MicroTime with a fraction of a
// second) as Unix time; nullopt if it is not one. Only UTC ("Z") is accepted: the API
// writes nothing else.
std::optional<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text);

}  // namespace cpscale
