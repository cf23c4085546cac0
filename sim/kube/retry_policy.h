// When the client retries a request by itself, and how long it waits first. A pure
// function of the attempt's outcome and a seeded RNG, so it is tested on its own and
// runs bit-for-bit the same in virtual time.
//
//   429 Too Many Requests      any verb (the server did not act); wait Retry-After
//                              (capped), or back off if the header is missing
//   500/502/503/504            idempotent verbs only; Retry-After if given, else backoff
//   connect failed             any verb (nothing was sent)
//   timeout, protocol error    idempotent verbs only (the server may have acted)
//   409 Conflict, other 4xx,   never: 409 goes back to the caller, which does the
//   TLS failure, aborted       GET + retry the real component would do
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

#include "sim/engine/clock.h"
#include "sim/kube/transport.h"

namespace cpscale::kube {

struct RetryConfig {
  int maxAttempts = 5;  // including the first; 1 disables retries
  engine::Duration initialBackoff = std::chrono::milliseconds(100);
  engine::Duration maxBackoff = std::chrono::seconds(5);
  // Each backoff is scaled by a uniform factor in [1 - jitter, 1], so synchronized
  // clients spread out without ever exceeding maxBackoff.
  double jitter = 0.5;
  engine::Duration maxRetryAfter = std::chrono::seconds(30);
  // No retry is started if it would begin later than this after the first attempt.
  engine::Duration totalBudget = std::chrono::seconds(60);
};

// What happened to one attempt.
struct AttemptOutcome {
  std::string_view method;  // HTTP method
  TransportOutcome transport = TransportOutcome::kOk;
  int status = 0;
  std::optional<std::string_view> retryAfter;  // the raw Retry-After header
  int attempt = 1;                             // 1-based number of the attempt that just ended
  engine::Duration elapsed{0};                 // since the first attempt started
};

struct RetryDecision {
  bool retry = false;
  engine::Duration delay{0};
  std::string_view reason;  // "429", "5xx", "connect failed", ... (static strings)
};

class RetryPolicy {
 public:
  explicit RetryPolicy(RetryConfig config = {}, std::uint64_t seed = 1);
  RetryDecision decide(const AttemptOutcome& a);
  const RetryConfig& config() const { return config_; }

  // GET, HEAD, PUT, DELETE, OPTIONS: repeating them has the same effect as doing it once.
  static bool idempotent(std::string_view method);
  // Retry-After in delta-seconds form; HTTP-dates are not used by kube-apiserver.
  static std::optional<engine::Duration> parseRetryAfter(std::string_view value);

 private:
  engine::Duration backoff(int attempt);
  RetryConfig config_;
  std::mt19937_64 rng_;
};

}  // namespace cpscale::kube
