// The cost model's terms that grow with scale, each against the figure computed by
// hand from the calibration: a change's dispatch to each watcher and its event to each
// that selects it, the trigger index, each open watch's heap, the plane's own watchers
// (fan-out), LIST cost per object
// returned, etcd's history between compactions and its quota, a pinned host's pools;
// and the two mechanisms the model deliberately leaves out of the CPU (Go's GC against
// live heap, etcd's fsync batching), held to what that means.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "sim/kube/resource.h"
#include "sim/metrics/prometheus_text.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using kube::ResourceRef;
using nlohmann::json;
using testing::configMap;
using testing::Harness;
using testing::kConfigMaps;
using testing::scraped;

const ResourceRef kLeases = ResourceRef(kube::gvr::kLeases).in("kube-node-lease");
const ResourceRef kEvents = ResourceRef(kube::gvr::kEvents).in("default");

json lease(const std::string& name) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", "kube-node-lease"}}},
          {"spec", {{"holderIdentity", name}, {"leaseDurationSeconds", 40}}}};
}

// An apiserver alone with 1,000 cores (no queueing), no idle CPU and no background:
// its CPU counter is exactly what the requests charged.
ModelOptions quiet() {
  ModelOptions o;
  o.calibration = testing::smallCalibration();
  o.calibration.apiserverCores = 1000;
  o.calibration.etcdCores = 1000;
  o.calibration.apiserverIdleCores = Param::fixed(0);
  o.calibration.etcdIdleCores = Param::fixed(0);
  o.calibration.apiserverCpuRead = Param::fixed(0);  // scrapes cost nothing here
  return o;
}

TEST(ModelCosts, ThePlanesOwnWatchersGetEveryChange) {
  // Two cluster-wide watchers on leases (the controller-manager's node lifecycle
  // informer and its garbage collector's): each of 10 creations and 90 renewals goes
  // to both, at 50 us each, beside the writes' own CPU; and each gets a bookmark a
  // minute, whose CPU is in the idle cores.
  ModelOptions o = quiet();
  o.calibration.planeWatchers = {{"leases.coordination.k8s.io", 2}};
  o.calibration.apiserverCpuWatchDispatch = Param::fixed(5e-6);
  Harness h(std::move(o));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(h.api->create(kLeases, lease("n" + std::to_string(i))).ok());
  for (int k = 0; k < 9; ++k) {
    for (int i = 0; i < 10; ++i) {
      auto g = h.api->get(kLeases.named("n" + std::to_string(i)));
      json l = g.body;
      l["spec"]["renewTime"] = "2026-01-01T00:00:" + std::to_string(10 + k) + ".000000Z";
      ASSERT_TRUE(h.api->update(kLeases.named("n" + std::to_string(i)), l).ok());
    }
  }
  const double minutes = std::chrono::duration<double>(h.sim.now().time_since_epoch()).count() / 60;
  EXPECT_NEAR(scraped(h, "kube-apiserver-0", "apiserver_watch_events_total", {{"resource", "leases"}}),
              200 + 2 * minutes, 1e-4);
  // 10 creations (other writes, 1 ms), 90 renewals (0.4 ms), 200 events (50 us), each
  // dispatched first (5 us).
  const double expected = 10 * 0.001 + 90 * 0.0004 + 200 * (0.00005 + 5e-6);
  EXPECT_NEAR(scraped(h, "kube-apiserver-0", "process_cpu_seconds_total"), expected, 1e-9);

  // Without them the same writes cost only themselves.
  Harness none(quiet());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(none.api->create(kLeases, lease("n" + std::to_string(i))).ok());
  EXPECT_NEAR(scraped(none, "kube-apiserver-0", "process_cpu_seconds_total"), 10 * 0.001, 1e-9);
  EXPECT_EQ(scraped(none, "kube-apiserver-0", "apiserver_watch_events_total"), 0) << "no event was sent";
}

// Opens a watch of `path` (a collection, with its query) whose events go nowhere.
void watchOf(Harness& h, const std::string& path) {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = path + (path.find('?') == std::string::npos ? "?" : "&") + "watch=true&timeoutSeconds=600";
  req.onBodyChunk = [](std::string_view) { return true; };
  h.transport->submit(std::move(req), [](kube::HttpResponse) {});
}

double cpuOf(Harness& h) { return scraped(h, "kube-apiserver-0", "process_cpu_seconds_total"); }

TEST(ModelCosts, EachChangeIsDispatchedToEveryWatcherAndSentToThoseThatSelectIt) {
  // Ten watches of ConfigMaps: four select everything, six a label nothing has. Each of
  // five creations is dispatched to all ten (10 us each) and sent to the four (50 us).
  ModelOptions o = quiet();
  o.calibration.apiserverCpuWatchDispatch = Param::fixed(10e-6);
  Harness h(std::move(o));
  for (int i = 0; i < 4; ++i) watchOf(h, "/api/v1/namespaces/default/configmaps");
  for (int i = 0; i < 6; ++i) watchOf(h, "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dnone");
  h.sim.runFor(1s);
  ASSERT_EQ(h.plane->stats().watchers, 10u);
  const double before = cpuOf(h);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c" + std::to_string(i))).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(h.plane->stats().watchEventsSent, 20u);
  // The scrape after the writes is a read, which costs nothing here.
  EXPECT_NEAR(cpuOf(h) - before, 5 * 0.001 + 50 * 10e-6 + 20 * 0.00005, 1e-9);
}

json boundPod(const std::string& name, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "pause"}}}}}}};
}

TEST(ModelCosts, TheTriggerIndexKeepsAPinnedWatchFromOtherNodesChanges) {
  // Kubelets' pod watches pinned to node-a and node-c, and a watch that pins nothing
  // (a label nothing has). Three pods on node-a and one on node-b: node-a's watch is
  // dispatched its three, node-c's none (spec.nodeName is indexed), the unpinned
  // watch all four; the three of node-a are the only events sent. Without the index it
  // would be twelve dispatches.
  ModelOptions o = quiet();
  o.calibration.apiserverCpuWatchDispatch = Param::fixed(10e-6);
  Harness h(std::move(o));
  const std::string pods = "/api/v1/pods";
  watchOf(h, pods + "?fieldSelector=spec.nodeName%3Dnode-a");
  watchOf(h, pods + "?fieldSelector=spec.nodeName%3Dnode-c");
  watchOf(h, pods + "?labelSelector=app%3Dnone");
  // A Node watch pinned by name (metadata.name is the nodes' index): no pod reaches it.
  watchOf(h, "/api/v1/nodes?fieldSelector=metadata.name%3Dnode-a");
  h.sim.runFor(1s);
  const double before = cpuOf(h);
  const ResourceRef podsRef = ResourceRef(kube::gvr::kPods).in("default");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.api->create(podsRef, boundPod("a" + std::to_string(i), "node-a")).ok());
  ASSERT_TRUE(h.api->create(podsRef, boundPod("b0", "node-b")).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(h.plane->stats().watchEventsSent, 3u);
  EXPECT_NEAR(cpuOf(h) - before, 4 * 0.001 + 7 * 10e-6 + 3 * 0.00005, 1e-9);
}

TEST(ModelCosts, ASampledChangeIsSentAsTheChangesItStandsFor) {
  // A client of weight 4 (each of its objects stands for four) and one watch of every
  // ConfigMap (a shared or an operator's watch counts once): each sampled creation is
  // four writes, and four changes dispatched and sent to the watch.
  ModelOptions o = quiet();
  o.calibration.apiserverCpuWatchDispatch = Param::fixed(10e-6);
  Harness h(std::move(o), /*weight=*/4);
  watchOf(h, "/api/v1/namespaces/default/configmaps");
  h.sim.runFor(1s);
  const double before = cpuOf(h);
  const double eventsBefore = scraped(h, "kube-apiserver-0", "apiserver_watch_events_total");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c" + std::to_string(i))).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(h.plane->stats().watchEventsSent, 3u);  // simulated
  EXPECT_DOUBLE_EQ(scraped(h, "kube-apiserver-0", "apiserver_watch_events_total") - std::max(0.0, eventsBefore), 12);
  EXPECT_NEAR(cpuOf(h) - before, 4 * (3 * 0.001 + 3 * 10e-6 + 3 * 0.00005), 1e-9);
}

TEST(ModelCosts, EachOpenWatchHoldsHeapOnTheReplicaServingIt) {
  ModelOptions o = quiet();
  o.calibration.heapPerWatch = Param::fixed(25'000);
  Harness h(std::move(o));
  const double before = scraped(h, "kube-apiserver-0", "go_memstats_heap_inuse_bytes");
  for (int i = 0; i < 8; ++i) watchOf(h, "/api/v1/namespaces/default/configmaps?timeoutSeconds=5");
  h.sim.runFor(1s);
  EXPECT_DOUBLE_EQ(scraped(h, "kube-apiserver-0", "go_memstats_heap_inuse_bytes") - before, 8 * 25'000);
  // Ended (their timeout), they hold nothing.
  h.sim.runFor(10s);
  ASSERT_EQ(h.plane->stats().watchers, 0u);
  EXPECT_DOUBLE_EQ(scraped(h, "kube-apiserver-0", "go_memstats_heap_inuse_bytes"), before);
}

TEST(ModelCosts, ACustomResourceHasTheGarbageCollectorsWatcher) {
  ModelOptions o = quiet();
  o.calibration.planeWatchersPerCustomResource = 1;
  Harness h(std::move(o));
  const json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
                    {"kind", "CustomResourceDefinition"},
                    {"metadata", {{"name", "widgets.t.cpscale.io"}}},
                    {"spec",
                     {{"group", "t.cpscale.io"},
                      {"scope", "Namespaced"},
                      {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
                      {"versions",
                       {{{"name", "v1"},
                         {"served", true},
                         {"storage", true},
                         {"schema", {{"openAPIV3Schema", {{"type", "object"}}}}}}}}}}};
  ASSERT_TRUE(h.api->create(ResourceRef(kube::gvr::kCustomResourceDefinitions), crd).ok());
  h.sim.runFor(5s);
  const double before = scraped(h, "kube-apiserver-0", "apiserver_watch_events_total", {{"resource", "widgets"}});
  const double from = std::chrono::duration<double>(h.sim.now().time_since_epoch()).count();
  const ResourceRef widgets = ResourceRef(kube::GroupVersionResource{"t.cpscale.io", "v1", "widgets"}).in("default");
  for (int i = 0; i < 7; ++i) {
    json w = {{"apiVersion", "t.cpscale.io/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w" + std::to_string(i)}}}};
    ASSERT_TRUE(h.api->create(widgets, w).ok());
  }
  // Each creation, and the collector's bookmark a minute.
  const double minutes = (std::chrono::duration<double>(h.sim.now().time_since_epoch()).count() - from) / 60;
  EXPECT_NEAR(scraped(h, "kube-apiserver-0", "apiserver_watch_events_total", {{"resource", "widgets"}}) - before,
              7 + minutes, 1e-4);
}

TEST(ModelCosts, AListCostsItsCallAndEachObjectItReturns) {
  // 100 ConfigMaps, listed 10 times: 10 reads at 0.5 ms and 1,000 objects at 6 us.
  ModelOptions o = quiet();
  o.calibration.apiserverCpuRead = Param::fixed(0.0005);
  o.calibration.apiserverCpuListObject = Param::fixed(6e-6);
  Harness h(std::move(o));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c" + std::to_string(i))).ok());
  const double before = scraped(h, "kube-apiserver-0", "process_cpu_seconds_total");
  for (int k = 0; k < 10; ++k) {
    auto l = h.api->list(kConfigMaps);
    ASSERT_TRUE(l.ok());
    ASSERT_EQ(l.body["items"].size(), 100u);
  }
  // The scrapes themselves are reads too: one before the LISTs is inside `before`, the
  // one after is counted here.
  const double after = scraped(h, "kube-apiserver-0", "process_cpu_seconds_total");
  EXPECT_NEAR(after - before, 10 * 0.0005 + 1000 * 6e-6 + 0.0005, 1e-9);
}

TEST(ModelCosts, EtcdKeepsTheHistorySinceTheCompactionBefore) {
  // 1,000 Lease renewals a minute on 10 Leases at 1,000 bytes a revision, compaction
  // every 5 minutes. Before the second tick nothing was compacted: every revision is
  // there. After it, the revisions since the first tick (5 min of renewals) and each
  // Lease's latest older one: base + 1,000 x (5,000 + 10).
  ModelOptions o = quiet();
  o.calibration.etcdDbBaseBytes = Param::fixed(1e6);
  o.calibration.etcdDbBytesPerWrite = Param::fixed(1000);
  Harness h(std::move(o));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(h.api->create(kLeases, lease("n" + std::to_string(i))).ok());
  std::vector<json> current(10);
  for (int i = 0; i < 10; ++i) current[i] = h.api->get(kLeases.named("n" + std::to_string(i))).body;
  // Renewal k at k x 60 ms: 1,000 a minute, each answered within 6 ms.
  int renewals = 0;
  auto renewUntil = [&](engine::TimePoint end) {
    for (auto next = engine::TimePoint{} + renewals * 60ms; next < end; next = engine::TimePoint{} + renewals * 60ms) {
      h.sim.runUntil(next);
      const int i = renewals % 10;
      current[i]["spec"]["renewTime"] = std::to_string(renewals);
      auto u = h.api->update(kLeases.named("n" + std::to_string(i)), current[i]);
      ASSERT_TRUE(u.ok()) << u.describe();
      current[i] = u.body;
      ++renewals;
    }
    h.sim.runUntil(end);
  };
  renewUntil(engine::TimePoint{9min});  // one tick (5 min), nothing compacted yet
  const double before = scraped(h, "etcd-main", "etcd_mvcc_db_total_size_in_use_in_bytes");
  EXPECT_NEAR(before, 1e6 + 1000 * (10 + renewals), 1000);
  renewUntil(engine::TimePoint{11min});  // past the second tick: compacted to the first's revision
  const double inUse = scraped(h, "etcd-main", "etcd_mvcc_db_total_size_in_use_in_bytes");
  // Renewals since the 5-minute tick: ~1,000 a minute for 6 minutes.
  EXPECT_NEAR(inUse, 1e6 + 1000 * (6000 + 10), 1000 * 60);
  // The file keeps what it grew to.
  EXPECT_GE(scraped(h, "etcd-main", "etcd_mvcc_db_total_size_in_bytes"), 1e6 + 1000 * 9000);
  EXPECT_DOUBLE_EQ(scraped(h, "etcd-main", "etcd_server_quota_backend_bytes"), 2.0 * 1024 * 1024 * 1024);
}

TEST(ModelCosts, PastItsQuotaEtcdRefusesWritesButNotDeletes) {
  // A 1 MB quota at 100 kB a revision: the eleventh write takes the file past it, and
  // the alarm refuses the twelfth.
  ModelOptions o = quiet();
  o.calibration.etcdDbBaseBytes = Param::fixed(0);
  o.calibration.etcdDbBytesPerWrite = Param::fixed(100e3);
  o.etcds = {{"main", {}, 1e6}};
  Harness h(std::move(o));
  int created = 0;
  kube::ApiResult last;
  for (int i = 0; i < 400; ++i) {
    last = h.api->create(kConfigMaps, configMap("c" + std::to_string(i)));
    if (!last.ok()) break;
    ++created;
    // The quota is looked at every 256 writes and at each scrape.
    scraped(h, "etcd-main", "etcd_mvcc_db_total_size_in_bytes");
  }
  EXPECT_EQ(created, 11);
  EXPECT_EQ(last.status, 500);
  EXPECT_NE(last.describe().find("database space exceeded"), std::string::npos) << last.describe();
  EXPECT_TRUE(h.api->remove(kConfigMaps.named("c0")).ok());
  EXPECT_GE(h.plane->stats().noSpace, 1u);
}

TEST(ModelCosts, APinnedHostQueuesEachSetOfCpusApart) {
  // kube-apiserver alone on one core, etcd with the generator on another: a write's
  // wait is the apiserver's queue plus etcd's, and the generator's CPU lands on etcd's.
  ModelOptions o = quiet();
  o.calibration.sharedHost = false;
  o.calibration.placement = {{"1", 1, {"kube-apiserver"}}, {"0", 1, {"etcd", "generator"}}};
  o.calibration.generatorCpuPerRequest = Param::fixed(0.002);
  Harness h(std::move(o));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c" + std::to_string(i))).ok());
  // 20 writes at 0.2 ms of etcd and 2 ms of generator CPU each on the etcd set; the
  // apiserver's own 1 ms each on its set.
  EXPECT_NEAR(scraped(h, "kube-apiserver-0", "process_cpu_seconds_total"), 20 * 0.001, 1e-9);
  EXPECT_NEAR(scraped(h, "etcd-main", "process_cpu_seconds_total"), 20 * 0.0002, 1e-9);
  // A placement that does not say where kube-apiserver ran cannot be modelled.
  ModelOptions bad = quiet();
  bad.calibration.placement = {{"0", 1, {"etcd"}}};
  engine::VirtualSimulator sim;
  EXPECT_THROW(ModelPlane(sim, bad), std::invalid_argument);
}

TEST(ModelCosts, EachFurtherReplicaRenewsItsIdentityLease) {
  // The calibration's idle plane had one kube-apiserver (its identity Lease is in the
  // measured 1 write a second); two more renew theirs every 10 s: 0.2 writes a second.
  auto background = [](std::size_t replicas) {
    ModelOptions o = quiet();
    o.apiservers = replicas;
    o.calibration.background = {{"leases", "coordination.k8s.io", "PUT", 1.0}};
    Harness h(std::move(o));
    h.sim.runFor(100s);
    return static_cast<double>(h.plane->stats().backgroundRequests);
  };
  EXPECT_NEAR(background(1), 100, 1);
  EXPECT_NEAR(background(3), 120, 2);
}

TEST(ModelCosts, LiveHeapAddsNoCpuAsGoPacesItsCollector) {
  // Go's collector runs when the heap has grown by GOGC % of the live heap since the
  // last one, and marks the live heap: cycles a second fall as the heap grows and each
  // costs in proportion to it, so at a given allocation rate the GC's CPU does not grow
  // with the live heap. The model carries the GC in the per-request costs and charges
  // nothing for the heap itself: the same 50 writes cost the same beside 5,000 dormant
  // objects as alone.
  auto cost = [](int dormant) {
    Harness h(quiet());
    for (int i = 0; i < dormant; ++i) h.api->create(kConfigMaps, configMap("d" + std::to_string(i)));
    const double before = scraped(h, "kube-apiserver-0", "process_cpu_seconds_total");
    for (int i = 0; i < 50; ++i) h.api->create(kLeases, lease("n" + std::to_string(i)));
    h.sim.runFor(60s);
    return scraped(h, "kube-apiserver-0", "process_cpu_seconds_total") - before;
  };
  EXPECT_NEAR(cost(0), cost(5000), 1e-9);
  EXPECT_NEAR(cost(0), 50 * 0.001, 1e-9);
}

TEST(ModelCosts, EventsHaveNoWatchCacheAndTakeNoHeap) {
  // kube-apiserver keeps no watch cache for Events (DefaultWatchCacheSizes sets events
  // to 0): they live in etcd alone, so 200 of them leave the heap where it was and have
  // no ring to report, while 200 ConfigMaps each take heapPerObject plus heapPerObjectByte
  // per JSON byte (1,000 B + 2 B/byte here).
  Harness h(quiet());
  // The calibration's base and the plane's own few objects (namespaces, ...).
  const double base = scraped(h, "kube-apiserver-0", "go_memstats_heap_inuse_bytes");
  ASSERT_GE(base, 100e6);
  for (int i = 0; i < 200; ++i) {
    json e = {{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata", {{"name", "n.e" + std::to_string(i)}, {"namespace", "default"}}},
              {"involvedObject", {{"kind", "Node"}, {"name", "n"}}},
              {"reason", "Starting"},
              {"message", "Starting kubelet."}};
    ASSERT_TRUE(h.api->create(kEvents, e).ok());
  }
  EXPECT_NEAR(scraped(h, "kube-apiserver-0", "go_memstats_heap_inuse_bytes"), base, 1);
  EXPECT_EQ(scraped(h, "kube-apiserver-0", "watch_cache_capacity", {{"resource", "events"}}), 0);
  EXPECT_EQ(scraped(h, "kube-apiserver-0", "apiserver_resource_objects", {{"resource", "events"}}), 200);

  for (int i = 0; i < 200; ++i) ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c" + std::to_string(i))).ok());
  // Each stored ConfigMap's JSON as the store keeps it (uid, resourceVersion, ...).
  const double bytes =
      scraped(h, "kube-apiserver-0", "apiserver_resource_size_estimate_bytes", {{"resource", "configmaps"}});
  ASSERT_GT(bytes, 0);
  EXPECT_NEAR(scraped(h, "kube-apiserver-0", "go_memstats_heap_inuse_bytes"), base + 200 * 1000 + 2 * bytes, 2);
  EXPECT_GT(scraped(h, "kube-apiserver-0", "watch_cache_capacity", {{"resource", "configmaps"}}), 0);
}

}  // namespace
}  // namespace cpscale::model
