// The kubelet fleet and the real node lifecycle controller (the plane runs
// kube-controller-manager by default: node-monitor-grace-period 50 s, node-monitor-period
// 5 s). A fleet of 20 whose nodes 3, 7, 11, 15 and 19 stop renewing at 20 s and come
// back at 90 s: checked from a watch of the test's own that the controller marks
// exactly those five not Ready, no sooner than the grace period and no later than the
// grace period and its monitor passes after their last renewal, that the returned
// kubelets set Ready back at once, and that the fleet's own figures agree. Then the same
// through a lease tier that writes each Lease through every 30 s (sim/load/lease_tier.h):
// the controller judges the Leases the apiserver holds exactly as before, no live node
// goes Unknown, and a silent node is marked within the grace period and its monitor
// passes of its last real renewal, up to 20 s sooner (its last write through was up to
// two renewals before its last renewal).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/load/lease_tier.h"
#include "sim/run/workload_figures.h"
#include "test/integration/live_run.h"
#include "test/integration/plane_fixture.h"
#include "workloads/cleanup.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/workload.h"

namespace cpscale::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using namespace cpscale::kube;

// The fleet's timeline, from its start.
constexpr auto kFailAt = 20s;
constexpr auto kReturnAfter = 70s;
constexpr auto kRunFor = 110s;
// Bounds on when the controller marks a silent node not Ready, after the node's last
// renewal: it holds the renewal from its next monitor pass (up to 5 s later) and marks
// the node at the first pass after the 50 s grace period (up to 5 s more); 3 s of slack
// for the write and the watch. The node's last renewal falls anywhere in the lease
// period (10 s) before the failure, which is why it, not the failure, is the origin.
constexpr double kGrace = 50;
constexpr double kNotReadyLatest = kGrace + 5 + 5 + 3;
// A returned kubelet PATCHes Ready True at once; the bound leaves room for a slow plane.
constexpr double kReadyAgainLatest = 15;

// How much sooner than its last real renewal a silent node's last write through can be.
constexpr auto kPropagateEvery = 30s;
constexpr double kTierLag = 20;

std::string runIdFor(bool tier) { return "nl" + std::to_string(::getpid() % 100000) + (tier ? "t" : ""); }

struct ReadySighting {
  double unixSeconds;
  std::string status;
};

std::string readyStatus(const json& node) {
  for (const auto& c : node.value("/status/conditions"_json_pointer, json::array()))
    if (c.value("type", "") == "Ready") return c.value("status", "");
  return "";
}

// One fleet, renewing directly or through a lease tier, and what the controller made of it.
void fleetAgainstTheController(bool tier) {
  SCOPED_TRACE(tier ? "through a lease tier" : "direct");
  const std::string id = runIdFor(tier);
  auto runId = [&]() -> const std::string& { return id; };
  load::LeaseTierCounters tierCounts;
  const RestConfig config = PlaneEnvironment::instance().restConfig();
  CurlTransport syncTransport(config);
  engine::WallClock wall;
  ApiClient api(syncTransport, wall);

  auto fleet = workloads::makeWorkload(
      loadYamlString("kind: kubelets\nname: fleet\ncount: 20\nregistrationQps: 100\nleaseDurationSeconds: 40\n"
                     "failures: {fraction: 0.25, at: 20s, returnAfter: 70s}\n",
                     "node_lifecycle_it.yaml"));
  fleet->prepare(api, wall, runId());
  LiveRun run(config, {}, {},
              tier ? LiveRun::Wrap([&](TransportPtr inner, engine::Scheduler& s) -> TransportPtr {
                return std::make_unique<load::LeaseTier>(std::move(inner), s, tierCounts,
                                                         load::LeaseTierOptions{kPropagateEvery});
              })
                   : LiveRun::Wrap());
  auto ctx = run.context(runId());
  auto unixNow = [&] {
    return static_cast<double>(ctx.epochUnixNanos + run.sim().now().time_since_epoch().count()) / 1e9;
  };

  // The test's own view of the Nodes: every Ready status each node showed, and when.
  ApiClient observer(run.driver(), run.sim().clock(), run.sim());
  ListOptions selector;
  selector.labelSelector = workloads::runSelector(runId());
  std::map<std::string, std::vector<ReadySighting>> sightings;
  // From resourceVersion "0": the watch cache's current state as ADDED events, then every
  // change. Never 410 Gone or "too large", which a watch from a LIST's version can get when
  // the watch cache lags etcd on a loaded machine (the observer does not relist).
  ListOptions w = selector;
  w.resourceVersion = "0";
  std::optional<ApiResult> watchEnded;
  std::vector<std::string> watchErrors;
  CallId watch = observer.watch(
      ResourceRef(gvr::kNodes), w,
      [&](const WatchEvent& ev) {
        if (ev.type == WatchEventType::kError) watchErrors.push_back(ev.object.dump());
        if (ev.type != WatchEventType::kAdded && ev.type != WatchEventType::kModified) return;
        auto& seen = sightings[ev.object["metadata"]["name"].get<std::string>()];
        const std::string status = readyStatus(ev.object);
        if (seen.empty() || seen.back().status != status) seen.push_back({unixNow(), status});
      },
      [&](const ApiResult& r) { watchEnded = r; });

  const engine::TimePoint start = run.sim().now();
  auto inst = fleet->start(ctx);
  std::set<std::string> failed;
  for (int i = 0; i < 20; ++i)
    if (workloads::failsAt(i, 0.25)) failed.insert(workloads::KubeletFleet::nodeName(runId(), "fleet", i));
  ASSERT_EQ(failed.size(), 5u);

  // After the failure: each silent node's last renewal, as its Lease holds it.
  run.sim().runUntil(start + kFailAt + 5s);
  std::map<std::string, double> lastRenewal;
  for (const auto& node : failed) {
    ApiResult lease = api.get(ResourceRef(gvr::kLeases).in("kube-node-lease").named(node));
    ASSERT_TRUE(lease.ok()) << lease.describe();
    lastRenewal[node] = unixSeconds(lease.body["spec"]["renewTime"]);
  }
  run.sim().runUntil(start + kRunFor);
  const double returnedAt =
      static_cast<double>(ctx.epochUnixNanos + (start + kFailAt + kReturnAfter).time_since_epoch().count()) / 1e9;
  inst->stop();
  observer.cancel(watch);
  run.sim().runFor(500ms);
  ASSERT_TRUE(watchEnded);
  EXPECT_EQ(watchEnded->outcome, TransportOutcome::kAborted) << watchEnded->describe();  // open until cancelled
  EXPECT_TRUE(watchErrors.empty()) << "the observer's watch ended with " << watchErrors.front();

  ASSERT_EQ(sightings.size(), 20u);
  for (const auto& [node, seen] : sightings) {
    SCOPED_TRACE(node);
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front().status, "True");  // registered Ready
    EXPECT_EQ(seen.back().status, "True");   // and Ready at the end
    if (!failed.contains(node)) {
      EXPECT_EQ(seen.size(), 1u) << "a node that kept renewing was seen " << seen[1].status;
      continue;
    }
    // True, then not True (Unknown: the controller), then True again (the kubelet).
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[1].status, "Unknown");
    const double notReadyAfter = seen[1].unixSeconds - lastRenewal[node];
    EXPECT_GE(notReadyAfter, kGrace - 1) << "marked before the grace period ran out";
    EXPECT_LE(notReadyAfter, kNotReadyLatest);
    EXPECT_LT(seen[1].unixSeconds, returnedAt);
    const double readyAgainAfter = seen[2].unixSeconds - returnedAt;
    EXPECT_GE(readyAgainAfter, 0);
    EXPECT_LE(readyAgainAfter, kReadyAgainLatest);
  }

  // The fleet saw the same through its own node watch, and the run's figures say so.
  std::vector<result::WorkloadSummary> summaries{{fleet->kind(), fleet->name(), json::object()}};
  run::mergeSummary(summaries[0].summary, inst->summary());
  const json lc = summaries[0].summary["nodeLifecycle"];
  EXPECT_EQ(lc["notReadyUnexpected"], 0) << lc;
  EXPECT_EQ(lc["notReadySeconds"].size(), 5u) << lc;
  const auto figures = run::workloadFigures(summaries);
  auto value = [&](const char* name) {
    const metrics::Figure* f = metrics::findFigure(figures, name, metrics::sortedLabels({{"workload", "fleet"}}));
    EXPECT_TRUE(f && f->available()) << name << (f ? ": " + f->unavailableReason : ": missing");
    return f && f->value ? *f->value : -1.0;
  };
  EXPECT_EQ(value("node_not_ready_transitions"), 5);
  // From the kubelet's last renewal, as the fleet counts it (answered by the tier).
  EXPECT_GE(value("node_not_ready_seconds_p50"), kGrace - 1 - (tier ? kTierLag : 0));
  EXPECT_LE(value("node_not_ready_seconds_max"), kNotReadyLatest);
  EXPECT_EQ(value("node_ready_transitions"), 5);
  EXPECT_LE(value("node_ready_again_seconds_max"), kReadyAgainLatest);
  EXPECT_EQ(value("nodes_not_ready_at_end"), 0);

  if (tier) {
    // The kubelets renewed every 10 s; the apiserver saw each Lease's first renewal,
    // each return, and one write every 30 s.
    std::printf("lease tier: %llu renewals, %llu absorbed, %llu transitions, %llu periodic\n",
                static_cast<unsigned long long>(tierCounts.received.load()),
                static_cast<unsigned long long>(tierCounts.absorbed.load()),
                static_cast<unsigned long long>(tierCounts.transitions.load()),
                static_cast<unsigned long long>(tierCounts.periodic.load()));
    EXPECT_GE(tierCounts.transitions, 25u);  // 20 first renewals, 5 returns
    EXPECT_GE(tierCounts.absorbed, tierCounts.received / 2);
    EXPECT_EQ(tierCounts.received, tierCounts.absorbed + tierCounts.transitions + tierCounts.periodic);
  }

  workloads::CleanupResult cleaned = workloads::cleanupRun(api, wall, runId());
  for (const auto& e : cleaned.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(cleaned.complete());
}

// Both fleets at once, on one plane (each its own run id, Nodes and Leases): the
// controller judges 40 nodes, each fleet's by its own Leases.
TEST(NodeLifecycleIT, TheControllerMarksOnlySilentNodesNotReadyAndTheKubeletsSetThemReadyAgain) {
  std::thread throughATier([] { fleetAgainstTheController(true); });
  fleetAgainstTheController(false);
  throughATier.join();
}

}  // namespace
}  // namespace cpscale::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new cpscale::testing::PlaneEnvironment());
  return RUN_ALL_TESTS();
}
