#include "sim/metrics/gate.h"

#include <gtest/gtest.h>

#include "sim/common/error.h"

namespace cpscale::metrics {
namespace {

Gate gate(const std::string& text) { return parseGate(text, "s.yaml:9", "gates[0]"); }

std::vector<Figure> figures() {
  return {
      Figure::measured("write_qps", {}, 120, "1/s", Source::kApiserver),
      Figure::measured("write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}}, 80,
                       "1/s", Source::kApiserver),
      Figure::measured("write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "POST"}}, 5,
                       "1/s", Source::kApiserver),
      Figure::measured("write_qps", {{"group", ""}, {"resource", "nodes/status"}, {"verb", "PATCH"}}, 35, "1/s",
                       Source::kApiserver),
      Figure::measured("lease_write_share", {}, 0.7083, "ratio", Source::kApiserver),
      Figure::measured("client_latency_p99", {{"measured_from", "scheduled"}, {"resource", "leases"}, {"verb", "PUT"}},
                       0.012, "s", Source::kClient),
      Figure::measured("client_latency_p99", {{"measured_from", "sent"}, {"resource", "leases"}, {"verb", "PUT"}},
                       0.010, "s", Source::kClient),
      Figure::unavailable("etcd_proposals_committed_per_second", {}, "1/s", Source::kEtcd,
                          "no etcd target: the cluster's etcd is not reachable"),
      Figure::measured("generator_limited", {{"limit", "none"}}, 0, "count", Source::kClient),
  };
}

TEST(GateTest, ParsesSelectorOperatorAndUnits) {
  Gate g = gate("client_latency_p99{verb=PUT, resource=\"leases\"} <= 1s");
  EXPECT_EQ(g.figure, "client_latency_p99");
  ASSERT_EQ(g.selector.size(), 2u);
  EXPECT_EQ(g.selector[0].name, "resource");  // sorted
  EXPECT_EQ(g.selector[0].value, "leases");
  EXPECT_EQ(g.op, GateOp::kLe);
  EXPECT_DOUBLE_EQ(g.threshold, 1.0);
  EXPECT_DOUBLE_EQ(gate("x < 250ms").threshold, 0.25);
  EXPECT_DOUBLE_EQ(gate("x <= 4KiB").threshold, 4096);
  EXPECT_DOUBLE_EQ(gate("x >= 50%").threshold, 0.5);
  EXPECT_DOUBLE_EQ(gate("x == false").threshold, 0);
  EXPECT_DOUBLE_EQ(gate("x != true").threshold, 1);
  EXPECT_DOUBLE_EQ(gate("x > 1.5e3").threshold, 1500);
}

TEST(GateTest, ThresholdsOutOfRangeOrNotNumbersAreConfigErrors) {
  // std::stod throws std::out_of_range on some of these: that used to escape as an
  // outage (exit 3) instead of bad input (exit 2).
  std::string huge = "x <= 1" + std::string(400, '0');
  for (std::string bad :
       {std::string("x <= 1e999"), std::string("x <= -1e999"), std::string("x <= 1e-999"), huge,
        std::string("x <= nan"), std::string("x <= NaN"), std::string("x <= inf"), std::string("x <= --5"),
        std::string("x <= +-5"), std::string("x <= 1e308GiB"), std::string("x <= 0x10"), std::string("x <= 1.2.3")}) {
    SCOPED_TRACE(bad);
    try {
      gate(bad);
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("s.yaml:9: field 'gates[0]': threshold"), std::string::npos) << e.what();
    }
  }
  EXPECT_DOUBLE_EQ(gate("x <= -5").threshold, -5);
  EXPECT_DOUBLE_EQ(gate("x <= 1e300").threshold, 1e300);
}

TEST(GateTest, BadGatesNameWhereAndField) {
  for (const char* bad : {"write_qps", "write_qps <= ", "write_qps ~ 3", "write_qps{resource} <= 1", "x <= 3 apples"}) {
    SCOPED_TRACE(bad);
    try {
      gate(bad);
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("s.yaml:9: field 'gates[0]'"), std::string::npos) << e.what();
    }
  }
}

TEST(GateTest, OverlongGateIsAConfigErrorNotAStackOverflow) {
  // std::regex recursed once per character: these crashed the process.
  for (std::string bad : {"write_qps <= " + std::string(200'000, '1'),
                          "write_qps{" + std::string(200'000, 'a') + "=b} <= 1", std::string(200'000, 'x') + " <= 1"}) {
    try {
      gate(bad);
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("s.yaml:9: field 'gates[0]': gate is 200"), std::string::npos)
          << std::string(e.what()).substr(0, 200);
      EXPECT_NE(std::string(e.what()).find("(at most 1024)"), std::string::npos);
      EXPECT_LT(std::string(e.what()).size(), 200u) << "the message quotes only the gate's start";
    }
  }
  const std::string longest = "write_qps{resource=" + std::string(1024 - 25, 'l') + "} <= 1";
  ASSERT_EQ(longest.size(), 1024u);
  EXPECT_EQ(gate(longest).selector.at(0).value.size(), 1024u - 25);
}

TEST(GateTest, ExactLabelsPickOneFigure) {
  auto r = evaluateGate(gate("write_qps <= 100"), figures());
  ASSERT_TRUE(r.measured);
  EXPECT_DOUBLE_EQ(*r.measured, 120);  // the overall figure, not a sum of all
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(evaluateGate(gate("lease_write_share >= 0.5"), figures()).passed);
}

TEST(GateTest, PartialSelectorSumsAdditiveFigures) {
  auto r = evaluateGate(gate("write_qps{resource=leases} <= 600"), figures());
  ASSERT_TRUE(r.measured) << r.reason;
  EXPECT_DOUBLE_EQ(*r.measured, 85);  // PUT 80 + POST 5
  EXPECT_TRUE(r.passed);
}

TEST(GateTest, PartialSelectorOverNonAdditiveFiguresIsAmbiguous) {
  auto r = evaluateGate(gate("client_latency_p99{verb=PUT,resource=leases} <= 1s"), figures());
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.measured);
  EXPECT_NE(r.reason.find("2 figures match"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("measured_from"), std::string::npos) << r.reason;
  auto one =
      evaluateGate(gate("client_latency_p99{verb=PUT,resource=leases,measured_from=scheduled} <= 1s"), figures());
  EXPECT_TRUE(one.passed) << one.reason;
  EXPECT_DOUBLE_EQ(*one.measured, 0.012);
}

TEST(GateTest, FoldsTakeTheLargestSmallestOrSumOfEveryMatch) {
  const std::vector<Figure> heap = {
      Figure::measured("apiserver_heap_inuse_bytes_peak", {{"apiserver", "kube-apiserver-0"}}, 300, "bytes",
                       Source::kApiserver),
      Figure::measured("apiserver_heap_inuse_bytes_peak", {{"apiserver", "kube-apiserver-1"}}, 500, "bytes",
                       Source::kApiserver),
      Figure::measured("apiserver_heap_inuse_bytes_peak", {{"apiserver", "kube-apiserver-2"}}, 400, "bytes",
                       Source::kApiserver),
      Figure::measured("server_latency_p99", {{"apiserver", "kube-apiserver-0"}}, 0.2, "s", Source::kApiserver),
      Figure::measured("server_latency_p99", {{"apiserver", "kube-apiserver-1"}}, 0.9, "s", Source::kApiserver),
  };
  Gate g = gate("max( apiserver_heap_inuse_bytes_peak ) <= 450");
  EXPECT_EQ(g.fold, GateFold::kMax);
  GateResult r = evaluateGate(g, heap);
  EXPECT_EQ(r.measured, 500);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(evaluateGate(gate("min(apiserver_heap_inuse_bytes_peak) >= 300"), heap).measured, 300);
  EXPECT_EQ(evaluateGate(gate("sum(apiserver_heap_inuse_bytes_peak) <= 1200"), heap).measured, 1200);
  // A fold still honours the selector, and an exact match does not stop it.
  EXPECT_EQ(
      evaluateGate(gate("max(apiserver_heap_inuse_bytes_peak{apiserver=kube-apiserver-2}) <= 450"), heap).measured,
      400);
  // Latencies do not add up, but their largest is what a per-replica budget reads.
  EXPECT_DOUBLE_EQ(*evaluateGate(gate("max(server_latency_p99) <= 1s"), heap).measured, 0.9);
  GateResult summed = evaluateGate(gate("sum(server_latency_p99) <= 1s"), heap);
  EXPECT_FALSE(summed.measured);
  EXPECT_NE(summed.reason.find("does not add up"), std::string::npos) << summed.reason;
}

TEST(GateTest, AFoldWithOneUnavailableMemberFailsNamingIt) {
  const std::vector<Figure> heap = {
      Figure::measured("apiserver_heap_inuse_bytes_peak", {{"apiserver", "kube-apiserver-0"}}, 300, "bytes",
                       Source::kApiserver),
      Figure::unavailable("apiserver_heap_inuse_bytes_peak", {{"apiserver", "kube-apiserver-1"}}, "bytes",
                          Source::kApiserver, "every scrape failed"),
  };
  GateResult r = evaluateGate(gate("max(apiserver_heap_inuse_bytes_peak) <= 1GiB"), heap);
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.measured);
  EXPECT_NE(r.reason.find("kube-apiserver-1"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("every scrape failed"), std::string::npos) << r.reason;
}

TEST(GateTest, AnUnclosedOrUnknownFoldIsAConfigError) {
  for (const char* bad : {"max(write_qps <= 5", "write_qps) <= 5", "avg(write_qps) <= 5", "max() <= 5"}) {
    try {
      gate(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.where(), "s.yaml:9") << bad;
      EXPECT_EQ(e.field(), "gates[0]") << bad;
    }
  }
  Gate g = gate("write_qps <= 5");
  EXPECT_EQ(g.where, "s.yaml:9");
  EXPECT_EQ(g.field, "gates[0]");
}

TEST(GateTest, UnavailableFigureFailsWithItsReason) {
  auto r = evaluateGate(gate("etcd_proposals_committed_per_second <= 1000"), figures());
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.reason.find("unavailable: no etcd target"), std::string::npos) << r.reason;
}

TEST(GateTest, MissingFigureFails) {
  auto r = evaluateGate(gate("no_such_figure <= 1"), figures());
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.reason.find("no figure named no_such_figure"), std::string::npos);
  auto l = evaluateGate(gate("write_qps{resource=pods} <= 1"), figures());
  EXPECT_FALSE(l.passed);
  EXPECT_NE(l.reason.find("no write_qps figure has labels {resource=pods}"), std::string::npos) << l.reason;
}

TEST(GateTest, BooleanGate) {
  EXPECT_TRUE(evaluateGate(gate("generator_limited == false"), figures()).passed);
  EXPECT_FALSE(evaluateGate(gate("generator_limited == true"), figures()).passed);
}

// The same figure exists for the setup ramp and the steady window: a gate reads the
// steady one unless it names the window.
TEST(GateTest, ReadsTheSteadyWindowUnlessAnotherIsNamed) {
  auto fs = figures();
  Figure setup = Figure::measured("write_qps", {}, 900, "1/s", Source::kApiserver);
  setup.window = Window::kSetup;
  fs.insert(fs.begin(), setup);  // first, so a window-blind lookup would find it
  auto steady = evaluateGate(gate("write_qps <= 200"), fs);
  EXPECT_TRUE(steady.passed) << steady.reason;
  EXPECT_EQ(*steady.measured, 120);
  auto ramp = evaluateGate(gate("write_qps{window=setup} <= 200"), fs);
  EXPECT_FALSE(ramp.passed);
  EXPECT_EQ(*ramp.measured, 900);
  auto none = evaluateGate(gate("lease_write_share{window=setup} > 0"), fs);
  EXPECT_FALSE(none.passed);
  EXPECT_FALSE(none.measured.has_value());
}

}  // namespace
}  // namespace cpscale::metrics
