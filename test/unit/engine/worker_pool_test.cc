#include "sim/load/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/engine/periodic_timer.h"
#include "test/support/scripted_transport.h"

namespace cpscale::load {
namespace {

using namespace std::chrono_literals;
using engine::testing::ScriptedTransport;

TEST(WorkerPool, ShardingIsStableAndCoversEveryWorker) {
  std::map<std::size_t, int> perShard;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = "node-" + std::to_string(i);
    const std::size_t s = Worker::shardOf(id, 4);
    EXPECT_EQ(s, engine::fnv1a64(id) % 4);
    ++perShard[s];
  }
  ASSERT_EQ(perShard.size(), 4u);
  for (const auto& [shard, n] : perShard) EXPECT_NEAR(n, 2500, 200) << shard;
}

TEST(WorkerPool, RejectsZeroWorkersAndAFactoryThatMakesNothing) {
  try {
    WorkerPool pool({.workers = 0});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "workers");
  }
  EXPECT_THROW(WorkerPool({.workers = 2}, [](Worker&) { return kube::TransportPtr{}; }), ConfigError);
}

// A lease renewer: one jittered 10 s timer, one PUT per fire.
struct Renewer {
  Renewer(Worker& w, const std::string& id)
      : driver(*w.driver()),
        sim(w.simulator()),
        timer(sim, engine::PeriodicTimer::bind<&Renewer::renew>(this), 10s, 400ms, engine::streamSeed(3, id)) {
    timer.start(TimePoint{engine::RandomStream(3, id).uniformDuration(0s, 10s)});
  }
  void renew() {
    kube::HttpRequest r;
    r.method = "PUT";
    r.statsResource = "leases";
    r.statsVerb = "PUT";
    r.intendedAt = sim.now();
    driver.submit(std::move(r), [](auto) {});
  }
  OpenLoopDriver& driver;
  engine::Simulator& sim;
  engine::PeriodicTimer timer;
};

struct FleetResult {
  std::uint64_t events;
  std::uint64_t completed;
  std::uint64_t p99;
  int owned;
};

FleetResult runFleet(std::size_t workers) {
  WorkerPool pool({.workers = workers, .seed = 11}, [](Worker& w) -> kube::TransportPtr {
    auto& sim = static_cast<engine::VirtualSimulator&>(w.simulator());
    return std::make_unique<ScriptedTransport>(sim, [](const auto&) { return ScriptedTransport::Reply{2ms}; });
  });
  std::vector<std::vector<std::unique_ptr<Renewer>>> fleets(workers);
  std::atomic<int> owned{0};
  pool.run(
      [&](Worker& w) {
        for (int i = 0; i < 1000; ++i) {
          const std::string id = "node-" + std::to_string(i);
          if (!w.owns(id)) continue;
          fleets[w.index()].push_back(std::make_unique<Renewer>(w, id));
          ++owned;
        }
      },
      TimePoint{60s});
  const RequestStats stats = pool.requestStats();
  return {pool.eventsRun(), stats.completed(),
          stats.latency().at({"leases", "PUT", OutcomeClass::kSuccess}).fromScheduled.quantile(0.99), owned.load()};
}

TEST(WorkerPool, EveryActorRunsOnceAndMergedStatisticsDoNotDependOnTheWorkerCount) {
  const FleetResult one = runFleet(1);
  const FleetResult four = runFleet(4);
  EXPECT_EQ(one.owned, 1000);
  EXPECT_EQ(four.owned, 1000);
  // ~6 renewals per actor in 60 s, each a timer event plus a reply event.
  EXPECT_GT(one.completed, 5500u);
  EXPECT_EQ(one.events, four.events);
  EXPECT_EQ(one.completed, four.completed);
  EXPECT_EQ(one.p99, four.p99);
  EXPECT_EQ(one.p99, 2'000'000u);
}

// A server that never ends a stream and answers nothing else: what a live run's open
// watches look like to the pool once the actors stop.
class OpenStreams final : public kube::Transport {
 public:
  kube::RequestId submit(kube::HttpRequest, kube::ResponseHandler done) override {
    open_.emplace(++next_, std::move(done));
    return next_;
  }
  void cancel(kube::RequestId id) override {
    auto it = open_.find(id);
    if (it == open_.end()) return;
    auto done = std::move(it->second);
    open_.erase(it);
    kube::HttpResponse r;
    r.outcome = kube::TransportOutcome::kAborted;
    done(std::move(r));
  }
  std::size_t poll(Duration) override { return 0; }
  std::size_t inFlight() const override { return open_.size(); }
  void wakeup() override {}
  const std::string& server() const override { return server_; }

 private:
  std::map<kube::RequestId, kube::ResponseHandler> open_;
  kube::RequestId next_ = 0;
  std::string server_ = "streams://test";
};

kube::HttpRequest watchRequest() {
  kube::HttpRequest r;
  r.method = "GET";
  r.path = "/api/v1/pods?watch=true";
  r.stream = true;
  return r;
}

TEST(WorkerPool, StreamsAreMergedApartFromRequests) {
  WorkerPool pool({.workers = 2}, [](Worker&) -> kube::TransportPtr { return std::make_unique<OpenStreams>(); });
  pool.run(
      [](Worker& w) {
        for (std::size_t i = 0; i <= w.index(); ++i) w.driver()->submit(watchRequest(), [](kube::HttpResponse) {});
      },
      TimePoint{1s});
  const StreamStats s = pool.streamStats();
  EXPECT_EQ(s.opened, 3u);
  EXPECT_EQ(s.closed, 0u);
  EXPECT_EQ(s.peakOpen, 3u);
  EXPECT_EQ(pool.requestStats().sent(), 0u);
}

// A paced run collects the responses still in flight after its end, but a watch never
// responds: open streams must not hold the run for the whole drain period.
TEST(WorkerPool, APacedRunDoesNotDrainOpenStreams) {
  WorkerPool pool({.workers = 1, .mode = engine::SimulatorMode::kPaced, .drain = 30s},
                  [](Worker&) -> kube::TransportPtr { return std::make_unique<OpenStreams>(); });
  const auto started = std::chrono::steady_clock::now();
  pool.run([](Worker& w) { w.driver()->submit(watchRequest(), [](kube::HttpResponse) {}); }, TimePoint{10ms});
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(pool.worker(0).driver()->streamsOpen(), 1u);
}

TEST(WorkerPool, AWorkerThatThrowsStopsTheRunAndTheErrorSurfaces) {
  WorkerPool pool({.workers = 3});
  EXPECT_THROW(pool.run(
                   [](Worker& w) {
                     if (w.index() == 1) throw std::runtime_error("boom");
                     // The others would run for a simulated year without the stop.
                     w.simulator().scheduleAt(TimePoint{1s}, [] {});
                   },
                   TimePoint{std::chrono::hours(24 * 365)}),
               std::runtime_error);
}

}  // namespace
}  // namespace cpscale::load
