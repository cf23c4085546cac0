// Churn sessions and dormant populations in virtual time: arrival rate, lifecycle
// transitions as writes, creation QPS/burst, per-kind ramps and the end of setup, and
// watchers' relist/resume behaviour.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <tuple>

#include "sim/common/error.h"
#include "sim/load/worker_pool.h"

#include "test/support/workload_harness.h"
#include "workloads/churn.h"
#include "workloads/dormant.h"

namespace cpscale::workloads::testing {
namespace {

constexpr const char* kSessions = "/apis/churn.cpscale.io/v1/namespaces/";

TEST(Churn, PoissonArrivalsMatchTheRate) {
  Harness h;
  auto w = makeWorkload(entry("kind: churn\nsessionsPerMinute: 600\ncreateQps: 1000\nstatusInterval: 0s\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10min});
  // 6000 expected; Poisson sd ~77, fixed seed.
  EXPECT_NEAR(static_cast<double>(h.count("POST", kSessions)), 6000, 250);
  EXPECT_EQ(inst->summary()["sessionsCreated"], h.count("POST", kSessions));
}

TEST(Churn, LifecycleTransitionsAreTheRightWrites) {
  Harness h;
  auto w = makeWorkload(entry(R"(kind: churn
name: s
sessionsPerMinute: 1
maxSessions: 1
statusInterval: 4s
suspendProbability: 1
maxSuspends: 1
dwell:
  running: {uniform: [10s, 10s]}
  suspended: {uniform: [20s, 20s]}
)"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30min});
  std::vector<std::string> seq;
  for (const auto& r : h.transport.requests()) {
    std::string p = pathOf(r.request);
    std::string what = p.find("/status") != std::string::npos ? "agentsessions/status" : "agentsessions";
    std::string body = r.request.body;
    if (r.request.method == "PATCH" && body.find("\"suspend\":true") != std::string::npos) what += "(suspend)";
    if (r.request.method == "PATCH" && body.find("\"suspend\":false") != std::string::npos) what += "(resume)";
    seq.push_back(r.request.method + " " + what);
  }
  EXPECT_EQ(seq, (std::vector<std::string>{
                     "POST agentsessions",            // create
                     "PATCH agentsessions/status",    // running
                     "PATCH agentsessions/status",    // status while running (4 s)
                     "PATCH agentsessions/status",    // (8 s)
                     "PATCH agentsessions(suspend)",  // suspended at 10 s
                     "PATCH agentsessions(resume)",   // resumed 20 s later
                     "PATCH agentsessions/status",    // running again
                     "PATCH agentsessions/status", "PATCH agentsessions/status",
                     "DELETE agentsessions",  // maxSuspends reached: deleted
                 }));
  json created = json::parse(h.requests("POST", kSessions)[0].request.body);
  EXPECT_EQ(created["kind"], "AgentSession");
  EXPECT_EQ(created["metadata"]["labels"][kRunLabel], "t1");
  EXPECT_EQ(created["metadata"]["namespace"], "cpscale-t1-s-0");
  EXPECT_EQ(inst->summary()["sessionsLive"], 0);
}

// A session's requests in order, each with its send time and the time its answer came
// back (the fake answers after a fixed latency), checked against the rule that an actor
// never writes its object after its DELETE: nothing follows the DELETE, and the DELETE
// goes out only once every earlier write is answered (a write still in flight may be
// served after it, on another connection or replica, and find the object gone).
void expectNothingWrittenAfterTheDelete(const Harness& h, engine::Duration latency) {
  std::optional<engine::TimePoint> deleted;
  engine::TimePoint lastAnswer{};
  for (const auto& r : h.transport.requests()) {
    if (pathOf(r.request).find("/agentsessions/s-0") == std::string::npos) continue;
    EXPECT_FALSE(deleted) << r.request.method << " " << r.request.path << " at "
                          << r.submittedAt.time_since_epoch().count() << " ns, after the DELETE";
    if (r.request.method == "DELETE") {
      deleted = r.submittedAt;
      EXPECT_GE(r.submittedAt, lastAnswer) << "the DELETE went out with a write in flight";
    }
    lastAnswer = std::max(lastAnswer, r.submittedAt + latency);
  }
  EXPECT_TRUE(deleted);
}

constexpr const char* kShortSession = R"(kind: churn
name: s
sessionsPerMinute: 1
maxSessions: 1
statusInterval: 300ms
suspendProbability: 0
dwell:
  running: {uniform: [1s, 1s]}
)";

// Answers slower than the status interval: when the running spell ends, status PATCHes
// are still in flight, and the timer would fire again while the DELETE is.
TEST(Churn, TheDeleteWaitsForTheSessionsWritesInFlightAndNothingFollowsIt) {
  Harness h;
  h.transport.setLatency(2s);
  auto w = makeWorkload(entry(kShortSession));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30min});
  // From its POST: created at 2 s; status at 2, 2.3, 2.6, 2.9 s; the spell ends at
  // 3 s; the last status is answered at 4.9 s and the DELETE goes then.
  ASSERT_EQ(h.count("POST", kSessions), 1u);
  ASSERT_EQ(h.count("DELETE", kSessions), 1u);
  EXPECT_EQ(h.requests("DELETE", kSessions)[0].submittedAt - h.requests("POST", kSessions)[0].submittedAt, 4900ms);
  expectNothingWrittenAfterTheDelete(h, 2s);
  EXPECT_EQ(inst->summary()["statusUpdates"], 4);
  EXPECT_EQ(inst->summary()["writeFailures"], 0);
  EXPECT_EQ(inst->summary()["deletes"], 1);
  EXPECT_EQ(inst->summary()["sessionsLive"], 0);
}

// A status PATCH refused with 429 is retried by the client after Retry-After, past the
// end of the running spell: the DELETE waits for the retry's answer. The fake server
// answers 404 for an object once deleted, as kube-apiserver would.
TEST(Churn, AStatusWriteRetriedAfterA429IsAnsweredBeforeTheDelete) {
  Harness h;
  int statusWrites = 0;
  std::set<std::string> deleted;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    std::string object = pathOf(r);
    if (object.ends_with("/status")) object.resize(object.size() - 7);
    if (deleted.contains(object)) return statusResponse(404, "NotFound");
    if (r.method == "DELETE") deleted.insert(object);
    if (r.method == "PATCH" && ++statusWrites == 4) {
      kube::HttpResponse busy = statusResponse(429, "TooManyRequests");
      busy.headers.push_back({"retry-after", "1"});
      return busy;
    }
    return std::nullopt;
  };
  auto w = makeWorkload(entry(kShortSession));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{30min});
  // From its POST: the fourth status, sent at 0.901 s, is refused at 0.902 s and sent
  // again at 1.902 s, after the spell's end at 1.001 s.
  EXPECT_EQ(h.count("PATCH", kSessions), 5u);
  expectNothingWrittenAfterTheDelete(h, 1ms);
  EXPECT_EQ(inst->summary()["writeFailures"], 0) << inst->summary()["lastWriteError"];
  EXPECT_EQ(inst->summary()["deletes"], 1);
  EXPECT_EQ(inst->summary()["sessionsLive"], 0);
}

// What each session does, read from the requests: its create's time, kind, namespace
// and size, then its writes in order (the lifecycle's draws decide them all).
using SessionTrace = std::map<std::string, std::vector<std::string>>;
void traceSessions(const std::vector<kube::FakeTransport::Recorded>& requests, SessionTrace& out) {
  for (const auto& r : requests) {
    const std::string p = pathOf(r.request);
    std::string name;
    if (r.request.method == "POST") {
      const json obj = json::parse(r.request.body);
      name = obj["metadata"]["name"];
      out[name].push_back("POST " + p + " at " + std::to_string(r.submittedAt.time_since_epoch().count()) + " bytes " +
                          std::to_string(r.request.body.size()));
      continue;
    }
    std::string rest = p.substr(p.rfind("/s-") + 1);
    name = rest.substr(0, rest.find('/'));
    // A status write carries the time it was sent; the rest is the session's.
    const bool stamped = r.request.body.find("lastUpdate") != std::string::npos;
    out[name].push_back(r.request.method + " " + p + " " + (stamped ? "" : r.request.body));
  }
}

// A live run spreads sessions over its workers, the model runs them on one, and the
// server answers each at its own speed: none of that may change which sessions arrive
// when and what each does, or a live run and its simulation are two different samples
// (a 60 s window's write rate moves ~8 % between seeds) and their difference is noise.
TEST(Churn, TheSessionsAreTheSameForAnyWorkersAndAnyLatency) {
  const char* kEntry = R"(kind: churn
name: s
sessionsPerMinute: 600
createQps: 1000
namespaces: 3
statusInterval: 2s
suspendProbability: 0.5
maxSuspends: 2
objectBytes: {uniform: [100, 2000]}
dwell: {running: 3s, suspended: 2s}
targets:
  - crd: agentsessions.churn.cpscale.io
    weight: 2
  - builtin: configmaps
)";
  auto wl = makeWorkload(entry(kEntry));
  SessionTrace one;
  {
    Harness h;
    auto inst = wl->start(h.ctx);
    h.sim.runUntil(engine::TimePoint{60s});
    inst->stop();
    traceSessions(h.transport.requests(), one);
  }
  constexpr std::size_t kWorkers = 3;
  std::vector<kube::FakeTransport*> transports(kWorkers);
  std::vector<Harness> answers(kWorkers);  // only their default answers
  load::WorkerPool pool({.workers = kWorkers, .seed = 42}, [&](load::Worker& w) -> kube::TransportPtr {
    auto t = std::make_unique<kube::FakeTransport>(static_cast<engine::Scheduler&>(w.simulator()));
    t->setLatency(std::chrono::milliseconds(40 * (w.index() + 1)));  // slower, and unequal
    Harness* a = &answers[w.index()];
    t->setHandler([a](const kube::HttpRequest& r) { return a->answer(r); });
    transports[w.index()] = t.get();
    return t;
  });
  std::vector<std::unique_ptr<kube::ApiClient>> apis(kWorkers);
  std::vector<std::unique_ptr<WorkloadInstance>> instances(kWorkers);
  std::uint64_t started = 0;
  pool.run(
      [&](load::Worker& w) {
        apis[w.index()] = std::make_unique<kube::ApiClient>(*w.driver(), w.simulator().clock(), w.simulator());
        WorkloadContext ctx{w.simulator(), *apis[w.index()], "t1", 42, &w};
        instances[w.index()] = wl->start(ctx);
      },
      engine::TimePoint{60s});
  SessionTrace many;
  for (std::size_t i = 0; i < kWorkers; ++i) {
    started += instances[i]->summary()["sessionsStarted"].get<std::uint64_t>();
    EXPECT_GT(instances[i]->summary()["sessionsStarted"].get<std::uint64_t>(), 150u) << "worker " << i;
    instances[i]->stop();
    traceSessions(transports[i]->requests(), many);
  }
  for (auto& i : instances) i.reset();  // before the pool's drivers go away
  apis.clear();
  ASSERT_GT(one.size(), 500u);
  EXPECT_EQ(started, one.size());
  // Sessions whose lifecycle ran past the end differ only in how far they got.
  std::size_t compared = 0;
  for (const auto& [name, writes] : one) {
    auto it = many.find(name);
    ASSERT_NE(it, many.end()) << name;
    const std::size_t n = std::min(writes.size(), it->second.size());
    if (n == writes.size() && n == it->second.size()) ++compared;
    for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(writes[k], it->second[k]) << name << " write " << k;
  }
  EXPECT_GT(compared, 400u);
  EXPECT_EQ(one.size(), many.size());
}

TEST(Churn, MixesBuiltinKindsByWeight) {
  Harness h;
  auto w = makeWorkload(entry(R"(kind: churn
sessionsPerMinute: 600
createQps: 1000
statusInterval: 0s
targets:
  - crd: agentsessions.churn.cpscale.io
    weight: 1
  - builtin: configmaps
    weight: 1
  - builtin: events
    weight: 2
)"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{5min});
  const double crs = static_cast<double>(h.count("POST", kSessions));
  const double cms = static_cast<double>(h.count("POST", "/configmaps"));
  const double evs = static_cast<double>(h.count("POST", "/events"));
  EXPECT_NEAR(crs / (crs + cms + evs), 0.25, 0.04);
  EXPECT_NEAR(cms / (crs + cms + evs), 0.25, 0.04);
  EXPECT_NEAR(evs / (crs + cms + evs), 0.50, 0.04);
}

TEST(Churn, FailedCreateIsCountedAndTheActorEnds) {
  Harness h;
  h.override = [](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "POST") return statusResponse(422, "Invalid");
    return std::nullopt;
  };
  auto w = makeWorkload(entry("kind: churn\nsessionsPerMinute: 60\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{60s});
  EXPECT_GT(inst->summary()["createFailures"].get<int>(), 30);
  EXPECT_EQ(h.count("PATCH", kSessions) + h.count("DELETE", kSessions), 0u);
}

TEST(Churn, CrdInstalledInPrepareWithRunLabel) {
  Harness h;
  h.override = [](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "GET" && r.path.find("customresourcedefinitions") != std::string::npos) {
      return jsonResponse(200, {{"status", {{"conditions", {{{"type", "Established"}, {"status", "True"}}}}}}});
    }
    return std::nullopt;
  };
  // prepare() is synchronous: answers come from poll(), not from engine events.
  h.transport.setLatency(0ms);
  auto w = makeWorkload(entry("kind: churn\nsessionsPerMinute: 60\nnamespaces: 2\n"));
  w->prepare(h.api, h.sim.clock(), "t1");
  auto crds = h.requests("POST", "customresourcedefinitions");
  ASSERT_EQ(crds.size(), 1u);
  json crd = json::parse(crds[0].request.body);
  EXPECT_EQ(crd["metadata"]["name"], "agentsessions.churn.cpscale.io");
  EXPECT_EQ(crd["metadata"]["labels"][kRunLabel], "t1");
  EXPECT_EQ(crd["spec"]["names"]["kind"], "AgentSession");
  EXPECT_TRUE(crd["spec"]["versions"][0]["subresources"].contains("status"));
  EXPECT_EQ(h.count("POST", "/api/v1/namespaces"), 2u);
}

TEST(Dormant, CreationRespectsQpsAndBurst) {
  Harness h;
  auto w =
      makeWorkload(entry("kind: dormant\ncrdKinds: 2\nobjectsPerKind: 30\nconfigMaps: 20\nsecrets: 10\n"
                         "roles: 5\nclusterRoles: 5\ncreateQps: 10\ncreateBurst: 5\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{60s});
  std::vector<engine::TimePoint> times;
  for (const auto& r : h.transport.requests()) {
    if (r.request.method == "POST") times.push_back(r.submittedAt);
  }
  ASSERT_EQ(times.size(), 100u);
  // Burst of 5 at once, then one every 100 ms.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(times[i], engine::TimePoint{}) << i;
  for (std::size_t i = 5; i < times.size(); ++i) {
    EXPECT_NEAR(std::chrono::duration<double>(times[i].time_since_epoch()).count(), 0.1 * (i - 4), 1e-6) << i;
  }
  // Any 1 s window holds at most burst + qps creations.
  for (std::size_t i = 0; i < times.size(); ++i) {
    std::size_t inWindow = 0;
    for (auto t : times) inWindow += t >= times[i] && t < times[i] + 1s;
    EXPECT_LE(inWindow, 15u);
  }
  EXPECT_EQ(h.count("POST", "/apis/op1.dormant.cpscale.io/v1/namespaces/cpscale-t1-dormant-"), 30u);
  EXPECT_EQ(h.count("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"), 5u);
  EXPECT_EQ(inst->summary()["created"], 100);
}

// A virtual TimePoint in milliseconds, for exact comparisons.
engine::TimePoint ms(std::int64_t v) { return engine::TimePoint{std::chrono::milliseconds(v)}; }

TEST(PhaseLog, TheSetupCompleteHookRunsEachTimeTheLastPendingInstanceReports) {
  int runs = 0;
  PhaseLog log(2, [&] { ++runs; });
  log.setupDone();
  EXPECT_EQ(runs, 0);
  log.setupDone();
  EXPECT_EQ(runs, 1);
  log.setupDone();  // nothing was pending: not a completion
  EXPECT_EQ(runs, 1);
  log.expect(1);  // a capacity step's growth
  log.setupDone();
  EXPECT_EQ(runs, 2);
}

std::optional<PhaseLog::Span> spanNamed(const PhaseLog& log, const std::string& name) {
  for (const auto& s : log.spans()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

TEST(Dormant, KindsAreCreatedOneAfterAnotherEachInItsOwnRampPhase) {
  Harness h;
  PhaseLog phases(1);
  h.ctx.phases = &phases;
  auto w =
      makeWorkload(entry("kind: dormant\ncrdKinds: 2\nobjectsPerKind: 4\nconfigMaps: 5\nsecrets: 5\nroles: 3\n"
                         "createQps: 10\ncreateBurst: 1\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  std::vector<std::string> kinds;
  for (const auto& r : h.transport.requests()) {
    if (r.request.method != "POST") continue;
    const std::string& path = r.request.path;
    kinds.push_back(path.substr(path.rfind('/') + 1));
    if (path.find("op0.") != std::string::npos) kinds.back() = "op0";
    if (path.find("op1.") != std::string::npos) kinds.back() = "op1";
  }
  std::vector<std::string> expected;
  for (auto [kind, n] : std::vector<std::pair<std::string, int>>{
           {"configmaps", 5}, {"secrets", 5}, {"roles", 3}, {"op0", 4}, {"op1", 4}}) {
    expected.insert(expected.end(), n, kind);
  }
  EXPECT_EQ(kinds, expected);

  // One create every 100 ms, answered 1 ms later: a kind's ramp runs from its first
  // create to the answer of its last.
  const std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> spans = {
      {"ramp/dormant", 0, 2001},
      {"ramp/dormant/configmaps", 0, 401},
      {"ramp/dormant/secrets", 500, 901},
      {"ramp/dormant/rbac.authorization.k8s.io/roles", 1000, 1201},
      {"ramp/dormant/op0.dormant.cpscale.io/widgets", 1300, 1601},
      {"ramp/dormant/op1.dormant.cpscale.io/widgets", 1700, 2001}};
  const auto got = phases.spans();
  ASSERT_EQ(got.size(), spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(got[i].name, std::get<0>(spans[i]));
    EXPECT_EQ(got[i].start, ms(std::get<1>(spans[i]))) << got[i].name;
    EXPECT_EQ(got[i].end, ms(std::get<2>(spans[i]))) << got[i].name;
    EXPECT_TRUE(got[i].ended()) << got[i].name;
  }
  EXPECT_EQ(kindRampPhaseName("platform", kube::gvr::kConfigMaps), "ramp/platform/configmaps");
  EXPECT_TRUE(phases.setupComplete());
  EXPECT_EQ(inst->summary()["complete"], true);
  EXPECT_EQ(inst->summary()["objects"], 21);
}

TEST(Dormant, RampPerKindFalseInterleavesKindsInProportion) {
  Harness h;
  PhaseLog phases(1);
  h.ctx.phases = &phases;
  auto w = makeWorkload(entry("kind: dormant\ncrdKinds: 0\nconfigMaps: 4\nsecrets: 2\nrampPerKind: false\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  std::vector<std::string> kinds;
  for (const auto& r : h.transport.requests()) {
    if (r.request.method == "POST") kinds.push_back(r.request.path.substr(r.request.path.rfind('/') + 1));
  }
  // Item j of n sits at (j + 0.5) / n: cm .125, s .25, cm .375, cm .625, s .75, cm .875.
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"configmaps", "secrets", "configmaps", "configmaps", "secrets", "configmaps"}));
  const auto spans = phases.spans();
  ASSERT_EQ(spans.size(), 1u);  // the whole population only
  EXPECT_EQ(spans[0].name, "ramp/dormant");
  EXPECT_THROW(makeWorkload(entry("kind: dormant\nrampPerKind: sometimes\n")), ConfigError);
}

TEST(Dormant, SetupIsDoneOnceWhenCreatesAreAnsweredAndWatchersHaveListed) {
  Harness h;
  PhaseLog phases(2);  // a second instance never reports: the count shows exactly one report
  h.ctx.phases = &phases;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "POST" && r.path.find("/configmaps") != std::string::npos &&
        r.body.find("\"cm-3\"") != std::string::npos) {
      return statusResponse(500, "InternalError");  // a POST is not retried: answered, failed
    }
    if (r.method == "GET" && r.path.find("/widgets") != std::string::npos) {
      // LISTs are refused until 4 s (403: not retried by the client; the watcher backs
      // off 1 s); watches are refused throughout.
      if (r.path.find("watch=true") != std::string::npos || h.sim.now() < engine::TimePoint{4s}) {
        return statusResponse(403, "Forbidden");
      }
      return jsonResponse(200, {{"metadata", {{"resourceVersion", "10"}}}, {"items", json::array()}});
    }
    return std::nullopt;
  };
  auto w =
      makeWorkload(entry("kind: dormant\ncrdKinds: 1\nobjectsPerKind: 10\nconfigMaps: 20\n"
                         "createQps: 10\ncreateBurst: 1\nwatchers: {perKind: 2}\n"));
  auto inst = w->start(h.ctx);
  // Creates: 30, one per 100 ms, the last answered at 2.901 s. Watcher LISTs fail until
  // 4 s, each retried after client-go's backoff ([0.8, 1.6) s, then doubling); the
  // first after 4 s succeeds: by 0 + 1.6 + 3.2 + 6.4 s at the latest.
  h.sim.runUntil(ms(3000));
  EXPECT_EQ(inst->summary()["created"], 29);
  EXPECT_EQ(inst->summary()["createFailures"], 1);
  EXPECT_EQ(phases.setupPending(), 2u);
  h.sim.runUntil(ms(3999));
  EXPECT_EQ(phases.setupPending(), 2u);
  EXPECT_EQ(inst->summary()["watchersSynced"], 0);
  h.sim.runUntil(ms(11300));
  EXPECT_EQ(phases.setupPending(), 1u);
  EXPECT_EQ(inst->summary()["watchersSynced"], 2);
  h.sim.runUntil(engine::TimePoint{60s});  // watchers keep relisting and rewatching
  EXPECT_EQ(phases.setupPending(), 1u);
  // Answered is not created: the population is reported incomplete.
  EXPECT_EQ(inst->summary()["complete"], false);
  EXPECT_EQ(inst->summary()["objects"], 30);
}

TEST(Dormant, PopulationStoppedBeforeItsLastCreateIsIncompleteAndNotSetUp) {
  Harness h;
  PhaseLog phases(1);
  h.ctx.phases = &phases;
  auto w = makeWorkload(entry("kind: dormant\ncrdKinds: 0\nconfigMaps: 100\ncreateQps: 1\ncreateBurst: 1\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(ms(9500));
  inst->stop();
  h.sim.runUntil(engine::TimePoint{200s});
  auto s = inst->summary();
  EXPECT_EQ(s["objects"], 100);
  EXPECT_EQ(s["created"], 10);  // 0, 1, ..., 9 s
  EXPECT_EQ(s["complete"], false);
  EXPECT_FALSE(phases.setupComplete());
  auto ramp = spanNamed(phases, "ramp/dormant/configmaps");
  ASSERT_TRUE(ramp);
  EXPECT_FALSE(ramp->ended());
}

TEST(Dormant, SeveralWorkersEachCreateTheirShareOfAKindBeforeTheNext) {
  constexpr std::size_t kWorkers = 3;
  std::vector<kube::FakeTransport*> transports(kWorkers);
  load::WorkerPool pool({.workers = kWorkers, .seed = 5}, [&](load::Worker& w) -> kube::TransportPtr {
    auto t = std::make_unique<kube::FakeTransport>(static_cast<engine::Scheduler&>(w.simulator()));
    t->setLatency(1ms);
    t->setHandler([](const kube::HttpRequest& r) { return jsonResponse(201, json::parse(r.body)); });
    transports[w.index()] = t.get();
    return t;
  });
  auto wl =
      makeWorkload(entry("kind: dormant\ncrdKinds: 0\nconfigMaps: 30\nsecrets: 30\ncreateQps: 30\ncreateBurst: 3\n"));
  PhaseLog phases(kWorkers);
  std::vector<std::unique_ptr<kube::ApiClient>> apis(kWorkers);
  std::vector<std::unique_ptr<WorkloadInstance>> instances(kWorkers);
  pool.run(
      [&](load::Worker& w) {
        apis[w.index()] = std::make_unique<kube::ApiClient>(*w.driver(), w.simulator().clock(), w.simulator());
        WorkloadContext ctx{w.simulator(), *apis[w.index()], "t1", 42, &w};
        ctx.phases = &phases;
        instances[w.index()] = wl->start(ctx);
      },
      engine::TimePoint{30s});

  std::set<std::string> names;
  std::int64_t objects = 0;
  engine::TimePoint lastConfigMap{}, firstSecret = engine::TimePoint::max();
  for (std::size_t i = 0; i < kWorkers; ++i) {
    bool secretsStarted = false;
    for (const auto& r : transports[i]->requests()) {
      if (r.request.method != "POST") continue;
      const bool secret = r.request.path.ends_with("/secrets");
      EXPECT_FALSE(secretsStarted && !secret) << "worker " << i << " created a ConfigMap after a Secret";
      secretsStarted |= secret;
      names.insert(r.request.path + "/" + json::parse(r.request.body)["metadata"]["name"].get<std::string>());
      if (secret) firstSecret = std::min(firstSecret, r.submittedAt);
      if (!secret) lastConfigMap = std::max(lastConfigMap, r.submittedAt + 1ms);
    }
    objects += instances[i]->summary()["objects"].get<std::int64_t>();
    EXPECT_EQ(instances[i]->summary()["complete"], true);
  }
  EXPECT_EQ(names.size(), 60u);  // every object once, across workers
  EXPECT_EQ(objects, 60);
  EXPECT_EQ(phases.setupPending(), 0u);
  // The kind's span covers every worker's share: from the first create anywhere to the
  // last answer anywhere (workers' shares differ, so the kinds' spans may overlap).
  auto cm = spanNamed(phases, "ramp/dormant/configmaps");
  auto sec = spanNamed(phases, "ramp/dormant/secrets");
  ASSERT_TRUE(cm && sec);
  EXPECT_EQ(cm->start, engine::TimePoint{});
  EXPECT_EQ(cm->end, lastConfigMap);
  EXPECT_EQ(sec->start, firstSecret);
  EXPECT_TRUE(cm->ended() && sec->ended());
  for (auto& i : instances) i.reset();  // before the pool's drivers go away
  apis.clear();
}

TEST(Dormant, NothingToSetUpIsDoneAtStart) {
  Harness h;
  PhaseLog phases(1);
  h.ctx.phases = &phases;
  auto w = makeWorkload(entry("kind: dormant\ncrdKinds: 0\n"));
  auto inst = w->start(h.ctx);
  EXPECT_TRUE(phases.setupComplete());
  EXPECT_TRUE(phases.spans().empty());
  EXPECT_EQ(inst->summary()["complete"], true);
}

TEST(Dormant, BackgroundUpdatesFollowTheirRateOnceCreated) {
  Harness h;
  auto w =
      makeWorkload(entry("kind: dormant\ncrdKinds: 1\nobjectsPerKind: 10\ncreateQps: 100\n"
                         "updatesPerSecond: 2\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{301s});
  EXPECT_NEAR(static_cast<double>(h.count("PATCH", "/widgets/")), 600, 75);
}

// Watch responses: the fake feeds the body as the stream; status 200 ends it normally.
kube::HttpResponse watchStream(const std::vector<json>& events) {
  kube::HttpResponse r;
  r.status = 200;
  for (const auto& e : events) r.body += e.dump() + "\n";
  return r;
}

TEST(Dormant, WatcherListsThenWatchesResumesFromBookmarksAndRelistsOnGone) {
  Harness h;
  int watches = 0;
  std::vector<std::string> seen;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.path.find("/widgets") == std::string::npos || r.method != "GET") return std::nullopt;
    seen.push_back(r.path);
    if (r.path.find("watch=true") == std::string::npos) {
      return jsonResponse(200, {{"metadata", {{"resourceVersion", "10"}}}, {"items", json::array()}});
    }
    ++watches;
    if (watches == 1) {
      return watchStream({{{"type", "ADDED"}, {"object", {{"metadata", {{"resourceVersion", "12"}}}}}},
                          {{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", "15"}}}}}}});
    }
    if (watches == 2) {
      return watchStream({{{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}}}});
    }
    h.sim.stop();
    return watchStream({});
  };
  auto w =
      makeWorkload(entry("kind: dormant\ncrdKinds: 1\nobjectsPerKind: 0\n"
                         "watchers: {perKind: 1, shards: 2, timeout: 1m}\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  ASSERT_GE(seen.size(), 5u);
  EXPECT_EQ(seen[0].find("watch=true"), std::string::npos);  // LIST
  EXPECT_NE(seen[0].find("limit=500"), std::string::npos);
  EXPECT_NE(seen[0].find("shardSelector=shardRange"), std::string::npos);
  EXPECT_NE(seen[1].find("watch=true"), std::string::npos);  // WATCH from the list's rv
  EXPECT_NE(seen[1].find("resourceVersion=10"), std::string::npos);
  EXPECT_NE(seen[1].find("allowWatchBookmarks=true"), std::string::npos);
  EXPECT_NE(seen[2].find("resourceVersion=15"), std::string::npos);  // resumed from the bookmark
  EXPECT_EQ(seen[3].find("watch=true"), std::string::npos);          // 410: relist
  EXPECT_NE(seen[4].find("watch=true"), std::string::npos);
  EXPECT_EQ(inst->summary()["watchRelists"], 1);
  EXPECT_EQ(inst->summary()["watchBookmarks"], 1);
}

TEST(Dormant, WatchersListAndWatchWithTheirLabelSelector) {
  // The calibration's dispatch probe: watchers whose selector matches nothing, so the
  // apiserver dispatches every change to them and sends none.
  Harness h;
  std::vector<std::string> seen;
  h.override = [&](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.path.find("/widgets") == std::string::npos || r.method != "GET") return std::nullopt;
    seen.push_back(r.path);
    if (r.path.find("watch=true") == std::string::npos)
      return jsonResponse(200, {{"metadata", {{"resourceVersion", "10"}}}, {"items", json::array()}});
    h.sim.stop();
    return watchStream({});
  };
  auto w =
      makeWorkload(entry("kind: dormant\ncrdKinds: 1\nobjectsPerKind: 0\n"
                         "watchers: {perKind: 1, labelSelector: \"cpscale.io/selects=nothing\"}\n"));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{10s});
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& path : seen)
    EXPECT_NE(path.find("labelSelector=cpscale.io%2Fselects%3Dnothing"), std::string::npos) << path;
  EXPECT_THROW(makeWorkload(entry("kind: dormant\ncrdKinds: 1\nwatchers: {perKind: 1, labelSelector: \"\"}\n")),
               ConfigError);
}

TEST(Dormant, ShardSelectorsSplitTheHashSpace) {
  // As kube-apiserver reads them: quoted 16-digit hex, [start, end), the last to 2^64.
  EXPECT_EQ(shardSelector(0, 2), "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
  EXPECT_EQ(shardSelector(1, 2), "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')");
  EXPECT_EQ(shardSelector(0, 1), "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')");
  EXPECT_EQ(shardSelector(1, 4), "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')");
}

}  // namespace
}  // namespace cpscale::workloads::testing
