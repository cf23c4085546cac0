// The measured window's client-side statistics: requests scheduled before the steady
// window starts (setup: registrations, population creation) are kept apart from those
// scheduled inside it, whenever they complete.
#include <gtest/gtest.h>

#include <chrono>

#include "sim/load/open_loop_driver.h"
#include "sim/load/worker_pool.h"
#include "test/support/scripted_transport.h"

namespace cpscale::engine {
namespace {

using namespace std::chrono_literals;
using testing::ScriptedTransport;

kube::HttpRequest put(TimePoint intended) {
  kube::HttpRequest r;
  r.method = "PUT";
  r.path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1";
  r.statsResource = "leases";
  r.statsVerb = "PUT";
  r.intendedAt = intended;
  return r;
}

std::uint64_t completed(const load::RequestStats& s) { return s.completed(); }

TEST(SteadyWindow, RequestsAreAttributedByScheduledTimeNotCompletion) {
  VirtualSimulator sim;
  // A slow server: the request scheduled at 1.9 s completes inside the steady window
  // but belongs to setup.
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{500ms}; });
  load::OpenLoopDriver driver(server, sim.clock());
  driver.setSteadyStart(TimePoint::max());  // as a run starts: all setup until told
  for (auto at : {1000ms, 1900ms, 2000ms, 2500ms, 3000ms})
    sim.scheduleAt(TimePoint{at}, [&, at] { driver.submit(put(TimePoint{at}), [](auto) {}); });
  sim.scheduleAt(TimePoint{1950ms}, [&] { driver.setSteadyStart(TimePoint{2s}); });
  sim.run();
  EXPECT_EQ(completed(driver.setupStats()), 2u);
  EXPECT_EQ(completed(driver.stats()), 3u);
  EXPECT_EQ(driver.setupStats().sent(), 2u);
  EXPECT_EQ(driver.stats().sent(), 3u);
}

TEST(SteadyWindow, NumberedWindowsCountBesideTheRunsOwnSplit) {
  // A capacity search's steps: window 0 a step, 1 the growth after it, 2 the next step.
  VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{800ms}; });
  load::OpenLoopDriver driver(server, sim.clock());
  for (auto at : {500ms, 1000ms, 1500ms, 2500ms, 3000ms, 3500ms, 4000ms})
    sim.scheduleAt(TimePoint{at}, [&, at] { driver.submit(put(TimePoint{at}), [](auto) {}); });
  sim.scheduleAt(TimePoint{900ms}, [&] { driver.beginWindow(0, TimePoint{1s}); });
  sim.scheduleAt(TimePoint{1900ms}, [&] { driver.beginWindow(1, TimePoint{2s}); });
  sim.scheduleAt(TimePoint{2900ms}, [&] { driver.beginWindow(2, TimePoint{3s}); });
  sim.run();
  // The request at 1.5 s completes at 2.3 s, inside window 1: it stays in window 0.
  EXPECT_EQ(driver.windowStats(0).completed(), 2u);
  EXPECT_EQ(driver.windowStats(1).completed(), 1u);
  EXPECT_EQ(driver.windowStats(2).completed(), 3u);
  EXPECT_EQ(driver.windowStats(2).sent(), 3u);
  EXPECT_EQ(driver.windowStats(3).completed(), 0u);
  // Before the first window: in no window, but in the run's own statistics.
  EXPECT_EQ(completed(driver.stats()), 7u);
}

TEST(SteadyWindow, WithoutABoundaryEverythingIsMeasured) {
  VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{1ms}; });
  load::OpenLoopDriver driver(server, sim.clock());
  for (int i = 0; i < 4; ++i)
    sim.scheduleAt(TimePoint{i * 1s}, [&, i] { driver.submit(put(TimePoint{i * 1s}), [](auto) {}); });
  sim.run();
  EXPECT_EQ(completed(driver.stats()), 4u);
  EXPECT_EQ(completed(driver.setupStats()), 0u);
}

TEST(SteadyWindow, ThePoolSplitsEveryWorkersStatistics) {
  load::WorkerOptions o;
  o.workers = 2;
  o.mode = SimulatorMode::kVirtual;
  load::WorkerPool pool(o, [](load::Worker& w) -> kube::TransportPtr {
    auto& sim = static_cast<VirtualSimulator&>(w.simulator());
    return std::make_unique<ScriptedTransport>(sim, [](const auto&) { return ScriptedTransport::Reply{1ms}; });
  });
  pool.setSteadyStart(TimePoint{5s});
  pool.run(
      [](load::Worker& w) {
        for (int i = 0; i < 10; ++i)
          w.simulator().scheduleAt(TimePoint{i * 1s},
                                   [&w, i] { w.driver()->submit(put(TimePoint{i * 1s}), [](auto) {}); });
      },
      TimePoint{20s});
  EXPECT_EQ(pool.setupRequestStats().completed(), 10u);  // 0..4 s on both workers
  EXPECT_EQ(pool.requestStats().completed(), 10u);       // 5..9 s on both workers
}

}  // namespace
}  // namespace cpscale::engine
