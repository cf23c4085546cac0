// The model's EndpointSlice controller (plane_endpoint_slices.cc), as a kube-proxy sees
// it: a Service's selected pods with an IP become endpoints of its slices, a readiness
// flip is one PUT of the slice that holds the pod (batched per Service), slices hold at
// most maxEndpointsPerSlice endpoints, and a deleted Service's slices go.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "sim/kube/resource.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using kube::ResourceRef;
using nlohmann::json;
using testing::Harness;

const ResourceRef kPods = ResourceRef(kube::gvr::kPods).in("default");
const ResourceRef kServices = ResourceRef(kube::gvr::kServices).in("default");
const ResourceRef kSlices = ResourceRef(kube::gvr::kEndpointSlices).in("default");
const kube::GroupVersionResource kEndpointsGvr{"", "v1", "endpoints", true};

ModelOptions withController(engine::Duration batch = 0s, std::size_t perSlice = 100) {
  ModelOptions o;
  o.calibration = testing::smallCalibration();
  o.calibration.apiserverCores = 1000;
  o.calibration.etcdCores = 1000;
  o.endpointSlices.enabled = true;
  o.endpointSlices.batchPeriod = batch;
  o.endpointSlices.maxEndpointsPerSlice = perSlice;
  return o;
}

json service(const std::string& name, const std::string& app) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"type", "ClusterIP"},
            {"selector", {{"app", app}}},
            {"ports", {{{"name", "http"}, {"port", 80}, {"targetPort", 8080}, {"protocol", "TCP"}}}}}}};
}

json pod(const std::string& name, const std::string& app, const std::string& ip, bool ready) {
  json status = {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}};
  if (!ip.empty()) status["podIP"] = ip;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", {{"app", app}}}}},
          {"spec", {{"nodeName", "node-" + name}, {"containers", {{{"name", "c"}, {"image", "i"}}}}}},
          {"status", status}};
}

void setReady(Harness& h, const std::string& name, bool ready) {
  json p = h.api->get(kPods.named(name)).body;
  p["status"]["conditions"][0]["status"] = ready ? "True" : "False";
  ASSERT_TRUE(h.api->update(kPods.named(name).sub("status"), p).ok());
}

// Each slice of the Service: its endpoints' address -> ready.
std::vector<std::map<std::string, bool>> slicesOf(Harness& h, const std::string& svc) {
  kube::ListOptions o;
  o.labelSelector = "kubernetes.io/service-name=" + svc;
  const kube::ApiResult r = h.api->list(kSlices, o);
  std::vector<std::map<std::string, bool>> out;
  for (const auto& s : r.body["items"]) {
    EXPECT_EQ(s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"], "endpointslice-controller.k8s.io");
    EXPECT_EQ(s["ports"][0]["port"], 8080);
    auto& eps = out.emplace_back();
    for (const auto& e : s["endpoints"]) eps[e["addresses"][0].get<std::string>()] = e["conditions"]["ready"];
  }
  return out;
}

double sliceWrites(Harness& h, const std::string& verb) {
  return std::max(0.0, testing::scraped(h, "kube-apiserver-0", "apiserver_request_total",
                                        {{"resource", "endpointslices"}, {"verb", verb}}));
}

TEST(ModelEndpointSlices, ASelectedPodWithAnIpIsAnEndpointAndAFlipIsOnePutOfItsSlice) {
  Harness h(withController());
  ASSERT_TRUE(h.api->create(kPods, pod("a", "web", "10.0.0.1", true)).ok());
  ASSERT_TRUE(h.api->create(kPods, pod("b", "web", "10.0.0.2", false)).ok());
  ASSERT_TRUE(h.api->create(kPods, pod("c", "web", "", true)).ok());         // no IP yet
  ASSERT_TRUE(h.api->create(kPods, pod("d", "db", "10.0.0.4", true)).ok());  // not selected
  ASSERT_TRUE(h.api->create(kServices, service("web", "web")).ok());
  h.sim.runFor(1s);
  using Eps = std::map<std::string, bool>;
  EXPECT_EQ(slicesOf(h, "web"), (std::vector<Eps>{{{"10.0.0.1", true}, {"10.0.0.2", false}}}));
  EXPECT_EQ(sliceWrites(h, "POST"), 1);

  // b turns ready, c gets its IP: each a PUT of the one slice.
  setReady(h, "b", true);
  h.sim.runFor(1s);
  json c = h.api->get(kPods.named("c")).body;
  c["status"]["podIP"] = "10.0.0.3";
  ASSERT_TRUE(h.api->update(kPods.named("c").sub("status"), c).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(slicesOf(h, "web"), (std::vector<Eps>{{{"10.0.0.1", true}, {"10.0.0.2", true}, {"10.0.0.3", true}}}));
  EXPECT_EQ(sliceWrites(h, "PUT"), 2);
  // A write that changes nothing the controller reads (the pod's phase) writes nothing.
  json a = h.api->get(kPods.named("a")).body;
  a["status"]["phase"] = "Running";
  a["status"]["message"] = "still running";
  ASSERT_TRUE(h.api->update(kPods.named("a").sub("status"), a).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(sliceWrites(h, "PUT"), 2);

  // Gone, its endpoint goes.
  ASSERT_TRUE(h.api->remove(kPods.named("a")).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(slicesOf(h, "web"), (std::vector<Eps>{{{"10.0.0.2", true}, {"10.0.0.3", true}}}));
  EXPECT_EQ(sliceWrites(h, "PUT"), 3);

  // The endpoints controller's Endpoints, written with the slices: created, then a PUT
  // for each of the three changes.
  const json ep = h.api->get(ResourceRef(kEndpointsGvr).in("default").named("web")).body;
  ASSERT_EQ(ep["subsets"].size(), 1u);
  EXPECT_EQ(ep["subsets"][0]["addresses"].size(), 2u);
  EXPECT_FALSE(ep["subsets"][0].contains("notReadyAddresses"));
  EXPECT_EQ(
      testing::scraped(h, "kube-apiserver-0", "apiserver_request_total", {{"resource", "endpoints"}, {"verb", "PUT"}}),
      3);
}

TEST(ModelEndpointSlices, ATerminatingPodStaysInItsSliceNotReadyAndLeavesTheEndpoints) {
  // A pod with a deletionTimestamp (its graceful deletion begun): the slice keeps it,
  // ready false, serving as its Ready condition, terminating; the Endpoints object drops
  // it (the endpoints controller does not include terminating pods).
  Harness h(withController());
  ASSERT_TRUE(h.api->create(kPods, pod("a", "web", "10.0.0.1", true)).ok());
  ASSERT_TRUE(h.api->create(kPods, pod("b", "web", "10.0.0.2", true)).ok());
  ASSERT_TRUE(h.api->create(kServices, service("web", "web")).ok());
  h.sim.runFor(1s);
  json a = h.api->get(kPods.named("a")).body;
  a["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z";
  ASSERT_TRUE(h.api->update(kPods.named("a"), a).ok());
  h.sim.runFor(1s);
  kube::ListOptions o;
  o.labelSelector = "kubernetes.io/service-name=web";
  const json slice = h.api->list(kSlices, o).body["items"][0];
  bool seen = false;
  for (const auto& e : slice["endpoints"]) {
    if (e["targetRef"]["name"] != "a") continue;
    seen = true;
    EXPECT_EQ(e["conditions"], (json{{"ready", false}, {"serving", true}, {"terminating", true}}));
  }
  EXPECT_TRUE(seen);
  const json ep = h.api->get(ResourceRef(kEndpointsGvr).in("default").named("web")).body;
  ASSERT_EQ(ep["subsets"][0]["addresses"].size(), 1u);
  EXPECT_EQ(ep["subsets"][0]["addresses"][0]["ip"], "10.0.0.2");
  EXPECT_FALSE(ep["subsets"][0].contains("notReadyAddresses"));
}

TEST(ModelEndpointSlices, ChangesWithinTheBatchPeriodAreOneWrite) {
  // --endpointslice-updates-batch-period=1s: three flips in half a second, one PUT a second
  // after the first.
  Harness h(withController(1s));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(
        h.api->create(kPods, pod("p" + std::to_string(i), "web", "10.0.0." + std::to_string(i + 1), true)).ok());
  ASSERT_TRUE(h.api->create(kServices, service("web", "web")).ok());
  h.sim.runFor(2s);
  ASSERT_EQ(sliceWrites(h, "POST"), 1);
  for (int i = 0; i < 3; ++i) {
    setReady(h, "p" + std::to_string(i), false);
    h.sim.runFor(150ms);
  }
  EXPECT_EQ(sliceWrites(h, "PUT"), 0) << "written before the batch period ran out";
  h.sim.runFor(1s);
  EXPECT_EQ(sliceWrites(h, "PUT"), 1);
  using Eps = std::map<std::string, bool>;
  EXPECT_EQ(slicesOf(h, "web"), (std::vector<Eps>{{{"10.0.0.1", false}, {"10.0.0.2", false}, {"10.0.0.3", false}}}));
}

// 30 readiness flips of one pod, one every 100 ms plus the flip's own write; the slice's
// PUTs by then and the slice once the controller has caught up.
std::pair<double, bool> flipThirtyTimes(ModelOptions o) {
  Harness h(std::move(o));
  EXPECT_TRUE(h.api->create(kPods, pod("a", "web", "10.0.0.1", true)).ok());
  EXPECT_TRUE(h.api->create(kServices, service("web", "web")).ok());
  h.sim.runFor(50ms);
  EXPECT_EQ(sliceWrites(h, "POST"), 1);
  bool ready = true;
  for (int i = 0; i < 30; ++i) {
    ready = !ready;
    setReady(h, "a", ready);
    h.sim.runFor(100ms);
  }
  const double puts = sliceWrites(h, "PUT");
  h.sim.runFor(5s);
  using Eps = std::map<std::string, bool>;
  return {puts, slicesOf(h, "web") == std::vector<Eps>{{{"10.0.0.1", ready}}}};
}

TEST(ModelEndpointSlices, TheControllersClientHoldsItsWritesToItsRateAndAWaitingServiceTakesInEveryChange) {
  // --kube-api-qps=1 --kube-api-burst=1, one worker: the slice's POST takes the one
  // token, and each PUT after waits a second for its own; the flips meanwhile wait with
  // the Service and go in its next PUT. The flips end at about 3.4 s: three PUTs at
  // most (at 1 s, 2 s and 3 s; fewer where a sync finds the slice as it is stored).
  ModelOptions o = withController();
  o.controllerManager.clientQps = 1;
  o.controllerManager.clientBurst = 1;
  o.endpointSlices.sliceWorkers = 1;
  const auto [limited, converged] = flipThirtyTimes(o);
  EXPECT_GE(limited, 1);
  EXPECT_LE(limited, 3);
  EXPECT_TRUE(converged) << "the last flip reached the slice";
  // Upstream's default client (20 QPS, burst 30): every flip is a PUT of its own.
  const auto [unlimited, alsoConverged] = flipThirtyTimes(withController());
  EXPECT_EQ(unlimited, 30);
  EXPECT_TRUE(alsoConverged);
}

TEST(ModelEndpointSlices, ServicesWaitingForAWorkerAreWrittenInTurn) {
  // One worker and one token a second: four Services' slices are created one a second,
  // in the order they came.
  ModelOptions o = withController();
  o.controllerManager.clientQps = 1;
  o.controllerManager.clientBurst = 1;
  o.endpointSlices.sliceWorkers = 1;
  Harness h(std::move(o));
  std::vector<std::string> created;
  h.api->watch(
      ResourceRef(kube::gvr::kEndpointSlices), {},
      [&](const kube::WatchEvent& e) {
        if (e.type == kube::WatchEventType::kAdded)
          created.push_back(e.object["metadata"]["labels"]["kubernetes.io/service-name"]);
      },
      [](const kube::ApiResult&) {});
  for (const char* s : {"s1", "s2", "s3", "s4"}) ASSERT_TRUE(h.api->create(kServices, service(s, s)).ok());
  h.sim.runFor(2500ms);
  EXPECT_EQ(created, (std::vector<std::string>{"s1", "s2", "s3"}));
  h.sim.runFor(1s);
  EXPECT_EQ(created, (std::vector<std::string>{"s1", "s2", "s3", "s4"}));
}

TEST(ModelEndpointSlices, SlicesHoldAtMostTheirSizeAndADeletedServicesSlicesGo) {
  Harness h(withController(0s, 2));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(
        h.api->create(kPods, pod("p" + std::to_string(i), "web", "10.0.0." + std::to_string(i + 1), true)).ok());
  ASSERT_TRUE(h.api->create(kServices, service("web", "web")).ok());
  h.sim.runFor(1s);
  const auto slices = slicesOf(h, "web");
  ASSERT_EQ(slices.size(), 3u);
  std::size_t endpoints = 0;
  for (const auto& s : slices) {
    EXPECT_LE(s.size(), 2u);
    endpoints += s.size();
  }
  EXPECT_EQ(endpoints, 5u);
  // A flip rewrites only the slice that holds the pod.
  setReady(h, "p4", false);
  h.sim.runFor(1s);
  EXPECT_EQ(sliceWrites(h, "PUT"), 1);

  ASSERT_TRUE(h.api->remove(kServices.named("web")).ok());
  h.sim.runFor(1s);
  EXPECT_TRUE(slicesOf(h, "web").empty());
  EXPECT_EQ(sliceWrites(h, "DELETE"), 3);
  EXPECT_EQ(h.api->get(ResourceRef(kEndpointsGvr).in("default").named("web")).status, 404);
}

TEST(ModelEndpointSlices, AKubeProxyWatchReceivesEachSliceChange) {
  // kube-proxy's watch: every slice not headless and not for another proxy.
  Harness h(withController());
  std::vector<json> events;
  std::vector<engine::TimePoint> at;
  kube::ListOptions o;
  o.labelSelector = "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name";
  h.api->watch(
      ResourceRef(kube::gvr::kEndpointSlices), o,
      [&](const kube::WatchEvent& e) {
        events.push_back(e.object);
        at.push_back(h.sim.now());
      },
      [](const kube::ApiResult&) {});
  h.sim.runFor(1s);
  ASSERT_TRUE(h.api->create(kPods, pod("a", "web", "10.0.0.1", true)).ok());
  ASSERT_TRUE(h.api->create(kServices, service("web", "web")).ok());
  h.sim.runFor(1s);
  setReady(h, "a", false);
  const engine::TimePoint flipped = h.sim.now();
  h.sim.runFor(1s);
  ASSERT_EQ(events.size(), 2u);
  // The slice's PUT lands once its own latency has passed (6 ms unloaded, as calibrated).
  const double delivered = std::chrono::duration<double>(at[1] - flipped).count();
  EXPECT_GE(delivered, 0.006);
  EXPECT_LT(delivered, 0.05);
  EXPECT_EQ(events[0]["endpoints"][0]["conditions"]["ready"], true);
  EXPECT_EQ(events[1]["endpoints"][0]["conditions"]["ready"], false);
  EXPECT_EQ(events[1]["endpoints"][0]["nodeName"], "node-a");
}

}  // namespace
}  // namespace cpscale::model
