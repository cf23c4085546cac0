// The max-in-flight filter of the model (ModelAdmission), in virtual time: requests
// submitted at one instant find N seats, the excess is answered 429 with Retry-After 1
// as kube-apiserver's filter answers it, system:masters is never refused, watches take
// no seat, and cpscale's client waits the second and retries.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "sim/kube/resource.h"
#include "sim/metrics/prometheus_text.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using engine::TimePoint;
using kube::ResourceRef;
using nlohmann::json;
using testing::Harness;
using testing::kConfigMaps;
using testing::scrapeMember;

ModelOptions limited(double readOnly, double mutating) {
  ModelOptions o;
  o.calibration = testing::smallCalibration();
  o.admission.maxReadOnly = readOnly;
  o.admission.maxMutating = mutating;
  return o;
}

kube::HttpRequest createConfigMap(int i) {
  kube::HttpRequest r;
  r.method = "POST";
  r.path = "/api/v1/namespaces/default/configmaps";
  r.headers.push_back({"content-type", "application/json"});
  r.body = json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c" + std::to_string(i)}}}}.dump();
  return r;
}

kube::HttpRequest get(const std::string& path) {
  kube::HttpRequest r;
  r.method = "GET";
  r.path = path;
  return r;
}

// Submits every request at the same instant and runs the plane until all are answered.
std::vector<kube::HttpResponse> atOnce(Harness& h, kube::Transport& t, std::vector<kube::HttpRequest> reqs) {
  std::vector<kube::HttpResponse> out(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i)
    t.submit(std::move(reqs[i]), [&out, i](kube::HttpResponse r) { out[i] = std::move(r); });
  h.sim.runFor(10s);
  return out;
}

std::map<int, int> byStatus(const std::vector<kube::HttpResponse>& rs) {
  std::map<int, int> n;
  for (const auto& r : rs) ++n[r.status];
  return n;
}

TEST(ModelAdmission, NPlusKMutatingRequestsAgainstNSeatsGetKTooManyRequests) {
  Harness h(limited(4, 3));
  auto load = h.plane->clientTransport(1, ClientIdentity::kLimited);
  std::vector<kube::HttpRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(createConfigMap(i));
  const auto rs = atOnce(h, *load, std::move(reqs));
  EXPECT_EQ(byStatus(rs), (std::map<int, int>{{201, 3}, {429, 2}}));
  for (const auto& r : rs) {
    if (r.status != 429) continue;
    // What maxinflight.go's tooManyRequests writes.
    EXPECT_EQ(r.header("retry-after").value_or(""), "1");
    EXPECT_EQ(r.header("content-type").value_or(""), "text/plain; charset=utf-8");
    EXPECT_EQ(r.body, "Too many requests, please try again later.\n");
  }
  EXPECT_EQ(h.plane->stats().tooManyRequests, 2u);

  // The seats are given back with the answers: three more go through.
  reqs.clear();
  for (int i = 10; i < 13; ++i) reqs.push_back(createConfigMap(i));
  EXPECT_EQ(byStatus(atOnce(h, *load, std::move(reqs))), (std::map<int, int>{{201, 3}}));

  // Counted by code in apiserver_request_total; the latency histogram has only the six
  // that were served.
  auto p = scrapeMember(h, "kube-apiserver-0");
  double served = 0, refused = 0, observed = 0;
  for (const auto& s : p.families["apiserver_request_total"].samples) {
    if (metrics::labelValue(s.labels, "resource") != "configmaps") continue;
    (metrics::labelValue(s.labels, "code") == "429" ? refused : served) += s.value;
  }
  for (const auto& s : p.families["apiserver_request_duration_seconds"].samples)
    if (s.name == "apiserver_request_duration_seconds_count" &&
        metrics::labelValue(s.labels, "resource") == "configmaps")
      observed += s.value;
  EXPECT_EQ(served, 6);
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(observed, 6);
}

TEST(ModelAdmission, ReadOnlySeatsAreTheirOwnAndWatchesTakeNone) {
  Harness h(limited(2, 1));
  auto load = h.plane->clientTransport(1, ClientIdentity::kLimited);
  // Two watches open first: long-running, they hold no seat.
  std::vector<std::string> lines;
  for (int i = 0; i < 2; ++i) {
    kube::HttpRequest w = get("/api/v1/namespaces/default/configmaps?watch=true");
    w.stream = true;
    w.onBodyChunk = [&lines](std::string_view c) {
      lines.emplace_back(c);
      return true;
    };
    load->submit(std::move(w), [](kube::HttpResponse) {});
  }
  h.sim.runFor(1s);
  // Then a write and three reads at once: the write has its seat, two reads theirs.
  std::vector<kube::HttpRequest> reqs{createConfigMap(0)};
  for (int i = 0; i < 3; ++i) reqs.push_back(get("/api/v1/namespaces/default/configmaps"));
  const auto rs = atOnce(h, *load, std::move(reqs));
  EXPECT_EQ(rs[0].status, 201);
  EXPECT_EQ(byStatus(rs), (std::map<int, int>{{200, 2}, {201, 1}, {429, 1}}));
  EXPECT_EQ(lines.size(), 2u) << "both watches saw the creation";
}

TEST(ModelAdmission, SystemMastersIsNeverRefused) {
  Harness h(limited(1, 1));
  auto admin = h.plane->clientTransport(1, ClientIdentity::kMasters);
  std::vector<kube::HttpRequest> reqs;
  for (int i = 0; i < 20; ++i) reqs.push_back(createConfigMap(i));
  for (int i = 0; i < 20; ++i) reqs.push_back(get("/api/v1/namespaces/default/configmaps"));
  const auto rs = atOnce(h, *admin, std::move(reqs));
  EXPECT_EQ(byStatus(rs), (std::map<int, int>{{200, 20}, {201, 20}}));
  EXPECT_EQ(h.plane->stats().tooManyRequests, 0u);
  // Nor do its requests take the seats the others need.
  auto load = h.plane->clientTransport(1, ClientIdentity::kLimited);
  std::vector<kube::HttpRequest> both{createConfigMap(100)};
  admin->submit(createConfigMap(101), [](kube::HttpResponse) {});
  EXPECT_EQ(atOnce(h, *load, std::move(both))[0].status, 201);
}

TEST(ModelAdmission, TheClientWaitsTheRetryAfterSecondAndRetries) {
  Harness h(limited(4, 1));
  auto load = h.plane->clientTransport(1, ClientIdentity::kLimited);
  kube::ApiClient api(*load, h.sim.clock(), h.sim);
  std::vector<kube::ApiResult> results;
  std::vector<double> answeredAt;
  for (int i = 0; i < 2; ++i) {
    json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "r" + std::to_string(i)}}}};
    api.createAsync(kConfigMaps, cm, [&](kube::ApiResult r) {
      results.push_back(std::move(r));
      answeredAt.push_back(std::chrono::duration<double>(h.sim.now().time_since_epoch()).count());
    });
  }
  h.sim.runFor(10s);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[0].attempts, 1);
  EXPECT_NEAR(answeredAt[0], 0.006, 1e-6);  // the unloaded write
  // Refused at 0 s, retried after Retry-After's second: answered 6 ms later.
  EXPECT_TRUE(results[1].ok());
  EXPECT_EQ(results[1].attempts, 2);
  EXPECT_NEAR(answeredAt[1], 1.006, 1e-6);
}

TEST(ModelAdmission, WithoutLimitsNothingIsRefused) {
  Harness h(limited(0, 0));
  auto load = h.plane->clientTransport(1, ClientIdentity::kLimited);
  std::vector<kube::HttpRequest> reqs;
  for (int i = 0; i < 50; ++i) reqs.push_back(createConfigMap(i));
  EXPECT_EQ(byStatus(atOnce(h, *load, std::move(reqs))), (std::map<int, int>{{201, 50}}));
}

}  // namespace
}  // namespace cpscale::model
