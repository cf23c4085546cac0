#include "sim/kube/retry_policy.h"

#include <algorithm>
#include <charconv>

namespace cpscale::kube {

RetryPolicy::RetryPolicy(RetryConfig config, std::uint64_t seed) : config_(config), rng_(seed) {}

bool RetryPolicy::idempotent(std::string_view m) {
  return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS";
}

std::optional<engine::Duration> RetryPolicy::parseRetryAfter(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  std::int64_t seconds = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (v.empty() || end != v.data() + v.size() || seconds < 0) return std::nullopt;
  // A number too large for int64 still means "wait long": it is capped, not ignored.
  if (ec == std::errc::result_out_of_range) return std::chrono::seconds(24 * 3600);
  if (ec != std::errc()) return std::nullopt;
  // Clamp before converting so a huge value cannot overflow nanoseconds.
  seconds = std::min<std::int64_t>(seconds, 24 * 3600);
  return std::chrono::seconds(seconds);
}

engine::Duration RetryPolicy::backoff(int attempt) {
  // initial * 2^(attempt-1), computed without overflow, then capped.
  engine::Duration d = config_.initialBackoff;
  for (int i = 1; i < attempt && d < config_.maxBackoff; ++i) d *= 2;
  d = std::min(d, config_.maxBackoff);
  // A 53-bit uniform in [0, 1) from the raw engine: std::uniform_real_distribution is
  // not specified bit-for-bit across standard libraries, this is.
  double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double factor = 1.0 - std::clamp(config_.jitter, 0.0, 1.0) * u;
  return engine::Duration(static_cast<engine::Duration::rep>(static_cast<double>(d.count()) * factor));
}

RetryDecision RetryPolicy::decide(const AttemptOutcome& a) {
  RetryDecision no{false, engine::Duration{0}, ""};
  std::string_view reason;
  bool useRetryAfter = false;
  switch (a.transport) {
    case TransportOutcome::kOk:
      if (a.status == 429) {
        reason = "429";
        useRetryAfter = true;
      } else if (a.status == 500 || a.status == 502 || a.status == 503 || a.status == 504) {
        if (!idempotent(a.method)) return no;
        reason = "5xx";
        useRetryAfter = true;
      } else {
        return no;  // success, 409 and every other status go back to the caller
      }
      break;
    case TransportOutcome::kConnectFailed: reason = "connect failed"; break;
    case TransportOutcome::kTimeout:
    case TransportOutcome::kProtocolError:
      if (!idempotent(a.method)) return no;
      reason = a.transport == TransportOutcome::kTimeout ? "timeout" : "protocol error";
      break;
    case TransportOutcome::kTlsFailed:
    case TransportOutcome::kAborted: return no;
  }
  if (a.attempt >= config_.maxAttempts) return no;

  engine::Duration delay{};
  std::optional<engine::Duration> hinted;
  if (useRetryAfter && a.retryAfter) hinted = parseRetryAfter(*a.retryAfter);
  if (hinted) {
    delay = std::min(*hinted, config_.maxRetryAfter);
  } else {
    delay = backoff(a.attempt);
  }
  if (a.elapsed + delay > config_.totalBudget) return no;
  return RetryDecision{true, delay, reason};
}

}  // namespace cpscale::kube
