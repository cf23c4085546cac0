// Growing a workload in place (Workload::growth) in virtual time: a growth started
// after its base adds exactly the difference, so the two together look like the larger
// entry on the wire (names, rates), and its setup is the added load's.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/common/error.h"
#include "sim/load/worker_pool.h"
#include "test/support/workload_harness.h"
#include "workloads/churn.h"
#include "workloads/dormant.h"
#include "workloads/kubelet_fleet.h"

namespace cpscale::workloads::testing {
namespace {

constexpr const char* kLeases = "/leases/";

std::unique_ptr<Workload> fleet(const std::string& extra, int count, int registrationQps = 1000) {
  return makeWorkload(entry("kind: kubelets\nwatches: {mode: shared}\nname: fleet\ncount: " + std::to_string(count) +
                            "\nregistrationQps: " + std::to_string(registrationQps) + "\n" + extra));
}

std::string nameOf(const kube::HttpRequest& r) { return json::parse(r.body)["metadata"]["name"]; }

std::multiset<std::string> postedNames(const Harness& h, const std::string& fragment) {
  std::multiset<std::string> out;
  for (const auto& r : h.requests("POST", fragment)) out.insert(nameOf(r.request));
  return out;
}

std::multiset<std::string> fleetNames(int n) {
  std::multiset<std::string> out;
  for (int i = 0; i < n; ++i) out.insert("cpscale-t1-fleet-" + std::to_string(i));
  return out;
}

// ---- kubelets: count ----

TEST(KubeletGrowth, TenGrownToTwentyFiveHoldsExactlyTheNodesAndLeasesOfTwentyFive) {
  Harness h;
  auto base = fleet("registrationBurst: 1\n", 10, 5);
  auto inst = base->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30s});

  auto grown = base->growth("count", 10, 25);
  ASSERT_TRUE(grown);
  EXPECT_EQ(grown->kind(), "kubelets");
  EXPECT_EQ(grown->name(), "fleet");
  PhaseLog log(1);
  WorkloadContext ctx = h.ctx;
  ctx.phases = &log;
  auto more = grown->start(ctx);
  // The base's registration rate: 15 nodes at 5/s from 30 s, the last at 32.8 s, its
  // Lease answered 2 ms later.
  h.sim.runUntil(engine::TimePoint{32800ms});
  EXPECT_FALSE(log.setupComplete());
  EXPECT_EQ(more->summary()["setupComplete"], false);
  h.sim.runUntil(engine::TimePoint{32900ms});
  EXPECT_TRUE(log.setupComplete());
  EXPECT_EQ(more->summary()["setupComplete"], true);
  EXPECT_EQ(more->summary()["nodesAwaitingSetup"], 0);

  h.sim.runUntil(engine::TimePoint{200s});
  // Names as a fleet of 25 has them, each created once.
  EXPECT_EQ(postedNames(h, "/api/v1/nodes"), fleetNames(25));
  EXPECT_EQ(postedNames(h, "/namespaces/kube-node-lease/leases"), fleetNames(25));
  for (const auto& r : h.requests("POST", "/api/v1/nodes")) {
    json labels = json::parse(r.request.body)["metadata"]["labels"];
    EXPECT_EQ(labels[kWorkloadLabel], "fleet");
    EXPECT_EQ(labels[kRunLabel], "t1");
  }
  // Renewals at the rate of 25 nodes (one per node every 10-10.4 s), every node's.
  std::map<std::string, int> perLease;
  for (const auto& r : h.requests("PUT", kLeases)) {
    if (r.submittedAt >= engine::TimePoint{50s} && r.submittedAt < engine::TimePoint{150s})
      ++perLease[pathOf(r.request)];
  }
  ASSERT_EQ(perLease.size(), 25u);
  int total = 0;
  for (const auto& [lease, n] : perLease) {
    EXPECT_GE(n, 9) << lease;
    EXPECT_LE(n, 10) << lease;
    total += n;
  }
  EXPECT_NEAR(total, 25 * 100 / 10.2, 12);
  // The summaries add up to the fleet of 25; the growth's keys are the base's.
  const json a = inst->summary(), b = more->summary();
  EXPECT_EQ(a["nodes"].get<int>() + b["nodes"].get<int>(), 25);
  EXPECT_EQ(a["leasesCreated"].get<int>() + b["leasesCreated"].get<int>(), 25);
  for (const auto& [key, v] : a.items()) EXPECT_TRUE(b.contains(key)) << key;
  // Still one node watch stream: the growth's nodes are seen through the base's.
  EXPECT_EQ(h.count("GET", "watch=true"), 1u);
  EXPECT_EQ(h.transport.heldStreams(), 1u);
  EXPECT_FALSE(b["nodeLifecycle"].contains("watchLists"));
}

TEST(KubeletGrowth, TheSharedNodeWatchReachesTheGrownNodes) {
  Harness h;
  auto base = fleet("renewalPhase: registration\nstatusReportFrequency: 5m\n", 2);
  auto inst = base->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{5s});
  auto grown = base->growth("count", 2, 4);  // outlives its instances, as a workload must
  auto more = grown->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{6s});
  // The node lifecycle controller marks a grown node Unknown: its next status tick
  // (10 s after it registered at 5 s) reports every condition.
  const json unknown = {{"apiVersion", "v1"},
                        {"kind", "Node"},
                        {"metadata", {{"name", "cpscale-t1-fleet-3"}, {"resourceVersion", "900"}}},
                        {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "Unknown"}}})}}}};
  EXPECT_EQ(h.pushEvent("/api/v1/nodes?", "MODIFIED", unknown), 1u);
  h.sim.runUntil(engine::TimePoint{16s});
  const auto patches = h.requests("PATCH", "/nodes/cpscale-t1-fleet-3/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_NE(patches[0].request.body.find("KubeletReady"), std::string::npos);
  EXPECT_EQ(h.count("PATCH", "/status"), 1u);
  EXPECT_EQ(more->summary()["nodeLifecycle"]["notReadyUnexpected"], 1);
  EXPECT_EQ(inst->summary()["nodeLifecycle"]["notReadyUnexpected"], 0);
}

TEST(KubeletGrowth, GrownNodesFailByTheSameRuleCountedFromTheGrowthsStart) {
  Harness h;
  const std::string failures = "failures: {fraction: 0.3, at: 60s, returnAfter: 60s}\n";
  auto base = fleet(failures, 10);
  auto inst = base->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{100s});
  auto grown = base->growth("count", 10, 20);
  auto more = grown->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{159s});
  EXPECT_EQ(inst->summary()["nodesFailed"], 3);  // 3, 6, 9 at 60 s
  EXPECT_EQ(more->summary()["nodesFailed"], 0);
  h.sim.runUntil(engine::TimePoint{161s});
  // floor(20 x 0.3) of the 20 fail in all: 13, 16 and 19 of the grown ones.
  EXPECT_EQ(more->summary()["nodesFailed"], 3);
  h.sim.runUntil(engine::TimePoint{219s});
  std::set<std::string> silent;  // grown nodes that renewed nothing while the failed were out
  for (int i = 10; i < 20; ++i) silent.insert("cpscale-t1-fleet-" + std::to_string(i));
  for (const auto& r : h.requests("PUT", kLeases)) {
    const std::string path = pathOf(r.request);
    if (r.submittedAt > engine::TimePoint{171s} && r.submittedAt < engine::TimePoint{219s})
      silent.erase(path.substr(path.rfind('/') + 1));
  }
  EXPECT_EQ(silent, (std::set<std::string>{"cpscale-t1-fleet-13", "cpscale-t1-fleet-16", "cpscale-t1-fleet-19"}));
  h.sim.runUntil(engine::TimePoint{230s});
  EXPECT_EQ(more->summary()["nodesReturned"], 3);
}

TEST(KubeletGrowth, ChurnStaysWithTheBaseAndReachesTheGrownNodes) {
  Harness h;
  auto base = fleet("churn: {joinsPerMinute: 6, leavesPerMinute: 3}\n", 5);
  auto inst = base->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  auto grown = base->growth("count", 5, 50);
  auto more = grown->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10min});
  // Joins keep the base's rate (~60) and take names past any count, so none collides
  // with a grown node.
  const auto names = postedNames(h, "/api/v1/nodes");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  const auto joined = inst->summary()["nodesJoined"].get<int>();
  EXPECT_NEAR(joined, 60, 25);
  EXPECT_EQ(more->summary()["nodesJoined"], 0);
  EXPECT_EQ(names.size(), 50u + static_cast<std::size_t>(joined));
  EXPECT_EQ(names.count("cpscale-t1-fleet-" + std::to_string(KubeletFleet::kMaxCount)), 1u);
  // Leaves (~30) pick among every node on the worker: mostly the 45 grown ones.
  const int leftBase = inst->summary()["nodesLeft"].get<int>();
  const int leftGrown = more->summary()["nodesLeft"].get<int>();
  EXPECT_NEAR(leftBase + leftGrown, 30, 14);
  EXPECT_GT(leftGrown, 5);
  EXPECT_EQ(static_cast<std::size_t>(leftBase + leftGrown), h.count("DELETE", "/api/v1/nodes/"));
}

TEST(KubeletGrowth, GrowsOnEveryWorkerWithOneWatchEach) {
  constexpr std::size_t kWorkers = 2;
  std::vector<kube::FakeTransport*> transports(kWorkers);
  load::WorkerOptions wo;
  wo.workers = kWorkers;
  wo.seed = 5;
  load::WorkerPool pool(wo, [&](load::Worker& w) -> kube::TransportPtr {
    auto t = std::make_unique<kube::FakeTransport>(static_cast<engine::Scheduler&>(w.simulator()));
    t->setLatency(1ms);
    t->setStreamHandler([](const kube::HttpRequest&) -> std::optional<kube::HttpResponse> { return std::nullopt; });
    t->setHandler([](const kube::HttpRequest& r) {
      if (r.method == "GET")
        return jsonResponse(200, {{"metadata", {{"resourceVersion", "1"}}}, {"items", json::array()}});
      json obj = r.body.empty() ? json::object() : json::parse(r.body);
      obj["metadata"]["resourceVersion"] = "2";
      return jsonResponse(201, obj);
    });
    transports[w.index()] = t.get();
    return t;
  });
  auto base = fleet("", 10);
  auto grown = base->growth("count", 10, 25);
  PhaseLog phases(2 * kWorkers);
  std::vector<std::unique_ptr<kube::ApiClient>> apis(kWorkers);
  std::vector<std::unique_ptr<WorkloadInstance>> instances(2 * kWorkers);
  pool.run(
      [&](load::Worker& w) {
        apis[w.index()] = std::make_unique<kube::ApiClient>(*w.driver(), w.simulator().clock(), w.simulator());
        WorkloadContext ctx{w.simulator(), *apis[w.index()], "t1", 42, &w};
        ctx.phases = &phases;
        instances[w.index()] = base->start(ctx);
        w.simulator().scheduleAt(engine::TimePoint{20s},
                                 [&, ctx]() mutable { instances[kWorkers + w.index()] = grown->start(ctx); });
      },
      engine::TimePoint{60s});
  std::multiset<std::string> nodes;
  std::size_t watches = 0;
  for (auto* t : transports) {
    for (const auto& r : t->requests()) {
      if (r.request.method == "POST" && pathOf(r.request) == "/api/v1/nodes") nodes.insert(nameOf(r.request));
      if (r.request.path.find("watch=true") != std::string::npos) ++watches;
    }
  }
  EXPECT_EQ(nodes, fleetNames(25));
  EXPECT_EQ(watches, kWorkers);
  EXPECT_EQ(phases.setupPending(), 0u);
  int grownNodes = 0;
  for (std::size_t i = kWorkers; i < 2 * kWorkers; ++i) grownNodes += instances[i]->summary()["nodes"].get<int>();
  EXPECT_EQ(grownNodes, 15);
  for (auto& i : instances) i.reset();  // before the pool's drivers go away
  apis.clear();
}

TEST(KubeletGrowth, OnlyCountGrowsAndOnlyUpward) {
  auto base = fleet("", 10);
  EXPECT_EQ(base->growableFields(), std::vector<std::string>{"count"});
  EXPECT_EQ(base->growth("registrationQps", 20, 40), nullptr);
  EXPECT_EQ(base->growth("podsPerNode", 1, 2), nullptr);
  EXPECT_THROW(base->growth("count", 10, 10), ConfigError);
  EXPECT_THROW(base->growth("count", 20, 10), ConfigError);
  EXPECT_THROW(base->growth("count", 10, 20.5), ConfigError);
  EXPECT_THROW(base->growth("count", 10, 2e7), ConfigError);
  try {
    base->growth("count", 5, 20);  // 5..9 are the base's own
    FAIL() << "grew over the base's nodes";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "count");
    EXPECT_EQ(e.where(), "workload 'fleet'");
  }
  // A growth grows on: 10 -> 25 -> 40.
  auto g = base->growth("count", 10, 25);
  EXPECT_THROW(g->growth("count", 20, 40), ConfigError);
  EXPECT_TRUE(g->growth("count", 25, 40));
}

// ---- churn: sessionsPerMinute ----

constexpr const char* kSessions = "/apis/churn.cpscale.io/v1/namespaces/";

std::size_t postsBetween(const Harness& h, const std::string& fragment, engine::TimePoint from, engine::TimePoint to) {
  std::size_t n = 0;
  for (const auto& r : h.requests("POST", fragment)) n += r.submittedAt >= from && r.submittedAt < to;
  return n;
}

TEST(ChurnGrowth, SixtyGrownToOneEightyArrivesAtOneEightyWithoutNameCollisions) {
  Harness h;
  auto base = makeWorkload(entry("kind: churn\nsessionsPerMinute: 60\ncreateQps: 1000\nnamespaces: 3\n"));
  auto inst = base->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10min});
  auto grown = base->growth("sessionsPerMinute", 60, 180);
  ASSERT_TRUE(grown);
  EXPECT_EQ(grown->name(), "churn");
  PhaseLog log(1);
  WorkloadContext ctx = h.ctx;
  ctx.phases = &log;
  auto more = grown->start(ctx);
  EXPECT_TRUE(log.setupComplete());  // nothing to set up: sessions are the load
  h.sim.runUntil(engine::TimePoint{40min});
  // 600 before, 5400 expected over the 30 minutes after (Poisson sd ~73, fixed seed).
  EXPECT_NEAR(static_cast<double>(postsBetween(h, kSessions, engine::TimePoint{}, engine::TimePoint{10min})), 600, 75);
  EXPECT_NEAR(static_cast<double>(postsBetween(h, kSessions, engine::TimePoint{10min}, engine::TimePoint{40min})), 5400,
              300);
  EXPECT_NEAR(more->summary()["sessionsStarted"].get<double>(), 3600, 250);
  // Every session its own object, in the base's namespaces.
  std::set<std::string> names;
  std::set<std::string> namespaces;
  for (const auto& r : h.requests("POST", kSessions)) {
    json obj = json::parse(r.request.body);
    names.insert(obj["metadata"]["namespace"].get<std::string>() + "/" + obj["metadata"]["name"].get<std::string>());
    namespaces.insert(obj["metadata"]["namespace"]);
    EXPECT_EQ(obj["metadata"]["labels"][kWorkloadLabel], "churn");
  }
  EXPECT_EQ(names.size(), h.count("POST", kSessions));
  EXPECT_EQ(namespaces, (std::set<std::string>{"cpscale-t1-churn-0", "cpscale-t1-churn-1", "cpscale-t1-churn-2"}));
  // A second growth (180 -> 300) takes ids apart from both.
  auto again = base->growth("sessionsPerMinute", 180, 300);
  auto third = again->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{45min});
  names.clear();
  for (const auto& r : h.requests("POST", kSessions)) {
    json obj = json::parse(r.request.body);
    names.insert(obj["metadata"]["namespace"].get<std::string>() + "/" + obj["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), h.count("POST", kSessions));
  EXPECT_NEAR(static_cast<double>(postsBetween(h, kSessions, engine::TimePoint{40min}, engine::TimePoint{45min})), 1500,
              150);
  const json a = inst->summary(), b = more->summary();
  for (const auto& [key, v] : a.items()) EXPECT_TRUE(b.contains(key)) << key;
}

TEST(ChurnGrowth, AGrowthQueuesBehindTheBasesCreationBucket) {
  Harness h;
  auto base =
      makeWorkload(entry("kind: churn\nsessionsPerMinute: 30\ncreateQps: 1\ncreateBurst: 1\nstatusInterval: 0s\n"));
  auto inst = base->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{60s});
  auto grown = base->growth("sessionsPerMinute", 30, 240);
  auto more = grown->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{180s});
  // 4 arrivals a second, created at most one a second between the two.
  EXPECT_LE(postsBetween(h, kSessions, engine::TimePoint{61s}, engine::TimePoint{180s}), 120u);
  EXPECT_GE(postsBetween(h, kSessions, engine::TimePoint{61s}, engine::TimePoint{180s}), 110u);
  EXPECT_GT(more->summary()["sessionsStarted"].get<int>(), 300);
}

TEST(ChurnGrowth, OnlyTheRateGrowsAndPrepareFindsEverythingInPlace) {
  Harness h;
  auto base = makeWorkload(entry("kind: churn\nsessionsPerMinute: 60\nnamespaces: 2\n"));
  EXPECT_EQ(base->growableFields(), std::vector<std::string>{"sessionsPerMinute"});
  EXPECT_EQ(base->growth("namespaces", 2, 4), nullptr);
  EXPECT_THROW(base->growth("sessionsPerMinute", 60, 60), ConfigError);
  EXPECT_THROW(base->growth("sessionsPerMinute", 60, 30), ConfigError);
  EXPECT_THROW(base->growth("sessionsPerMinute", 60, 2e7), ConfigError);
  auto capped = makeWorkload(entry("kind: churn\nsessionsPerMinute: 60\nmaxSessions: 100\n"));
  EXPECT_EQ(capped->growth("sessionsPerMinute", 60, 120), nullptr);

  // The growth's prepare() meets the base's namespaces and CRD: AlreadyExists is fine.
  bool prepared = false;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "POST" && prepared) return statusResponse(409, "AlreadyExists");
    if (r.method == "GET" && r.path.find("customresourcedefinitions") != std::string::npos) {
      return jsonResponse(200, {{"status", {{"conditions", {{{"type", "Established"}, {"status", "True"}}}}}}});
    }
    return std::nullopt;
  };
  h.transport.setLatency(0ms);
  base->prepare(h.api, h.sim.clock(), "t1");
  prepared = true;
  auto grown = base->growth("sessionsPerMinute", 60, 90);
  EXPECT_NO_THROW(grown->prepare(h.api, h.sim.clock(), "t1"));
  EXPECT_EQ(h.count("POST", "customresourcedefinitions"), 2u);
  EXPECT_EQ(grown->resources(), base->resources());
}

// ---- dormant: objectsPerKind ----

TEST(DormantGrowth, TwentyGrownToFiftyCreatesExactlyTheMissingObjectsOfEachKind) {
  Harness h;
  // Watchers list an empty collection and then hold their watch open.
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "GET" && r.path.find("/widgets") != std::string::npos &&
        r.path.find("watch=true") == std::string::npos)
      return jsonResponse(200, {{"metadata", {{"resourceVersion", "10"}}}, {"items", json::array()}});
    return std::nullopt;
  };
  auto base =
      makeWorkload(entry("kind: dormant\ncrdKinds: 2\nobjectsPerKind: 20\nconfigMaps: 5\nnamespaces: 4\n"
                         "createQps: 10\ncreateBurst: 1\nwatchers: {perKind: 1}\n"));
  PhaseLog baseLog(1);
  WorkloadContext baseCtx = h.ctx;
  baseCtx.phases = &baseLog;
  auto inst = base->start(baseCtx);
  h.sim.runUntil(engine::TimePoint{10s});
  ASSERT_TRUE(baseLog.setupComplete());
  const std::size_t requestsBefore = h.transport.requests().size();
  const std::size_t watchGetsBefore = h.count("GET", "/widgets");

  auto grown = base->growth("objectsPerKind", 20, 50);
  ASSERT_TRUE(grown);
  EXPECT_EQ(grown->name(), "dormant");
  EXPECT_EQ(grown->resources(), base->resources());
  PhaseLog log(1);
  WorkloadContext ctx = h.ctx;
  ctx.phases = &log;
  auto more = grown->start(ctx);
  // 60 creates at 10/s from 10 s: the last at 15.9 s, answered 1 ms later.
  h.sim.runUntil(engine::TimePoint{15900ms});
  EXPECT_FALSE(log.setupComplete());
  h.sim.runUntil(engine::TimePoint{15901ms});
  EXPECT_TRUE(log.setupComplete());
  h.sim.runUntil(engine::TimePoint{60s});

  // Per kind, the names of a population of 50, each once, in the namespaces it gives them.
  for (const std::string kind : {"op0", "op1"}) {
    std::multiset<std::string> got, want;
    for (const auto& r : h.requests("POST", "/apis/" + kind + ".dormant.cpscale.io/v1/namespaces/")) {
      json obj = json::parse(r.request.body);
      got.insert(obj["metadata"]["namespace"].get<std::string>() + "/" + obj["metadata"]["name"].get<std::string>());
      EXPECT_EQ(pathOf(r.request), "/apis/" + kind + ".dormant.cpscale.io/v1/namespaces/" +
                                       obj["metadata"]["namespace"].get<std::string>() + "/widgets");
    }
    for (int j = 0; j < 50; ++j)
      want.insert("cpscale-t1-dormant-" + std::to_string(j % 4) + "/widget-" + std::to_string(j));
    EXPECT_EQ(got, want) << kind;
  }
  // Nothing else: no more ConfigMaps, no CRDs, no watcher's LIST or WATCH.
  EXPECT_EQ(h.count("POST", "/configmaps"), 5u);
  std::size_t other = 0;
  for (std::size_t i = requestsBefore; i < h.transport.requests().size(); ++i) {
    const auto& r = h.transport.requests()[i].request;
    other += !(r.method == "POST" && r.path.find("/widgets") != std::string::npos);
  }
  EXPECT_EQ(other, 0u);
  EXPECT_EQ(h.count("GET", "/widgets"), watchGetsBefore);
  EXPECT_EQ(h.transport.heldStreams(), 2u);

  const json b = more->summary();
  EXPECT_EQ(b["objects"], 60);
  EXPECT_EQ(b["created"], 60);
  EXPECT_EQ(b["complete"], true);
  EXPECT_EQ(b["watchers"], 0);
  const json a = inst->summary();
  for (const auto& [key, v] : a.items()) {
    if (key != "watchLastError") {
      EXPECT_TRUE(b.contains(key)) << key;
    }
  }
  // Its phases are "grow/...": the base's "ramp/..." stay the only population ramps.
  std::vector<std::string> names;
  for (const auto& span : log.spans()) {
    names.push_back(span.name);
    EXPECT_TRUE(span.ended()) << span.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"grow/dormant/50", "grow/dormant/50/op0.dormant.cpscale.io/widgets",
                                             "grow/dormant/50/op1.dormant.cpscale.io/widgets"}));
  for (const auto& span : baseLog.spans()) EXPECT_TRUE(span.name.starts_with("ramp/")) << span.name;
}

TEST(DormantGrowth, OnlyObjectsPerKindGrowsAndOnlyPastTheBase) {
  auto base = makeWorkload(entry("kind: dormant\ncrdKinds: 2\nobjectsPerKind: 20\nconfigMaps: 5\n"));
  EXPECT_EQ(base->growableFields(), std::vector<std::string>{"objectsPerKind"});
  EXPECT_EQ(base->growth("configMaps", 5, 10), nullptr);
  EXPECT_EQ(base->growth("crdKinds", 2, 4), nullptr);
  EXPECT_THROW(base->growth("objectsPerKind", 20, 20), ConfigError);
  EXPECT_THROW(base->growth("objectsPerKind", 30, 25), ConfigError);
  EXPECT_THROW(base->growth("objectsPerKind", 10, 50), ConfigError);  // 10..19 are the base's
  EXPECT_THROW(base->growth("objectsPerKind", 20, 30.5), ConfigError);
}

TEST(DormantGrowth, InterleavedGrowthMarksOnlyItsWholePhase) {
  Harness h;
  auto base = makeWorkload(entry("kind: dormant\ncrdKinds: 3\nobjectsPerKind: 2\nrampPerKind: false\n"));
  auto grown = base->growth("objectsPerKind", 2, 4);
  PhaseLog log(1);
  WorkloadContext ctx = h.ctx;
  ctx.phases = &log;
  auto more = grown->start(ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  std::vector<std::string> kinds;
  for (const auto& r : h.requests("POST", "/widgets")) {
    kinds.push_back(r.request.path.substr(6, 3) + "/" + nameOf(r.request));
  }
  // Every kind's widget-2, then every kind's widget-3.
  EXPECT_EQ(kinds, (std::vector<std::string>{"op0/widget-2", "op1/widget-2", "op2/widget-2", "op0/widget-3",
                                             "op1/widget-3", "op2/widget-3"}));
  ASSERT_EQ(log.spans().size(), 1u);
  EXPECT_EQ(log.spans()[0].name, "grow/dormant/4");
  EXPECT_TRUE(log.setupComplete());
}

}  // namespace
}  // namespace cpscale::workloads::testing
