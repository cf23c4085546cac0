#include "sim/kube/retry_policy.h"

#include <gtest/gtest.h>

namespace cpscale::kube {
namespace {

using namespace std::chrono_literals;
using engine::Duration;

AttemptOutcome http(std::string_view method, int status, int attempt = 1,
                    std::optional<std::string_view> retryAfter = std::nullopt, Duration elapsed = 0s) {
  return AttemptOutcome{method, TransportOutcome::kOk, status, retryAfter, attempt, elapsed};
}

AttemptOutcome failed(std::string_view method, TransportOutcome o, int attempt = 1) {
  return AttemptOutcome{method, o, 0, std::nullopt, attempt, 0s};
}

TEST(RetryPolicy, TooManyRequestsHonoursRetryAfter) {
  RetryPolicy p;
  RetryDecision d = p.decide(http("PUT", 429, 1, "3"));
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.delay, 3s);
  EXPECT_EQ(d.reason, "429");
  // 429 means the server did not act, so even a create is retried.
  EXPECT_TRUE(p.decide(http("POST", 429, 1, "1")).retry);
}

TEST(RetryPolicy, RetryAfterIsCapped) {
  RetryConfig c;
  c.maxRetryAfter = 10s;
  RetryPolicy p(c);
  EXPECT_EQ(p.decide(http("GET", 429, 1, "3600")).delay, 10s);
  EXPECT_EQ(p.decide(http("GET", 429, 1, "99999999999999999999")).delay, 10s);  // unparsable: backoff
}

TEST(RetryPolicy, UnparsableRetryAfterFallsBackToBackoff) {
  RetryConfig c;
  c.initialBackoff = 100ms;
  c.jitter = 0;
  RetryPolicy p(c);
  EXPECT_EQ(p.decide(http("GET", 429, 1, "Wed, 21 Oct 2015 07:28:00 GMT")).delay, 100ms);
  EXPECT_EQ(p.decide(http("GET", 429, 1)).delay, 100ms);
  EXPECT_EQ(RetryPolicy::parseRetryAfter(" 7 "), Duration(7s));
  EXPECT_FALSE(RetryPolicy::parseRetryAfter("-1").has_value());
  EXPECT_FALSE(RetryPolicy::parseRetryAfter("1.5").has_value());
}

TEST(RetryPolicy, BackoffDoublesUpToTheCapWithoutJitter) {
  RetryConfig c;
  c.maxAttempts = 100;
  c.initialBackoff = 100ms;
  c.maxBackoff = 1s;
  c.jitter = 0;
  c.totalBudget = 1h;
  RetryPolicy p(c);
  std::vector<Duration> got;
  for (int attempt = 1; attempt <= 7; ++attempt) got.push_back(p.decide(http("GET", 503, attempt)).delay);
  std::vector<Duration> want{100ms, 200ms, 400ms, 800ms, 1s, 1s, 1s};
  EXPECT_EQ(got, want);
}

TEST(RetryPolicy, JitterStaysWithinBoundsAndVaries) {
  RetryConfig c;
  c.maxAttempts = 1000;
  c.initialBackoff = 100ms;
  c.maxBackoff = 2s;
  c.jitter = 0.5;
  c.totalBudget = 1h;
  RetryPolicy p(c, 42);
  Duration lo = 1h, hi = 0s;
  for (int i = 0; i < 500; ++i) {
    Duration d = p.decide(http("GET", 500, 20)).delay;  // attempt 20: capped at 2s
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_GE(lo, 1s);
  EXPECT_LE(hi, 2s);
  EXPECT_GT(hi - lo, 500ms);  // actually jittered, not a constant
}

TEST(RetryPolicy, SameSeedSameSchedule) {
  RetryPolicy a({}, 7), b({}, 7), c({}, 8);
  bool anyDiffers = false;
  for (int i = 1; i <= 4; ++i) {
    Duration da = a.decide(http("GET", 503, i)).delay;
    EXPECT_EQ(da, b.decide(http("GET", 503, i)).delay);
    anyDiffers = anyDiffers || da != c.decide(http("GET", 503, i)).delay;
  }
  EXPECT_TRUE(anyDiffers);
}

TEST(RetryPolicy, AttemptsAreBounded) {
  RetryConfig c;
  c.maxAttempts = 3;
  RetryPolicy p(c);
  EXPECT_TRUE(p.decide(http("GET", 503, 1)).retry);
  EXPECT_TRUE(p.decide(http("GET", 503, 2)).retry);
  EXPECT_FALSE(p.decide(http("GET", 503, 3)).retry);
  EXPECT_FALSE(p.decide(http("GET", 429, 3, "1")).retry);
}

TEST(RetryPolicy, TotalBudgetIsBounded) {
  RetryConfig c;
  c.totalBudget = 10s;
  RetryPolicy p(c);
  EXPECT_TRUE(p.decide(http("GET", 429, 1, "5", 4s)).retry);
  EXPECT_FALSE(p.decide(http("GET", 429, 1, "5", 6s)).retry);
}

TEST(RetryPolicy, ConflictAndOtherClientErrorsAreNeverRetried) {
  RetryPolicy p;
  for (int status : {200, 201, 400, 401, 403, 404, 409, 410, 422, 501}) {
    EXPECT_FALSE(p.decide(http("PUT", status)).retry) << status;
    EXPECT_FALSE(p.decide(http("GET", status)).retry) << status;
  }
}

TEST(RetryPolicy, ServerErrorsOnlyForIdempotentVerbs) {
  RetryPolicy p;
  for (int status : {500, 502, 503, 504}) {
    EXPECT_TRUE(p.decide(http("GET", status)).retry) << status;
    EXPECT_TRUE(p.decide(http("PUT", status)).retry) << status;
    EXPECT_TRUE(p.decide(http("DELETE", status)).retry) << status;
    EXPECT_FALSE(p.decide(http("POST", status)).retry) << status;
    EXPECT_FALSE(p.decide(http("PATCH", status)).retry) << status;
  }
}

TEST(RetryPolicy, ServiceUnavailableHonoursRetryAfter) {
  RetryPolicy p;
  EXPECT_EQ(p.decide(http("GET", 503, 1, "4")).delay, 4s);
}

TEST(RetryPolicy, TransportFailures) {
  RetryPolicy p;
  // Nothing was sent: safe for every verb.
  EXPECT_TRUE(p.decide(failed("POST", TransportOutcome::kConnectFailed)).retry);
  EXPECT_TRUE(p.decide(failed("GET", TransportOutcome::kConnectFailed)).retry);
  // The request may have reached the server: only idempotent verbs.
  EXPECT_FALSE(p.decide(failed("POST", TransportOutcome::kTimeout)).retry);
  EXPECT_FALSE(p.decide(failed("POST", TransportOutcome::kProtocolError)).retry);
  EXPECT_FALSE(p.decide(failed("PATCH", TransportOutcome::kTimeout)).retry);
  EXPECT_TRUE(p.decide(failed("GET", TransportOutcome::kTimeout)).retry);
  EXPECT_TRUE(p.decide(failed("PUT", TransportOutcome::kProtocolError)).retry);
  // Configuration problems and caller decisions are final.
  EXPECT_FALSE(p.decide(failed("GET", TransportOutcome::kTlsFailed)).retry);
  EXPECT_FALSE(p.decide(failed("GET", TransportOutcome::kAborted)).retry);
}

TEST(RetryPolicy, MaxAttemptsOneDisablesRetries) {
  RetryConfig c;
  c.maxAttempts = 1;
  RetryPolicy p(c);
  EXPECT_FALSE(p.decide(http("GET", 429, 1, "1")).retry);
  EXPECT_FALSE(p.decide(failed("GET", TransportOutcome::kConnectFailed)).retry);
}

}  // namespace
}  // namespace cpscale::kube
