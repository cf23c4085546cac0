// Client-side request statistics of one worker: latency per (resource, verb, outcome)
// measured twice (from the scheduled send time and from the actual send), and the
// schedule lag. Recorded without locks on the worker's thread, merged at report time.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "sim/engine/clock.h"
#include "sim/engine/hdr_histogram.h"

namespace cpscale::load {

enum class OutcomeClass : std::uint8_t {
  kInformational,   // 1xx
  kSuccess,         // 2xx
  kRedirect,        // 3xx
  kClientError,     // 4xx (409 conflicts, 429 throttling)
  kServerError,     // 5xx
  kTransportError,  // no HTTP response: connect, TLS, timeout, reset, aborted
};

std::string_view toString(OutcomeClass c);  // "2xx", ..., "transport_error"
// The class of an HTTP status, or kTransportError when there was no response.
OutcomeClass classifyStatus(bool gotResponse, int status);

struct RequestKey {
  std::string resource;
  std::string verb;
  OutcomeClass outcome;
  auto operator<=>(const RequestKey&) const = default;
};

struct RequestLatency {
  // From the time the actor meant to send (coordinated-omission corrected): what a
  // client on that schedule would have experienced.
  engine::HdrHistogram fromScheduled;
  // From the time the request actually went to the transport: the server plus network.
  engine::HdrHistogram fromSent;
};

class RequestStats {
 public:
  void recordLatency(const RequestKey& key, Duration fromScheduled, Duration fromSent);
  // Actual send minus scheduled send, split into its two causes: the generator handing
  // the request over late (`submitLag`, CPU or loop) and the in-flight bound holding it
  // back (`queueWait`).
  void recordSend(Duration submitLag, Duration queueWait);
  // The exact HTTP status of a completed request (0: no response), for errors by code.
  void recordStatus(int status) { ++statusCounts_[status]; }
  // A retry the client sent by itself, why ("429", "5xx", "connect failed", ...) and
  // how long it waited before it (Retry-After or backoff).
  void recordRetry(std::string_view reason, Duration wait);
  void merge(const RequestStats& other);

  // Everything the statistics hold, to store them and rebuild them elsewhere (a
  // sharded run's merge).
  struct Parts {
    std::map<RequestKey, RequestLatency> latency;
    engine::HdrHistogram scheduleLag, submitLag, queueWait, retryWait;
    std::uint64_t completed = 0;
    std::map<int, std::uint64_t> statusCounts;
    std::map<std::string, std::uint64_t, std::less<>> retries;
  };
  Parts parts() const {
    return {latency_, scheduleLag_, submitLag_, queueWait_, retryWait_, completed_, statusCounts_, retries_};
  }
  static RequestStats fromParts(Parts p);

  const std::map<RequestKey, RequestLatency>& latency() const { return latency_; }
  // Actual send minus scheduled send, in ns.
  const engine::HdrHistogram& scheduleLag() const { return scheduleLag_; }
  const engine::HdrHistogram& submitLag() const { return submitLag_; }
  const engine::HdrHistogram& queueWait() const { return queueWait_; }
  std::uint64_t sent() const { return scheduleLag_.count(); }
  std::uint64_t completed() const { return completed_; }
  const std::map<int, std::uint64_t>& statusCounts() const { return statusCounts_; }
  const std::map<std::string, std::uint64_t, std::less<>>& retries() const { return retries_; }
  // The waits before retries, in ns.
  const engine::HdrHistogram& retryWait() const { return retryWait_; }

 private:
  std::map<RequestKey, RequestLatency> latency_;
  engine::HdrHistogram scheduleLag_, submitLag_, queueWait_;
  std::uint64_t completed_ = 0;
  std::map<int, std::uint64_t> statusCounts_;
  std::map<std::string, std::uint64_t, std::less<>> retries_;
  engine::HdrHistogram retryWait_;
};

// Why requests left later than scheduled, when they did by more than the threshold.
enum class GeneratorLimit {
  kNone,
  kSchedule,     // the generator itself ran late (CPU, event loop): its latencies are suspect
  kConcurrency,  // the in-flight bound held requests back (server slow or bound too low)
};
std::string_view toString(GeneratorLimit l);

// kSchedule or kConcurrency when the `quantile` of schedule lag exceeds `threshold`,
// attributed to whichever of submit lag and queue wait is larger at that quantile.
GeneratorLimit generatorLimit(const RequestStats& stats, double quantile, Duration threshold);

}  // namespace cpscale::load
