#include "reports/summary.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "reports/format.h"
#include "reports/summary.h"
#include "test/support/capacity_sample.h"
#include "test/support/sample_result.h"

namespace cpscale::reports {
namespace {

TEST(FormatTest, HumanUnits) {
  EXPECT_EQ(formatValue(1234, "1/s"), "1.2k/s");
  EXPECT_EQ(formatValue(850, "1/s"), "850/s");
  EXPECT_EQ(formatValue(12.5, "1/s"), "12.5/s");
  EXPECT_EQ(formatValue(35.1 * 1048576, "bytes"), "35.1 MiB");
  EXPECT_EQ(formatValue(512, "bytes"), "512 B");
  EXPECT_EQ(formatValue(3480, "bytes"), "3.4 KiB");
  EXPECT_EQ(formatValue(0.0123, "s"), "12.3 ms");
  EXPECT_EQ(formatValue(0.25, "s"), "250 ms");
  EXPECT_EQ(formatValue(0.0000425, "s"), "42.5 µs");
  EXPECT_EQ(formatValue(1.5, "s"), "1.50 s");
  EXPECT_EQ(formatValue(0.712, "ratio"), "71.2 %");
  EXPECT_EQ(formatValue(48213, "objects"), "48,213");
  EXPECT_EQ(formatValue(1250000, "objects"), "1.2M");
  EXPECT_EQ(formatValue(999999.5, "objects"), "1.0M");
  EXPECT_EQ(formatValue(7, "count"), "7");
  EXPECT_EQ(formatValue(0.5, ""), "0.500");
  EXPECT_EQ(formatValue(1.0 / 0.0, "s"), "+Inf");
  EXPECT_EQ(formatElapsed(0), "0s");
  EXPECT_EQ(formatElapsed(90), "1m30s");
  EXPECT_EQ(formatElapsed(3900), "1h05m");
}

TEST(FormatTest, KnobUnitsReadExactly) {
  EXPECT_EQ(formatKnobValue(2400, "nodes"), "2,400 nodes");
  EXPECT_EQ(formatKnobValue(2.5, "sessions/min"), "2.50 sessions/min");
  EXPECT_EQ(formatKnobValue(4800, ""), "4,800");
  // A capacity{...} figure carries the knob's unit: the number reads with it.
  EXPECT_EQ(formatValue(12000, "objects/kind"), "12,000 objects/kind");
  EXPECT_EQ(formatValue(0.5, ""), "0.500");
}

TEST(FormatTest, FigureKeyIsGateSyntax) {
  EXPECT_EQ(figureKey("write_qps", {{"resource", "leases"}, {"verb", "PUT"}}), "write_qps{resource=leases,verb=PUT}");
  EXPECT_EQ(figureKey("lease_write_share", {}), "lease_write_share");
}

// The text between two headings (the first occurrence of each), for asserting what a
// section holds and, as much, what it does not.
std::string section(const std::string& md, const std::string& from, const std::string& to) {
  auto a = md.find(from);
  if (a == std::string::npos) return "";
  auto b = md.find(to, a + from.size());
  return md.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

void expectLines(const std::string& text, const std::vector<std::string>& lines) {
  for (const auto& line : lines)
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << "missing line:\n" << line << "\nin:\n" << text;
}

TEST(SummaryTest, TitlePhasesAndIncidentsAtTheTop) {
  std::string md = renderSummary(result::testing::sampleResult());
  if (const char* dump = std::getenv("CPSCALE_DUMP_SUMMARY")) std::ofstream(dump) << md;
  EXPECT_EQ(md.rfind("# mixed-smoke on classic-ha (local plane): completed\n\n"
                     "- run: 20250301-101500-ab12\n"
                     "- scenario: mixed-smoke (scenarios/mixed.yaml)\n"
                     "- profile: classic-ha (applied to the local plane)\n"
                     "- target: local plane (context cpscale-local), https://127.0.0.1:6443 (kubernetes v1.33.1, etcd\n"
                     "  3.5.21)\n"
                     "- status: completed\n"
                     "- workloads: kubelets nodes, churn sessions, dormant platform\n"
                     "- measured: 1m, 2025-03-01T10:15:00Z to 2025-03-01T10:16:05Z\n"
                     "- setup: 0s to 30s (30s), complete (recorded, not the headline)\n"
                     "  - ramp platform/configmaps: 5s to 25s (20s)\n"
                     "- steady: 30s to 1m30s (1m), complete (the headline and the gates)\n"
                     "- incidents: 1 (figures after them may describe a smaller plane)\n"
                     "  - at 1m10s: member-exited kube-apiserver-1 (exit status 137 (killed))\n\n"
                     "## Headline\n\n",
                     0),
            0u)
      << md;
}

TEST(SummaryTest, CutShortPhaseSaysWhy) {
  result::RunResult r = result::testing::sampleResult();
  r.phases[2].complete = false;
  r.phases[2].endSeconds = 75;
  r.phases[2].detail = "interrupted";
  r.incidents.clear();
  std::string md = renderSummary(r);
  expectLines(
      md, {"- steady: 30s to 1m15s (45s), cut short: interrupted (the headline and the gates)", "- incidents: none"});
}

TEST(SummaryTest, HeadlinePerAxisSteadyWindowOnly) {
  std::string md = renderSummary(result::testing::sampleResult());
  std::string headline = section(md, "## Headline\n", "### Setup\n");
  expectLines(
      headline,
      {
          // clang-format off
      "### All writes",
      "| write_qps          | 140/s   | steady | apiserver |",
      "| rejected_write_qps | 0.500/s | steady | apiserver |",
      "### node-bound",
      "| figure                                       | value           | window | source    |",
      "| write_qps{resource=leases,verb=PUT}          | 100/s           | steady | apiserver |",
      "| lease_write_share                            | 71.4 %          | steady | apiserver |",
      "| etcd_lease_proposal_share                    | unavailable [1] | steady | etcd      |",
      // Labels that would widen the table past 100 columns go on a line of their own.
      "| client_latency_p99                           | 12.3 ms         | steady | client    |",
      "|   {from=scheduled,resource=leases,verb=PUT}  |                 |        |           |",
      "| server_latency_p99{resource=leases,verb=PUT} | 8.0 ms          | steady | apiserver |",
      "| apiserver_objects{resource=nodes}            | 1,000           | steady | apiserver |",
      "Left out of the keys above, the same wherever present: apiserver=kube-apiserver-0.",
      "- [1] unavailable: leases share an etcd with everything else",
      "### churn-bound",
      "| write_qps{resource=sessions,verb=POST}          | 40/s            | steady | apiserver |",
      "| server_latency_p99{resource=sessions,verb=POST} | unavailable [1] | steady | apiserver |",
      "### state-bound",
      "| apiserver_heap_inuse_bytes{apiserver=kube-apiserver-0}        | 300 MiB | steady | apiserver |",
      "| apiserver_heap_inuse_bytes_all_replicas                       | 580 MiB | steady | apiserver |",
      "### Load per kube-apiserver replica (steady)",
      "| apiserver        | requests | writes | heap in use |",
      "| kube-apiserver-0 |    180/s |   92/s |     300 MiB |",
      "| kube-apiserver-1 |     95/s |   48/s |     280 MiB |",
          // clang-format on
      });
  // Nobody wrote configmaps in the steady window: no 0/s row, and nothing measured over
  // setup is mixed in with the steady figures.
  EXPECT_EQ(headline.find("configmaps"), std::string::npos) << headline;
  EXPECT_EQ(headline.find("| setup "), std::string::npos) << headline;
  EXPECT_EQ(headline.find("bytes_per_object"), std::string::npos) << headline;

  std::string setup = section(md, "### Setup\n", "## Gates\n");
  expectLines(setup,
              {
                  // clang-format off
      "Registration, population ramps and the bytes-per-object fit (with its confidence interval and r²),",
      "| write_qps{resource=configmaps,verb=POST} | 250/s                          | setup  | apiserver |",
      "| write_qps{resource=leases,verb=PUT}      | 60/s                           | setup  | apiserver |",
      "| write_qps{resource=nodes,verb=POST}      | 33.3/s                         | setup  | apiserver |",
      "| bytes_per_object                         | 3.4 KiB (3.2–3.6 KiB, r² 0.98) | setup  | apiserver |",
      "| bytes_per_object{kind=configmaps}        | 2.8 KiB                        | setup  | apiserver |",
      // Context labels common to every row are said once, not on every key.
      "Left out of the keys above, the same wherever present: apiserver=kube-apiserver-0, heap=inuse,",
      "workload=platform.",
                  // clang-format on
              });
  EXPECT_EQ(setup.find("| steady "), std::string::npos) << setup;
  // The fit's companions are read into its row, not listed again.
  EXPECT_EQ(setup.find("bytes_per_object_r2"), std::string::npos) << setup;
}

TEST(SummaryTest, NodeBoundRunShowsOnlyTheNodeAxis) {
  result::RunResult r = result::testing::sampleResult();
  r.workloads = {{"kubelets", "nodes", {{"nodes", 1000}}}, {"cleanup", "cleanup", {}}};
  std::string md = renderSummary(r);
  std::string headline = section(md, "## Headline\n", "## Gates\n");
  EXPECT_NE(headline.find("### node-bound\n"), std::string::npos) << headline;
  EXPECT_EQ(headline.find("churn-bound"), std::string::npos) << headline;
  EXPECT_EQ(headline.find("state-bound"), std::string::npos) << headline;
  EXPECT_EQ(headline.find("sessions"), std::string::npos) << headline;
  // Registration is the node fleet's setup; the population's ramp and fit are not.
  EXPECT_NE(headline.find("| write_qps{resource=nodes,verb=POST} | 33.3/s "), std::string::npos) << headline;
  EXPECT_EQ(headline.find("configmaps"), std::string::npos) << headline;
  EXPECT_EQ(headline.find("bytes_per_object"), std::string::npos) << headline;
  // Everything is still listed once, with its window, under All figures.
  std::string all = section(md, "## All figures", "\n\n\n");
  expectLines(all,
              {"| write_qps{group=cpscale.io,resource=sessions,verb=POST} | 40/s            | steady | apiserver |",
               "| write_qps{group=,resource=configmaps,verb=POST}         | 0/s             | steady | apiserver |",
               "| write_qps{group=,resource=configmaps,verb=POST}         | 250/s           | setup  | apiserver |"});
}

TEST(SummaryTest, OneReplicaHasNoReplicaTable) {
  result::RunResult r = result::testing::sampleResult();
  std::erase_if(r.figures, [](const metrics::Figure& f) {
    return metrics::labelValue(f.labels, "apiserver") == "kube-apiserver-1";
  });
  std::string md = renderSummary(r);
  EXPECT_EQ(md.find("Load per kube-apiserver replica"), std::string::npos);
  EXPECT_NE(renderSummary(result::testing::sampleResult()).find("### Load per kube-apiserver replica"),
            std::string::npos);
}

TEST(SummaryTest, ReplicaLoadMeasuredOverTheWholeRunStillShows) {
  result::RunResult r = result::testing::sampleResult();
  for (auto& f : r.figures)
    if (f.name == "apiserver_request_qps") f.window = metrics::Window::kRun;
  expectLines(renderSummary(r), {"| kube-apiserver-1 |     95/s |   48/s |     280 MiB |"});
}

TEST(SummaryTest, TheTerminalGetsEverythingButAllFigures) {
  const result::RunResult r = result::testing::sampleResult();
  const std::string md = renderSummary(r);
  const std::string term = renderTerminalSummary(r);
  const auto all = md.find("\n## All figures");
  ASSERT_NE(all, std::string::npos);
  EXPECT_EQ(term, md.substr(0, all + 1));
  EXPECT_NE(term.find("| gate "), std::string::npos);
}

TEST(SummaryTest, GatesAndGeneratorHealth) {
  std::string md = renderSummary(result::testing::sampleResult());
  expectLines(md,
              {
                  // clang-format off
      "| gate                                                 |    measured | threshold | verdict | why |",
      "| write_qps{resource=leases} <= 600                    |       100/s | <= 600    | pass    |     |",
      "| client_latency_p99{verb=PUT,resource=leases} <= 10ms |     12.3 ms | <= 10ms   | FAIL    |     |",
      "| etcd_lease_proposal_share >= 50%                     | unavailable | >= 50%    | FAIL    | [1] |",
      "- [1] etcd_lease_proposal_share is unavailable: leases share an etcd with everything else",
      "1 of 3 gates passed.",
      "## Generator health",
      "| schedule_lag_p99                  | 2.1 ms | steady | client |",
      "| generator_limited{limit=schedule} | 0      | steady | client |",
      "## All figures (31)",
                  // clang-format on
              });
}

TEST(SummaryTest, AllFiguresGroupedByNameWithTheirWindow) {
  std::string all = section(renderSummary(result::testing::sampleResult()), "## All figures", "\n\n\n");
  // Steady, then the same family measured over setup, before the next family.
  auto steady = all.find("| write_qps                                               | 140/s ");
  auto setup = all.find("| write_qps{group=,resource=configmaps,verb=POST}         | 250/s           | setup ");
  auto next = all.find("| rejected_write_qps ");
  ASSERT_NE(steady, std::string::npos) << all;
  ASSERT_NE(setup, std::string::npos) << all;
  EXPECT_LT(steady, setup);
  EXPECT_LT(setup, next);
}

std::size_t columns(std::string_view line) { return displayWidth(line); }

TEST(SummaryTest, NoLineWiderThanATerminal) {
  result::RunResult r = result::testing::wideResult();
  std::string md = renderSummary(r);
  if (const char* dump = std::getenv("CPSCALE_DUMP_WIDE_SUMMARY")) std::ofstream(dump) << md;
  std::size_t lineNo = 0, widest = 0;
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    ++lineNo;
    widest = std::max(widest, columns(line));
    EXPECT_LE(columns(line), kSummaryColumns) << "line " << lineNo << ":\n" << line;
  }
  EXPECT_GT(widest, 90u);  // the limit was actually pressed against
  // Nothing is cut off: the longest key survives, broken after its commas.
  std::string all = section(md, "## All figures", "\n\n\n");
  expectLines(all,
              {"| apiserver_objects{apiserver=kube-apiserver-0,             | 12,000          | steady | apiserver |",
               "|   group=observability.platform.example.com,               |                 |        |           |",
               "|   resource=alertmanagerconfigurations}                    |                 |        |           |"});
}

TEST(SummaryTest, ControllersSectionWithTheDeepestWorkqueues) {
  std::string md = renderSummary(result::testing::controllerResult());
  if (const char* dump = std::getenv("CPSCALE_DUMP_CONTROLLERS_SUMMARY")) std::ofstream(dump) << md;
  std::string controllers = section(md, "### Controllers\n", "### Setup\n");
  expectLines(controllers,
              {
                  // clang-format off
      "| workqueue_depth_max                               | 41    | steady | kube-controller-manager |",
      "| workqueue_adds                                    | 5,230 | steady | kube-controller-manager |",
      "| node_lifecycle_evictions                          | 12    | steady | kube-controller-manager |",
      "| node_lifecycle_unhealthy_nodes_max                | 50    | steady | kube-controller-manager |",
      "| taint_eviction_pod_deletions                      | 0     | steady | kube-controller-manager |",
      "| scheduler_pending_pods_max                        | 7     | steady | kube-scheduler          |",
      "| scheduler_schedule_attempts                       | 120   | steady | kube-scheduler          |",
      "| scheduler_schedule_attempts{result=scheduled}     | 118   | steady | kube-scheduler          |",
      "| scheduler_schedule_attempts{result=unschedulable} | 2     | steady | kube-scheduler          |",
      "Left out of the keys above, the same wherever present: component=kube-controller-manager.",
      // Deepest first; of two equally deep, the one that took more items.
      "| workqueue                           | component               | depth max |  adds |",
      "| garbage_collector_attempt_to_delete | kube-controller-manager |        41 | 1,200 |",
      "| node_lifecycle_controller           | kube-controller-manager |        12 | 3,000 |",
      "| noexec_taint_pod                    | kube-controller-manager |         9 |   400 |",
      "| deployment                          | kube-controller-manager |         3 |   250 |",
      "| replicaset                          | kube-controller-manager |         3 |   180 |",
      "| endpoint_slice                      | kube-controller-manager |         1 |   150 |",
      "| ... 2 more under All figures        |                         |           |       |",
                  // clang-format on
              });
  // The idle queues, a result that never happened, per-zone repeats of the totals and
  // the leader flag are under All figures only.
  for (const char* absent : {"ttl_jobs_to_delete", "| namespace", "result=error", "zone=", "leader_election"})
    EXPECT_EQ(controllers.find(absent), std::string::npos) << absent << " in:\n" << controllers;
  EXPECT_NE(section(md, "## All figures", "\n\n\n").find("queue=ttl_jobs_to_delete}"), std::string::npos);
  // The whole summary, controllers and all, still fits a terminal.
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(displayWidth(line), kSummaryColumns) << line;
}

TEST(SummaryTest, NoControllersSectionWithoutAMeasuredControllerFigure) {
  EXPECT_EQ(renderSummary(result::testing::sampleResult()).find("### Controllers"), std::string::npos);
  // A user's cluster: every controller figure unavailable. They are listed under All
  // figures with the reason, but a section of nothing but "unavailable" is left out.
  result::RunResult r = result::testing::controllerResult();
  for (auto& f : r.figures)
    if (f.source == metrics::Source::kControllerManager || f.source == metrics::Source::kScheduler) {
      f.value.reset();
      f.unavailableReason = "no kube-controller-manager was scraped";
    }
  std::string md = renderSummary(r);
  EXPECT_EQ(md.find("### Controllers"), std::string::npos);
  EXPECT_NE(section(md, "## All figures", "\n\n\n").find("| node_lifecycle_evictions "), std::string::npos);
}

TEST(SummaryTest, NodeBoundShowsTheFleetsNotReadyAndReadyTransitions) {
  std::string md = renderSummary(result::testing::controllerResult());
  std::string node = section(md, "### node-bound\n", "### churn-bound\n");
  expectLines(node,
              {
                  // clang-format off
      "| node_not_ready_transitions                   | 50              | run    | client    |",
      "| node_not_ready_seconds_p50                   | 42.50 s         | run    | client    |",
      "| node_not_ready_seconds_max                   | 48.10 s         | run    | client    |",
      "| node_ready_transitions                       | 50              | run    | client    |",
      "| node_ready_again_seconds_p50                 | 1.20 s          | run    | client    |",
      "| node_ready_again_seconds_max                 | 3.40 s          | run    | client    |",
      "Left out of the keys above, the same wherever present: apiserver=kube-apiserver-0, workload=nodes.",
                  // clang-format on
              });
  // Not an axis of their own: a churn-only run does not show them.
  result::RunResult churn = result::testing::controllerResult();
  churn.workloads = {{"churn", "sessions", {}}};
  EXPECT_EQ(section(renderSummary(churn), "## Headline\n", "## All figures").find("node_not_ready"), std::string::npos);
}

TEST(SummaryTest, MarkdownTableBreaksLongCellsIntoContinuationRows) {
  std::string t = markdownTable({"figure", "value"},
                                {{"client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT}", "12.3 ms"},
                                 {"an unbreakable_identifier_that_is_far_too_long", "1"}},
                                {false, true}, 44);
  EXPECT_EQ(t,
            "| figure                         |   value |\n"
            "| ------------------------------ | ------: |\n"
            "| client_latency_p99             | 12.3 ms |\n"
            "|   {measured_from=scheduled,    |         |\n"
            "|   resource=leases,verb=PUT}    |         |\n"
            "| an                             |       1 |\n"
            "|   unbreakable_identifier_that_ |         |\n"
            "|   is_far_too_long              |         |\n")
      << t;
  EXPECT_EQ(wrapText("- one two three four", 10, "  "), "- one two\n  three\n  four\n");
}

void expectNarrow(const std::string& md) {
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(displayWidth(line), kSummaryColumns) << line;
}

TEST(SummaryCapacityTest, BrokeAtTheThirdStepWithABisectionStep) {
  std::string md = renderSummary(result::testing::capacityResult(result::testing::brokeAtStep3()));
  if (const char* dump = std::getenv("CPSCALE_DUMP_CAPACITY_SUMMARY")) std::ofstream(dump) << md;
  // Right after the title and the phases, before the headline.
  auto at = md.find("- incidents: none\n\n## Capacity\n\n");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_LT(at, md.find("## Headline"));
  std::string cap = section(md, "## Capacity\n", "## Headline\n");
  expectLines(
      cap, {
               // clang-format off
      "- knob: workloads.fleet.count (nodes) on the node axis, 4 steps from 300 nodes to 1,200 nodes (1 by",
      "  bisection)",
      "- result: 900 nodes, the largest value that held",
      "- limit: server (a step failed a hold gate with the generator on schedule: the recipe's limit)",
      "- detail: held at 900 nodes; broke at the next step on the server:",
      "- the headline, gates and figures below are those of the last step that held (900 nodes)",
      // In order of value: the bisection step (900, run last) before 1,200. The worst
      // client p99 names its verb and resource; from-send latencies are not read.
      "| nodes | held / broke by | pressure | writes | leases | client p99                 |    heap |",
      "|   300 | yes             |    0.250 |   30/s | 70.0 % | 50.0 ms PATCH nodes/status | 230 MiB |",
      "|   600 | yes             |    0.500 |   60/s | 70.0 % | 50.0 ms PATCH nodes/status | 260 MiB |",
      "|   900 | yes             |    0.750 |   90/s | 70.0 % | 400 ms PUT leases          | n/a [1] |",
      "| 1,200 | no [2]          |        1 |  120/s | 70.0 % | 1.80 s PUT leases          | 320 MiB |",
      "- [1] n/a: kube-apiserver-1 did not answer a scrape in the window",
      "- [2] broke by: client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT} <= 1s: measured",
      "  1.8",
               // clang-format on
           });
  // The detail says what broke: no separate line repeating it.
  EXPECT_EQ(cap.find("- broke by:"), std::string::npos) << cap;
  EXPECT_EQ(cap.find("99 s"), std::string::npos) << cap;
  // The capacity figure reads with the knob's unit under All figures.
  EXPECT_NE(section(md, "## All figures", "\n\n\n")
                .find("| capacity{axis=node,knob=workloads.fleet.count}          | 900 nodes       |"),
            std::string::npos);
  expectNarrow(md);
}

TEST(SummaryCapacityTest, GeneratorLimitedIsNotACapacity) {
  std::string md = renderSummary(result::testing::capacityResult(result::testing::generatorLimited()));
  std::string cap = section(md, "## Capacity\n", "## Headline\n");
  expectLines(
      cap, {
               // clang-format off
      "- result: generator-limited at 9,600 sessions/min (held 4,800)",
      "- limit: generator (the generator fell behind its schedule: that step says nothing of the server, so",
      "- broke by: the generator fell behind its own schedule (generator_limited_by_schedule): the step",
      "|        4,800 | yes               |    0.500 |  160/s |  5.0 % | 60.0 ms POST         | 300 MiB |",
      "|        9,600 | generator-limited |        1 |  320/s |  5.0 % | 200 ms POST sessions | 300 MiB |",
      "|              |   [1]             |          |        |        |                      |         |",
      "- [1] broke by: the generator fell behind its own schedule (generator_limited_by_schedule): the step",
               // clang-format on
           });
  expectNarrow(md);
}

TEST(SummaryCapacityTest, ReachedTheMaxAndAStepWithoutPressure) {
  std::string md = renderSummary(result::testing::capacityResult(result::testing::reachedMax()));
  std::string cap = section(md, "## Capacity\n", "## Headline\n");
  expectLines(cap, {
                       // clang-format off
      "- result: at least 12,000 objects/kind",
      "- limit: max (every step up to the search's max held: the capacity is at least the max)",
      "|        3,000 | yes             |  n/a [1] |    5/s |  5.0 % | 50.0 ms PATCH  | 450 MiB |",
      "|       12,000 | yes             |        1 |    5/s |  5.0 % | 50.0 ms PATCH  | 900 MiB |",
      "- [1] n/a: the step's figures have no axis_pressure{axis=state}",
                       // clang-format on
                   });
  EXPECT_EQ(cap.find("| no "), std::string::npos) << cap;
  expectNarrow(md);
}

TEST(SummaryCapacityTest, NoStepHeld) {
  std::string md = renderSummary(result::testing::capacityResult(result::testing::noneHeld()));
  std::string cap = section(md, "## Capacity\n", "## Headline\n");
  expectLines(
      cap, {
               // clang-format off
      "- knob: workloads.fleet.count (nodes) on the node axis, 1 step at 300 nodes",
      "- result: none held",
      "- detail: the first step (300 nodes) already broke:",
      "|   300 | no [1]          |    0.250 |   30/s | 70.0 % | 2.50 s PUT leases | 230 MiB |",
      "- [1] broke by: client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT} <= 1s: measured",
               // clang-format on
           });
  // No step held: no claim about whose figures the headline shows.
  EXPECT_EQ(cap.find("last step that held"), std::string::npos) << cap;
  expectLines(section(md, "## All figures", "\n\n\n"),
              {"| capacity{axis=node,knob=workloads.fleet.count}          | unavailable [3] | steady | apiserver |"});
  expectNarrow(md);
}

TEST(SummaryCapacityTest, APlainRunHasNoCapacitySection) {
  EXPECT_EQ(renderSummary(result::testing::sampleResult()).find("## Capacity"), std::string::npos);
}

}  // namespace
}  // namespace cpscale::reports
