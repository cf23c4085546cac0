// The live transport on a three-replica plane (profile classic-ha): watch streams do
// not take the open-loop driver's in-flight slots (a dormant population with 20
// watchers under a bound of 16 is created in full), and the load of one worker with
// one connection per replica reaches every replica, as each replica's own
// apiserver_request_total says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>

#include "sim/controlplane/profile.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/kubeconfig.h"
#include "sim/load/open_loop_driver.h"
#include "test/integration/live_run.h"
#include "test/integration/plane_fixture.h"
#include "workloads/cleanup.h"
#include "workloads/dormant.h"
#include "workloads/workload.h"

namespace cpscale::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using namespace cpscale::kube;

const std::string& runId() {
  static const std::string id = "tr" + std::to_string(::getpid() % 100000);
  return id;
}

std::vector<std::string> apiservers() { return PlaneEnvironment::instance().plane().record().urls("kube-apiserver"); }

RestConfig replica(const RestConfig& base, const std::string& server) {
  RestConfig c = base;
  c.server = server;
  return c;
}

// Sum of the samples of `metric` on one replica whose labels contain every fragment.
double metricSum(const RestConfig& config, const std::string& metric, const std::vector<std::string>& fragments) {
  CurlTransport t(config);
  return testing::metricSum(t, metric, fragments);
}

// Writes (POST, PUT, PATCH, DELETE) to the dormant workload's CRD groups on one replica.
double crdWrites(const RestConfig& config, std::int64_t kinds) {
  double sum = 0;
  for (std::int64_t k = 0; k < kinds; ++k) {
    const std::string group = "group=\"" + workloads::DormantWorkload::crdResource(k).group + "\"";
    for (const char* verb : {"POST", "PUT", "PATCH", "DELETE"})
      sum += metricSum(config, "apiserver_request_total", {group, std::string("verb=\"") + verb + "\""});
  }
  return sum;
}

class TransportIT : public ::testing::Test {
 protected:
  void SetUp() override {
    config = PlaneEnvironment::instance().restConfig();
    setupTransport = std::make_unique<CurlTransport>(config);
    api = std::make_unique<ApiClient>(*setupTransport, clock);
  }
  std::size_t countLabelled(const ResourceRef& coll) { return testing::countLabelled(*api, coll, runId()); }
  // Waits until every replica serves the CRDs that prepare() installed through replica
  // 0: a replica learns of a new CRD from its own informer, a moment later.
  void waitServedEverywhere(std::int64_t kinds) {
    for (const auto& url : apiservers()) {
      CurlTransport t(replica(config, url));
      ApiClient c(t, clock);
      for (std::int64_t k = 0; k < kinds; ++k) {
        ListOptions one;
        one.limit = 1;
        auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!c.list(ResourceRef(workloads::DormantWorkload::crdResource(k)), one).ok()) {
          ASSERT_LT(std::chrono::steady_clock::now(), deadline) << url << " does not serve kind " << k;
          clock.sleepFor(100ms);
        }
      }
    }
  }

  RestConfig config;
  engine::WallClock clock;
  std::unique_ptr<CurlTransport> setupTransport;
  std::unique_ptr<ApiClient> api;
};

TEST_F(TransportIT, ThePlaneHasThreeReplicasWithOneContextEach) {
  ASSERT_EQ(apiservers().size(), 3u);
  EXPECT_EQ(config.server, apiservers()[0]);
}

// The issue's repro, scaled down: 20 watchers (4 kinds x 5) and 300 objects to create
// under driver.maxInFlight=16, maxInFlightPerConnection=16, one connection. Before
// streams had their own budget, the watches held all 16 slots and creates starved.
TEST_F(TransportIT, TwentyWatchersUnderABoundOfSixteenStillLetEveryObjectBeCreated) {
  auto dormant = workloads::makeWorkload(loadYamlString(R"(kind: dormant
name: starve
crdKinds: 4
objectsPerKind: 50
namespaces: 2
configMaps: 50
secrets: 50
createQps: 300
createBurst: 50
watchers: {perKind: 5, timeout: 60s}
)",
                                                        "transport_it.yaml"));
  dormant->prepare(*api, clock, runId());
  waitServedEverywhere(4);
  LiveRun run(config, {config.server}, {.maxInFlight = 16, .connections = 1, .maxInFlightPerConnection = 16});
  auto ctx = run.context(runId());
  auto d = dormant->start(ctx);
  auto created = [&] { return d->summary()["created"].get<int>() + d->summary()["createFailures"].get<int>(); };
  run.runUntil([&] { return created() >= 300; }, 60s);
  run.sim().runFor(2s);  // the watchers see the last creations
  const json ds = d->summary();
  // All 20 streams are open and none of them is an in-flight request.
  EXPECT_EQ(run.driver().streamsOpen(), 20u);
  EXPECT_EQ(run.transport().streamsOpen(), 20u);
  EXPECT_EQ(run.driver().inFlight(), 0u);
  d->stop();
  run.sim().runFor(500ms);
  std::cout << "[ transport ] starve: " << ds.dump() << "\n";

  EXPECT_EQ(ds["created"], 300) << ds;
  EXPECT_EQ(ds["createFailures"], 0) << ds;
  EXPECT_EQ(ds["watchers"], 20) << ds;
  for (std::int64_t k = 0; k < 4; ++k)
    EXPECT_EQ(countLabelled(ResourceRef(workloads::DormantWorkload::crdResource(k))), 50u) << k;
  // Events flow on the streams while the creates go on: each of the 20 informers saw
  // most of its kind's 50 creations as ADDED events.
  EXPECT_GE(ds["watchEvents"].get<int>(), 20 * 25) << ds;
  for (const auto& [key, _] : run.driver().stats().latency()) EXPECT_NE(key.verb, "WATCH") << key.resource;
  EXPECT_GE(run.driver().streamStats().opened, 20u);
}

// One worker, one connection per replica, round-robin per request: every replica's
// own apiserver_request_total shows about a third of the run's writes, and the
// watches are spread as well.
TEST_F(TransportIT, OneWorkersWritesReachEveryReplica) {
  auto dormant = workloads::makeWorkload(loadYamlString(R"(kind: dormant
name: spread
crdKinds: 2
objectsPerKind: 150
namespaces: 2
createQps: 300
createBurst: 50
updatesPerSecond: 50
watchers: {perKind: 3, timeout: 60s}
)",
                                                        "transport_it.yaml"));
  dormant->prepare(*api, clock, runId());
  waitServedEverywhere(2);
  const std::vector<std::string> urls = apiservers();
  std::vector<double> before;
  for (const auto& u : urls) before.push_back(crdWrites(replica(config, u), 2));

  LiveRun run(config, urls, {.maxInFlight = 64, .connections = 1, .maxInFlightPerConnection = 64});
  auto ctx = run.context(runId());
  auto d = dormant->start(ctx);
  run.runUntil([&] { return d->summary()["created"].get<int>() + d->summary()["createFailures"].get<int>() >= 300; },
               60s);
  run.sim().runFor(3s);  // some updates too
  const json ds = d->summary();
  d->stop();
  run.sim().runFor(500ms);
  EXPECT_EQ(ds["created"], 300) << ds;
  EXPECT_EQ(ds["createFailures"], 0) << ds;

  std::vector<double> share;
  double total = 0;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    share.push_back(crdWrites(replica(config, urls[i]), 2) - before[i]);
    total += share.back();
  }
  EXPECT_GE(total, 300.0);
  std::ostringstream spread;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    spread << " " << urls[i] << "=" << share[i] << " (" << (total > 0 ? 100.0 * share[i] / total : 0) << "%)";
    EXPECT_GE(share[i], 0.2 * total) << urls[i];
  }
  const CurlTransportStats& cs = run.transport().stats();
  ASSERT_EQ(cs.perServer.size(), 3u);
  spread << "; client-side requests/streams:";
  for (const auto& s : cs.perServer) {
    spread << " " << s.requests << "/" << s.streams;
    EXPECT_GE(s.streams, 2u) << s.server;  // 6 watches (and any re-watch), round-robin
  }
  std::cout << "[ transport ] writes per replica (server-side):" << spread.str() << " " << ds.dump() << "\n";
  RecordProperty("spread", spread.str());
}

TEST_F(TransportIT, CleanupLeavesNothingWithTheRunLabel) {
  workloads::CleanupResult r = workloads::cleanupRun(*api, clock, runId());
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(r.complete()) << json(r.remaining).dump();
}

}  // namespace
}  // namespace cpscale::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new cpscale::testing::PlaneEnvironment(
      cpscale::controlplane::loadProfile(CPSCALE_SOURCE_DIR "/profiles/classic-ha.yaml")));
  return RUN_ALL_TESTS();
}
