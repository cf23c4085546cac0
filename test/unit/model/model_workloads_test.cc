// The workloads against the model, as `cpscale simulate` runs them: every request they
// make is one the model answers as kube-apiserver would (no failures, no conflicts on
// their own objects, watches that sync and follow).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "sim/common/yaml_reader.h"
#include "test/unit/model/model_harness.h"
#include "workloads/cleanup.h"
#include "workloads/workload.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::unique_ptr<workloads::Workload> workload(const std::string& yaml) {
  return workloads::makeWorkload(loadYamlString(yaml, "test.yaml"));
}

TEST(ModelWorkloads, KubeletFleetRegistersRenewsAndWatchesItsNodes) {
  testing::Harness h;
  auto w = workload(
      "kind: kubelets\nname: fleet\ncount: 50\nregistrationQps: 1000\npodsPerNode: 2\nevents: true\n"
      "statusChangeProbability: 0.1\n");
  w->prepare(*h.api, h.sim.clock(), "r1");
  workloads::WorkloadContext ctx{h.sim, *h.api, "r1", 7};
  auto inst = w->start(ctx);
  h.sim.runFor(5min);
  json s = inst->summary();
  EXPECT_EQ(s["nodesRegistered"], 50) << s.dump();
  EXPECT_EQ(s["leasesCreated"], 50);
  EXPECT_EQ(s["setupComplete"], true);
  EXPECT_GE(s["leaseRenewals"].get<int>(), 50 * 25);
  EXPECT_EQ(s["leaseRenewalFailures"], 0);
  EXPECT_EQ(s["leaseConflicts"], 0);
  EXPECT_GT(s["statusPatches"].get<int>(), 0);
  EXPECT_EQ(s["statusFailures"], 0);
  EXPECT_EQ(s["podsCreated"], 100);
  EXPECT_EQ(s["podFailures"], 0);
  EXPECT_GT(s["eventsCreated"].get<int>(), 0);
  EXPECT_EQ(s["eventFailures"], 0);
  // The node watch synced and sees every node Ready (the status patches keep it so).
  EXPECT_EQ(s["nodeLifecycle"]["notReadyTransitions"], 0) << s.dump();
  EXPECT_EQ(s["nodeLifecycle"]["watchErrors"], 0);
  EXPECT_GT(s["nodeLifecycle"]["watchEvents"].get<int>(), 0);
  inst->stop();
  inst.reset();
  h.sim.runFor(1s);

  // And cleanup finds and removes all of it.
  auto result = workloads::cleanupRun(*h.api, h.sim.clock(), "r1", w->resources(), {});
  EXPECT_TRUE(result.errors.empty()) << result.errors.front();
  EXPECT_TRUE(result.remaining.empty());
  EXPECT_GT(result.totalDeleted(), 150);
}

// Each node's own streams against the model's selectors: every one syncs through a
// streaming list, and each kubelet sees its own Node and pods, not the fleet's.
TEST(ModelWorkloads, EachNodesStreamsSeeWhatTheirSelectorsSelect) {
  testing::Harness h;
  auto w = workload(
      "kind: kubelets\nname: fleet\ncount: 20\nregistrationQps: 1000\npodsPerNode: 2\npodStatusInterval: 20s\n"
      "statusChangeProbability: 0.5\n");
  w->prepare(*h.api, h.sim.clock(), "r1");
  workloads::WorkloadContext ctx{h.sim, *h.api, "r1", 7};
  auto inst = w->start(ctx);
  h.sim.runFor(3min);
  const json s = inst->summary();
  EXPECT_EQ(s["setupComplete"], true) << s.dump();
  const json& by = s["nodeWatches"]["byWatch"];
  EXPECT_EQ(s["nodeWatches"]["synced"], 20 * 7) << s["nodeWatches"].dump();
  for (const auto& [name, c] : by.items()) {
    EXPECT_EQ(c["errors"], 0) << name;
    EXPECT_EQ(c["lists"], 20) << name;
  }
  // A node's status PATCHes reach its own kubelet's and kube-proxy's Node streams only.
  const auto patches = s["statusPatches"].get<std::uint64_t>();
  ASSERT_GT(patches, 100u);
  const auto nodeEvents = by["kubelet/nodes"]["events"].get<std::uint64_t>();
  EXPECT_GE(nodeEvents + by["kubelet/nodes"]["objectsListed"].get<std::uint64_t>(), patches);
  EXPECT_LE(nodeEvents, patches + 40);  // and its Lease-free updates (registration's)
  EXPECT_EQ(by["kube-proxy/nodes"]["events"], by["kubelet/nodes"]["events"]);
  // Each pod's changes reach the kubelet of its node only: every status update once.
  const auto podEvents =
      by["kubelet/pods"]["events"].get<std::uint64_t>() + by["kubelet/pods"]["objectsListed"].get<std::uint64_t>();
  EXPECT_GE(podEvents, s["podStatusUpdates"].get<std::uint64_t>());
  EXPECT_LE(podEvents, s["podStatusUpdates"].get<std::uint64_t>() + s["podsCreated"].get<std::uint64_t>());
  EXPECT_EQ(by["kubelet/services"]["objectsListed"], by["kube-proxy/services"]["objectsListed"]);
  inst->stop();
}

TEST(ModelWorkloads, ChurnAndDormantWithShardedWatchers) {
  testing::Harness h;
  auto churn = workload("kind: churn\nname: churn\nsessionsPerMinute: 120\nnamespaces: 2\n");
  auto dormant = workload(
      "kind: dormant\nname: dormant\ncrdKinds: 2\nobjectsPerKind: 50\nconfigMaps: 20\nnamespaces: 2\n"
      "updatesPerSecond: 2\nwatchers:\n  perKind: 4\n  shards: 2\n  timeout: 30s\n  pageSize: 20\n");
  churn->prepare(*h.api, h.sim.clock(), "r2");
  dormant->prepare(*h.api, h.sim.clock(), "r2");
  workloads::WorkloadContext ctx{h.sim, *h.api, "r2", 3};
  auto a = churn->start(ctx);
  auto b = dormant->start(ctx);
  h.sim.runFor(3min);
  json c = a->summary(), d = b->summary();
  EXPECT_GT(c["sessionsCreated"].get<int>(), 100) << c.dump();
  EXPECT_EQ(c["createFailures"], 0) << c.dump();
  EXPECT_EQ(c["writeFailures"], 0) << c.dump();
  EXPECT_GT(c["deletes"].get<int>(), 0) << c.dump();
  EXPECT_EQ(d["complete"], true) << d.dump();
  EXPECT_EQ(d["createFailures"], 0);
  EXPECT_EQ(d["updateFailures"], 0);
  EXPECT_EQ(d["watchersSynced"], 8);
  EXPECT_EQ(d["watchErrors"], 0) << d.dump();
  EXPECT_GT(d["watchEvents"].get<int>(), 0);
  // Watchers re-watch from their bookmarks when the server ends the stream.
  EXPECT_GT(d["watchStreams"].get<int>(), 8);
  EXPECT_GT(d["watchBookmarks"].get<int>(), 0);
}

// How fast the model answers a fleet: 2000 nodes for an hour of virtual time (a Lease
// PUT every 10 s each: 720k renewals, plus status patches of 15 kB Nodes and their
// watch). Not run by default; run with --gtest_also_run_disabled_tests.
TEST(ModelWorkloads, WatchersRelistEverythingOnTheirInterval) {
  // Three informers on one kind of 40 objects, each listing everything again every
  // 10 s (pages of 15: three LIST calls a relist) from a phase drawn in [10 s, 20 s).
  // Over the 105 s after the first sync each relists 9 or 10 times; every relist
  // returns all 40 objects, and each watch reopens from its LIST.
  testing::Harness h;
  auto w = workload(
      "kind: dormant\nname: d\ncrdKinds: 1\nobjectsPerKind: 40\nnamespaces: 1\ncreateQps: 1000\n"
      "createBurst: 1000\nwatchers: {perKind: 3, pageSize: 15, relistEvery: 10s}\n");
  w->prepare(*h.api, h.sim.clock(), "r3");
  workloads::WorkloadContext ctx{h.sim, *h.api, "r3", 5};
  auto inst = w->start(ctx);
  h.sim.runFor(105s);
  json s = inst->summary();
  EXPECT_EQ(s["complete"], true) << s.dump();
  const auto relists = s["watchRelists"].get<std::int64_t>();
  EXPECT_GE(relists, 3 * 8) << s.dump();
  EXPECT_LE(relists, 3 * 10) << s.dump();
  EXPECT_EQ(s["watchLists"].get<std::int64_t>(), 3 + relists);
  EXPECT_EQ(s["watchStreams"].get<std::int64_t>(), 3 + relists) << "each LIST is followed by one watch";
  // The first LIST may run before every object exists; every relist sees all 40.
  EXPECT_GE(s["watchObjectsListed"].get<std::int64_t>(), 40 * relists);
  EXPECT_LE(s["watchObjectsListed"].get<std::int64_t>(), 40 * (3 + relists));
  EXPECT_EQ(s["watchErrors"], 0);
  inst->stop();
}

TEST(ModelWorkloads, DISABLED_FleetOfTwoThousandForAnHour) {
  testing::Harness h;
  auto w = workload("kind: kubelets\nname: fleet\ncount: 2000\nregistrationQps: 200\n");
  w->prepare(*h.api, h.sim.clock(), "perf");
  workloads::WorkloadContext ctx{h.sim, *h.api, "perf", 1};
  auto inst = w->start(ctx);
  const auto wall = std::chrono::steady_clock::now();
  h.sim.runFor(std::getenv("PERF_MIN") ? std::chrono::minutes(std::atoi(std::getenv("PERF_MIN"))) : 1h);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  json s = inst->summary();
  const double requests = static_cast<double>(h.plane->stats().requests);
  std::printf("%.0f requests in %.2f s wall: %.2f us per request (engine and workload included)\n", requests, secs,
              1e6 * secs / requests);
  EXPECT_EQ(s["leaseRenewalFailures"], 0);
  EXPECT_GT(s["leaseRenewals"].get<double>(), 700'000);
}

}  // namespace
}  // namespace cpscale::model
