// The node lifecycle controller of the model (ModelNodeLifecycle), in virtual time: when
// it marks a node that stopped renewing its Lease, that a node heard from is never
// marked, that the kubelet's own report brings Ready back, and what its write costs.
// The passes run at 5 s, 10 s, ... from the plane's start; every write is answered
// after 6 ms (latencyWrite) on cores that never queue.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "sim/kube/resource.h"
#include "sim/metrics/prometheus_text.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using engine::Duration;
using engine::TimePoint;
using kube::ResourceRef;
using nlohmann::json;
using testing::Harness;
using testing::scraped;

const ResourceRef kNodes = ResourceRef(kube::gvr::kNodes);
const ResourceRef kLeases = ResourceRef(kube::gvr::kLeases).in("kube-node-lease");

json condition(const std::string& type, const std::string& status) {
  return {{"type", type},
          {"status", status},
          {"lastHeartbeatTime", "2026-01-01T00:00:00Z"},
          {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
}

json node(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"conditions",
             {condition("MemoryPressure", "False"), condition("DiskPressure", "False"),
              condition("PIDPressure", "False"), condition("Ready", "True")}}}}};
}

json lease(const std::string& name, int renewal) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", "kube-node-lease"}}},
          {"spec",
           {{"holderIdentity", name},
            {"leaseDurationSeconds", 40},
            {"renewTime", "2026-01-01T00:00:" + std::to_string(10 + renewal % 50) + ".000000Z"}}}};
}

// The kubelet's report: every condition with a new heartbeat, Ready True.
json readyReport(int n) {
  const std::string t = "2026-01-01T00:01:" + std::to_string(10 + n % 50) + "Z";
  json conditions = json::array();
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    conditions.push_back(
        {{"type", type}, {"status", std::string(type) == "Ready" ? "True" : "False"}, {"lastHeartbeatTime", t}});
  }
  return {{"status", {{"conditions", conditions}}}};
}

ModelOptions withController() {
  ModelOptions o;
  o.calibration = testing::smallCalibration();
  o.calibration.apiserverCores = 1000;
  o.calibration.etcdCores = 1000;
  o.nodeLifecycle.enabled = true;
  return o;
}

double seconds(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// Every change of a Node's Ready the watch showed: when, which node, what status.
struct ReadyLog {
  struct Entry {
    double at;
    std::string node;
    std::string ready;
  };
  std::vector<Entry> entries;
  std::vector<Entry> of(const std::string& name, const std::string& status) const {
    std::vector<Entry> out;
    for (const auto& e : entries)
      if (e.node == name && e.ready == status) out.push_back(e);
    return out;
  }
};

void watchReady(Harness& h, ReadyLog& log) {
  h.api->watch(
      kNodes, {},
      [&h, &log](const kube::WatchEvent& e) {
        std::string ready;
        for (const auto& c : e.object["status"]["conditions"])
          if (c.value("type", "") == "Ready") ready = c.value("status", "");
        const std::string name = e.object["metadata"].value("name", "");
        for (auto it = log.entries.rbegin(); it != log.entries.rend(); ++it) {
          if (it->node != name) continue;
          if (it->ready == ready) return;  // a heartbeat, not a change
          break;
        }
        log.entries.push_back({seconds(h.sim.now()), name, ready});
      },
      [](const kube::ApiResult&) {});
}

// apiserver_request_total as kube-apiserver-0 serves it, for the labels given.
double requests(Harness& h, const metrics::Labels& match) {
  return scraped(h, "kube-apiserver-0", "apiserver_request_total", match);
}

// Two nodes registered at 0 s, each renewing every 10 s; "silent" stops after its
// renewal at 20 s. Returns when that last renewal was answered.
double silentAfter20s(Harness& h, double until) {
  for (const char* n : {"silent", "renewing"}) {
    EXPECT_TRUE(h.api->create(kNodes, node(n)).ok());
    EXPECT_TRUE(h.api->create(kLeases, lease(n, 0)).ok());
  }
  double lastRenewal = 0;
  for (int k = 1; 10.0 * k <= until; ++k) {
    h.sim.runUntil(TimePoint{std::chrono::seconds(10 * k)});
    EXPECT_TRUE(h.api->update(kLeases.named("renewing"), lease("renewing", k)).ok());
    if (k <= 2) {
      EXPECT_TRUE(h.api->update(kLeases.named("silent"), lease("silent", k)).ok());
      lastRenewal = seconds(h.sim.now());
    }
  }
  return lastRenewal;
}

TEST(ModelNodeLifecycle, ASilentNodeIsMarkedUnknownAfterTheGracePeriodAndOnlyOnce) {
  Harness h(withController());
  ReadyLog log;
  watchReady(h, log);
  const double renewal = silentAfter20s(h, 200);
  h.sim.runUntil(TimePoint{200s});
  // Its renewal at 20 s (after the other node's, 6 ms each) was answered at 20.012 s;
  // the pass at 25 s saw it, the one at 80 s was the first more than 50 s later, and
  // its PUT was answered at 80.006 s.
  EXPECT_NEAR(renewal, 20.012, 1e-6);
  const auto marked = log.of("silent", "Unknown");
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_NEAR(marked[0].at, 80.006, 1e-6);
  EXPECT_GE(marked[0].at - renewal, 50);
  EXPECT_LE(marked[0].at - renewal, 50 + 2 * 5);
  EXPECT_TRUE(log.of("renewing", "Unknown").empty());
  // Once Unknown it is not written again, however many passes follow.
  EXPECT_EQ(h.plane->stats().nodesMarkedUnknown, 1u);
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", "status"}, {"verb", "PUT"}, {"code", "200"}}), 1);

  // Every condition the kubelet reports is Unknown now, as the controller leaves them.
  json silent = h.api->get(kNodes.named("silent")).body;
  for (const auto& c : silent["status"]["conditions"]) {
    EXPECT_EQ(c.value("status", ""), "Unknown") << c.dump();
    EXPECT_EQ(c.value("reason", ""), "NodeStatusUnknown");
    EXPECT_EQ(c.value("message", ""), "Kubelet stopped posting node status.");
  }
}

TEST(ModelNodeLifecycle, EveryPhaseOfTheLastRenewalIsMarkedWithinGraceAndTwoPeriods) {
  // The last renewal at 20 s plus 0..4.9 s: the pass that sees it is 0..5 s later, the
  // one that marks it 50..55 s after that.
  for (int tenths = 0; tenths < 50; tenths += 7) {
    Harness h(withController());
    ReadyLog log;
    watchReady(h, log);
    ASSERT_TRUE(h.api->create(kNodes, node("n")).ok());
    ASSERT_TRUE(h.api->create(kLeases, lease("n", 0)).ok());
    h.sim.runUntil(TimePoint{20s + std::chrono::milliseconds(100 * tenths)});
    ASSERT_TRUE(h.api->update(kLeases.named("n"), lease("n", 1)).ok());
    const double renewal = seconds(h.sim.now());
    h.sim.runUntil(TimePoint{120s});
    const auto marked = log.of("n", "Unknown");
    ASSERT_EQ(marked.size(), 1u) << tenths;
    EXPECT_GT(marked[0].at - renewal, 50) << tenths;
    EXPECT_LE(marked[0].at - renewal, 60) << tenths;
  }
}

TEST(ModelNodeLifecycle, TheKubeletsReportBringsReadyBackAndASecondSilenceIsMarkedAgain) {
  Harness h(withController());
  ReadyLog log;
  watchReady(h, log);
  silentAfter20s(h, 90);
  // Back at 100 s: a renewal, then the full status with Ready True.
  h.sim.runUntil(TimePoint{100s});
  ASSERT_TRUE(h.api->update(kLeases.named("silent"), lease("silent", 99)).ok());
  ASSERT_TRUE(h.api->patchStrategic(kNodes.named("silent").sub("status"), readyReport(1)).ok());
  h.sim.runUntil(TimePoint{150s});
  const auto ready = log.of("silent", "True");
  ASSERT_EQ(ready.size(), 2u);  // registered, and back
  EXPECT_NEAR(ready[1].at, 100.012, 1e-6);
  // Silent again after its report at 100.012 s: seen at the pass of 105 s, marked at
  // that of 160 s.
  h.sim.runUntil(TimePoint{200s});
  const auto marked = log.of("silent", "Unknown");
  ASSERT_EQ(marked.size(), 2u);
  EXPECT_NEAR(marked[0].at, 80.006, 1e-6);
  EXPECT_NEAR(marked[1].at, 160.006, 1e-6);
}

json pod(const std::string& name, const std::string& node, const std::string& ready) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "i"}}}}}},
          {"status",
           {{"phase", "Running"}, {"conditions", {condition("PodScheduled", "True"), condition("Ready", ready)}}}}};
}

std::vector<std::string> taintsOf(Harness& h, const std::string& name) {
  std::vector<std::string> out;
  const kube::ApiResult r = h.api->get(kNodes.named(name));
  for (const auto& t : r.body.value("spec", json::object()).value("taints", json::array()))
    out.push_back(t.value("key", "") + ":" + t.value("effect", ""));
  return out;
}

TEST(ModelNodeLifecycle, ASilentNodesPodsAreMarkedNotReadyAndItsTaintsComeOffOnItsReturn) {
  // What follows the Unknown write upstream: the unreachable NoExecute and NoSchedule
  // taints (two PATCHes), NodeNotReady on the node, and each bound pod whose Ready is
  // not False PUT with Ready False and a NodeNotReady event of its own. Back, the node
  // loses both taints (two PATCHes) and the taint eviction controller cancels each
  // pod's scheduled eviction with an event.
  Harness h(withController());
  const ResourceRef pods = ResourceRef(kube::gvr::kPods).in("default");
  ASSERT_TRUE(h.api->create(pods, pod("a", "silent", "True")).ok());
  ASSERT_TRUE(h.api->create(pods, pod("b", "silent", "True")).ok());
  ASSERT_TRUE(h.api->create(pods, pod("c", "silent", "False")).ok());  // not ready already
  ASSERT_TRUE(h.api->create(pods, pod("d", "renewing", "True")).ok());
  silentAfter20s(h, 90);
  ASSERT_EQ(h.plane->stats().nodesMarkedUnknown, 1u);
  EXPECT_EQ(taintsOf(h, "silent"), (std::vector<std::string>{"node.kubernetes.io/unreachable:NoExecute",
                                                             "node.kubernetes.io/unreachable:NoSchedule"}));
  EXPECT_TRUE(taintsOf(h, "renewing").empty());
  auto ready = [&](const std::string& name) {
    const kube::ApiResult r = h.api->get(pods.named(name));
    for (const auto& c : r.body["status"]["conditions"])
      if (c.value("type", "") == "Ready") return c.value("status", "");
    return std::string();
  };
  EXPECT_EQ(ready("a"), "False");
  EXPECT_EQ(ready("b"), "False");
  EXPECT_EQ(ready("d"), "True");
  EXPECT_EQ(requests(h, {{"resource", "pods"}, {"subresource", "status"}, {"verb", "PUT"}, {"code", "200"}}), 2);
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", ""}, {"verb", "PATCH"}, {"code", "200"}}), 2);
  // NodeNotReady on the node and on pods a and b.
  EXPECT_EQ(requests(h, {{"resource", "events"}, {"verb", "POST"}, {"code", "201"}}), 3);
  const kube::ApiResult events = h.api->list(ResourceRef(kube::gvr::kEvents).in("default"), {});
  std::vector<std::string> seen;
  for (const auto& e : events.body["items"])
    seen.push_back(e["involvedObject"].value("name", "") + " " + e.value("reason", ""));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a NodeNotReady", "b NodeNotReady", "silent NodeNotReady"}));

  // Back at 100 s; the pass of 105 s finds it Ready.
  h.sim.runUntil(TimePoint{100s});
  ASSERT_TRUE(h.api->update(kLeases.named("silent"), lease("silent", 99)).ok());
  ASSERT_TRUE(h.api->patchStrategic(kNodes.named("silent").sub("status"), readyReport(1)).ok());
  h.sim.runUntil(TimePoint{110s});
  EXPECT_TRUE(taintsOf(h, "silent").empty());
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", ""}, {"verb", "PATCH"}, {"code", "200"}}), 4);
  // One cancellation for each of the three pods bound to it.
  EXPECT_EQ(requests(h, {{"resource", "events"}, {"verb", "POST"}, {"code", "201"}}), 6);
  // Nothing more while it stays Ready.
  h.sim.runUntil(TimePoint{140s});
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", ""}, {"verb", "PATCH"}}), 4);
}

TEST(ModelNodeLifecycle, StatusHeartbeatsAloneKeepANodeFromBeingMarked) {
  // A kubelet without a Lease (as before NodeLease): its status reports are what the
  // controller hears.
  Harness h(withController());
  ReadyLog log;
  watchReady(h, log);
  ASSERT_TRUE(h.api->create(kNodes, node("n")).ok());
  for (int k = 1; k <= 20; ++k) {
    h.sim.runUntil(TimePoint{std::chrono::seconds(10 * k)});
    ASSERT_TRUE(h.api->patchStrategic(kNodes.named("n").sub("status"), readyReport(k)).ok());
  }
  // Its reports stopped at 200.006 s: seen at the pass of 205 s, marked by that of
  // 260 s, whose write lands at 260.006 s.
  h.sim.runUntil(TimePoint{260s});
  EXPECT_TRUE(log.of("n", "Unknown").empty());
  EXPECT_EQ(h.plane->stats().nodesMarkedUnknown, 0u);
  h.sim.runUntil(TimePoint{261s});
  const auto marked = log.of("n", "Unknown");
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_NEAR(marked[0].at, 260.006, 1e-6);
}

TEST(ModelNodeLifecycle, WithoutAControllerManagerNothingMarksNodes) {
  ModelOptions o = withController();
  o.nodeLifecycle.enabled = false;
  Harness h(std::move(o));
  ReadyLog log;
  watchReady(h, log);
  silentAfter20s(h, 30);
  h.sim.runUntil(TimePoint{300s});
  EXPECT_TRUE(log.of("silent", "Unknown").empty());
  EXPECT_EQ(h.plane->stats().nodesMarkedUnknown, 0u);
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", "status"}}), 0);
}

TEST(ModelNodeLifecycle, TheWriteIsChargedAsAWriteOfTheNodesWeight) {
  // Nodes written by a client of weight 4 stand for four each: the controller's PUT of
  // one is four writes at the calibration's 1 ms each on the apiserver, and so are the
  // two taint PATCHes and the NodeNotReady event that follow it, beside the client's
  // own (2 creations at 1 ms and a renewal at 0.4 ms, each four times).
  ModelOptions o = withController();
  o.calibration.apiserverIdleCores = Param::fixed(0);
  o.calibration.etcdIdleCores = Param::fixed(0);
  o.calibration.apiserverCpuRead = Param::fixed(0);
  o.calibration.apiserverCpuWatchEvent = Param::fixed(0);
  Harness h(std::move(o), 4);
  ASSERT_TRUE(h.api->create(kNodes, node("n")).ok());
  ASSERT_TRUE(h.api->create(kLeases, lease("n", 0)).ok());
  h.sim.runUntil(TimePoint{10s});
  ASSERT_TRUE(h.api->update(kLeases.named("n"), lease("n", 1)).ok());
  h.sim.runUntil(TimePoint{100s});
  ASSERT_EQ(h.plane->stats().nodesMarkedUnknown, 1u);
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", "status"}, {"verb", "PUT"}, {"code", "200"}}), 4);
  const double cpu = scraped(h, "kube-apiserver-0", "process_cpu_seconds_total");
  EXPECT_EQ(requests(h, {{"resource", "nodes"}, {"subresource", ""}, {"verb", "PATCH"}, {"code", "200"}}), 8);
  EXPECT_EQ(requests(h, {{"resource", "events"}, {"verb", "POST"}, {"code", "201"}}), 4);
  EXPECT_NEAR(cpu, 4 * (2 * 0.001 + 1 * 0.0004) + 4 * (1 + 2 + 1) * 0.001, 1e-9);
}

}  // namespace
}  // namespace cpscale::model
