// The synthetic kubelet's wire behaviour in virtual time: renewal cadence and jitter,
// the 409 path, status report cadence, failures and node churn.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "sim/common/error.h"
#include "test/support/workload_harness.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/reflector.h"

namespace cpscale::workloads::testing {
namespace {

constexpr const char* kLeases = "/leases/";

std::unique_ptr<Workload> fleet(const std::string& extra, int count = 1) {
  return makeWorkload(entry("kind: kubelets\nwatches: {mode: shared}\nname: fleet\ncount: " + std::to_string(count) +
                            "\nregistrationQps: 1000\n" + extra));
}

// PUT times per lease name.
std::map<std::string, std::vector<engine::TimePoint>> renewals(const Harness& h) {
  std::map<std::string, std::vector<engine::TimePoint>> out;
  for (const auto& r : h.requests("PUT", kLeases)) out[pathOf(r.request)].push_back(r.submittedAt);
  return out;
}

TEST(KubeletFleet, RegistersNodeThenLeaseWithRunLabelAndRealisticSize) {
  Harness h;
  auto w = fleet("nodeImages: 40\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{1s});
  ASSERT_EQ(h.count("POST", "/api/v1/nodes"), 1u);
  ASSERT_EQ(h.count("POST", "/namespaces/kube-node-lease/leases"), 1u);
  const auto posts = h.requests("POST", "/api/v1/nodes");
  const auto& node = posts[0].request;
  json n = json::parse(node.body);
  EXPECT_EQ(n["metadata"]["name"], "cpscale-t1-fleet-0");
  EXPECT_EQ(n["metadata"]["labels"][kRunLabel], "t1");
  EXPECT_EQ(n["status"]["images"].size(), 40u);
  EXPECT_GT(node.body.size(), 10'000u);
  EXPECT_LT(node.body.size(), 20'000u);
  json lease = json::parse(h.requests("POST", "leases")[0].request.body);
  EXPECT_EQ(lease["metadata"]["labels"][kRunLabel], "t1");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
}

TEST(KubeletFleet, RenewsEveryTenSecondsWithJitterWithinFourPercentAndNeverGetsFirst) {
  Harness h;
  h.ctx.epochUnixNanos = 1'700'000'000'000'000'000;
  auto w = fleet("", 20);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{300s});
  auto byLease = renewals(h);
  ASSERT_EQ(byLease.size(), 20u);
  engine::Duration minGap = 1h, maxGap{0};
  for (const auto& [name, times] : byLease) {
    ASSERT_GE(times.size(), 27u) << name;
    for (std::size_t i = 1; i < times.size(); ++i) {
      minGap = std::min(minGap, times[i] - times[i - 1]);
      maxGap = std::max(maxGap, times[i] - times[i - 1]);
    }
  }
  EXPECT_GE(minGap, 10s);
  EXPECT_LT(maxGap, 10400ms);
  // The jitter is used, not just bounded.
  EXPECT_GT(maxGap - minGap, 200ms);
  EXPECT_EQ(h.count("GET", kLeases), 0u);
  EXPECT_EQ(inst->summary()["leaseRenewals"], h.count("PUT", kLeases));
}

TEST(KubeletFleet, RenewalPutsTheCachedLeaseWithFreshRenewTimeAndResourceVersion) {
  Harness h;
  h.ctx.epochUnixNanos = 1'700'000'000'000'000'000;  // 2023-11-14T22:13:20Z
  auto w = fleet("");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{25s});
  auto puts = h.requests("PUT", kLeases);
  ASSERT_EQ(puts.size(), 2u);
  json first = json::parse(puts[0].request.body);
  json second = json::parse(puts[1].request.body);
  // The object the server returned (uid, labels) with only renewTime and rv moved.
  EXPECT_EQ(first["metadata"]["uid"], second["metadata"]["uid"]);
  EXPECT_EQ(first["metadata"]["labels"], second["metadata"]["labels"]);
  EXPECT_NE(first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"]);
  const std::string t1 = first["spec"]["renewTime"], t2 = second["spec"]["renewTime"];
  EXPECT_EQ(t1.size(), 27u);
  EXPECT_EQ(t1.substr(0, 15), "2023-11-14T22:1");
  EXPECT_LT(t1, t2);
  EXPECT_EQ(puts[1].request.headers.size(), puts[0].request.headers.size());
}

TEST(KubeletFleet, ConflictLeadsToExactlyOneGetAndRetriedPut) {
  Harness h;
  int puts = 0;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    // The second and third PUTs conflict: the renewal's retry conflicts again.
    if (r.method == "PUT" && (++puts == 2 || puts == 3)) return statusResponse(409, "Conflict");
    return std::nullopt;
  };
  auto w = fleet("");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{35s});
  std::vector<std::string> verbs;
  for (const auto& r : h.transport.requests()) {
    if (r.request.path.find(kLeases) != std::string::npos) verbs.push_back(r.request.method);
  }
  // renewal 1; renewal 2: PUT 409, GET, PUT 409 (given up until the next period); renewal 3.
  EXPECT_EQ(verbs, (std::vector<std::string>{"PUT", "PUT", "GET", "PUT", "PUT"}));
  EXPECT_EQ(inst->summary()["leaseConflicts"], 1);
  EXPECT_EQ(inst->summary()["leaseRenewalFailures"], 1);
}

TEST(KubeletFleet, RetriedPutCarriesTheFetchedResourceVersion) {
  Harness h;
  int puts = 0;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "PUT" && ++puts == 1) return statusResponse(409, "Conflict");
    if (r.method == "GET") {
      return jsonResponse(200, {{"apiVersion", "coordination.k8s.io/v1"},
                                {"kind", "Lease"},
                                {"metadata", {{"name", "n"}, {"resourceVersion", "777777"}}},
                                {"spec", {{"renewTime", "x"}}}});
    }
    return std::nullopt;
  };
  auto w = fleet("");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{15s});
  auto p = h.requests("PUT", kLeases);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(json::parse(p[1].request.body)["metadata"]["resourceVersion"], "777777");
}

TEST(KubeletFleet, StatusPatchedOnlyEveryReportFrequencyWhenNothingChanges) {
  Harness h;
  auto w = fleet("renewalPhase: registration\nstatusReportFrequency: 5m\n", 3);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{11min});
  auto patches = h.requests("PATCH", "/status");
  // At 5 and 10 minutes after registration, per node.
  ASSERT_EQ(patches.size(), 6u);
  for (const auto& p : patches) {
    EXPECT_GE(p.submittedAt, engine::TimePoint{5min});
    EXPECT_NE(p.request.body.find("lastHeartbeatTime"), std::string::npos);
    EXPECT_EQ(json::parse(p.request.body)["status"]["conditions"].size(), 4u);
  }
}

// By default each node reports at its own phase of the report period: the first report
// comes within one period (and one computation) of registration, the next ones exactly
// a period apart, and a fleet registered at once spreads its reports over the period.
TEST(KubeletFleet, StatusReportsAreSpreadOverThePeriodByDefault) {
  Harness h;
  auto w = fleet("statusReportFrequency: 5m\n", 300);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{16min});
  std::map<std::string, std::vector<engine::TimePoint>> byNode;
  for (const auto& p : h.requests("PATCH", "/status")) byNode[pathOf(p.request)].push_back(p.submittedAt);
  ASSERT_EQ(byNode.size(), 300u);
  std::map<long, int> perMinute;
  for (const auto& [node, times] : byNode) {
    ASSERT_GE(times.size(), 3u) << node;
    EXPECT_LT(times.front(), engine::TimePoint{5min + 20s}) << node;
    for (std::size_t i = 1; i < times.size(); ++i) EXPECT_EQ(times[i] - times[i - 1], 5min) << node;
    for (auto t : times) ++perMinute[std::chrono::duration_cast<std::chrono::minutes>(t.time_since_epoch()).count()];
  }
  // 60 reports a minute on average; a registration-phased fleet would send all 300 in
  // one minute of five.
  for (long m = 1; m < 15; ++m) EXPECT_LT(perMinute[m], 110) << "minute " << m;
}

TEST(KubeletFleet, StatusPatchedAtEveryComputationWhenItChanges) {
  Harness h;
  auto w = fleet("statusChangeProbability: 1\nnodeStatusUpdateFrequency: 10s\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{100500ms});
  EXPECT_EQ(h.count("PATCH", "/nodes/cpscale-t1-fleet-0/status"), 10u);
}

// Without random changes a status computation can only report when the report is due,
// so the node's status timer is armed for those computations alone: an idle fleet
// wakes the engine for its renewals and its reports, not every 10 s per node.
TEST(KubeletFleet, AnIdleNodeWakesOnlyForItsRenewalsAndStatusReports) {
  Harness h;
  auto w = fleet("statusReportFrequency: 5m\n", 100);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{11min});
  const std::size_t puts = h.count("PUT", kLeases);
  const std::size_t patches = h.count("PATCH", "/status");
  // Every 5 minutes per node from its own phase: 2 or 3 reports in 11 minutes.
  EXPECT_GE(patches, 200u);
  EXPECT_LE(patches, 300u);
  EXPECT_GT(puts, 100u * 60);
  EXPECT_EQ(h.sim.stats().timerFires, puts + patches);
}

// The skipped computations keep their grid: a report falls on the first computation
// at or after statusReportFrequency, as when every one is run.
TEST(KubeletFleet, StatusReportsStayOnTheComputationGridWhenTheFrequenciesDoNotDivide) {
  Harness h;
  auto w = fleet("renewalPhase: registration\nnodeStatusUpdateFrequency: 10s\nstatusReportFrequency: 45s\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{300s});
  const auto posts = h.requests("POST", "/api/v1/nodes");
  ASSERT_EQ(posts.size(), 1u);
  const engine::TimePoint registered = posts[0].submittedAt + 1ms;  // answered after the fake's latency
  const auto patches = h.requests("PATCH", "/status");
  ASSERT_EQ(patches.size(), 5u);
  // Computations at registration + 10 s, 20 s, ...: the first 45 s past the last report is the fifth.
  for (std::size_t i = 0; i < patches.size(); ++i)
    EXPECT_EQ(patches[i].submittedAt, registered + 50s * static_cast<int>(i + 1)) << i;
}

TEST(KubeletFleet, FailedFractionStopsRenewingAndReturns) {
  Harness h;
  auto w = fleet("failures: {fraction: 0.3, at: 60s, returnAfter: 60s}\n", 10);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{200s});
  std::set<std::string> duringOutage, afterReturn;
  for (const auto& r : h.requests("PUT", kLeases)) {
    if (r.submittedAt > engine::TimePoint{71s} && r.submittedAt < engine::TimePoint{119s})
      duringOutage.insert(r.request.path);
    if (r.submittedAt > engine::TimePoint{121s}) afterReturn.insert(r.request.path);
  }
  EXPECT_EQ(duringOutage.size(), 7u);
  EXPECT_EQ(afterReturn.size(), 10u);
  EXPECT_EQ(inst->summary()["nodesFailed"], 3);
  EXPECT_EQ(inst->summary()["nodesReturned"], 3);
  // A returning kubelet renews at once.
  std::size_t atReturn = 0;
  for (const auto& r : h.requests("PUT", kLeases)) atReturn += r.submittedAt == engine::TimePoint{120s};
  EXPECT_EQ(atReturn, 3u);
}

TEST(KubeletFleet, FailureSelectionIsExactAndSpread) {
  int n = 0;
  for (int i = 0; i < 1000; ++i) n += failsAt(i, 0.25);
  EXPECT_EQ(n, 250);
  EXPECT_FALSE(failsAt(0, 0.0));
  EXPECT_TRUE(failsAt(0, 1.0));
}

TEST(KubeletFleet, NodeChurnJoinsAndLeavesAtTheConfiguredRates) {
  Harness h;
  auto w = fleet("churn: {joinsPerMinute: 30, leavesPerMinute: 30}\n", 50);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{20min});
  // 600 expected of each; Poisson sd ~24.
  const double joins = static_cast<double>(h.count("POST", "/api/v1/nodes")) - 50;
  const double leaves = static_cast<double>(h.count("DELETE", "/api/v1/nodes/"));
  EXPECT_NEAR(joins, 600, 90);
  EXPECT_NEAR(leaves, 600, 90);
  EXPECT_EQ(h.count("DELETE", kLeases), static_cast<std::size_t>(leaves));
  // Joined nodes take fresh names.
  std::set<std::string> names;
  for (const auto& r : h.requests("POST", "/api/v1/nodes"))
    names.insert(json::parse(r.request.body)["metadata"]["name"]);
  EXPECT_EQ(names.size(), h.count("POST", "/api/v1/nodes"));
}

TEST(KubeletFleet, RegistrationRampFollowsQps) {
  Harness h;
  auto w = makeWorkload(
      entry("kind: kubelets\nwatches: {mode: shared}\ncount: 100\nregistrationQps: 10\nregistrationBurst: 1\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{20s});
  auto posts = h.requests("POST", "/api/v1/nodes");
  ASSERT_EQ(posts.size(), 100u);
  EXPECT_EQ(posts.front().submittedAt, engine::TimePoint{});
  EXPECT_NEAR(std::chrono::duration<double>(posts.back().submittedAt.time_since_epoch()).count(), 9.9, 0.01);
}

TEST(KubeletFleet, PodsPerNodeReportTheirStartThenStreamStatus) {
  Harness h;
  auto w = fleet("podsPerNode: 3\npodStatusInterval: 30s\n", 2);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{61s});
  const auto posts = h.requests("POST", "/namespaces/cpscale-t1-fleet-pods/pods");
  ASSERT_EQ(posts.size(), 6u);
  // Each pod's start is reported as soon as its POST is answered (1 ms later)...
  for (const auto& post : posts) {
    const std::string name = json::parse(post.request.body)["metadata"]["name"];
    const auto patches = h.requests("PATCH", "/pods/" + name + "/status");
    ASSERT_FALSE(patches.empty()) << name;
    EXPECT_EQ(patches[0].submittedAt, post.submittedAt + 1ms) << name;
    EXPECT_EQ(json::parse(patches[0].request.body)["status"]["phase"], "Running");
  }
  // ...then each pod about every 30 s: ~2 updates per pod per minute.
  EXPECT_NEAR(static_cast<double>(h.count("PATCH", "/pods/")) - 6, 12, 3);
}

TEST(KubeletFleet, StopCancelsEverything) {
  Harness h;
  auto w = fleet("", 5);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{15s});
  inst->stop();
  const auto before = h.transport.requests().size();
  h.sim.runUntil(engine::TimePoint{60s});
  EXPECT_EQ(h.transport.requests().size(), before);
  inst.reset();
  EXPECT_EQ(h.sim.pending(), 0u);
}

TEST(KubeletFleet, IdleKubeletStateIsSmall) {
  // Two timers, the cached Lease (its differences from the fleet's reference text) and
  // a few words: well under half a kilobyte per node, besides the engine's own slots
  // for the two timers.
  Harness h;
  auto w = fleet("", 1000);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30s});
  EXPECT_EQ(inst->summary()["leasesCreated"], 1000);
  EXPECT_EQ(h.sim.pending(), 2000u);
  const auto perNode = inst->summary()["actorBytes"].get<std::size_t>() / 1000;
  EXPECT_LT(perNode, 400u);
  EXPECT_GT(perNode, 200u);  // the cached Lease's uids, name and times are in there
}

// A fleet registered in a burst renews in the same burst every period unless each
// kubelet's cycle starts at its own phase, as a real fleet's do.
std::map<long, int> putsPerSecond(const Harness& h, engine::TimePoint from) {
  std::map<long, int> out;
  for (const auto& r : h.requests("PUT", kLeases))
    if (r.submittedAt >= from)
      ++out[std::chrono::duration_cast<std::chrono::seconds>(r.submittedAt.time_since_epoch()).count()];
  return out;
}
int maxOf(const std::map<long, int>& m) {
  int mx = 0;
  for (const auto& [s, n] : m) mx = std::max(mx, n);
  return mx;
}

TEST(KubeletFleet, RenewalPhasesAreSpreadUniformlyByDefault) {
  Harness h;
  auto w = fleet("", 500);  // registered within half a second
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{100s});
  auto perSecond = putsPerSecond(h, engine::TimePoint{30s});
  ASSERT_EQ(perSecond.size(), 70u) << "every second of the window sees renewals";
  // 50 renewals/s on average; a uniform spread keeps every second near it.
  EXPECT_LT(maxOf(perSecond), 90);
  // Each node's first renewal comes within one period of its Lease's creation.
  std::map<std::string, engine::TimePoint> created, first;
  for (const auto& r : h.requests("POST", "/leases"))
    created[json::parse(r.request.body)["metadata"]["name"]] = r.submittedAt;
  for (const auto& r : h.requests("PUT", kLeases)) {
    std::string name = pathOf(r.request).substr(pathOf(r.request).rfind('/') + 1);
    if (!first.contains(name)) first[name] = r.submittedAt;
  }
  ASSERT_EQ(first.size(), 500u);
  for (const auto& [name, t] : first) {
    EXPECT_GT(t, created[name]) << name;
    EXPECT_LT(t - created[name], 10s + 10ms) << name;
  }
}

// Pod status too: each node's pods report at the node's own phase of the gap, so 200
// nodes registered in a burst spread 20 pod status PATCHes/s (400 pods, 20 s) over
// every second, instead of 200 at once every 10 s.
TEST(KubeletFleet, PodStatusPhasesAreSpreadUniformlyByDefault) {
  Harness h;
  auto w = fleet("podsPerNode: 2\npodStatusInterval: 20s\npodQps: 1000\npodBurst: 1000\n", 200);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{100s});
  std::map<long, int> perSecond;
  for (const auto& r : h.requests("PATCH", "/status"))
    if (r.submittedAt >= engine::TimePoint{40s} && pathOf(r.request).find("/pods/") != std::string::npos)
      ++perSecond[std::chrono::duration_cast<std::chrono::seconds>(r.submittedAt.time_since_epoch()).count()];
  ASSERT_EQ(perSecond.size(), 60u) << "every second of the window sees pod status";
  EXPECT_LT(maxOf(perSecond), 45);
  int total = 0;
  for (const auto& [s, n] : perSecond) total += n;
  EXPECT_NEAR(total, 60 * 20, 60);
}

TEST(KubeletFleet, RegistrationPhaseKeepsTheBurstWhenAskedFor) {
  Harness h;
  auto w = fleet("renewalPhase: registration\n", 500);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{100s});
  auto perSecond = putsPerSecond(h, engine::TimePoint{30s});
  EXPECT_GT(maxOf(perSecond), 250);  // all 500 inside a second or two
  EXPECT_LT(perSecond.size(), 30u);  // and silence in between
}

TEST(KubeletFleet, RenewalPhaseRejectsUnknownValues) {
  try {
    fleet("renewalPhase: bursty\n");
    FAIL() << "accepted renewalPhase: bursty";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("renewalPhase"), std::string::npos) << e.what();
  }
}

TEST(KubeletFleet, SetupIsDoneOnceEveryNodesLeaseAndPodsWereAnswered) {
  Harness h;
  PhaseLog log(1);
  h.ctx.phases = &log;
  auto w = makeWorkload(entry(
      "kind: kubelets\nwatches: {mode: shared}\nname: fleet\ncount: 10\nregistrationQps: 5\nregistrationBurst: 1\n"
      "podsPerNode: 2\npodQps: 100\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{1s});
  EXPECT_FALSE(log.setupComplete());
  EXPECT_EQ(inst->summary()["setupComplete"], false);
  // The tenth node registers at 1.8 s; its Lease and pods are answered milliseconds later.
  h.sim.runUntil(engine::TimePoint{1800ms});
  EXPECT_FALSE(log.setupComplete());
  h.sim.runUntil(engine::TimePoint{1900ms});
  EXPECT_TRUE(log.setupComplete());
  EXPECT_EQ(h.count("POST", "/pods"), 20u);
  EXPECT_EQ(inst->summary()["setupComplete"], true);
  EXPECT_EQ(inst->summary()["nodesAwaitingSetup"], 0);
}

TEST(KubeletFleet, SetupWaitsForTheStartEventsQueuedBehindTheEventBucket) {
  Harness h;
  PhaseLog log(1);
  h.ctx.phases = &log;
  // 10 nodes x (6 node + 2 x 4 pod) start Events = 140, at 20/s after a burst of 20:
  // the last goes at 6 s, long after the nodes and pods were answered (~0.2 s).
  auto w =
      makeWorkload(entry("kind: kubelets\nwatches: {mode: shared}\nname: fleet\ncount: 10\nregistrationQps: 100\n"
                         "podsPerNode: 2\npodQps: 100\nevents: true\neventQps: 20\neventBurst: 20\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{1s});
  EXPECT_EQ(inst->summary()["nodesAwaitingSetup"], 0);
  EXPECT_FALSE(log.setupComplete()) << "start Events still queued would spill into the measured window";
  h.sim.runUntil(engine::TimePoint{5900ms});
  EXPECT_FALSE(log.setupComplete());
  h.sim.runUntil(engine::TimePoint{6100ms});
  EXPECT_TRUE(log.setupComplete());
  EXPECT_EQ(inst->summary()["eventsCreated"], 140);
}

TEST(KubeletFleet, ANodeThatNeverRegistersKeepsSetupOpen) {
  Harness h;
  PhaseLog log(1);
  h.ctx.phases = &log;
  h.override = [](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "POST" && pathOf(r) == "/api/v1/nodes" && r.body.find("cpscale-t1-fleet-3\"") != std::string::npos)
      return statusResponse(500, "InternalError");
    return std::nullopt;
  };
  auto w = fleet("", 5);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{60s});
  EXPECT_FALSE(log.setupComplete());
  EXPECT_EQ(inst->summary()["nodesAwaitingSetup"], 1);
  EXPECT_EQ(inst->summary()["setupComplete"], false);
}

TEST(KubeletFleet, AnEmptyFleetHasNothingToSetUp) {
  Harness h;
  PhaseLog log(1);
  h.ctx.phases = &log;
  auto w = fleet("", 0);
  auto inst = w->start(h.ctx);
  EXPECT_TRUE(log.setupComplete());
}

// ---- the node watch and the node lifecycle controller's writes ----

constexpr const char* kNodeWatch = "/api/v1/nodes?";

// A Node as the watch shows it after someone (the node lifecycle controller, or the
// kubelet) wrote its Ready condition.
json nodeWithReady(const std::string& name, const std::string& status, int rv) {
  json ready = {{"type", "Ready"}, {"status", status}};
  if (status == "Unknown") {
    ready["reason"] = "NodeStatusUnknown";
    ready["message"] = "Kubelet stopped posting node status.";
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"resourceVersion", std::to_string(rv)}}},
          {"status", {{"conditions", json::array({ready})}}}};
}

// Pushes `node` on the fleet's watch at virtual time `at`.
void pushAt(Harness& h, engine::TimePoint at, const json& node) {
  h.sim.scheduleAt(at, [&h, node] { EXPECT_EQ(h.pushEvent(kNodeWatch, "MODIFIED", node), 1u); });
}

json conditionOf(const json& patch, const std::string& type) {
  for (const auto& c : patch["status"]["conditions"])
    if (c["type"] == type) return c;
  return json();
}

TEST(KubeletFleetLifecycle, OneNodeWatchStreamWithTheFleetSelectorIsPartOfSetup) {
  Harness h;
  PhaseLog log(1);
  h.ctx.phases = &log;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    // The node LIST is refused (403: not retried; the reflector backs off) until 3 s.
    if (r.method == "GET" && pathOf(r) == "/api/v1/nodes" && r.path.find("watch=true") == std::string::npos &&
        h.sim.now() < engine::TimePoint{3s}) {
      return statusResponse(403, "Forbidden");
    }
    return std::nullopt;
  };
  auto w = fleet("", 20);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{2s});
  EXPECT_EQ(inst->summary()["nodesAwaitingSetup"], 0);  // every node and Lease answered
  EXPECT_FALSE(log.setupComplete());
  EXPECT_EQ(inst->summary()["setupComplete"], false);
  h.sim.runUntil(engine::TimePoint{4s});
  EXPECT_TRUE(log.setupComplete());
  const auto watches = h.requests("GET", "watch=true");
  ASSERT_EQ(watches.size(), 1u);  // one stream for twenty nodes
  EXPECT_TRUE(watches[0].request.stream);
  EXPECT_EQ(pathOf(watches[0].request), "/api/v1/nodes");
  EXPECT_NE(watches[0].request.path.find("labelSelector=cpscale.io%2Frun%3Dt1%2Ccpscale.io%2Fworkload%3Dfleet"),
            std::string::npos)
      << watches[0].request.path;
  EXPECT_EQ(h.transport.heldStreams(), 1u);
  // At 0 s, then after client-go's backoffs, drawn from [0.8, 1.6) and [1.6, 3.2) s: the
  // third falls after 3 s (this seed's draws), the first that is answered.
  EXPECT_EQ(inst->summary()["nodeLifecycle"]["watchLists"], 3);
}

TEST(KubeletFleetLifecycle, AfterTheWatchShowsReadyUnknownTheNextStatusTickSendsTheFullCondition) {
  Harness h;
  h.ctx.epochUnixNanos = 1'700'000'000'000'000'000;
  auto w = fleet("renewalPhase: registration\nstatusReportFrequency: 5m\n");
  auto inst = w->start(h.ctx);
  const std::string node = "cpscale-t1-fleet-0";
  pushAt(h, engine::TimePoint{5s}, nodeWithReady(node, "Unknown", 500));
  h.sim.runUntil(engine::TimePoint{11s});
  // Status ticks at 10.001 s (10 s after registration): the first one reports.
  auto patches = h.requests("PATCH", "/nodes/" + node + "/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].submittedAt, engine::TimePoint{10001ms});
  json body = json::parse(patches[0].request.body);
  json ready = conditionOf(body, "Ready");
  EXPECT_EQ(ready["status"], "True");
  EXPECT_EQ(ready["reason"], "KubeletReady");
  EXPECT_EQ(ready["message"], "kubelet is posting ready status");
  EXPECT_EQ(ready["lastTransitionTime"], "2023-11-14T22:13:30Z");
  EXPECT_EQ(ready["lastHeartbeatTime"], ready["lastTransitionTime"]);
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure"}) {
    json c = conditionOf(body, type);
    EXPECT_EQ(c["status"], "False") << type;
    EXPECT_TRUE(c.contains("reason") && c.contains("lastTransitionTime")) << type;
  }
  EXPECT_EQ(conditionOf(body, "MemoryPressure")["reason"], "KubeletHasSufficientMemory");
  // The watch shows the kubelet's write: back to heartbeats every 5 minutes.
  pushAt(h, engine::TimePoint{12s}, nodeWithReady(node, "True", 501));
  h.sim.runUntil(engine::TimePoint{4min});
  EXPECT_EQ(h.count("PATCH", "/status"), 1u);
  // Still Unknown at the next tick: reported again, in full.
  pushAt(h, engine::TimePoint{4min + 1s}, nodeWithReady(node, "Unknown", 502));
  h.sim.runUntil(engine::TimePoint{4min + 11s});
  patches = h.requests("PATCH", "/status");
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(conditionOf(json::parse(patches[1].request.body), "Ready")["status"], "True");
  EXPECT_EQ(inst->summary()["nodeLifecycle"]["notReadyUnexpected"], 2);
}

TEST(KubeletFleetLifecycle, EveryComputationReportsWhileTheWatchShowsReadyUnknown) {
  Harness h;
  auto w = fleet("renewalPhase: registration\nstatusReportFrequency: 5m\n");
  auto inst = w->start(h.ctx);
  const std::string node = "cpscale-t1-fleet-0";
  pushAt(h, engine::TimePoint{5s}, nodeWithReady(node, "Unknown", 500));
  pushAt(h, engine::TimePoint{35s}, nodeWithReady(node, "True", 501));
  h.sim.runUntil(engine::TimePoint{6min});
  const auto patches = h.requests("PATCH", "/status");
  // Computations at 10.001 s, 20.001 s, ...: every one reports until the watch shows
  // True, then the next report is due 5 minutes after the last.
  ASSERT_EQ(patches.size(), 4u);
  EXPECT_EQ(patches[0].submittedAt, engine::TimePoint{10001ms});
  EXPECT_EQ(patches[1].submittedAt, engine::TimePoint{20001ms});
  EXPECT_EQ(patches[2].submittedAt, engine::TimePoint{30001ms});
  EXPECT_EQ(patches[3].submittedAt, engine::TimePoint{5min + 30001ms});
}

TEST(KubeletFleetLifecycle, HeartbeatOnlyPatchWhileTheWatchShowsReady) {
  Harness h;
  auto w = fleet("renewalPhase: registration\nstatusReportFrequency: 10s\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{11s});
  auto patches = h.requests("PATCH", "/status");
  ASSERT_EQ(patches.size(), 1u);
  json ready = conditionOf(json::parse(patches[0].request.body), "Ready");
  EXPECT_TRUE(ready.contains("lastHeartbeatTime"));
  EXPECT_FALSE(ready.contains("status"));
  EXPECT_FALSE(ready.contains("lastTransitionTime"));
}

TEST(KubeletFleetLifecycle, AReturningNodePatchesAtOnceWithTheFullCondition) {
  Harness h;
  auto w = fleet("failures: {fraction: 0.3, at: 60s, returnAfter: 60s}\n", 10);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{121s});
  std::set<std::string> atReturn;
  for (const auto& r : h.requests("PATCH", "/status")) {
    if (r.submittedAt != engine::TimePoint{120s}) continue;
    atReturn.insert(pathOf(r.request));
    json ready = conditionOf(json::parse(r.request.body), "Ready");
    EXPECT_EQ(ready["status"], "True");
    EXPECT_TRUE(ready.contains("lastTransitionTime"));
  }
  // Nodes 3, 6 and 9 fail (floor((i+1) 0.3) > floor(i 0.3)); the watch never showed
  // them NotReady (no controller here), yet they report in full at once.
  EXPECT_EQ(atReturn,
            (std::set<std::string>{"/api/v1/nodes/cpscale-t1-fleet-3/status", "/api/v1/nodes/cpscale-t1-fleet-6/status",
                                   "/api/v1/nodes/cpscale-t1-fleet-9/status"}));
}

TEST(KubeletFleetLifecycle, TransitionTimesComeFromTheWatchEvents) {
  Harness h;
  auto w = fleet("renewalPhase: registration\nfailures: {fraction: 0.5, at: 30s, returnAfter: 60s}\n", 4);
  auto inst = w->start(h.ctx);
  // Nodes 1 and 3 fail at 30 s and return at 90 s; node 0 keeps renewing.
  pushAt(h, engine::TimePoint{50s}, nodeWithReady("cpscale-t1-fleet-0", "Unknown", 600));
  pushAt(h, engine::TimePoint{55s}, nodeWithReady("cpscale-t1-fleet-0", "True", 601));
  pushAt(h, engine::TimePoint{75s}, nodeWithReady("cpscale-t1-fleet-1", "Unknown", 602));
  pushAt(h, engine::TimePoint{76s}, nodeWithReady("cpscale-t1-fleet-3", "Unknown", 603));
  pushAt(h, engine::TimePoint{80s}, nodeWithReady("cpscale-t1-fleet-3", "Unknown", 604));  // no new transition
  pushAt(h, engine::TimePoint{95500ms}, nodeWithReady("cpscale-t1-fleet-1", "True", 605));
  h.sim.runUntil(engine::TimePoint{100s});
  // The last renewal each failed node had answered (1 ms after it was sent) before 30 s.
  auto lastAnswered = [&](const std::string& node) {
    engine::TimePoint last{};
    for (const auto& r : h.requests("PUT", kLeases))
      if (pathOf(r.request).ends_with("/" + node) && r.submittedAt < engine::TimePoint{30s}) last = r.submittedAt;
    return last + 1ms;
  };
  auto secondsTo = [](engine::TimePoint a, engine::TimePoint b) {
    return std::round(std::chrono::duration<double>(b - a).count() * 1000) / 1000;
  };
  const json s = inst->summary()["nodeLifecycle"];
  EXPECT_EQ(s["notReadyTransitions"], 3);
  EXPECT_EQ(s["notReadyUnexpected"], 1);
  EXPECT_EQ(s["readyTransitions"], 2);
  EXPECT_EQ(s["notReadyAtEnd"], 1);
  ASSERT_EQ(s["notReadySeconds"].size(), 2u);
  EXPECT_DOUBLE_EQ(s["notReadySeconds"][0].get<double>(),
                   secondsTo(lastAnswered("cpscale-t1-fleet-1"), engine::TimePoint{75s}));
  EXPECT_DOUBLE_EQ(s["notReadySeconds"][1].get<double>(),
                   secondsTo(lastAnswered("cpscale-t1-fleet-3"), engine::TimePoint{76s}));
  EXPECT_GT(s["notReadySeconds"][0].get<double>(), 45);  // 75 s less the renewal just before 30 s
  EXPECT_LT(s["notReadySeconds"][0].get<double>(), 56);
  EXPECT_EQ(s["readyAgainSeconds"], json::array({5.5}));
}

TEST(KubeletFleetLifecycle, ARelistAfterGoneUpdatesWhatTheKubeletsSaw) {
  Harness h;
  int lists = 0;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method != "GET" || pathOf(r) != "/api/v1/nodes" || r.path.find("watch=true") != std::string::npos)
      return std::nullopt;
    json items = json::array();
    if (++lists > 1) items.push_back(nodeWithReady("cpscale-t1-fleet-0", "Unknown", 900));
    return jsonResponse(200, {{"metadata", {{"resourceVersion", "900"}}}, {"items", items}});
  };
  auto w = fleet("renewalPhase: registration\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{5s});
  kube::HttpResponse gone;
  gone.status = 200;
  gone.body = json{{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}}}.dump();
  EXPECT_EQ(h.transport.endStreams(kNodeWatch, gone), 1u);
  h.sim.runUntil(engine::TimePoint{11s});
  EXPECT_EQ(lists, 2);
  EXPECT_EQ(inst->summary()["nodeLifecycle"]["watchRelists"], 1);
  EXPECT_EQ(h.transport.heldStreams(), 1u);  // watching again
  auto patches = h.requests("PATCH", "/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(conditionOf(json::parse(patches[0].request.body), "Ready")["status"], "True");
}

// ---- what else a kubelet writes: events, pod starts, pod replacements ----

std::vector<json> eventsIn(const Harness& h, const std::string& ns) {
  std::vector<json> out;
  for (const auto& r : h.requests("POST", "/namespaces/" + ns + "/events")) out.push_back(json::parse(r.request.body));
  return out;
}

std::vector<std::string> reasons(const std::vector<json>& events, const std::string& object) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e["involvedObject"]["name"] == object) out.push_back(e["reason"]);
  return out;
}

TEST(KubeletFleetEvents, NodeAndPodStartsAreRecordedAsTheKubeletRecordsThem) {
  Harness h;
  h.ctx.epochUnixNanos = 1'700'000'000'000'000'000;
  auto w = fleet("events: true\npodsPerNode: 2\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{2s});
  const std::string node = "cpscale-t1-fleet-0";
  const auto nodeEvents = eventsIn(h, "default");
  ASSERT_EQ(nodeEvents.size(), 6u);
  EXPECT_EQ(reasons(nodeEvents, node),
            (std::vector<std::string>{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                                      "NodeHasSufficientPID", "NodeAllocatableEnforced", "NodeReady"}));
  std::set<std::string> names;
  for (const auto& e : nodeEvents) {
    names.insert(e["metadata"]["name"]);
    EXPECT_TRUE(e["metadata"]["name"].get<std::string>().starts_with(node + ".")) << e;
    EXPECT_EQ(e["metadata"]["namespace"], "default");
    EXPECT_EQ(e["metadata"]["labels"][kRunLabel], "t1");
    EXPECT_EQ(e["metadata"]["labels"][kWorkloadLabel], "fleet");
    EXPECT_EQ(e["involvedObject"], (json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}));
    EXPECT_EQ(e["source"], (json{{"component", "kubelet"}, {"host", node}}));
    EXPECT_EQ(e["reportingComponent"], "kubelet");
    EXPECT_EQ(e["reportingInstance"], node);
    EXPECT_EQ(e["count"], 1);
    EXPECT_EQ(e["type"], "Normal");
    EXPECT_EQ(e["firstTimestamp"], "2023-11-14T22:13:20Z");
    EXPECT_EQ(e["lastTimestamp"], e["firstTimestamp"]);
  }
  EXPECT_EQ(names.size(), 6u);  // recorded in the same instant, named apart
  EXPECT_EQ(nodeEvents[0]["message"], "Starting kubelet.");
  EXPECT_EQ(nodeEvents[5]["message"], "Node " + node + " status is now: NodeReady");
  EXPECT_EQ(nodeEvents[4]["message"], "Updated Node Allocatable limit across pods");

  const auto podEvents = eventsIn(h, "cpscale-t1-fleet-pods");
  ASSERT_EQ(podEvents.size(), 8u);
  const std::string pod = node + "-p1";
  EXPECT_EQ(reasons(podEvents, pod), (std::vector<std::string>{"Pulling", "Pulled", "Created", "Started"}));
  for (const auto& e : podEvents) {
    if (e["involvedObject"]["name"] != pod) continue;
    // The uid the server gave the pod (the harness answers uid-<resourceVersion>).
    EXPECT_TRUE(e["involvedObject"]["uid"].get<std::string>().starts_with("uid-")) << e;
    EXPECT_EQ(e["involvedObject"]["kind"], "Pod");
    EXPECT_EQ(e["involvedObject"]["namespace"], "cpscale-t1-fleet-pods");
    EXPECT_EQ(e["involvedObject"]["fieldPath"], "spec.containers{app}");
    EXPECT_EQ(e["metadata"]["namespace"], "cpscale-t1-fleet-pods");
    EXPECT_EQ(e["source"]["host"], node);
    EXPECT_EQ(e["metadata"]["labels"][kRunLabel], "t1");
  }
  for (const auto& e : podEvents) {
    if (e["reason"] == "Pulling") {
      EXPECT_EQ(e["message"], "Pulling image \"registry.k8s.io/pause:3.10\"");
    }
  }
  EXPECT_EQ(inst->summary()["eventsCreated"], 14);
  EXPECT_EQ(inst->summary()["eventsDropped"], 0);
}

TEST(KubeletFleetEvents, NoEventsUnlessAskedFor) {
  Harness h;
  auto w = fleet("podsPerNode: 2\nfailures: {fraction: 1, at: 10s, returnAfter: 10s}\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30s});
  EXPECT_EQ(h.count("POST", "/events"), 0u);
}

TEST(KubeletFleetEvents, AReturningNodeRecordsItsStartAgain) {
  Harness h;
  auto w = fleet("events: true\nfailures: {fraction: 1, at: 10s, returnAfter: 10s}\n");
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30s});
  const auto starts = h.requests("POST", "/namespaces/default/events");
  ASSERT_EQ(starts.size(), 12u);
  EXPECT_EQ(starts[6].submittedAt, engine::TimePoint{20s});
  EXPECT_EQ(json::parse(starts[6].request.body)["reason"], "Starting");
}

TEST(KubeletFleetEvents, TheFleetsEventBucketSpacesThemAndAFullQueueDrops) {
  Harness h;
  // 300 nodes x 6 events recorded within 0.3 s; 10 go at once, then 10/s; 1000 wait.
  auto w = fleet("events: true\neventQps: 10\neventBurst: 10\n", 300);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  const auto sent = static_cast<double>(h.count("POST", "/events"));
  EXPECT_NEAR(sent, 110, 3);
  const json s = inst->summary();
  EXPECT_NEAR(s["eventsDropped"].get<double>(), 1800 - 1000 - 10, 10);
  h.sim.runUntil(engine::TimePoint{200s});
  EXPECT_EQ(s["eventsDropped"].get<double>() + inst->summary()["eventsCreated"].get<double>(), 1800);
}

TEST(KubeletFleetPods, AReplacedPodIsDeletedWithGraceZeroAndItsSuccessorStarted) {
  Harness h;
  auto w = fleet("events: true\npodsPerNode: 2\nchurn: {podReplacementsPerMinute: 6}\n", 5);
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10min});
  const auto deletes = h.requests("DELETE", "/namespaces/cpscale-t1-fleet-pods/pods/");
  EXPECT_NEAR(static_cast<double>(deletes.size()), 60, 25);  // Poisson, 6 a minute
  EXPECT_EQ(inst->summary()["podsReplaced"], deletes.size());
  EXPECT_EQ(inst->summary()["podReplacementFailures"], 0);
  const auto posts = h.requests("POST", "/namespaces/cpscale-t1-fleet-pods/pods");
  EXPECT_EQ(posts.size(), 10 + deletes.size());
  std::map<std::string, engine::TimePoint> createdAt;
  for (const auto& p : posts) {
    std::string name = json::parse(p.request.body)["metadata"]["name"];
    EXPECT_TRUE(createdAt.emplace(name, p.submittedAt).second) << "name reused: " << name;
  }
  for (const auto& d : deletes) {
    EXPECT_EQ(json::parse(d.request.body)["gracePeriodSeconds"], 0);
    // Its successor: the slot's next generation, created after the DELETE was answered.
    std::string old = pathOf(d.request).substr(pathOf(d.request).rfind('/') + 1);
    const auto g = old.find("-g");
    const int gen = g == std::string::npos ? 0 : std::stoi(old.substr(g + 2));
    const std::string next = old.substr(0, g) + "-g" + std::to_string(gen + 1);
    ASSERT_TRUE(createdAt.contains(next)) << next;
    EXPECT_EQ(createdAt[next], d.submittedAt + 1ms);
    ASSERT_TRUE(createdAt.contains(old)) << old;
    // Started: its status reported once it exists, and its events.
    const auto patches = h.requests("PATCH", "/pods/" + next + "/status");
    ASSERT_FALSE(patches.empty()) << next;
    EXPECT_EQ(patches[0].submittedAt, createdAt[next] + 1ms);
    EXPECT_EQ(reasons(eventsIn(h, "cpscale-t1-fleet-pods"), next),
              (std::vector<std::string>{"Pulling", "Pulled", "Created", "Started"}));
    // Nobody reports the deleted pod's status any more.
    for (const auto& p : h.requests("PATCH", "/pods/" + old + "/status")) EXPECT_LT(p.submittedAt, d.submittedAt);
  }
}

// ---- each node's own watches (watches.mode perNode, the default) ----

json initialEventsEnd(const std::string& rv) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", {{"resourceVersion", rv}, {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
}

TEST(KubeletFleetStreams, EachNodeOpensItsKubeletsAndKubeProxysWatchesWithUpstreamSelectors) {
  Harness h;
  auto w = makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 2\nregistrationQps: 1000\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{1s});
  const auto watches = h.requests("GET", "watch=true");
  ASSERT_EQ(watches.size(), 14u);  // seven per node
  EXPECT_EQ(h.transport.heldStreams(), 14u);
  std::multiset<std::string> seen;
  for (const auto& r : watches) {
    const std::string& p = r.request.path;
    EXPECT_TRUE(r.request.stream);
    // Streaming lists, as client-go 1.36's WatchListClient opens them.
    EXPECT_NE(p.find("sendInitialEvents=true"), std::string::npos) << p;
    EXPECT_NE(p.find("resourceVersionMatch=NotOlderThan"), std::string::npos) << p;
    EXPECT_NE(p.find("allowWatchBookmarks=true"), std::string::npos) << p;
    if (p.find("cpscale-t1-fleet-1") != std::string::npos) continue;  // node 1's own: as node 0's
    std::string what = pathOf(r.request);
    for (const char* q :
         {"fieldSelector=metadata.name%3Dcpscale-t1-fleet-0", "fieldSelector=spec.nodeName%3Dcpscale-t1-fleet-0",
          "fieldSelector=spec.clusterIP%21%3DNone", "labelSelector=%21service.kubernetes.io%2Fservice-proxy-name",
          "labelSelector=%21service.kubernetes.io%2Fheadless"}) {
      if (p.find(q) != std::string::npos) what += std::string(" ") + q;
    }
    seen.insert(what);
  }
  const std::string svc = "/api/v1/services fieldSelector=spec.clusterIP%21%3DNone";
  const std::string proxySvc = svc + " labelSelector=%21service.kubernetes.io%2Fservice-proxy-name";
  const std::string slices =
      "/apis/discovery.k8s.io/v1/endpointslices labelSelector=%21service.kubernetes.io%2Fheadless";
  const std::string cidrs = "/apis/networking.k8s.io/v1/servicecidrs";
  const std::multiset<std::string> expected{
      // node 0's kubelet: its Node, its pods, the Services it makes environment variables of
      "/api/v1/nodes fieldSelector=metadata.name%3Dcpscale-t1-fleet-0",
      "/api/v1/pods fieldSelector=spec.nodeName%3Dcpscale-t1-fleet-0", svc,
      // node 0's kube-proxy: its Node, the Services and EndpointSlices it programs, the ServiceCIDRs
      "/api/v1/nodes fieldSelector=metadata.name%3Dcpscale-t1-fleet-0", proxySvc, slices, cidrs,
      // node 1's cluster-wide ones
      svc, proxySvc, slices, cidrs};
  EXPECT_EQ(seen, expected);
  // The streams share connections as a real node's do: a kubelet's three and a
  // kube-proxy's four on one connection each.
  EXPECT_EQ(w->watchStreamsPerConnection(), 4);
}

TEST(KubeletFleetStreams, SetupWaitsForEveryNodesStreamsToEndTheirInitialEvents) {
  Harness h;
  PhaseLog log(1);
  h.ctx.phases = &log;
  auto w = makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 3\nregistrationQps: 1000\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{2s});
  EXPECT_EQ(inst->summary()["nodesRegistered"], 3);
  EXPECT_FALSE(log.setupComplete());  // every Lease is in, no stream has listed
  EXPECT_EQ(inst->summary()["nodesAwaitingSetup"], 3);
  // Node 0's initial events end on all seven of its streams.
  EXPECT_EQ(h.pushEvent("cpscale-t1-fleet-0", "BOOKMARK", initialEventsEnd("200")), 3u);  // its Node x2, its pods
  EXPECT_EQ(h.pushEvent("services", "BOOKMARK", initialEventsEnd("200")), 6u);
  EXPECT_EQ(h.pushEvent("endpointslices", "BOOKMARK", initialEventsEnd("200")), 3u);
  EXPECT_EQ(h.pushEvent("servicecidrs", "BOOKMARK", initialEventsEnd("200")), 3u);
  h.sim.runUntil(engine::TimePoint{3s});
  EXPECT_EQ(inst->summary()["nodesAwaitingSetup"], 2);
  EXPECT_FALSE(log.setupComplete());
  h.pushEvent("cpscale-t1-fleet-1", "BOOKMARK", initialEventsEnd("201"));
  h.pushEvent("cpscale-t1-fleet-2", "BOOKMARK", initialEventsEnd("201"));
  h.sim.runUntil(engine::TimePoint{4s});
  EXPECT_TRUE(log.setupComplete());
  const json s = inst->summary()["nodeWatches"];
  EXPECT_EQ(s["mode"], "perNode");
  EXPECT_EQ(s["synced"], 21);
  EXPECT_EQ(s["byWatch"]["kubelet/pods"]["lists"], 3);
  EXPECT_EQ(s["byWatch"]["kubelet/pods"]["errors"], 0);
  // Events after the initial ones are the watch's, not the list's.
  const json node0 = {{"kind", "Node"}, {"metadata", {{"name", "cpscale-t1-fleet-0"}, {"resourceVersion", "300"}}}};
  EXPECT_EQ(h.pushEvent("metadata.name%3Dcpscale-t1-fleet-0", "MODIFIED", node0), 2u);
  h.sim.runUntil(engine::TimePoint{5s});
  EXPECT_EQ(inst->summary()["nodeWatches"]["byWatch"]["kubelet/nodes"]["events"], 1);
  EXPECT_EQ(inst->summary()["nodeWatches"]["byWatch"]["kube-proxy/nodes"]["events"], 1);
  EXPECT_EQ(inst->summary()["nodeLifecycle"]["watchEvents"], 1);  // the kubelet's own Node stream
}

TEST(KubeletFleetStreams, AFailedNodeDropsItsStreamsAndListsAgainWhenItReturns) {
  Harness h;
  auto w =
      makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 4\nregistrationQps: 1000\n"
                         "failures: {fraction: 0.5, at: 10s, returnAfter: 20s}\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{5s});
  // Seven per node, and the fleet's observer watch of what the lifecycle controller does
  // to the failed nodes (their own streams are gone with them).
  EXPECT_EQ(h.transport.heldStreams(), 4u * 7 + 1);
  h.sim.runUntil(engine::TimePoint{11s});
  EXPECT_EQ(h.transport.heldStreams(), 2u * 7 + 1);
  h.sim.runUntil(engine::TimePoint{31s});
  EXPECT_EQ(h.transport.heldStreams(), 4u * 7 + 1);
  const json s = inst->summary()["nodeWatches"]["byWatch"]["kube-proxy/endpointslices"];
  EXPECT_EQ(s["lists"], 6);  // four at the start, two at the return
  EXPECT_EQ(s["streams"], 6);
}

TEST(KubeletFleetStreams, SharedModeOpensOneNodeWatchPerWorker) {
  Harness h;
  auto w =
      makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 5\nregistrationQps: 1000\nwatches: {mode: shared}\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{2s});
  EXPECT_EQ(h.count("GET", "watch=true"), 1u);
  EXPECT_EQ(inst->summary()["nodeWatches"], json({{"mode", "shared"}}));
  EXPECT_EQ(w->watchStreamsPerConnection(), 0);
}

TEST(ReflectorBackoff, DoublesFrom800msToThirtySecondsWithJitterAndResetsAfterTwoMinutes) {
  ReflectorBackoff b;
  engine::TimePoint t{};
  std::vector<engine::Duration> got;
  for (int i = 0; i < 8; ++i) got.push_back(b.next(t += 1s, 0.5));
  // d x 1.5 for d = 0.8, 1.6, 3.2, 6.4, 12.8, 25.6 s, then the 30 s cap.
  EXPECT_EQ(got, (std::vector<engine::Duration>{1200ms, 2400ms, 4800ms, 9600ms, 19200ms, 38400ms, 45s, 45s}));
  EXPECT_EQ(b.next(t += 1s, 0.0), 30s);
  // Two minutes without a failure: the next wait starts over.
  EXPECT_EQ(b.next(t += 2min + 1s, 0.0), 800ms);
  EXPECT_EQ(b.next(t += 1s, 0.0), 1600ms);
}

// ---- Services whose endpoints move ----

TEST(KubeletFleetServices, EachServiceSelectsItsShareOfThePodsAndFlipsReachEveryKubeProxy) {
  Harness h;
  auto w =
      makeWorkload(entry("kind: kubelets\nname: fleet\ncount: 2\nregistrationQps: 1000\npodsPerNode: 3\npodQps: 1000\n"
                         "services: {count: 2, readinessFlipsPerMinute: 600, notReadyFor: 5s}\n"));
  h.transport.setLatency(0ms);  // prepare() is synchronous
  w->prepare(h.api, h.sim.clock(), "t1");
  h.transport.setLatency(1ms);
  const auto services = h.requests("POST", "/api/v1/namespaces/cpscale-t1-fleet-pods/services");
  ASSERT_EQ(services.size(), 2u);
  const json svc1 = json::parse(services[1].request.body);
  EXPECT_EQ(svc1["spec"]["type"], "ClusterIP");
  EXPECT_EQ(svc1["spec"]["selector"],
            json({{"cpscale.io/run", "t1"}, {"cpscale.io/workload", "fleet"}, {"cpscale.io/service", "svc-1"}}));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{500ms});
  // Pod i of the fleet (three per node) goes to Service i mod 2; its IP is in its node's /24.
  std::map<std::string, std::string> serviceOf;
  for (const auto& r : h.requests("POST", "/pods")) {
    const json pod = json::parse(r.request.body);
    serviceOf[pod["metadata"]["name"]] = pod["metadata"]["labels"]["cpscale.io/service"];
  }
  EXPECT_EQ(serviceOf, (std::map<std::string, std::string>{{"cpscale-t1-fleet-0-p0", "svc-0"},
                                                           {"cpscale-t1-fleet-0-p1", "svc-1"},
                                                           {"cpscale-t1-fleet-0-p2", "svc-0"},
                                                           {"cpscale-t1-fleet-1-p0", "svc-1"},
                                                           {"cpscale-t1-fleet-1-p1", "svc-0"},
                                                           {"cpscale-t1-fleet-1-p2", "svc-1"}}));
  const auto started = h.requests("PATCH", "/pods/cpscale-t1-fleet-1-p2/status");
  ASSERT_FALSE(started.empty());
  const json status = json::parse(started[0].request.body)["status"];
  EXPECT_EQ(status["podIP"], "10.128.1.3");
  EXPECT_EQ(status["podIPs"], json::array({{{"ip", "10.128.1.3"}}}));

  // The first flip: Ready False, then (5 s later) True again.
  h.sim.runUntil(engine::TimePoint{3s});
  std::string ip;
  engine::TimePoint answered{};
  for (const auto& r : h.requests("PATCH", "/status")) {
    if (r.request.body.find(R"("type":"Ready","status":"False")") == std::string::npos) continue;
    ip = json::parse(r.request.body)["status"]["podIP"];
    answered = r.submittedAt + 1ms;
    break;
  }
  ASSERT_FALSE(ip.empty());
  // The kube-proxies' EndpointSlice streams hold their initial list.
  EXPECT_EQ(h.pushEvent("endpointslices", "BOOKMARK", initialEventsEnd("800")), 2u);
  // The EndpointSlice controller's update reaches both nodes' kube-proxies, twice (the
  // slice is written again for another pod's change): one receipt per node.
  const json slice = {{"kind", "EndpointSlice"},
                      {"metadata", {{"name", "svc-0-abc"}, {"resourceVersion", "900"}}},
                      {"endpoints", {{{"addresses", {ip}}, {"conditions", {{"ready", false}}}}}}};
  EXPECT_EQ(h.pushEvent("endpointslices", "MODIFIED", slice), 2u);
  EXPECT_EQ(h.pushEvent("endpointslices", "MODIFIED", slice), 2u);
  const engine::TimePoint pushed = h.sim.now();
  h.sim.runUntil(h.sim.now() + 10ms);
  const json d = inst->summary()["endpointDelivery"];
  EXPECT_GE(d["changes"].get<int>(), 1);
  EXPECT_EQ(d["receipts"], 2) << d.dump();
  const double seconds = std::chrono::duration<double>(pushed - answered).count();
  EXPECT_NEAR(d["seconds"][0].get<double>(), seconds, 0.002) << d.dump();
  // A slice showing it ready is no receipt of the change to not ready.
  json ready = slice;
  ready["endpoints"][0]["conditions"]["ready"] = true;
  h.pushEvent("endpointslices", "MODIFIED", ready);
  h.sim.runUntil(h.sim.now() + 10ms);
  EXPECT_EQ(inst->summary()["endpointDelivery"]["receipts"], 2);
  h.sim.runUntil(engine::TimePoint{20s});
  const json flips = inst->summary()["serviceEndpoints"];
  EXPECT_GT(flips["readinessFlips"].get<int>(), 2);
  EXPECT_EQ(flips["readinessFlipFailures"], 0);
  // Every flip to False is followed by one to True for the same pod 5 s later.
  std::map<std::string, std::vector<std::pair<engine::TimePoint, bool>>> seq;
  for (const auto& r : h.requests("PATCH", "/status")) {
    const json st = json::parse(r.request.body)["status"];
    seq[st["podIP"]].emplace_back(r.submittedAt, st["conditions"][0]["status"] == "True");
  }
  int checked = 0;
  for (const auto& [pod, reports] : seq) {
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const auto [at, up] = reports[i];
      if (up || at > engine::TimePoint{14s} || i == 0 || !reports[i - 1].second) continue;  // a flip
      bool back = false;
      for (std::size_t j = i + 1; j < reports.size(); ++j)
        back |= reports[j].second && reports[j].first - at >= 5s && reports[j].first - at < 5s + 10ms;
      EXPECT_TRUE(back) << pod;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace cpscale::workloads::testing
