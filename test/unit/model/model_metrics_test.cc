// The members' /metrics through the real scraper and figure code: weighted counts,
// heap, etcd, latency, and determinism.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "sim/kube/resource.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/prometheus_text.h"
#include "sim/metrics/scraper.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using kube::ResourceRef;
using nlohmann::json;
using testing::Harness;

const ResourceRef kLeases = ResourceRef(kube::gvr::kLeases).in("kube-node-lease");

json lease(const std::string& name) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", "kube-node-lease"}}},
          {"spec", {{"holderIdentity", name}, {"leaseDurationSeconds", 40}}}};
}

std::vector<metrics::ScrapeTarget> targets(ModelPlane& plane) {
  std::vector<metrics::ScrapeTarget> out;
  for (const ModelMember& m : plane.members()) {
    metrics::ScrapeTarget t;
    t.info.name = m.name;
    t.info.role = m.role == "etcd" ? metrics::TargetRole::kEtcd : metrics::TargetRole::kApiserver;
    t.info.etcdCluster = m.etcdCluster;
    t.info.etcdResources = m.etcdResources;
    t.transport = plane.memberTransport(m.name);
    out.push_back(std::move(t));
  }
  return out;
}

double value(const std::vector<metrics::Figure>& figs, std::string_view name, const metrics::Labels& labels = {}) {
  const metrics::Figure* f = metrics::findFigure(figs, name, labels);
  EXPECT_NE(f, nullptr) << name;
  if (f == nullptr) return -1;
  EXPECT_TRUE(f->available()) << name << ": " << f->unavailableReason;
  return f->value.value_or(-1);
}

// A weight-10 client creates 5 Leases and renews each every second for 20 s, and writes
// 2 ConfigMaps per second, while the scraper polls every member every 5 s.
std::vector<metrics::TargetScrapes> run(Harness& h) {
  metrics::Scraper scraper(h.sim, targets(*h.plane));
  scraper.start();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(h.api->create(kLeases, lease("n" + std::to_string(i))).ok());
  std::vector<std::string> rvs(5);
  for (int i = 0; i < 5; ++i)
    rvs[i] = h.api->get(kLeases.named("n" + std::to_string(i))).body["metadata"]["resourceVersion"];
  const ResourceRef cms = ResourceRef(kube::gvr::kConfigMaps).in("default");
  int cm = 0;
  const auto start = h.sim.now();
  for (int s = 0; s < 20; ++s) {
    for (int i = 0; i < 5; ++i) {
      json l = lease("n" + std::to_string(i));
      l["metadata"]["resourceVersion"] = rvs[i];
      l["spec"]["renewTime"] = std::to_string(s);
      h.api->updateAsync(kLeases.named("n" + std::to_string(i)), l, [&rvs, i](kube::ApiResult r) {
        if (r.ok()) rvs[i] = r.body["metadata"]["resourceVersion"];
      });
    }
    for (int k = 0; k < 2; ++k) {
      json c = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cm-" + std::to_string(cm++)}}}};
      h.api->createAsync(cms, c, [](kube::ApiResult) {});
    }
    h.sim.runUntil(start + std::chrono::seconds(s + 1));
  }
  h.sim.runUntil(start + 21s);
  scraper.scrapeNow();
  h.sim.runFor(1s);
  return scraper.targets();
}

TEST(ModelMetrics, WeightedCountsThroughTheFigures) {
  ModelOptions o;
  o.apiservers = 2;
  o.etcds = {{"main", {}}, {"leases", {"coordination.k8s.io/leases"}}};
  Harness h(o, /*weight=*/10);
  auto scrapes = run(h);
  auto writes = metrics::writeFigures(scrapes);
  // 5 leases x 20 renewals x 10, and 40 ConfigMaps x 10, within the scraped window.
  const double leasePuts =
      value(writes, "write_requests", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}});
  EXPECT_NEAR(leasePuts, 5 * 20 * 10, 5 * 10);
  EXPECT_EQ(std::fmod(leasePuts, 10), 0);
  const double cmPosts = value(writes, "write_requests", {{"resource", "configmaps"}, {"verb", "POST"}});
  EXPECT_NEAR(cmPosts, 40 * 10, 2 * 10);
  auto share = metrics::leaseShareFigures(scrapes);
  EXPECT_NEAR(value(share, "lease_write_share"), leasePuts / (leasePuts + cmPosts), 0.05);
  // The leases' etcd holds only leases: its proposals tell them apart.
  EXPECT_NEAR(value(share, "etcd_lease_proposal_share"), leasePuts / (leasePuts + cmPosts), 0.05);

  auto memory = metrics::apiserverMemoryFigures(scrapes);
  EXPECT_EQ(value(memory, "apiserver_objects", {{"apiserver", "kube-apiserver-0"}, {"resource", "leases"}}), 50);
  EXPECT_EQ(value(memory, "apiserver_objects", {{"apiserver", "kube-apiserver-1"}, {"resource", "configmaps"}}), 400);
  // Every replica caches every object: base + 50 leases x 3000 (the override) +
  // configmaps, and every lease renewal still in the watch cache's 75 s event window
  // (all of them here) holds a copy of its lease.
  const double heap = value(memory, "apiserver_heap_inuse_bytes", {{"apiserver", "kube-apiserver-1"}});
  EXPECT_GT(heap, 100e6 + 50 * 3000 + 400 * 1000 + 0.9 * leasePuts * 3000);
  EXPECT_LT(heap, 100e6 + 50 * 3000 + 400 * 1000 + 400 * 2 * 1000 + 1.2 * leasePuts * 3000);
  EXPECT_NEAR(value(memory, "apiserver_rss_bytes", {{"apiserver", "kube-apiserver-1"}}), 1.5 * heap, 2);
  EXPECT_NEAR(value(memory, "apiserver_heap_inuse_bytes_all_replicas"), 2 * heap, 2);
  // What one stored ConfigMap takes, as kube-apiserver estimates it: the model's is the
  // JSON it stores, whatever the sampling weight.
  const double stored = static_cast<double>(
      h.api->get(ResourceRef(kube::gvr::kConfigMaps).in("default").named("cm-10")).body.dump().size());
  EXPECT_NEAR(value(memory, "stored_bytes_per_object", {{"apiserver", "kube-apiserver-1"}, {"resource", "configmaps"}}),
              stored, 0.05 * stored);

  auto etcd = metrics::etcdFigures(scrapes);
  EXPECT_EQ(value(etcd, "etcd_keys", {{"etcd", "etcd-leases"}}), 50);
  EXPECT_GT(value(etcd, "etcd_db_total_size_bytes", {{"etcd", "etcd-leases"}}), 1e6 + 500 * 1000);
  EXPECT_EQ(value(etcd, "etcd_has_leader", {{"etcd", "etcd-main"}}), 1);

  auto latency = metrics::serverLatencyFigures(scrapes);
  const double p50 = value(latency, "server_latency_p50", {{"resource", "leases"}, {"verb", "PUT"}});
  EXPECT_GT(p50, 0.005);
  EXPECT_LT(p50, 0.025);

  auto requests = metrics::apiserverRequestFigures(scrapes);
  // Round-robin: both replicas served about half.
  const double q0 = value(requests, "apiserver_write_qps", {{"apiserver", "kube-apiserver-0"}});
  const double q1 = value(requests, "apiserver_write_qps", {{"apiserver", "kube-apiserver-1"}});
  EXPECT_NEAR(q0, q1, 0.2 * (q0 + q1));
}

TEST(ModelMetrics, ExpositionParsesAndCarriesCpu) {
  Harness h;
  ASSERT_TRUE(h.api->create(kLeases, lease("n1")).ok());
  h.sim.runFor(10s);
  auto api = h.plane->memberTransport("kube-apiserver-0");
  kube::HttpRequest req;
  req.method = "GET";
  req.path = "/metrics";
  kube::HttpResponse r = kube::roundTrip(*api, req);
  ASSERT_EQ(r.status, 200);
  metrics::ParseResult p = metrics::parsePrometheusText(r.body);
  ASSERT_TRUE(p.ok()) << p.error->describe();
  for (const char* f :
       {"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_storage_objects",
        "apiserver_resource_objects", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes",
        "process_start_time_seconds", "process_cpu_seconds_total", "apiserver_current_inflight_requests"}) {
    EXPECT_TRUE(p.families.count(f)) << f;
  }
  // Idle CPU over ~10 s plus the requests.
  const double cpu = p.families.at("process_cpu_seconds_total").samples.at(0).value;
  EXPECT_GT(cpu, 0.05 * 10);
  EXPECT_LT(cpu, 0.05 * 11);
  bool storage = false;
  for (const auto& s : p.families.at("apiserver_storage_objects").samples) {
    if (metrics::labelValue(s.labels, "resource") == "leases.coordination.k8s.io") storage = s.value == 1;
  }
  EXPECT_TRUE(storage);
  auto etcd = h.plane->memberTransport("etcd-main");
  metrics::ParseResult e = metrics::parsePrometheusText(kube::roundTrip(*etcd, req).body);
  ASSERT_TRUE(e.ok()) << e.error->describe();
  for (const char* f : {"etcd_server_proposals_committed_total", "etcd_mvcc_db_total_size_in_bytes",
                        "etcd_debugging_mvcc_keys_total", "etcd_mvcc_put_total", "etcd_server_has_leader",
                        "etcd_server_leader_changes_seen_total", "process_cpu_seconds_total"}) {
    EXPECT_TRUE(e.families.count(f)) << f;
  }
}

TEST(ModelMetrics, BackgroundWritesAreCounted) {
  ModelOptions o;
  o.calibration = testing::smallCalibration();
  o.calibration.background = {{"leases", "coordination.k8s.io", "PUT", 2.0},
                              {"endpointslices", "discovery.k8s.io", "PUT", 0.5}};
  Harness h(o);
  h.sim.runFor(100s);
  EXPECT_NEAR(static_cast<double>(h.plane->stats().backgroundRequests), 250, 2);
  auto api = h.plane->memberTransport("kube-apiserver-0");
  kube::HttpRequest req;
  req.method = "GET";
  req.path = "/metrics";
  metrics::ParseResult p = metrics::parsePrometheusText(kube::roundTrip(*api, req).body);
  ASSERT_TRUE(p.ok());
  double leases = 0;
  for (const auto& s : p.families.at("apiserver_request_total").samples) {
    if (metrics::labelValue(s.labels, "resource") == "leases") leases += s.value;
  }
  EXPECT_NEAR(leases, 200, 1);
}

TEST(ModelMetrics, SameSeedSameMetricsText) {
  auto once = [] {
    ModelOptions o;
    o.apiservers = 2;
    o.calibration = testing::smallCalibration();
    o.calibration.sharedHost = true;
    o.calibration.background = {{"leases", "coordination.k8s.io", "PUT", 3.0}};
    Harness h(o, 3);
    run(h);
    std::string text;
    for (const ModelMember& m : h.plane->members()) {
      auto t = h.plane->memberTransport(m.name);
      kube::HttpRequest req;
      req.method = "GET";
      req.path = "/metrics";
      text += kube::roundTrip(*t, req).body;
    }
    return text;
  };
  const std::string a = once(), b = once();
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace cpscale::model
