#include "sim/load/open_loop_driver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "sim/common/error.h"
#include "sim/engine/periodic_timer.h"
#include "test/support/scripted_transport.h"

namespace cpscale::load {
namespace {

using namespace std::chrono_literals;
using engine::testing::ScriptedTransport;

kube::HttpRequest lease(std::optional<TimePoint> intended = std::nullopt) {
  kube::HttpRequest r;
  r.method = "PUT";
  r.path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1";
  r.statsResource = "leases";
  r.statsVerb = "PUT";
  r.intendedAt = intended;
  return r;
}

const RequestLatency& only(const RequestStats& s, OutcomeClass c = OutcomeClass::kSuccess) {
  return s.latency().at(RequestKey{"leases", "PUT", c});
}

// Open loop: a sender every 10 ms against a server that takes 1 s keeps sending on
// schedule; nothing waits for a response.
TEST(OpenLoopDriver, NeverWaitsForAResponseBeforeTheNextSend) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{1s}; });
  OpenLoopDriver driver(server, sim.clock());
  int responses = 0;
  for (int i = 0; i < 100; ++i) {
    sim.scheduleAt(TimePoint{i * 10ms}, [&] { driver.submit(lease(sim.now()), [&](auto) { ++responses; }); });
  }
  sim.runUntil(TimePoint{990ms});
  EXPECT_EQ(server.submitted, 100u);
  EXPECT_EQ(responses, 0);
  EXPECT_EQ(driver.inFlight(), 100u);
  sim.run();
  EXPECT_EQ(responses, 100);
  const auto& l = only(driver.stats());
  EXPECT_EQ(l.fromSent.count(), 100u);
  EXPECT_EQ(l.fromSent.min(), 1'000'000'000u);
  EXPECT_EQ(l.fromSent.max(), 1'000'000'000u);
  EXPECT_EQ(driver.stats().scheduleLag().max(), 0u);
  EXPECT_EQ(driver.limit(), GeneratorLimit::kNone);
}

TEST(OpenLoopDriver, RecordsPerResourceVerbAndOutcome) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const kube::HttpRequest& r) {
    if (r.path.ends_with("conflict")) return ScriptedTransport::Reply{2ms, 409};
    if (r.path.ends_with("down")) return ScriptedTransport::Reply{3ms, 0, kube::TransportOutcome::kConnectFailed};
    return ScriptedTransport::Reply{1ms, 200};
  });
  OpenLoopDriver driver(server, sim.clock());
  auto noop = [](kube::HttpResponse) {};
  driver.submit(lease(), noop);
  auto c = lease();
  c.path += "/conflict";
  driver.submit(c, noop);
  auto d = lease();
  d.path += "/down";
  driver.submit(d, noop);
  kube::HttpRequest get;
  get.method = "GET";  // no stats label: the method stands in, the resource is "unknown"
  driver.submit(get, noop);
  sim.run();
  const auto& s = driver.stats();
  EXPECT_EQ(s.completed(), 4u);
  EXPECT_EQ(only(s, OutcomeClass::kSuccess).fromSent.max(), 1'000'000u);
  EXPECT_EQ(only(s, OutcomeClass::kClientError).fromSent.max(), 2'000'000u);
  EXPECT_EQ(only(s, OutcomeClass::kTransportError).fromSent.max(), 3'000'000u);
  EXPECT_EQ(s.latency().count(RequestKey{"unknown", "GET", OutcomeClass::kSuccess}), 1u);
  // Exact codes beside the classes: two 200s, one 409, one without a response.
  EXPECT_EQ(s.statusCounts(), (std::map<int, std::uint64_t>{{0, 1}, {200, 2}, {409, 1}}));
}

// A retry the client sent by itself is counted by why, with its wait; it is not the
// generator running late, and its latency from the schedule covers the whole stall.
TEST(OpenLoopDriver, RetriesAreCountedAndTheirLatencyRunsFromTheFirstSchedule) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const kube::HttpRequest& r) {
    return ScriptedTransport::Reply{5ms, r.attempt == 1 ? 429 : 200};
  });
  OpenLoopDriver driver(server, sim.clock());
  auto noop = [](kube::HttpResponse) {};
  driver.submit(lease(TimePoint{0ms}), noop);
  sim.scheduleAt(TimePoint{1005ms}, [&] {
    kube::HttpRequest retry = lease(TimePoint{0ms});
    retry.attempt = 2;
    retry.retryReason = "429";
    retry.retryWait = 1s;
    driver.submit(retry, noop);
  });
  sim.run();
  const RequestStats& s = driver.stats();
  EXPECT_EQ(s.retries(), (std::map<std::string, std::uint64_t, std::less<>>{{"429", 1}}));
  EXPECT_EQ(s.retryWait().count(), 1u);
  EXPECT_NEAR(static_cast<double>(s.retryWait().max()), 1e9, 1e6);
  EXPECT_EQ(s.scheduleLag().count(), 1u);  // the first attempt only
  EXPECT_EQ(s.scheduleLag().max(), 0u);
  EXPECT_EQ(driver.limit(), GeneratorLimit::kNone);
  EXPECT_NEAR(static_cast<double>(only(s).fromScheduled.max()), 1.010e9, 1e6);
  EXPECT_NEAR(static_cast<double>(only(s).fromSent.max()), 5e6, 1e4);
  EXPECT_EQ(only(s, OutcomeClass::kClientError).fromSent.count(), 1u);
  RequestStats merged;
  merged.merge(s);
  merged.merge(s);
  EXPECT_EQ(merged.retries().at("429"), 2u);
  EXPECT_EQ(merged.retryWait().count(), 2u);
}

// The in-flight bound queues requests FIFO; their latency from the scheduled time
// includes the wait, their latency from the send does not.
TEST(OpenLoopDriver, BoundsConcurrencyAndKeepsTheScheduledTime) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{100ms}; });
  OpenLoopDriver driver(server, sim.clock(), {.maxInFlight = 8, .connections = 2, .maxInFlightPerConnection = 2});
  EXPECT_EQ(driver.bound(), 4u);
  std::vector<int> order;
  for (int i = 0; i < 10; ++i) driver.submit(lease(TimePoint{}), [&order, i](auto) { order.push_back(i); });
  EXPECT_EQ(driver.admitted(), 4u);
  EXPECT_EQ(driver.queued(), 6u);
  sim.run();
  EXPECT_EQ(server.maxInFlightSeen, 4u);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const auto& l = only(driver.stats());
  EXPECT_EQ(l.fromSent.max(), 100'000'000u);
  EXPECT_EQ(l.fromScheduled.max(), 300'000'000u);  // third wave: waited 200 ms
  EXPECT_EQ(driver.stats().queueWait().max(), 200'000'000u);
  EXPECT_EQ(driver.stats().submitLag().max(), 0u);
}

TEST(OpenLoopDriver, CancelOfAQueuedRequestAbortsItAtOnce) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{1s}; });
  OpenLoopDriver driver(server, sim.clock(), {.maxInFlight = 1});
  std::vector<kube::TransportOutcome> outcomes;
  auto record = [&](kube::HttpResponse r) { outcomes.push_back(r.outcome); };
  const auto first = driver.submit(lease(), record);
  const auto second = driver.submit(lease(), record);
  driver.cancel(second);
  EXPECT_EQ(outcomes, (std::vector{kube::TransportOutcome::kAborted}));
  driver.cancel(first);  // in flight: cancelled in the transport
  EXPECT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(driver.inFlight(), 0u);
  sim.run();
  EXPECT_EQ(outcomes.size(), 2u);
  // Cancelled by the caller (a watch closed at the end of a run): neither a latency
  // nor an error of the server.
  EXPECT_TRUE(driver.stats().latency().empty());
}

// A deliberately slow generator: each submit costs 5 ms of (virtual) CPU while the
// schedule asks for one request per millisecond. Its lag grows, and the run is marked
// schedule-limited instead of blaming a server that answers in 1 ms.
kube::HttpRequest watchStream(int i) {
  kube::HttpRequest r;
  r.method = "GET";
  r.path = "/apis/example.com/v1/kind" + std::to_string(i) + "?watch=true";
  r.statsResource = "kind" + std::to_string(i);
  r.statsVerb = "WATCH";
  r.stream = true;
  r.onBodyChunk = [](std::string_view) { return true; };
  return r;
}

// The state-bound repro in virtual time: 20 watches that stay open for the whole run
// and a bound of 16. Requests sent after them still go out at once and complete.
TEST(OpenLoopDriver, OpenWatchesTakeNoInFlightSlot) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const kube::HttpRequest& r) {
    return ScriptedTransport::Reply{r.stream ? Duration{std::chrono::hours(1)} : Duration{5ms}};
  });
  OpenLoopDriver driver(server, sim.clock(), {.maxInFlight = 16, .maxInFlightPerConnection = 16});
  int closed = 0;
  std::vector<kube::RequestId> watches;
  for (int i = 0; i < 20; ++i) {
    watches.push_back(driver.submit(watchStream(i), [&](kube::HttpResponse) { ++closed; }));
  }
  EXPECT_EQ(server.submitted, 20u);  // every stream is open, none waits
  EXPECT_EQ(driver.streamsOpen(), 20u);
  EXPECT_EQ(driver.inFlight(), 0u);
  EXPECT_EQ(driver.admitted(), 0u);

  int responses = 0;
  for (int i = 0; i < 100; ++i) {
    sim.scheduleAt(TimePoint{i * 1ms}, [&] { driver.submit(lease(sim.now()), [&](auto) { ++responses; }); });
  }
  sim.runUntil(TimePoint{200ms});
  EXPECT_EQ(responses, 100);
  EXPECT_EQ(driver.inFlight(), 0u);
  EXPECT_EQ(driver.streamsOpen(), 20u);
  // Each request was sent on schedule: 5 ms from its intended time, never queued.
  const auto& l = only(driver.stats());
  EXPECT_EQ(l.fromScheduled.count(), 100u);
  EXPECT_EQ(l.fromScheduled.max(), 5'000'000u);
  EXPECT_EQ(driver.stats().queueWait().max(), 0u);
  // Streams are not open-loop requests: no latency, no status, no completion.
  EXPECT_EQ(driver.stats().completed(), 100u);
  for (const auto& [key, _] : driver.stats().latency()) EXPECT_NE(key.verb, "WATCH");

  for (auto id : watches) driver.cancel(id);
  EXPECT_EQ(closed, 20);
  EXPECT_EQ(driver.streamsOpen(), 0u);
  const StreamStats& ss = driver.streamStats();
  EXPECT_EQ(ss.opened, 20u);
  EXPECT_EQ(ss.closed, 20u);
  EXPECT_EQ(ss.failed, 0u);  // cancelled at the end of a run: not a failure
  EXPECT_EQ(ss.peakOpen, 20u);
}

// A watch the server refuses or cuts is a failed stream, still outside the latencies.
TEST(OpenLoopDriver, AStreamThatFailsIsCountedAsAFailedStream) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const kube::HttpRequest& r) {
    if (r.path.find("kind0") != std::string::npos) return ScriptedTransport::Reply{1s, 410};
    if (r.path.find("kind1") != std::string::npos)
      return ScriptedTransport::Reply{2s, 0, kube::TransportOutcome::kProtocolError};
    return ScriptedTransport::Reply{3s, 200};  // the server's own timeout
  });
  OpenLoopDriver driver(server, sim.clock(), {.maxInFlight = 1});
  for (int i = 0; i < 3; ++i) driver.submit(watchStream(i), [](kube::HttpResponse) {});
  sim.run();
  EXPECT_EQ(driver.streamStats().opened, 3u);
  EXPECT_EQ(driver.streamStats().closed, 3u);
  EXPECT_EQ(driver.streamStats().failed, 2u);
  EXPECT_EQ(driver.stats().completed(), 0u);
  EXPECT_TRUE(driver.stats().latency().empty());
}

TEST(OpenLoopDriver, SlowGeneratorIsDetectedAsScheduleLimited) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{1ms}; });
  server.submitCost = 5ms;
  OpenLoopDriver driver(server, sim.clock(), {.lagQuantile = 0.99, .lagThreshold = 50ms});
  struct Sender {
    engine::Simulator& sim;
    OpenLoopDriver& driver;
    void send() {
      driver.submit(lease(sim.now()), [](auto) {});
    }
  } sender{sim, driver};
  engine::PeriodicTimer timer(sim, engine::PeriodicTimer::bind<&Sender::send>(&sender), 1ms);
  timer.start(TimePoint{});
  sim.runUntil(TimePoint{200ms});
  timer.stop();
  sim.run();
  const auto& s = driver.stats();
  EXPECT_GT(s.submitLag().quantile(0.99), 50'000'000u);
  EXPECT_EQ(s.queueWait().max(), 0u);
  EXPECT_EQ(driver.limit(), GeneratorLimit::kSchedule);
  // Latency from the schedule includes the lag. (So does latency from the send here:
  // a generator this slow also handles the responses late.)
  EXPECT_GT(only(s).fromScheduled.max(), 500'000'000u);
  // The engine saw the same lateness.
  EXPECT_GT(sim.stats().lag.max(), 500'000'000u);
}

TEST(OpenLoopDriver, ATooLowBoundIsReportedAsConcurrencyLimited) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{10ms}; });
  OpenLoopDriver driver(server, sim.clock(), {.maxInFlight = 2, .lagThreshold = 5ms});
  for (int i = 0; i < 100; ++i) {
    sim.scheduleAt(TimePoint{i * 1ms}, [&] { driver.submit(lease(sim.now()), [](auto) {}); });
  }
  sim.run();
  EXPECT_EQ(driver.limit(), GeneratorLimit::kConcurrency);
}

TEST(OpenLoopDriver, RejectsBadOptionsNamingTheField) {
  engine::VirtualSimulator sim;
  ScriptedTransport server(sim, [](const auto&) { return ScriptedTransport::Reply{}; });
  auto fieldOf = [&](DriverOptions o) -> std::string {
    try {
      OpenLoopDriver d(server, sim.clock(), o);
    } catch (const ConfigError& e) {
      return e.field();
    }
    return "";
  };
  EXPECT_EQ(fieldOf({.maxInFlight = 0}), "maxInFlight");
  EXPECT_EQ(fieldOf({.connections = 0}), "connections");
  EXPECT_EQ(fieldOf({.maxInFlightPerConnection = 0}), "maxInFlightPerConnection");
  EXPECT_EQ(fieldOf({.lagQuantile = 0}), "lagQuantile");
  EXPECT_EQ(fieldOf({.lagThreshold = -1ms}), "lagThreshold");
  EXPECT_EQ(fieldOf({}), "");
}

TEST(RequestStats, MergeCombinesEveryKeyAndTheLag) {
  RequestStats a, b;
  a.recordLatency({"leases", "PUT", OutcomeClass::kSuccess}, 5ms, 4ms);
  b.recordLatency({"leases", "PUT", OutcomeClass::kSuccess}, 7ms, 6ms);
  b.recordLatency({"pods", "POST", OutcomeClass::kServerError}, 9ms, 9ms);
  a.recordSend(1ms, 0ms);
  b.recordSend(0ms, 2ms);
  a.merge(b);
  EXPECT_EQ(a.completed(), 3u);
  EXPECT_EQ(a.sent(), 2u);
  EXPECT_EQ(a.latency().size(), 2u);
  EXPECT_EQ(a.latency().at({"leases", "PUT", OutcomeClass::kSuccess}).fromScheduled.count(), 2u);
  EXPECT_EQ(a.scheduleLag().max(), 2'000'000u);
  EXPECT_EQ(a.scheduleLag().quantile(0.5), engine::HdrHistogram::highestEquivalent(1'000'000));
  EXPECT_EQ(toString(OutcomeClass::kServerError), "5xx");
  EXPECT_EQ(classifyStatus(true, 201), OutcomeClass::kSuccess);
  EXPECT_EQ(classifyStatus(false, 0), OutcomeClass::kTransportError);
}

}  // namespace
}  // namespace cpscale::load
