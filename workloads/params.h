// Building blocks the three workloads share: Go-style durations and value
// distributions read strictly from scenario YAML, the client-side token bucket that
// bounds a population's creation rate, object naming and timestamps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "sim/common/duration.h"
#include "sim/common/yaml_reader.h"
#include "sim/engine/clock.h"
#include "sim/engine/random.h"

namespace cpscale::workloads {

// A duration field: must parse and lie in [lo, hi]. Errors name the field.
engine::Duration readDuration(const YamlField& f, engine::Duration lo = engine::Duration{0},
                              engine::Duration hi = std::chrono::hours(24 * 365));

// A non-negative random quantity (a dwell time in ns, an object size in bytes):
//   scalar                             fixed value (durations: "30s"; sizes: 2048)
//   {exponential: MEAN}                memoryless, e.g. how long a session runs
//   {lognormal: {median: M, sigma: S}} heavy-tailed, e.g. object sizes
//   {uniform: [LO, HI]}
// optionally with `max:` capping every draw.
class Distribution {
 public:
  enum class Shape { kFixed, kExponential, kLognormal, kUniform };
  static Distribution fixed(double v) { return Distribution(Shape::kFixed, v, 0); }
  static Distribution exponential(double mean) { return Distribution(Shape::kExponential, mean, 0); }
  static Distribution lognormal(double median, double sigma) { return Distribution(Shape::kLognormal, median, sigma); }
  static Distribution uniform(double lo, double hi) { return Distribution(Shape::kUniform, lo, hi); }
  // Values are durations (strings like "30s", read as ns) or plain numbers (bytes).
  static Distribution read(const YamlField& f, bool durations, double lo, double hi);

  double sample(engine::RandomStream& rng) const;
  engine::Duration sampleDuration(engine::RandomStream& rng) const {
    return engine::Duration{static_cast<engine::Duration::rep>(sample(rng))};
  }
  double mean() const;
  Shape shape() const { return shape_; }
  Distribution& capAt(double max) {
    max_ = max;
    return *this;
  }

 private:
  Distribution(Shape s, double a, double b) : shape_(s), a_(a), b_(b) {}
  Shape shape_ = Shape::kFixed;
  double a_ = 0;    // fixed value, mean, median, or uniform low bound
  double b_ = 0;    // lognormal sigma or uniform high bound
  double max_ = 0;  // 0: uncapped
};

// Client-side rate limiting for a population's creations: client-go's token bucket
// (flowcontrol.NewTokenBucketRateLimiter) as a reservation, so an actor is scheduled
// for the moment its token is available instead of polling. Up to `burst` requests go
// at once after an idle spell; after that they are spaced 1/qps apart. Reservations
// may run ahead of now (the bucket goes negative), which keeps a queue of waiting
// creations ordered without storing it.
class TokenBucket {
 public:
  // qps <= 0: unlimited (every reservation is granted at `now`).
  TokenBucket(double qps, double burst, engine::TimePoint start = engine::TimePoint{});
  // Takes one token and returns when it may be used (>= now).
  engine::TimePoint reserve(engine::TimePoint now);
  double qps() const { return qps_; }
  double burst() const { return burst_; }

 private:
  double qps_;
  double burst_;
  double tokens_;
  engine::TimePoint last_;
};

// Reads an optional `qps`/`burst` pair; burst defaults to max(1, qps).
struct RateLimit {
  double qps = 0;
  double burst = 0;
};
RateLimit readRateLimit(const YamlField& entry, std::string_view qpsKey, std::string_view burstKey, double defaultQps);

// A DNS-1123 label part that goes into object names (run id, workload name): lower-case
// alphanumerics and '-', starting and ending alphanumeric, at most `maxLen`.
bool isDnsLabel(std::string_view s, std::size_t maxLen = 63);
// Throws ConfigError (field "run") when a run id cannot be part of object names.
void validateRunId(const std::string& runId);
// "cpscale.io/run=<runId>".
std::string runSelector(const std::string& runId);
// metadata.labels for every object a run creates.
nlohmann::json runLabels(const std::string& runId, const std::string& workload);

// RFC 3339 with microseconds in UTC, as Kubernetes writes MicroTime:
// "2024-05-01T12:00:00.123456Z". Always kMicroTimeLength characters.
inline constexpr std::size_t kMicroTimeLength = 27;
void formatMicroTime(std::int64_t unixNanos, char* out);
std::string microTime(std::int64_t unixNanos);
// RFC 3339 to the second ("2024-05-01T12:00:00Z"), as metav1.Time is written.
std::string rfc3339(std::int64_t unixNanos);

// Deterministic filler of exactly `bytes` printable characters, to size objects.
std::string filler(std::size_t bytes, std::uint64_t seed);

}  // namespace cpscale::workloads
