// The capacity search against a scripted server in virtual time: one FIFO server with
// a fixed service time, so it saturates at a known load, driven open-loop by synthetic
// kubelets renewing their Lease every 10 s. The steps' client figures come from the
// engine's own request statistics, as a live run's do, and are judged by the same gate.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "sim/load/open_loop_driver.h"
#include "sim/metrics/client_figures.h"
#include "sim/run/capacity_search.h"
#include "test/support/scripted_transport.h"

namespace cpscale::run {
namespace {

using namespace std::chrono_literals;
using engine::Duration;
using engine::TimePoint;
using engine::testing::ScriptedTransport;

// A server answering one request at a time in arrival order, `service` each: below
// 1/service requests per second its latency is the service time; above, its queue and
// latency grow for as long as the load lasts.
struct FifoServer {
  Duration service;
  TimePoint busyUntil{};
  ScriptedTransport::Reply answer(TimePoint now) {
    busyUntil = std::max(busyUntil, now) + service;
    return {busyUntil - now};
  }
};

// A target for one call of the search's step runner: a fresh server, the fleet grown
// in place step by step, each step held for `hold` and judged from the requests
// scheduled in it. `submitCost`: generator time per request (a slow generator).
class ScriptedTarget {
 public:
  ScriptedTarget(Duration service, Duration submitCost)
      : server_{service},
        transport_(sim_, [this](const kube::HttpRequest&) { return server_.answer(sim_.clock().now()); }),
        driver_(transport_, sim_.clock(), driverOptions()) {
    transport_.submitCost = submitCost;
  }

  StepsOutcome run(const std::vector<double>& values, const scenario::CapacitySpec& spec) {
    StepsOutcome out;
    for (std::size_t k = 0; k < values.size(); ++k) {
      growTo(static_cast<std::int64_t>(values[k]));
      sim_.runUntil(sim_.now() + 12s);  // the new nodes' first renewals, the queue's reaction
      const TimePoint start = sim_.now();
      driver_.beginWindow(2 * k, start);
      sim_.runUntil(start + spec.hold);
      driver_.beginWindow(2 * k + 1, sim_.now());
      sim_.runUntil(sim_.now() + 5min);  // the window's answers, however late (drain)
      const auto stats = driver_.windowStats(2 * k);
      std::vector<metrics::Figure> figures = metrics::clientLatencyFigures(stats);
      for (auto& f : metrics::generatorHealthFigures(stats, {0.99, 100ms})) figures.push_back(std::move(f));
      out.steps.push_back(judgeStep(values[k], seconds(start), seconds(start + spec.hold), figures, spec.gates));
      if (!out.steps.back().held) break;
    }
    return out;
  }

 private:
  static load::DriverOptions driverOptions() {
    load::DriverOptions o;
    // The server's queue, not the driver's in-flight bound, should show.
    o.maxInFlight = 1'000'000;
    o.connections = 1000;
    o.maxInFlightPerConnection = 1000;
    return o;
  }
  static double seconds(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

  // Nodes [nodes_, n) renew every 10 s at evenly spread phases.
  void growTo(std::int64_t n) {
    for (std::int64_t i = nodes_; i < n; ++i) {
      const Duration phase = Duration{10s} * (i % 1000) / 1000 + Duration{i % 997};
      sim_.scheduleAt(sim_.now() + phase, [this] { renew(); });
    }
    nodes_ = n;
  }
  void renew() {
    kube::HttpRequest r;
    r.method = "PUT";
    r.path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n";
    r.statsResource = "leases";
    r.statsVerb = "PUT";
    r.intendedAt = sim_.now();
    driver_.submit(std::move(r), [](kube::HttpResponse) {});
    sim_.scheduleAt(sim_.now() + 10s, [this] { renew(); });
  }

  engine::VirtualSimulator sim_;
  FifoServer server_;
  ScriptedTransport transport_;
  load::OpenLoopDriver driver_;
  std::int64_t nodes_ = 0;
};

scenario::CapacitySpec nodeSpec(int bisect) {
  scenario::CapacitySpec s;
  s.knob = "workloads.fleet.count";
  s.workload = "fleet";
  s.field = "count";
  s.axis = "node";
  s.unit = "nodes";
  s.start = 1000;
  s.factor = 2;
  s.max = 32000;
  s.hold = 30s;
  s.bisect = bisect;
  s.gates = {metrics::parseGate("client_latency_p99{resource=leases,verb=PUT,measured_from=scheduled} <= 1s", "test",
                                "gates[0]")};
  return s;
}

// Searches against fresh scripted targets (one per runner call, as a live search
// starts a fresh plane per bisection run), counting the calls.
result::CapacitySearch search(const scenario::CapacitySpec& spec, Duration service, Duration submitCost,
                              int* calls = nullptr) {
  StepRunner runner = [&](const std::vector<double>& values) {
    if (calls) ++*calls;
    ScriptedTarget target(service, submitCost);
    return target.run(values, spec);
  };
  return searchCapacity(spec, runner, "classic", "index-node");
}

std::vector<double> valuesOf(const result::CapacitySearch& s) {
  std::vector<double> v;
  for (const auto& st : s.steps) v.push_back(st.value);
  return v;
}

// 950 answers a second: 9,500 nodes renewing every 10 s saturate it.
constexpr Duration kService = std::chrono::nanoseconds(1'000'000'000 / 950);

TEST(CapacitySearch, StopsAtTheFirstStepPastTheServersKnownLimit) {
  const auto s = search(nodeSpec(0), kService, Duration{0});
  EXPECT_EQ(valuesOf(s), (std::vector<double>{1000, 2000, 4000, 8000, 16000}));
  ASSERT_TRUE(s.held.has_value());
  EXPECT_EQ(*s.held, 8000);
  EXPECT_EQ(s.limit, result::CapacityLimit::kServer);
  EXPECT_NE(s.brokeBy.find("client_latency_p99"), std::string::npos) << s.brokeBy;
  for (std::size_t i = 0; i + 1 < s.steps.size(); ++i) EXPECT_TRUE(s.steps[i].held) << s.steps[i].value;
  EXPECT_FALSE(s.steps.back().held);
  EXPECT_FALSE(s.steps.back().generatorLimited);
  // The figure gates read: measured, in nodes, on the node axis.
  const metrics::Figure f = capacityFigure(s);
  ASSERT_TRUE(f.value.has_value());
  EXPECT_EQ(*f.value, 8000);
  EXPECT_EQ(f.unit, "nodes");
  auto gate = metrics::evaluateGate(metrics::parseGate("capacity{axis=node} >= 8000", "test", "g"), {&f, 1});
  EXPECT_TRUE(gate.passed);
  gate = metrics::evaluateGate(metrics::parseGate("capacity{axis=node} >= 9000", "test", "g"), {&f, 1});
  EXPECT_FALSE(gate.passed);
}

TEST(CapacitySearch, BisectionNarrowsTheLimitOnFreshTargets) {
  int calls = 0;
  const auto s = search(nodeSpec(3), kService, Duration{0}, &calls);
  // 8,000 held and 16,000 broke; then 12,000 breaks, 10,000 breaks (1,000/s > 950/s),
  // 9,000 holds.
  EXPECT_EQ(valuesOf(s), (std::vector<double>{1000, 2000, 4000, 8000, 16000, 12000, 10000, 9000}));
  ASSERT_TRUE(s.held.has_value());
  EXPECT_EQ(*s.held, 9000);
  EXPECT_EQ(calls, 4);  // the ladder, then one fresh run per bisection value
  EXPECT_EQ(s.limit, result::CapacityLimit::kServer);
}

TEST(CapacitySearch, AGeneratorThatFallsBehindIsNotACapacity) {
  // The generator spends 2 ms per request: it keeps up with 400 requests a second
  // (4,000 nodes) but not 800; the server would have held far more.
  const auto s = search(nodeSpec(2), Duration{1us}, 2ms);
  EXPECT_EQ(valuesOf(s), (std::vector<double>{1000, 2000, 4000, 8000}));
  EXPECT_EQ(s.limit, result::CapacityLimit::kGenerator);
  EXPECT_TRUE(s.steps.back().generatorLimited);
  ASSERT_TRUE(s.held.has_value());
  EXPECT_EQ(*s.held, 4000);  // a lower bound, and said to be one
  EXPECT_NE(s.detail.find("generator"), std::string::npos) << s.detail;
  EXPECT_NE(s.detail.find("at least"), std::string::npos) << s.detail;
}

TEST(CapacitySearch, EveryStepHoldingMeansAtLeastTheMax) {
  auto spec = nodeSpec(2);
  spec.max = 6000;
  const auto s = search(spec, kService, Duration{0});
  EXPECT_EQ(valuesOf(s), (std::vector<double>{1000, 2000, 4000, 6000}));
  EXPECT_EQ(s.limit, result::CapacityLimit::kMaxReached);
  const metrics::Figure f = capacityFigure(s);
  ASSERT_TRUE(f.value.has_value());
  EXPECT_EQ(*f.value, 6000);
  EXPECT_NE(metrics::findFigure({&f, 1}, "capacity", {{"at_least", "true"}}), nullptr);
}

TEST(CapacitySearch, AFirstStepThatBreaksLeavesTheCapacityUnavailable) {
  auto spec = nodeSpec(0);
  spec.start = 20000;
  const auto s = search(spec, kService, Duration{0});
  EXPECT_EQ(valuesOf(s), (std::vector<double>{20000}));
  EXPECT_FALSE(s.held.has_value());
  const metrics::Figure f = capacityFigure(s);
  EXPECT_FALSE(f.value.has_value());
  EXPECT_NE(f.unavailableReason.find("first step"), std::string::npos) << f.unavailableReason;
}

TEST(CapacitySearch, ARunCutShortSaysWhyAndKeepsWhatHeld) {
  const auto spec = nodeSpec(2);
  StepRunner runner = [&](const std::vector<double>& values) {
    StepsOutcome o;
    o.steps.push_back(judgeStep(values[0], 0, 30, {}, {}));  // no gates: held
    o.stopped = result::CapacityLimit::kInterrupted;
    o.detail = "interrupted";
    return o;
  };
  const auto s = searchCapacity(spec, runner, "classic", "x");
  EXPECT_EQ(s.limit, result::CapacityLimit::kInterrupted);
  ASSERT_TRUE(s.held.has_value());
  EXPECT_EQ(*s.held, 1000);
  EXPECT_NE(s.detail.find("interrupted"), std::string::npos);
}

TEST(CapacityLadder, GrowsByTheFactorAndEndsAtTheMax) {
  auto spec = nodeSpec(0);
  spec.start = 300;
  spec.factor = 2;
  spec.max = 2000;
  EXPECT_EQ(scenario::capacityLadder(spec), (std::vector<double>{300, 600, 1200, 2000}));
  spec.factor = 1.5;
  spec.start = 10;
  spec.max = 30;
  EXPECT_EQ(scenario::capacityLadder(spec), (std::vector<double>{10, 15, 23, 30}));
}

}  // namespace
}  // namespace cpscale::run
