// The three workloads on the real plane, checked from the server side: Nodes and
// Leases exist with the run label and renewTime advances at the kubelet's cadence
// (and apiserver_request_total agrees), churn sessions of the installed CRD come and
// go, a dormant population is created, and cleanup leaves nothing with the label.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <sstream>

#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/kubeconfig.h"
#include "sim/load/open_loop_driver.h"
#include "test/integration/live_run.h"
#include "test/integration/plane_fixture.h"
#include "workloads/churn.h"
#include "workloads/cleanup.h"
#include "workloads/dormant.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/workload.h"

namespace cpscale::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using namespace cpscale::kube;
using workloads::makeWorkload;

const std::string& runId() {
  static const std::string id = "wl" + std::to_string(::getpid() % 100000);
  return id;
}

// Sum of apiserver_request_total samples whose labels contain every fragment.
double requestTotal(Transport& t, const std::vector<std::string>& fragments) {
  return metricSum(t, "apiserver_request_total", fragments);
}

YamlField entry(const std::string& yaml) { return loadYamlString(yaml, "workloads_it.yaml"); }

class WorkloadsIT : public ::testing::Test {
 protected:
  void SetUp() override {
    config = PlaneEnvironment::instance().restConfig();
    transport = std::make_unique<CurlTransport>(config);
    api = std::make_unique<ApiClient>(*transport, clock);
  }
  std::size_t countLabelled(const ResourceRef& coll) { return testing::countLabelled(*api, coll, runId()); }

  RestConfig config;
  engine::WallClock clock;
  std::unique_ptr<CurlTransport> transport;
  std::unique_ptr<ApiClient> api;
};

TEST_F(WorkloadsIT, FleetRegistersAndRenewsLeasesEveryTenSeconds) {
  auto fleet =
      makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 50\nregistrationQps: 100\n"
                         "registrationBurst: 10\nnodeImages: 40\nrenewalPhase: registration\n"));
  fleet->prepare(*api, clock, runId());
  LiveRun run(config);
  auto ctx = run.context(runId());
  const double putsBefore = requestTotal(*transport, {"resource=\"leases\"", "verb=\"PUT\"", "code=\"200\""});
  const auto countedFrom = std::chrono::steady_clock::now();
  auto inst = fleet->start(ctx);

  run.sim().runUntil(engine::TimePoint{13s});
  const std::string lease0 = workloads::KubeletFleet::nodeName(runId(), "fleet", 0);
  ApiResult first = api->get(ResourceRef(gvr::kLeases).in("kube-node-lease").named(lease0));
  ASSERT_TRUE(first.ok()) << first.describe();
  EXPECT_EQ(countLabelled(ResourceRef(gvr::kNodes)), 50u);
  EXPECT_EQ(countLabelled(ResourceRef(gvr::kLeases)), 50u);
  ApiResult node = api->get(ResourceRef(gvr::kNodes).named(lease0));
  ASSERT_TRUE(node.ok());
  EXPECT_GT(node.body.dump().size(), 10'000u);

  run.sim().runUntil(engine::TimePoint{24s});
  ApiResult second = api->get(ResourceRef(gvr::kLeases).in("kube-node-lease").named(lease0));
  ASSERT_TRUE(second.ok());
  // One renewal in between, 10 s + U[0, 4%) after the previous one.
  const double step = unixSeconds(second.body["spec"]["renewTime"]) - unixSeconds(first.body["spec"]["renewTime"]);
  EXPECT_GE(step, 9.99);
  EXPECT_LE(step, 10.41);
  inst->stop();
  run.sim().runFor(500ms);  // let the last responses in

  const json s = inst->summary();
  EXPECT_EQ(s["nodesRegistered"], 50);
  EXPECT_EQ(s["leaseRenewalFailures"], 0);
  EXPECT_EQ(s["leaseConflicts"], 0);
  // From the server: each node renewed about twice (at ~10 s and ~20 s after its lease:
  // renewalPhase registration keeps the count exact for this check).
  const double puts = requestTotal(*transport, {"resource=\"leases\"", "verb=\"PUT\"", "code=\"200\""}) - putsBefore;
  const double counted = std::chrono::duration<double>(std::chrono::steady_clock::now() - countedFrom).count();
  // Others renew Leases too: kube-apiserver its identity Lease every 10 s, the
  // controller-manager and the scheduler their leader Leases every 2 s (retry period).
  const double ours = s["leaseRenewals"].get<double>();
  EXPECT_GE(puts, ours);
  EXPECT_LE(puts, ours + counted * (1.0 / 10 + 2.0 / 2) + 3);
  EXPECT_GE(ours, 90);
  EXPECT_LE(ours, 100);
}

TEST_F(WorkloadsIT, ChurnSessionsAndDormantPopulationExist) {
  auto churn = makeWorkload(entry(R"(kind: churn
name: sessions
sessionsPerMinute: 600
namespaces: 2
statusInterval: 1s
suspendProbability: 0.5
maxSuspends: 1
dwell: {running: 2s, suspended: 1s}
targets:
  - crd: agentsessions.churn.cpscale.io
    weight: 3
  - builtin: configmaps
    weight: 1
)"));
  auto dormant = makeWorkload(entry(R"(kind: dormant
name: platform
crdKinds: 2
objectsPerKind: 10
namespaces: 2
roles: 3
roleBindings: 3
clusterRoles: 2
clusterRoleBindings: 2
serviceAccounts: 3
configMaps: 5
secrets: 5
createQps: 200
updatesPerSecond: 2
watchers: {perKind: 2, shards: 0, timeout: 5s}
)"));
  churn->prepare(*api, clock, runId());
  dormant->prepare(*api, clock, runId());
  ApiResult crd = api->get(ResourceRef(gvr::kCustomResourceDefinitions).named("agentsessions.churn.cpscale.io"));
  ASSERT_TRUE(crd.ok());
  EXPECT_EQ(crd.body["metadata"]["labels"][workloads::kRunLabel], runId());

  LiveRun run(config);
  auto ctx = run.context(runId());
  auto c = churn->start(ctx);
  auto d = dormant->start(ctx);
  run.sim().runUntil(engine::TimePoint{12s});
  c->stop();
  d->stop();
  run.sim().runFor(500ms);

  const json cs = c->summary();
  EXPECT_GT(cs["sessionsCreated"].get<int>(), 60) << cs;
  EXPECT_EQ(cs["createFailures"], 0) << cs;
  // A status PATCH and the DELETE that ends its session travel on separate HTTP/2
  // streams, so the PATCH can lose the race (404): rare, counted, carried on from.
  EXPECT_LE(cs["writeFailures"].get<int>(), 3) << cs;
  EXPECT_GT(cs["deletes"].get<int>(), 20) << cs;
  EXPECT_GT(cs["suspends"].get<int>(), 5) << cs;
  // Sessions still live on the server are the ones not deleted, give or take the
  // requests stop() cancelled in flight: such a DELETE or POST may still have reached
  // the server without being counted.
  const std::size_t live =
      countLabelled(ResourceRef({"churn.cpscale.io", "v1", "agentsessions", true})) +
      countLabelled(ResourceRef(gvr::kConfigMaps).in(workloads::ChurnWorkload::namespaceName(runId(), "sessions", 0))) +
      countLabelled(ResourceRef(gvr::kConfigMaps).in(workloads::ChurnWorkload::namespaceName(runId(), "sessions", 1)));
  const int notDeleted = cs["sessionsCreated"].get<int>() - cs["deletes"].get<int>();
  EXPECT_LE(static_cast<int>(live), notDeleted + 3);
  EXPECT_GE(static_cast<int>(live), notDeleted - 3);

  const json ds = d->summary();
  EXPECT_EQ(ds["created"], 43) << ds;
  EXPECT_EQ(countLabelled(ResourceRef(workloads::DormantWorkload::crdResource(0))), 10u);
  EXPECT_EQ(countLabelled(ResourceRef(workloads::DormantWorkload::crdResource(1))), 10u);
  EXPECT_EQ(countLabelled(ResourceRef(gvr::kClusterRoles)), 2u);
  EXPECT_EQ(countLabelled(ResourceRef(gvr::kSecrets)), 5u);
  EXPECT_GT(ds["updates"].get<int>(), 0) << ds;
  // Four informers listed, watched, saw the creations and re-watched after 5-10 s.
  // 4 informers; the first WATCH of a brand-new CRD may get 410 (its watch cache
  // starts after the LIST's revision), which a reflector answers with a relist.
  EXPECT_EQ(ds["watchLists"].get<int>(), 4 + ds["watchRelists"].get<int>()) << ds;
  EXPECT_GE(ds["watchStreams"].get<int>(), 4) << ds;
  EXPECT_GT(ds["watchEvents"].get<int>(), 0) << ds;
  // A fresh CRD's watch cache may answer 429 "storage is (re)initializing" once per
  // informer; the informer backs off and watches again.
  EXPECT_LE(ds["watchErrors"].get<int>(), 4) << ds;
}

// The real node on the real plane: each node's seven streams sync through streaming
// lists, the controller-manager's EndpointSlice controller (not cpscale) writes the
// Services' slices, and every pod readiness flip reaches every node's kube-proxy
// stream. A run of its own, cleaned up here.
TEST_F(WorkloadsIT, EndpointSlicesWrittenByTheControllerReachEveryKubeProxy) {
  const std::string id = runId() + "e";
  constexpr int kNodes = 8;
  auto fleet =
      makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 8\nregistrationQps: 100\npodsPerNode: 4\npodQps: 100\n"
                         "services: {count: 2, readinessFlipsPerMinute: 60, notReadyFor: 4s}\n"));
  fleet->prepare(*api, clock, id);
  LiveRun run(config);
  auto ctx = run.context(id);
  auto inst = fleet->start(ctx);
  run.sim().runUntil(engine::TimePoint{45s});
  inst->stop();
  run.sim().runFor(500ms);
  const json s = inst->summary();
  EXPECT_EQ(s["setupComplete"], true) << s.dump();
  EXPECT_EQ(s["nodeWatches"]["synced"], kNodes * 7) << s["nodeWatches"].dump();
  for (const auto& [name, c] : s["nodeWatches"]["byWatch"].items()) {
    EXPECT_EQ(c["lists"], kNodes) << name << " " << c.dump();  // no relist, no fallback to LIST
    EXPECT_EQ(c["errors"], 0) << name << " " << c.dump();
  }
  // The slices are the controller's, of pods at their nodes' IPs.
  const std::string ns = workloads::KubeletFleet::podNamespace(id, "fleet");
  ApiResult slices = api->list(ResourceRef(gvr::kEndpointSlices).in(ns));
  ASSERT_TRUE(slices.ok()) << slices.describe();
  ASSERT_GE(slices.body["items"].size(), 2u) << slices.body.dump();
  std::size_t endpoints = 0;
  for (const auto& sl : slices.body["items"]) {
    EXPECT_EQ(sl["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"], "endpointslice-controller.k8s.io");
    for (const auto& e : sl["endpoints"]) {
      EXPECT_TRUE(e["addresses"][0].get<std::string>().starts_with("10.128.")) << e.dump();
      ++endpoints;
    }
  }
  EXPECT_EQ(endpoints, static_cast<std::size_t>(kNodes * 4));
  // Flips at one a second for ~40 s; each reached all eight kube-proxies (those answered
  // in the last seconds may still be on their way).
  const json d = s["endpointDelivery"];
  const int changes = d["changes"].get<int>();
  const int receipts = d["receipts"].get<int>();
  EXPECT_GE(changes, 15) << d.dump();
  EXPECT_EQ(s["serviceEndpoints"]["readinessFlipFailures"], 0);
  EXPECT_GE(receipts, (changes - 3) * kNodes) << d.dump();
  EXPECT_LE(receipts, changes * kNodes) << d.dump();
  for (const auto& sec : d["seconds"]) {
    EXPECT_GE(sec.get<double>(), 0);
    EXPECT_LT(sec.get<double>(), 10) << d.dump();
  }
  workloads::CleanupResult r = workloads::cleanupRun(*api, clock, id);
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(r.complete()) << json(r.remaining).dump();
}

TEST_F(WorkloadsIT, CleanupLeavesNothingWithTheRunLabel) {
  workloads::CleanupResult r = workloads::cleanupRun(*api, clock, runId());
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(r.complete()) << json(r.remaining).dump();
  EXPECT_EQ(r.deleted["nodes"], 50);
  EXPECT_EQ(r.deleted["leases.coordination.k8s.io"], 50);
  EXPECT_EQ(r.deleted["customresourcedefinitions"], 3);
  for (const auto& g : workloads::builtinRunResources()) EXPECT_EQ(countLabelled(ResourceRef(g)), 0u) << g.resource;
  EXPECT_EQ(countLabelled(ResourceRef(gvr::kNamespaces)), 0u);
  EXPECT_EQ(countLabelled(ResourceRef(gvr::kCustomResourceDefinitions)), 0u);
  EXPECT_TRUE(
      api->get(ResourceRef(gvr::kCustomResourceDefinitions).named("agentsessions.churn.cpscale.io")).notFound());
  // Objects of other runs (none here) and the cluster's own are untouched.
  EXPECT_TRUE(api->get(ResourceRef(gvr::kNamespaces).named("kube-node-lease")).ok());
}

}  // namespace
}  // namespace cpscale::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new cpscale::testing::PlaneEnvironment());
  return RUN_ALL_TESTS();
}
