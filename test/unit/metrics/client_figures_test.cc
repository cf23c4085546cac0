#include "sim/metrics/client_figures.h"

#include <gtest/gtest.h>

namespace cpscale::metrics {
namespace {

using load::OutcomeClass;
using std::chrono::milliseconds;

TEST(ClientFigures, LatencyCorrectedAndUncorrected) {
  load::RequestStats s;
  // 100 lease PUTs: the server took 10 ms each; the generator sent the last 10 late by
  // 1 s, which only the latency from the scheduled time shows.
  for (int i = 0; i < 100; ++i) {
    s.recordLatency({"leases", "PUT", OutcomeClass::kSuccess}, milliseconds(i < 90 ? 10 : 1010), milliseconds(10));
  }
  s.recordLatency({"leases", "PUT", OutcomeClass::kTransportError}, milliseconds(5000), milliseconds(5000));
  auto figs = clientLatencyFigures(s);
  auto v = [&](const char* name, const char* from) {
    const Figure* f = findFigure(figs, name, {{"measured_from", from}, {"resource", "leases"}, {"verb", "PUT"}});
    EXPECT_TRUE(f && f->value) << name << " " << from;
    EXPECT_EQ(f->source, Source::kClient);
    return f && f->value ? *f->value : -1;
  };
  EXPECT_NEAR(v("client_latency_p50", "sent"), 0.010, 0.010 / 1000);
  EXPECT_NEAR(v("client_latency_p99", "sent"), 0.010, 0.010 / 1000);
  EXPECT_NEAR(v("client_latency_p50", "scheduled"), 0.010, 0.010 / 1000);
  EXPECT_NEAR(v("client_latency_p99", "scheduled"), 1.010, 1.010 / 1000);
  EXPECT_NEAR(v("client_latency_max", "scheduled"), 1.010, 1.010 / 1000);  // the 5 s transport error is excluded
}

TEST(ClientFigures, ErrorsByExactCode) {
  load::RequestStats s;
  for (int status : {200, 201, 409, 409, 429, 0}) s.recordStatus(status);
  auto figs = clientCountFigures(s, std::chrono::seconds(1));
  EXPECT_EQ(*findFigure(figs, "client_errors_by_code", {{"code", "409"}})->value, 2);
  EXPECT_EQ(*findFigure(figs, "client_errors_by_code", {{"code", "429"}})->value, 1);
  EXPECT_EQ(*findFigure(figs, "client_errors_by_code", {{"code", "none"}})->value, 1);
  EXPECT_EQ(findFigure(figs, "client_errors_by_code", {{"code", "200"}}), nullptr);
  load::RequestStats merged;
  merged.merge(s);
  merged.merge(s);
  EXPECT_EQ(merged.statusCounts().at(409), 4u);
}

TEST(ClientFigures, RetriesByReasonAndTheirWait) {
  load::RequestStats none;
  auto quiet = clientCountFigures(none, std::chrono::seconds(1));
  EXPECT_EQ(*findFigure(quiet, "client_retries_total")->value, 0);
  EXPECT_FALSE(findFigure(quiet, "client_retry_wait_max")->value);
  EXPECT_EQ(findFigure(quiet, "client_retry_wait_max")->unavailableReason, "no request was answered");
  EXPECT_EQ(findFigure(quiet, "client_retries", {{"reason", "429"}}), nullptr);
  // Answered calls, none retried: nothing waited, a measured zero a gate can hold.
  load::RequestStats calm;
  calm.recordLatency({"leases", "PUT", OutcomeClass::kSuccess}, milliseconds(10), milliseconds(10));
  auto answered = clientCountFigures(calm, std::chrono::seconds(1));
  EXPECT_EQ(findFigure(answered, "client_retry_wait_max")->value, 0.0);
  EXPECT_EQ(findFigure(answered, "client_retry_wait_seconds_total")->value, 0.0);

  load::RequestStats s;
  s.recordRetry("429", std::chrono::seconds(1));
  s.recordRetry("429", std::chrono::seconds(2));
  s.recordRetry("connect failed", milliseconds(100));
  auto figs = clientCountFigures(s, std::chrono::seconds(1));
  EXPECT_EQ(*findFigure(figs, "client_retries", {{"reason", "429"}})->value, 2);
  EXPECT_EQ(*findFigure(figs, "client_retries", {{"reason", "connect failed"}})->value, 1);
  EXPECT_EQ(*findFigure(figs, "client_retries_total")->value, 3);
  EXPECT_NEAR(*findFigure(figs, "client_retry_wait_seconds_total")->value, 3.1, 3.1 / 500);
  EXPECT_NEAR(*findFigure(figs, "client_retry_wait_max")->value, 2, 2.0 / 500);
}

TEST(ClientFigures, WatchStreamsHaveNoLatencyFigures) {
  load::RequestStats s;
  s.recordLatency({"widgets", "WATCH", OutcomeClass::kSuccess}, std::chrono::minutes(5), std::chrono::minutes(5));
  s.recordLatency({"widgets", "LIST", OutcomeClass::kSuccess}, milliseconds(20), milliseconds(20));
  auto figs = clientLatencyFigures(s);
  EXPECT_EQ(findFigure(figs, "client_latency_max", {{"verb", "WATCH"}}), nullptr);
  EXPECT_NE(findFigure(figs, "client_latency_max", {{"verb", "LIST"}}), nullptr);
  // Still counted.
  EXPECT_NE(findFigure(clientCountFigures(s, std::chrono::seconds(1)), "client_requests", {{"verb", "WATCH"}}),
            nullptr);
}

TEST(ClientFigures, CountsBesideApiserverAndErrorsByOutcome) {
  load::RequestStats s;
  for (int i = 0; i < 30; ++i)
    s.recordLatency({"leases", "PUT", OutcomeClass::kSuccess}, milliseconds(1), milliseconds(1));
  for (int i = 0; i < 6; ++i)
    s.recordLatency({"leases", "PUT", OutcomeClass::kClientError}, milliseconds(1), milliseconds(1));
  s.recordLatency({"pods", "GET", OutcomeClass::kServerError}, milliseconds(1), milliseconds(1));
  auto figs = clientCountFigures(s, std::chrono::seconds(12));
  EXPECT_EQ(*findFigure(figs, "client_write_requests", {{"resource", "leases"}, {"verb", "PUT"}})->value, 36);
  EXPECT_EQ(*findFigure(figs, "client_write_qps", {{"resource", "leases"}})->value, 3);
  EXPECT_EQ(findFigure(figs, "client_write_requests", {{"resource", "pods"}}), nullptr);
  EXPECT_EQ(*findFigure(figs, "client_errors", {{"outcome", "4xx"}})->value, 6);
  EXPECT_EQ(*findFigure(figs, "client_errors", {{"outcome", "5xx"}})->value, 1);
  EXPECT_EQ(*findFigure(figs, "client_requests", {{"outcome", "2xx"}, {"verb", "PUT"}})->value, 30);
}

TEST(ClientFigures, GeneratorHealth) {
  load::RequestStats idle;
  auto none = generatorHealthFigures(idle);
  for (const Figure& f : none) EXPECT_FALSE(f.value) << f.name;

  load::RequestStats late;
  for (int i = 0; i < 100; ++i) late.recordSend(milliseconds(500), milliseconds(0));
  auto figs = generatorHealthFigures(late);
  const Figure* limited = findFigure(figs, "generator_limited");
  ASSERT_TRUE(limited && limited->value);
  EXPECT_EQ(*limited->value, 1);
  EXPECT_EQ(*findFigure(figs, "generator_limited_by_schedule")->value, 1);
  EXPECT_EQ(*findFigure(figs, "generator_limited_by_concurrency")->value, 0);
  EXPECT_NEAR(*findFigure(figs, "schedule_lag_p99")->value, 0.5, 0.5 / 1000);

  load::RequestStats onTime;
  for (int i = 0; i < 100; ++i) onTime.recordSend(milliseconds(1), milliseconds(0));
  EXPECT_EQ(*findFigure(generatorHealthFigures(onTime), "generator_limited")->value, 0);
}

}  // namespace
}  // namespace cpscale::metrics
