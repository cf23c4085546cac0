#include "reports/capacity_report.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "reports/summary.h"
#include "test/support/capacity_sample.h"

namespace cpscale::reports {
namespace {

namespace fs = std::filesystem;

void expectLines(const std::string& text, const std::vector<std::string>& lines) {
  for (const auto& line : lines)
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << "missing line:\n" << line << "\nin:\n" << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CapacityReportTest, ResultsInWords) {
  EXPECT_EQ(capacityResultText(result::testing::brokeAtStep3()), "900 nodes");
  EXPECT_EQ(capacityResultText(result::testing::generatorLimited()),
            "generator-limited at 9,600 sessions/min (held 4,800)");
  EXPECT_EQ(capacityResultText(result::testing::reachedMax()), "at least 12,000 objects/kind");
  EXPECT_EQ(capacityResultText(result::testing::noneHeld()), "none held");
  result::CapacitySearch s = result::testing::brokeAtStep3();
  s.limit = result::CapacityLimit::kInterrupted;
  EXPECT_EQ(capacityResultText(s), "at least 900 nodes (interrupted)");
  s.held.reset();
  s.limit = result::CapacityLimit::kFailed;
  EXPECT_EQ(capacityResultText(s), "none held (the search failed)");
}

TEST(CapacityReportTest, StepsInOrderOfValueAndWhereTheSearchBroke) {
  result::CapacitySearch s = result::testing::brokeAtStep3();
  std::vector<double> values;
  for (const result::CapacityStep* st : stepsByValue(s)) values.push_back(st->value);
  EXPECT_EQ(values, (std::vector<double>{300, 600, 900, 1200}));
  EXPECT_EQ(bisectionSteps(s), 1u);
  EXPECT_EQ(bisectionSteps(result::testing::generatorLimited()), 0u);
  ASSERT_NE(breakingStep(s), nullptr);
  EXPECT_EQ(breakingStep(s)->value, 1200);
  EXPECT_EQ(breakLabel(*breakingStep(s)), "broke");
  EXPECT_EQ(brokeFirst(s), "client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT}");
  // A bisection step that broke lower is where it broke.
  s.steps.push_back(result::testing::step(result::testing::nodeStep(1050, 240, 1.2)));
  EXPECT_EQ(breakingStep(s)->value, 1050);

  result::CapacitySearch gen = result::testing::generatorLimited();
  ASSERT_NE(breakingStep(gen), nullptr);
  EXPECT_EQ(breakingStep(gen)->value, 9600);
  EXPECT_EQ(breakLabel(*breakingStep(gen)), "generator-limited");
  EXPECT_EQ(brokeFirst(gen), "generator_limited_by_schedule");
  EXPECT_EQ(breakingStep(result::testing::reachedMax()), nullptr);
  EXPECT_EQ(brokeFirst(result::testing::reachedMax()), "");
  EXPECT_EQ(breakingStep(result::testing::noneHeld())->value, 300);
  EXPECT_EQ(stepHeldText(gen.steps[2]), "generator-limited");
  EXPECT_EQ(stepHeldText(gen.steps[0]), "yes");
}

TEST(CapacityReportTest, StepFiguresReadTheWorstScheduledP99) {
  result::CapacitySearch s = result::testing::brokeAtStep3();
  StepFigures f = stepFigures(s.steps[2], "node");
  ASSERT_NE(f.clientP99, nullptr);
  EXPECT_EQ(*f.clientP99->value, 1.8);  // not the from-send 99 s, not nodes/status' 50 ms
  EXPECT_EQ(verbResource(*f.clientP99), "PUT leases");
  EXPECT_EQ(verbResource(*stepFigures(s.steps[0], "node").clientP99), "PATCH nodes/status");
  ASSERT_NE(f.pressure, nullptr);
  EXPECT_EQ(*f.pressure->value, 1);
  EXPECT_EQ(stepFigures(s.steps[2], "churn").pressure, nullptr);
  EXPECT_FALSE(stepFigures(s.steps[3], "node").heap->available());
}

TEST(CapacityIndexTest, MarkdownTableOfRecipesByAxis) {
  std::string md = renderCapacityIndexMarkdown(result::testing::capacityIndex());
  if (const char* dump = std::getenv("CPSCALE_DUMP_CAPACITY_INDEX")) std::ofstream(dump) << md;
  EXPECT_EQ(md.rfind("# Capacity index\n\n"
                     "measured on 2 CPUs (AMD EPYC 7B13), 8 GiB, Kubernetes v1.33.1, etcd 3.5.21, cpscale 0.1.0,\n"
                     "2025-03-02T08:00:00Z\n\n",
                     0),
            0u)
      << md;
  expectLines(md,
              {
                  // clang-format off
      "| recipe     | node          | churn                           | state                            |",
      "| classic-ha | 900 nodes [1] | generator-limited at 9,600      | at least 12,000 objects/kind [3] |",
      "|            |               |   sessions/min (held 4,800) [2] |                                  |",
      "| split-etcd | none held [4] | not searched                    | not searched                     |",
      "- [1] classic-ha, node axis, workloads.fleet.count: broke first:",
      "  client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT}; axis_pressure{axis=node} at",
      "  900 nodes: 0.750; result: [classic-ha/node/result.json](classic-ha/node/result.json)",
      "- [2] classic-ha, churn axis, workloads.sessions.sessionsPerMinute: the generator fell behind",
      "  (generator_limited_by_schedule), not the server; axis_pressure{axis=churn} at 4,800 sessions/min:",
      "- [3] classic-ha, state axis, workloads.platform.objectsPerKind: nothing broke up to the search's",
      "- [4] split-etcd, node axis, workloads.fleet.count: broke first:",
      "  client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT}; no axis pressure: no step",
      "  held; result: [split-etcd/node/result.json](split-etcd/node/result.json)",
                  // clang-format on
              });
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(displayWidth(line), kSummaryColumns) << line;
}

TEST(CapacityIndexTest, WhatTheIndexDidNotRecordIsSaid) {
  result::CapacityIndex empty;
  EXPECT_EQ(measuredOnLine(empty),
            "measured on a machine the index did not record, Kubernetes version not recorded, etcd version not "
            "recorded, cpscale version not recorded, date not recorded");
  empty.host = "bench-1";
  empty.cpus = 2;
  EXPECT_EQ(measuredOnLine(empty).rfind("measured on bench-1 (2 CPUs), Kubernetes", 0), 0u);
  EXPECT_NE(renderCapacityIndexMarkdown(empty).find("The index holds no search.\n"), std::string::npos);
  EXPECT_NE(renderCapacityIndexHtml(empty).find("The index holds no search."), std::string::npos);

  result::CapacityIndex idx = result::testing::capacityIndex();
  idx.searches[2].resultFile.clear();
  idx.searches[2].steps[2].figures.erase(idx.searches[2].steps[2].figures.begin());  // no pressure at what held
  std::string md = renderCapacityIndexMarkdown(idx);
  EXPECT_NE(md.find("max; no axis_pressure{axis=state} at 12,000 objects/kind: the step's figures have none; no"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("have none; no result\n  file was recorded\n"), std::string::npos) << md;
}

TEST(CapacityIndexTest, HtmlCellsWithWhatBrokeAndTheirLinks) {
  std::string html = renderCapacityIndexHtml(result::testing::capacityIndex());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"sub\" id=\"measured-on\">measured on 2 CPUs (AMD EPYC 7B13), 8 GiB, Kubernetes "
                      "v1.33.1, etcd 3.5.21, cpscale 0.1.0, 2025-03-02T08:00:00Z</p>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr><th>recipe</th><th>node</th><th>churn</th><th>state</th></tr>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"limit-server\"><div class=\"held\">900 nodes</div><div class=\"why\">broke first: "
                      "client_latency_p99{<wbr>measured_from=scheduled,<wbr>resource=leases,<wbr>verb=PUT}</div>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<a href=\"classic-ha/node/result.json\">"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"limit-generator\"><div class=\"held\">generator-limited at 9,600 sessions/min (held "
                      "4,800)</div>"),
            std::string::npos);
  EXPECT_NE(
      html.find("<div class=\"held\">at least 12,000 objects/kind</div><div class=\"why\">nothing broke up to the "
                "search&apos;s max</div><div class=\"why\">axis_pressure{<wbr>axis=state} at 12,000 "
                "objects/<wbr>kind: 1</div>"),
      std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"limit-server none-held\"><div class=\"held\">none held</div>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>split-etcd</th><td class=\"limit-server none-held\">"), std::string::npos);
  std::size_t notSearched = 0;
  for (auto p = html.find(">not searched</td>"); p != std::string::npos; p = html.find(">not searched</td>", p + 1))
    ++notSearched;
  EXPECT_EQ(notSearched, 2u);
  EXPECT_NE(html.find("<section id=\"searches\">"), std::string::npos);
}

TEST(CapacityIndexTest, WritesJsonMarkdownAndHtml) {
  fs::path dir = fs::temp_directory_path() / ("cpscale-capacity-index-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  result::CapacityIndex idx = result::testing::capacityIndex();
  writeCapacityIndexOutputs(idx, dir / "out");
  result::CapacityIndex back = result::readCapacityIndex(dir / "out" / std::string(result::kCapacityIndexFile));
  ASSERT_EQ(back.searches.size(), 4u);
  EXPECT_EQ(back.searches[0].held, 900);
  EXPECT_EQ(slurp(dir / "out" / std::string(kCapacityIndexMarkdownFile)), renderCapacityIndexMarkdown(idx));
  EXPECT_EQ(slurp(dir / "out" / std::string(kCapacityIndexHtmlFile)), renderCapacityIndexHtml(idx));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cpscale::reports

namespace cpscale::reports {
namespace {

// The index keeps what it and classify read, without series; the search's result keeps
// the rest.
TEST(CapacityIndexEntry, KeepsTheReadFiguresWithoutTheirSeries) {
  result::CapacitySearch s = result::testing::brokeAtStep3();
  s.steps[0].figures.push_back(
      metrics::Figure::measured("etcd_db_total_size_bytes", {}, 1, "bytes", metrics::Source::kEtcd));
  s.steps[0].figures[0].overTime.push(engine::TimePoint{}, 1.0);
  const result::CapacitySearch e = result::indexEntry(s);
  ASSERT_EQ(e.steps.size(), s.steps.size());
  std::vector<std::string> names;
  for (const auto& f : e.steps[0].figures) {
    names.push_back(f.name + (f.labels.empty() ? "" : "{" + f.labels.front().value + "}"));
    EXPECT_TRUE(f.overTime.empty()) << f.name;
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), "etcd_db_total_size_bytes"), 0);
  EXPECT_NE(metrics::findFigure(e.steps[0].figures, "axis_pressure"), nullptr);
  // Of the latencies, only those from the scheduled send.
  for (const auto& f : e.steps[0].figures)
    if (f.name == "client_latency_p99") {
      EXPECT_NE(metrics::findFigure({&f, 1}, f.name, {{"measured_from", "scheduled"}}), nullptr);
    }
  EXPECT_EQ(e.held, s.held);
  EXPECT_EQ(result::pressureAtHeld(e).size(), result::pressureAtHeld(s).size());
}

}  // namespace
}  // namespace cpscale::reports
