#include <gtest/gtest.h>

#include "sim/common/error.h"
#include "sim/controlplane/local_plane.h"
#include "sim/engine/clock.h"
#include "sim/kube/curl_transport.h"
#include "sim/run/metrics_endpoint.h"
#include "sim/run/run_progress.h"
#include "test/support/fake_transport.h"

namespace cpscale::run {
namespace {

kube::HttpRequest request(const char* method, engine::TimePoint intended) {
  kube::HttpRequest r;
  r.method = method;
  r.path = "/api/v1/x";
  r.intendedAt = intended;
  return r;
}

TEST(CountingTransport, CountsWritesErrorsAndTheWorstLag) {
  engine::VirtualClock clock;
  auto fake = std::make_unique<kube::FakeTransport>();
  kube::FakeTransport* f = fake.get();
  RunCounters counters;
  CountingTransport t(std::move(fake), clock, counters);
  f->enqueue(201);
  f->enqueue(409);
  f->enqueue(200);
  clock.advance(std::chrono::milliseconds(30));
  t.submit(request("POST", engine::TimePoint{}), [](kube::HttpResponse) {});  // 30 ms late
  t.submit(request("PUT", clock.now()), [](kube::HttpResponse) {});           // on time
  t.submit(request("GET", clock.now() - std::chrono::milliseconds(5)), [](kube::HttpResponse) {});
  while (t.inFlight() > 0) t.poll(std::chrono::milliseconds(1));
  EXPECT_EQ(counters.sent.load(), 3u);
  EXPECT_EQ(counters.completed.load(), 3u);
  EXPECT_EQ(counters.writes.load(), 1u);  // the POST; the 409 PUT is an error, the GET no write
  EXPECT_EQ(counters.errors.load(), 1u);
  EXPECT_EQ(counters.maxLagNs.load(), 30'000'000);
}

TEST(MetricsEndpoint, AddressDefaultsToLoopbackAndIsValidated) {
  EXPECT_EQ(normalizeMetricsAddress(":9090"), "127.0.0.1:9090");
  EXPECT_EQ(normalizeMetricsAddress("0.0.0.0:9090"), "0.0.0.0:9090");
  EXPECT_THROW(normalizeMetricsAddress("9090"), ConfigError);
  EXPECT_THROW(normalizeMetricsAddress(":0"), ConfigError);
  EXPECT_THROW(normalizeMetricsAddress(":http"), ConfigError);
}

TEST(MetricsEndpoint, ServesTheLiveCountersInPrometheusText) {
  RunCounters counters;
  int port = controlplane::freeLoopbackPort();
  MetricsEndpoint endpoint(":" + std::to_string(port), counters);
  counters.sent = 7;
  counters.writes = 3;
  kube::RestConfig plain;
  plain.server = "http://127.0.0.1:" + std::to_string(port);
  kube::CurlTransport transport(plain);
  kube::HttpRequest get;
  get.method = "GET";
  get.path = "/metrics";
  kube::HttpResponse r = kube::roundTrip(transport, get);
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("cpscale_requests_sent_total 7"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("cpscale_writes_total 3"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace cpscale::run
