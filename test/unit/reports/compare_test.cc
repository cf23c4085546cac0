#include "reports/compare.h"

#include <gtest/gtest.h>

#include <sstream>

#include "reports/summary.h"
#include "test/support/sample_result.h"

namespace cpscale::reports {
namespace {

using metrics::Figure;
using metrics::Source;

const FigureChange& byKey(const Comparison& c, const std::string& key) {
  for (const auto& ch : c.changes)
    if (ch.key == key) return ch;
  throw std::runtime_error("no change for " + key);
}

result::RunResult withFigures(std::vector<Figure> figures, std::string id) {
  result::RunResult r;
  r.runId = std::move(id);
  r.figures = std::move(figures);
  return r;
}

const metrics::Labels kLeasePut{{"measured_from", "scheduled"}, {"resource", "leases"}, {"verb", "PUT"}};

TEST(CompareTest, ExactDeltasToleranceAndDirection) {
  result::RunResult a =
      withFigures({Figure::measured("client_latency_p99", kLeasePut, 0.010, "s", Source::kClient),
                   Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, 1000, "bytes", Source::kApiserver),
                   Figure::measured("lease_write_share", {}, 0.70, "ratio", Source::kApiserver),
                   Figure::measured("write_qps", {}, 200, "1/s", Source::kApiserver),
                   Figure::measured("generator_limited", {}, 0, "", Source::kClient)},
                  "A");
  result::RunResult b =
      withFigures({Figure::measured("client_latency_p99", kLeasePut, 0.0125, "s", Source::kClient),
                   Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, 950, "bytes", Source::kApiserver),
                   Figure::measured("lease_write_share", {}, 0.35, "ratio", Source::kApiserver),
                   Figure::measured("write_qps", {}, 100, "1/s", Source::kApiserver),
                   Figure::measured("generator_limited", {}, 1, "", Source::kClient)},
                  "B");
  Comparison c = compareResults(a, b);
  const auto& lat = byKey(c, "client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT}");
  EXPECT_DOUBLE_EQ(lat.absoluteChange, 0.0025);
  EXPECT_DOUBLE_EQ(*lat.relativeChange, 0.25);
  EXPECT_EQ(lat.direction, Direction::kWorse);
  EXPECT_TRUE(lat.crossedTolerance);
  EXPECT_EQ(lat.section, "node-bound");

  const auto& heap = byKey(c, "apiserver_heap_inuse_bytes_all_replicas");
  EXPECT_DOUBLE_EQ(heap.absoluteChange, -50);
  EXPECT_DOUBLE_EQ(*heap.relativeChange, -0.05);
  EXPECT_EQ(heap.direction, Direction::kBetter);
  EXPECT_FALSE(heap.crossedTolerance);
  EXPECT_EQ(heap.section, "state-bound");

  const auto& share = byKey(c, "lease_write_share");
  EXPECT_EQ(share.direction, Direction::kNeutral);
  EXPECT_TRUE(share.crossedTolerance);

  EXPECT_EQ(byKey(c, "write_qps").direction, Direction::kBetter);
  EXPECT_EQ(byKey(c, "write_qps").section, "writes");
  // From 0, any change is beyond tolerance, with no relative figure.
  const auto& lim = byKey(c, "generator_limited");
  EXPECT_FALSE(lim.relativeChange);
  EXPECT_TRUE(lim.crossedTolerance);
  EXPECT_EQ(lim.direction, Direction::kWorse);
  EXPECT_FALSE(lim.headline());
  EXPECT_TRUE(c.regressed());  // the lease latency, a headline figure
}

TEST(CompareTest, OverridesByKeyThenByName) {
  result::RunResult a =
      withFigures({Figure::measured("client_latency_p99", {{"resource", "leases"}}, 0.010, "s", Source::kClient),
                   Figure::measured("client_latency_p99", {{"resource", "pods"}}, 0.010, "s", Source::kClient)},
                  "A");
  result::RunResult b =
      withFigures({Figure::measured("client_latency_p99", {{"resource", "leases"}}, 0.0125, "s", Source::kClient),
                   Figure::measured("client_latency_p99", {{"resource", "pods"}}, 0.0125, "s", Source::kClient)},
                  "B");
  CompareOptions o;
  o.overrides["client_latency_p99"] = 0.30;
  o.overrides["client_latency_p99{resource=pods}"] = 0.20;
  Comparison c = compareResults(a, b, o);
  EXPECT_FALSE(byKey(c, "client_latency_p99{resource=leases}").crossedTolerance);
  EXPECT_TRUE(byKey(c, "client_latency_p99{resource=pods}").crossedTolerance);
  EXPECT_DOUBLE_EQ(byKey(c, "client_latency_p99{resource=pods}").tolerance, 0.20);
}

TEST(CompareTest, UnavailableOrOneSidedFiguresAreNotComparable) {
  result::RunResult a = withFigures({Figure::unavailable("etcd_keys", {}, "count", Source::kEtcd, "no etcd target"),
                                     Figure::measured("write_qps", {}, 10, "1/s", Source::kApiserver)},
                                    "A");
  result::RunResult b = withFigures({Figure::measured("etcd_keys", {}, 5, "count", Source::kEtcd),
                                     Figure::measured("bytes_per_object", {}, 3000, "bytes", Source::kApiserver)},
                                    "B");
  Comparison c = compareResults(a, b);
  ASSERT_EQ(c.changes.size(), 3u);
  EXPECT_EQ(byKey(c, "etcd_keys").notComparableReason, "unavailable in A (no etcd target), available in B");
  EXPECT_EQ(byKey(c, "write_qps").notComparableReason, "only in A");
  EXPECT_EQ(byKey(c, "bytes_per_object").notComparableReason, "only in B");
  // The headline comes first.
  EXPECT_EQ(c.changes[0].key, "write_qps");
  EXPECT_FALSE(c.regressed());
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("Headline, writes:\n\n"
                      "| figure    |    A |   B | change | relative | verdict |\n"
                      "| --------- | ---: | --: | -----: | -------: | ------- |\n"
                      "| write_qps | 10/s |   - |        |          | n/a [1] |\n"
                      "\n"
                      "- [1] only in A\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| etcd_keys | unavailable |   5 |        |          | n/a [1] |\n"), std::string::npos) << text;
  // Figures one run lacks entirely are counted by name, not listed.
  EXPECT_NE(text.find("1 other figure only in B, of 1 name: bytes_per_object.\n"), std::string::npos) << text;
  EXPECT_NE(text.find("- [1] unavailable in A (no etcd target), available in B\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Headline: 0 of 0 moved beyond tolerance (0 worse, 0 better), 1 not comparable. Details: 0 of 0 "
                      "moved\nbeyond tolerance (0 worse, 0 better), 2 not comparable. No regression in the headline."),
            std::string::npos)
      << text;
}

TEST(CompareTest, RatesOfAFewEventsAreNoise) {
  // 0.114/s vs 0.129/s over a 60 s window is 6.8 vs 7.7 events: nothing moved, however
  // large the relative change (+13 %).
  auto run = [](double watch, double leases, double requests, std::string id) {
    result::RunResult r = withFigures(
        {Figure::measured("apiserver_watch_events_qps", {{"resource", "configmaps"}}, watch, "1/s", Source::kApiserver),
         Figure::measured("write_qps", {{"resource", "leases"}, {"verb", "PUT"}}, leases, "1/s", Source::kApiserver),
         Figure::measured("write_requests", {{"resource", "pods"}, {"verb", "POST"}}, requests, "count",
                          Source::kApiserver)},
        std::move(id));
    r.measuredSeconds = 60;
    return r;
  };
  Comparison c = compareResults(run(0.114, 100, 10, "A"), run(0.129, 120, 15, "B"));
  const auto& watch = byKey(c, "apiserver_watch_events_qps{resource=configmaps}");
  EXPECT_NEAR(*watch.relativeChange, 0.1316, 1e-4);
  EXPECT_DOUBLE_EQ(watch.absoluteTolerance, 20.0 / 60);
  EXPECT_FALSE(watch.crossedTolerance);
  EXPECT_FALSE(byKey(c, "write_requests{resource=pods,verb=POST}").crossedTolerance);  // 5 requests more
  const auto& leases = byKey(c, "write_qps{resource=leases,verb=PUT}");
  EXPECT_TRUE(leases.crossedTolerance);  // 1,200 writes more
  EXPECT_EQ(leases.direction, Direction::kWorse);
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("| write_qps{resource=leases,verb=PUT} | 100/s | 120/s |  +20/s |  +20.0 % | WORSE   |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("2 other figures stayed within tolerance."), std::string::npos) << text;
  EXPECT_NE(
      text.find("A figure moved when it changed by more than 10 % and by more than its noise: 20 events over its\n"
                "window for rates and counts, 1.0 ms for latencies, 1 percentage point for shares."),
      std::string::npos)
      << text;
}

// A state-bound run on two profiles: the headline (heap, objects) decides; a detail
// that moved a lot does not.
TEST(CompareTest, VerdictRestsOnTheHeadlineOfTheAxesThatRan) {
  auto run = [](double heap, double etcdDb, std::string id) {
    result::RunResult r = withFigures(
        {Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, heap, "bytes", Source::kApiserver),
         Figure::measured("apiserver_objects", {{"apiserver", "kube-apiserver-0"}, {"resource", "configmaps"}}, 5000,
                          "objects", Source::kApiserver),
         Figure::measured("etcd_db_total_size_bytes", {{"member", "etcd-0"}}, etcdDb, "bytes", Source::kEtcd),
         // Churn figures of a workload that did not run in either: details.
         Figure::measured("server_latency_p99", {{"resource", "leases"}, {"verb", "PUT"}}, 0.010, "s",
                          Source::kApiserver)},
        std::move(id));
    r.workloads = {{"dormant", "platform", {}}};
    r.measuredSeconds = 60;
    return r;
  };
  Comparison same = compareResults(run(500e6, 100e6, "classic"), run(520e6, 180e6, "classic-ha"));
  EXPECT_TRUE(byKey(same, "etcd_db_total_size_bytes{member=etcd-0}").crossedTolerance);
  EXPECT_EQ(byKey(same, "etcd_db_total_size_bytes{member=etcd-0}").direction, Direction::kWorse);
  EXPECT_FALSE(byKey(same, "etcd_db_total_size_bytes{member=etcd-0}").headline());
  EXPECT_FALSE(byKey(same, "server_latency_p99{resource=leases,verb=PUT}").headline());
  EXPECT_FALSE(same.regressed());
  std::string text = renderComparisonText(same);
  EXPECT_NE(text.find("No regression in the headline."), std::string::npos) << text;
  EXPECT_NE(text.find("Details beyond tolerance:"), std::string::npos) << text;
  EXPECT_LT(text.find("apiserver_heap_inuse_bytes_all_replicas"), text.find("etcd_db_total_size_bytes")) << text;

  Comparison worse = compareResults(run(500e6, 100e6, "classic"), run(650e6, 100e6, "classic-ha"));
  EXPECT_TRUE(worse.regressed());
  EXPECT_NE(renderComparisonText(worse).find("B is worse than A."), std::string::npos);
}

TEST(CompareTest, AHeadlineFigureThatBecameUnavailableIsReportedAsSuch) {
  result::RunResult a = withFigures({Figure::measured("lease_write_share", {}, 0.7, "ratio", Source::kApiserver)}, "A");
  result::RunResult b = withFigures(
      {Figure::unavailable("lease_write_share", {}, "ratio", Source::kApiserver, "kube-apiserver-0 never answered")},
      "B");
  a.workloads = b.workloads = {{"kubelets", "nodes", {}}};
  Comparison c = compareResults(a, b);
  const auto& share = byKey(c, "lease_write_share");
  EXPECT_EQ(share.section, "node-bound");
  EXPECT_EQ(share.notComparableReason, "available in A, unavailable in B: kube-apiserver-0 never answered");
  EXPECT_FALSE(c.regressed());  // not a worse number: a missing one, said as such
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("Headline, node-bound:\n\n"
                      "| figure            |      A |           B | change | relative | verdict |\n"
                      "| ----------------- | -----: | ----------: | -----: | -------: | ------- |\n"
                      "| lease_write_share | 70.0 % | unavailable |        |          | n/a [1] |\n"
                      "\n"
                      "- [1] available in A, unavailable in B: kube-apiserver-0 never answered\n"),
            std::string::npos)
      << text;
}

TEST(CompareTest, SetupAndSteadyWindowsAreComparedApart) {
  auto run = [](double steady, double setup, std::string id) {
    Figure s =
        Figure::measured("write_qps", {{"resource", "nodes"}, {"verb", "POST"}}, steady, "1/s", Source::kApiserver);
    Figure u = s;
    u.value = setup;
    u.window = metrics::Window::kSetup;
    result::RunResult r = withFigures({s, u}, std::move(id));
    r.workloads = {{"kubelets", "nodes", {}}};
    r.measuredSeconds = 60;
    r.phases = {{"setup", 0, 100, true, ""}, {"steady", 100, 160, true, ""}};
    return r;
  };
  Comparison c = compareResults(run(50, 60, "A"), run(51, 200, "B"));
  ASSERT_EQ(c.changes.size(), 2u);
  EXPECT_EQ(c.changes[0].window, metrics::Window::kSteady);
  EXPECT_EQ(c.changes[0].section, "node-bound");
  EXPECT_FALSE(c.changes[0].crossedTolerance);
  EXPECT_EQ(c.changes[1].window, metrics::Window::kSetup);
  EXPECT_EQ(c.changes[1].section, "setup");
  EXPECT_DOUBLE_EQ(c.changes[1].absoluteChange, 140);
  EXPECT_DOUBLE_EQ(c.changes[1].absoluteTolerance, 20.0 / 100);  // the setup window is 100 s long
  EXPECT_TRUE(c.changes[1].crossedTolerance);
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("Headline, setup:"), std::string::npos) << text;
  EXPECT_NE(text.find("| write_qps{resource=nodes,verb=POST} [setup] | 60/s | 200/s | +140/s | +233.3 % | WORSE   |"),
            std::string::npos)
      << text;
}

TEST(CompareTest, TextAndMarkdownRenderings) {
  result::RunResult a = result::testing::wideResult();
  result::RunResult b = result::testing::wideResult();
  b.runId = "other";
  b.figures[0].value = 50;  // lease writes halved
  Comparison c = compareResults(a, b);
  EXPECT_FALSE(c.regressed());
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("Headline, node-bound:\n\n| figure "), std::string::npos) << text;
  EXPECT_NE(
      text.find("| write_qps{resource=leases,verb=PUT} |       100/s |        50/s |  -50/s |  -50.0 % | better  |"),
      std::string::npos)
      << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(displayWidth(line), kSummaryColumns) << line;
  std::string md = renderComparisonMarkdown(c, "classic-ha vs node-plane");
  EXPECT_EQ(md.rfind("## classic-ha vs node-plane\n\nA is 20250301-101500-ab12, B is other. Headline: 1 of ", 0), 0u)
      << md;
  EXPECT_NE(md.find("### Headline, node-bound\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- [1] unavailable in A and B: leases share an etcd with everything else\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("### Headline, setup\n"), std::string::npos) << md;
}

}  // namespace
}  // namespace cpscale::reports
