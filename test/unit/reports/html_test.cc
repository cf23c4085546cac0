#include "reports/html.h"

#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "reports/svg.h"
#include "test/support/capacity_sample.h"
#include "test/support/sample_result.h"

namespace cpscale::reports {
namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The <svg ...> element with this id, up to its </svg>.
std::string chart(const std::string& html, std::string_view id) {
  auto start = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + std::string(id) + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) + 6 - start);
}

TEST(HtmlTest, OneSvgPerChartWithItsId) {
  std::string html = renderHtml(result::testing::sampleResult());
  // 4 time charts + 2 latency charts ((leases, PUT) and (sessions, POST)).
  EXPECT_EQ(count(html, "<svg "), 6);
  for (std::string_view id : {kChartWriteQps, kChartLeaseShare, kChartHeap, kChartObjects}) {
    std::string svg = chart(html, id);
    ASSERT_FALSE(svg.empty()) << id;
    EXPECT_EQ(svg.find("chart-unavailable"), std::string::npos) << id;
    EXPECT_NE(svg.find("<path class=\"series"), std::string::npos) << id;
    EXPECT_NE(svg.find("<text class=\"title\""), std::string::npos) << id;
    EXPECT_NE(svg.find("<text class=\"tick\""), std::string::npos) << id;
    EXPECT_NE(svg.find("<text class=\"legend\""), std::string::npos) << id;
  }
  // leases, sessions, and configmaps: written in setup only, so its layer is the ramp.
  EXPECT_EQ(count(chart(html, kChartWriteQps), "class=\"series area\""), 3);
  EXPECT_EQ(count(chart(html, kChartHeap), "class=\"series line\""), 2);  // two apiservers
  EXPECT_NE(chart(html, kChartLeaseShare).find(">100 %</text>"), std::string::npos);
  EXPECT_NE(chart(html, kChartHeap).find(" MiB</text>"), std::string::npos);
  EXPECT_NE(chart(html, kChartWriteQps).find(">1m</text>"), std::string::npos);

  std::string lat = chart(html, latencyChartId("leases", "PUT"));
  ASSERT_FALSE(lat.empty());
  EXPECT_EQ(latencyChartId("leases", "PUT"), "chart-latency-leases-put");
  EXPECT_EQ(count(lat, "class=\"series bar\""), 4);  // p50 and p99 of the client (scheduled, sent), server p99
  EXPECT_NE(lat.find(" ms</text>"), std::string::npos);
  EXPECT_EQ(count(lat, ">n/a</text>"), 8);  // p90 and p99.9 everywhere, server p50
  // Sessions only has an unavailable server p99: a placeholder saying so, not empty bars.
  std::string sessions = chart(html, latencyChartId("sessions", "POST"));
  EXPECT_NE(sessions.find("chart-unavailable"), std::string::npos);
  EXPECT_NE(sessions.find(">no observations in the window</text>"), std::string::npos) << sessions;
}

TEST(HtmlTest, SelfContainedSectionsAndTables) {
  std::string html = renderHtml(result::testing::sampleResult());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  for (std::string id :
       {"axis-node-bound", "axis-churn-bound", "axis-state-bound", "latency", "gates", "environment", "generator"})
    EXPECT_NE(html.find("<section id=\"" + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("<td class=\"verdict-fail\">FAIL</td>"), std::string::npos);
  EXPECT_NE(html.find("<code>write_qps{resource=leases} &lt;= 600</code>"), std::string::npos);
  EXPECT_NE(html.find("unavailable <span class=\"why\">(leases share an etcd with everything else)</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><th>kubernetes version</th><td>v1.33.1</td></tr>"), std::string::npos);
}

TEST(HtmlTest, UnavailableDataShowsALabelledPlaceholder) {
  result::RunResult r = result::testing::sampleResult();
  std::erase_if(r.figures, [](const metrics::Figure& f) {
    return f.name == "write_qps" || f.name.starts_with("apiserver_heap") || f.name.find("latency") != std::string::npos;
  });
  r.figures.push_back(metrics::Figure::unavailable("write_qps", {}, "1/s", metrics::Source::kApiserver,
                                                   "kube-apiserver-0 never answered a scrape"));
  std::string html = renderHtml(r);
  std::string qps = chart(html, kChartWriteQps);
  EXPECT_NE(qps.find("class=\"chart chart-unavailable\""), std::string::npos);
  EXPECT_NE(qps.find(">kube-apiserver-0 never answered a scrape</text>"), std::string::npos) << qps;
  EXPECT_EQ(qps.find("class=\"series"), std::string::npos);
  std::string heap = chart(html, kChartHeap);
  EXPECT_NE(heap.find(">the result has no apiserver heap over time (apiserver_heap_inuse_bytes)</text>"),
            std::string::npos)
      << heap;
  EXPECT_NE(chart(html, kChartLatency).find("chart-unavailable"), std::string::npos);
}

TEST(HtmlTest, EveryTimeChartShowsPhasesAndIncidents) {
  std::string html = renderHtml(result::testing::sampleResult());
  // The plot spans x 72..700 for 0..90 s: setup ends at 30 s (x 281.3), the member
  // exits at 70 s (x 560.4).
  for (std::string_view id : {kChartWriteQps, kChartLeaseShare, kChartHeap, kChartObjects}) {
    std::string svg = chart(html, id);
    ASSERT_FALSE(svg.empty()) << id;
    EXPECT_NE(svg.find("<rect class=\"phase phase-setup\" x=\"72.0\" y=\"40.0\" width=\"209.3\""), std::string::npos)
        << id << svg;
    // The setup part is veiled after the series are drawn: visible, de-emphasised.
    auto fade = svg.find("<rect class=\"phase-fade\" x=\"72.0\"");
    ASSERT_NE(fade, std::string::npos) << id;
    EXPECT_LT(svg.rfind("class=\"series"), fade) << id;
    EXPECT_NE(svg.find("<line class=\"phase-boundary\" x1=\"281.3\" x2=\"281.3\""), std::string::npos) << id;
    EXPECT_NE(svg.find("<text class=\"phase-label\" x=\"76.0\" y=\"32.0\">setup</text>"), std::string::npos) << id;
    EXPECT_NE(svg.find("<text class=\"phase-label\" x=\"285.3\" y=\"32.0\">steady</text>"), std::string::npos) << id;
    EXPECT_NE(svg.find("<g class=\"incident\"><title>at 1m10s: member-exited kube-apiserver-1 (exit status 137 "
                       "(killed))</title><rect x=\"556.4\""),
              std::string::npos)
        << id;
    EXPECT_NE(svg.find("<line x1=\"560.4\" x2=\"560.4\""), std::string::npos) << id;
    EXPECT_NE(svg.find(">setup (faded)</text>"), std::string::npos) << id;
    EXPECT_NE(svg.find(">incident</text>"), std::string::npos) << id;
  }
  EXPECT_EQ(chart(html, kChartHeap).find("phase-end"), std::string::npos);  // steady runs to the end
  // A cut-short phase says so on the chart, and where it ended while data went on.
  result::RunResult r = result::testing::sampleResult();
  r.phases[2].complete = false;
  r.phases[2].endSeconds = 60;
  std::string heap = chart(renderHtml(r), kChartHeap);
  EXPECT_NE(heap.find(">steady (cut short)</text>"), std::string::npos) << heap;
  EXPECT_NE(heap.find("<line class=\"phase-boundary phase-end\" x1=\"490.7\""), std::string::npos) << heap;
}

TEST(HtmlTest, APhaseTooNarrowForALabelKeepsItsLineButNoLabel) {
  // A 1 s settle right before steady (x 274.4..281.3 of 72..700 for 90 s): its label
  // would run into steady's.
  result::RunResult r = result::testing::sampleResult();
  r.phases.insert(r.phases.begin() + 1, {"settle/controllers", 29, 30, true, ""});
  std::string svg = chart(renderHtml(r), kChartHeap);
  EXPECT_NE(svg.find("<line class=\"phase-boundary\" x1=\"274.4\""), std::string::npos) << svg;
  std::size_t labels = 0;
  const std::string label = "class=\"phase-label\"";
  for (auto at = svg.find(label); at != std::string::npos; at = svg.find(label, at + 1)) ++labels;
  EXPECT_EQ(labels, 2u) << "setup and steady only: " << svg;
  EXPECT_NE(svg.find(">steady</text>"), std::string::npos) << svg;
}

TEST(HtmlTest, PhasesIncidentsSetupAndReplicasHaveSections) {
  std::string html = renderHtml(result::testing::sampleResult());
  EXPECT_LT(html.find("<section id=\"timeline\">"), html.find("<section id=\"axis-node-bound\""));
  EXPECT_NE(html.find("<tr class=\"phase-setup\"><td>setup</td><td class=\"num\">0s</td><td class=\"num\">30s</td>"
                      "<td class=\"num\">30s</td><td>complete</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr class=\"phase-ramp\"><td>&#8627; ramp/platform/configmaps</td>"), std::string::npos);
  EXPECT_NE(
      html.find("<li class=\"incident\">at 1m10s: member-exited kube-apiserver-1 (exit status 137 (killed))</li>"),
      std::string::npos);
  EXPECT_NE(html.find("<tr><td>kube-apiserver-1</td><td class=\"num\">95/s</td><td class=\"num\">48/s</td>"),
            std::string::npos);
  std::string setup = html.substr(html.find("<section id=\"setup\">"));
  setup = setup.substr(0, setup.find("</section>"));
  EXPECT_NE(
      setup.find("<code>bytes_per_object{apiserver=kube-apiserver-0,heap=inuse}</code></td><td class=\"num\">3.4 KiB "
                 "<span class=\"why\">(3.2–3.6 KiB, r² 0.98)</span></td><td class=\"window\">setup</td>"),
      std::string::npos)
      << setup;
  std::string node = html.substr(html.find("<section id=\"axis-node-bound\""));
  node = node.substr(0, node.find("</section>"));
  EXPECT_EQ(node.find("window-setup"), std::string::npos) << node;
  EXPECT_NE(node.find("<td class=\"window\">steady</td>"), std::string::npos);
}

TEST(HtmlTest, OnlyTheAxesThatRanHaveSections) {
  result::RunResult r = result::testing::sampleResult();
  r.workloads = {{"kubelets", "nodes", {}}};
  std::string html = renderHtml(r);
  EXPECT_NE(html.find("<section id=\"axis-node-bound\""), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"axis-churn-bound\""), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"axis-state-bound\""), std::string::npos);
  // Their charts still show what happened over time, apart from the headline.
  auto other = html.find("<section id=\"other-charts\">");
  ASSERT_NE(other, std::string::npos);
  EXPECT_LT(other, html.find("id=\"" + std::string(kChartWriteQps) + "\""));
  EXPECT_LT(other, html.find("id=\"" + std::string(kChartHeap) + "\""));
}

TEST(HtmlTest, ControllersSectionOnlyWhenMeasured) {
  EXPECT_EQ(renderHtml(result::testing::sampleResult()).find("<section id=\"controllers\">"), std::string::npos);
  std::string html = renderHtml(result::testing::controllerResult());
  auto at = html.find("<section id=\"controllers\">");
  ASSERT_NE(at, std::string::npos);
  std::string sec = html.substr(at, html.find("</section>", at) - at);
  EXPECT_LT(html.find("<section id=\"replicas\">"), at);
  EXPECT_LT(at, html.find("<section id=\"setup\">"));
  EXPECT_NE(sec.find("<code>node_lifecycle_evictions</code></td><td class=\"num\">12</td>"), std::string::npos) << sec;
  EXPECT_NE(sec.find("<span class=\"src src-kube-scheduler\">kube-scheduler</span>"), std::string::npos) << sec;
  EXPECT_EQ(count(sec, "<tr><td><code>"), 6);  // the six deepest workqueues
  EXPECT_NE(sec.find("<tr><td><code>garbage_collector_attempt_to_delete</code></td><td>kube-controller-manager</td>"
                     "<td class=\"num\">41</td><td class=\"num\">1,200</td></tr>"),
            std::string::npos)
      << sec;
  EXPECT_NE(sec.find("2 more under All figures"), std::string::npos);
  EXPECT_EQ(sec.find("ttl_jobs_to_delete"), std::string::npos);
  // The fleet's transitions are node-bound figures, measured over the whole run.
  std::string node = html.substr(html.find("<section id=\"axis-node-bound\""));
  node = node.substr(0, node.find("</section>"));
  EXPECT_NE(node.find("(steady window; the fleet's own figures over the whole run)</p>"), std::string::npos) << node;
  EXPECT_NE(node.find("<code>node_not_ready_seconds_max{workload=nodes}</code></td><td class=\"num\">48.10 s</td>"
                      "<td class=\"window\">run</td>"),
            std::string::npos)
      << node;
}

std::string capacitySection(const std::string& html) {
  auto at = html.find("<section id=\"capacity\">");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</section>", at) - at);
}

TEST(HtmlCapacityTest, StepsTableAndAChartPerFigureWithTheBreakMarked) {
  std::string html = renderHtml(result::testing::capacityResult(result::testing::brokeAtStep3()));
  if (const char* dump = std::getenv("CPSCALE_DUMP_CAPACITY_HTML")) std::ofstream(dump) << html;
  std::string sec = capacitySection(html);
  ASSERT_FALSE(sec.empty());
  // After the run's phases, before the headline.
  EXPECT_LT(html.find("<section id=\"timeline\">"), html.find("<section id=\"capacity\">"));
  EXPECT_LT(html.find("<section id=\"capacity\">"), html.find("<section id=\"axis-node-bound\""));
  EXPECT_NE(sec.find("<span id=\"capacity-result\" class=\"pill ok\">900 nodes</span>"), std::string::npos) << sec;
  EXPECT_NE(sec.find("<tr><th>limit</th><td>server <span class=\"why\">"), std::string::npos) << sec;
  // Rows in order of value, the bisection step (run last) between 600 and 1,200.
  auto r300 = sec.find("<tr class=\"held\"><td class=\"num\">300</td>");
  auto r900 = sec.find("<tr class=\"held\"><td class=\"num\">900</td>");
  auto r1200 = sec.find(
      "<tr class=\"not-held break\"><td class=\"num\">1,200</td><td class=\"verdict-fail\">no "
      "<span class=\"break-label\">&#8592; broke</span></td><td class=\"num\">1</td><td "
      "class=\"num\">120/s</td><td class=\"num\">70.0 %</td><td class=\"num\">1.80 s <span "
      "class=\"why\">PUT leases</span></td><td class=\"num\">320 MiB</td><td class=\"broke-by\"><span class=\"why\">"
      "client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT} &lt;= 1s: measured "
      "1.8</span></td></tr>");
  ASSERT_NE(r1200, std::string::npos) << sec;
  EXPECT_LT(r300, r900);
  EXPECT_LT(r900, r1200);
  EXPECT_NE(sec.find("<td class=\"num unavailable\">unavailable <span class=\"why\">(kube-apiserver-1 did not answer a "
                     "scrape in the window)</span></td>"),
            std::string::npos)
      << sec;
  // A chart per hold gate (write_qps is one: it is not drawn twice), pressure, heap
  // and the worst client p99; every one marks the break at 1,200 nodes.
  EXPECT_EQ(chart(sec, kChartCapacityWriteQps), "");
  for (std::string id : {capacityGateChartId(1), capacityGateChartId(2), std::string(kChartCapacityPressure),
                         std::string(kChartCapacityHeap), std::string(kChartCapacityClientP99)}) {
    std::string svg = chart(sec, id);
    ASSERT_FALSE(svg.empty()) << id;
    EXPECT_NE(svg.find("class=\"chart chart-xy\""), std::string::npos) << id;
    EXPECT_EQ(count(svg, "<g class=\"break-mark\"><title>broke at 1,200 nodes: client_latency_p99"), 1) << id << svg;
    EXPECT_NE(svg.find("fill=\"#cf222e\">broke</text>"), std::string::npos) << id;
    EXPECT_EQ(count(svg, "class=\"point not-held\""), 1) << id;
    EXPECT_NE(svg.find(">nodes</text>"), std::string::npos) << id;  // the x axis' unit
  }
  std::string gate = chart(sec, capacityGateChartId(1));
  EXPECT_NE(
      gate.find("<title>Gate: client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT} &lt;= 1s</title>"),
      std::string::npos);
  EXPECT_EQ(count(gate, "class=\"point held\""), 3);
  EXPECT_NE(gate.find("<g class=\"threshold\"><title>&lt;= 1s</title>"), std::string::npos) << gate;
  EXPECT_NE(gate.find("<title>1,200 nodes: 1.80 s (did not hold)</title>"), std::string::npos) << gate;
  // The step without a heap figure is an n/a mark saying why, and breaks the line.
  std::string heap = chart(sec, kChartCapacityHeap);
  EXPECT_NE(
      heap.find("<title>900 nodes: kube-apiserver-1 did not answer a scrape in the window (held)</title>n/a</text>"),
      std::string::npos)
      << heap;
  EXPECT_EQ(count(heap, "class=\"point held\""), 2);
  EXPECT_NE(chart(sec, kChartCapacityClientP99).find("<title>900 nodes: 400 ms, PUT leases (held)</title>"),
            std::string::npos);
}

TEST(HtmlCapacityTest, GeneratorLimitedMaxAndNoneHeld) {
  std::string gen = capacitySection(renderHtml(result::testing::capacityResult(result::testing::generatorLimited())));
  EXPECT_NE(gen.find("<span id=\"capacity-result\" class=\"pill warn\">generator-limited at 9,600 sessions/min (held "
                     "4,800)</span>"),
            std::string::npos)
      << gen;
  EXPECT_NE(gen.find("<tr class=\"generator-limited break\"><td class=\"num\">9,600</td>"), std::string::npos) << gen;
  std::string p99 = chart(gen, kChartCapacityClientP99);
  EXPECT_NE(p99.find("fill=\"#cf222e\">generator-limited</text>"), std::string::npos) << p99;
  EXPECT_NE(p99.find(">sessions/min</text>"), std::string::npos) << p99;

  result::RunResult max = result::testing::capacityResult(result::testing::reachedMax());
  for (auto& st : max.capacity->steps)
    std::erase_if(st.figures,
                  [](const metrics::Figure& f) { return f.name == "apiserver_heap_inuse_bytes_all_replicas"; });
  std::string top = capacitySection(renderHtml(max));
  EXPECT_NE(top.find("class=\"pill ok\">at least 12,000 objects/kind</span>"), std::string::npos) << top;
  EXPECT_EQ(top.find("break-mark"), std::string::npos) << top;
  EXPECT_EQ(top.find("class=\"point not-held\""), std::string::npos);
  EXPECT_NE(
      chart(top, kChartCapacityPressure)
          .find(
              "<title>3,000 objects/kind: the step&apos;s figures have no axis_pressure{axis=state} (held)</title>n/a"),
      std::string::npos);
  // No step has a number: one sentence saying why instead of an empty chart.
  std::string heap = chart(top, kChartCapacityHeap);
  EXPECT_NE(heap.find("chart-unavailable"), std::string::npos) << heap;
  EXPECT_NE(heap.find(">the step&apos;s figures have no</text>"), std::string::npos) << heap;
  EXPECT_NE(heap.find(">apiserver_heap_inuse_bytes_all_replicas</text>"), std::string::npos) << heap;

  std::string none = capacitySection(renderHtml(result::testing::capacityResult(result::testing::noneHeld())));
  EXPECT_NE(none.find("class=\"pill bad\">none held</span>"), std::string::npos) << none;
  EXPECT_EQ(none.find("last step that held"), std::string::npos);
  EXPECT_EQ(none.find("class=\"point held\""), std::string::npos);
  EXPECT_EQ(count(chart(none, capacityGateChartId(1)), "<g class=\"break-mark\">"), 1);

  EXPECT_EQ(renderHtml(result::testing::sampleResult()).find("<section id=\"capacity\">"), std::string::npos);
}

// The whole page, byte for byte, against a stored copy: any change to what the report
// writes shows here. After a change meant to be made, CPSCALE_UPDATE_HTML_GOLDEN=1 rewrites
// the copies (test/fixtures/reports), to be read in the diff before they are committed.
void expectPage(const std::string& html, const std::string& name) {
  const std::string path = std::string(CPSCALE_REPORT_FIXTURES) + "/" + name;
  if (std::getenv("CPSCALE_UPDATE_HTML_GOLDEN")) std::ofstream(path) << html;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream stored;
  stored << in.rdbuf();
  EXPECT_TRUE(html == stored.str()) << path << " differs: CPSCALE_UPDATE_HTML_GOLDEN=1 rewrites it";
}

TEST(HtmlGoldenTest, ARunWithControllersAndAModelIsTheStoredPage) {
  result::RunResult r = result::testing::controllerResult();
  r.model = {
      {"calibrationMachine", "m1"},
      {"calibrationMeasuredAt", "2026-11-30T08:00:00Z"},
      {"calibration", "calibration.json"},
      {"maxValidationError", 0.12},
      {"validation",
       {{{"figure", "write_qps"}, {"live", 1200.0}, {"model", 1150.0}, {"relativeError", 0.042}, {"tolerance", 0.1}},
        {{"figure", "apiserver_heap_inuse_bytes"},
         {"live", 2.1e9},
         {"model", 2.4e9},
         {"relativeError", 0.14},
         {"tolerance", 0.1}}}}};
  expectPage(renderHtml(r), "controllers-model.html");
}

TEST(HtmlGoldenTest, ACapacitySearchIsTheStoredPage) {
  expectPage(renderHtml(result::testing::capacityResult(result::testing::brokeAtStep3())), "capacity.html");
}

TEST(SvgTest, XyChartJoinsPointsInXOrderAndMarksTheBreak) {
  svg::XyChart c;
  c.id = "chart-xy-test";
  c.title = "client p99 against nodes";
  c.xUnit = "nodes";
  c.unit = "s";
  // In the order they ran: the ladder, then a bisection step between 600 and 1,200.
  c.series = {{"client p99",
               {{300, 0.1, true, "300 nodes: 100 ms"},
                {600, 0.2, true, "600 nodes: 200 ms"},
                {1200, 1.8, false, "1,200 nodes: 1.80 s"},
                {900, 0.4, true, "900 nodes: 400 ms"},
                {1500, std::nullopt, false, "no requests were measured"}}}};
  c.mark = svg::XyMark{1200, "broke", "broke at 1,200 nodes"};
  c.threshold = 1.0;
  c.thresholdLabel = "<= 1s";
  std::string s = svg::xyChart(c);
  EXPECT_NE(s.find("id=\"chart-xy-test\" class=\"chart chart-xy\""), std::string::npos) << s;
  EXPECT_NE(s.find("<title>client p99 against nodes</title>"), std::string::npos);
  EXPECT_EQ(s.find("<script"), std::string::npos);
  // Plot x 64..414 for 0..1,500 nodes; y 60..222 for 0..2 s (the legend is one row).
  // One line through the points in x order: 300, 600, 900, 1,200.
  EXPECT_NE(s.find("<path class=\"series line\" d=\"M134.0 213.9 L204.0 205.8 L274.0 189.6 L344.0 76.2\""),
            std::string::npos)
      << s;
  EXPECT_EQ(count(s, "class=\"point held\""), 3);
  EXPECT_EQ(count(s, "class=\"point not-held\""), 1);
  EXPECT_NE(s.find("<circle class=\"point not-held\" cx=\"344.0\" cy=\"76.2\" r=\"4\" fill=\"#ffffff\""),
            std::string::npos)
      << s;
  // The step without a number says why where its point would be.
  EXPECT_NE(s.find("<title>no requests were measured</title>n/a</text>"), std::string::npos) << s;
  // The break: a red line at 1,200 nodes, labelled, and the gate's threshold.
  EXPECT_NE(s.find("<g class=\"break-mark\"><title>broke at 1,200 nodes</title><line x1=\"344.0\" x2=\"344.0\""),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("fill=\"#cf222e\">broke</text>"), std::string::npos) << s;
  EXPECT_NE(s.find(">&lt;= 1s</text></g>"), std::string::npos) << s;
  // Axes with ticks in the units a reader uses, the knob's unit under the x axis.
  EXPECT_NE(s.find(">1,500</text>"), std::string::npos) << s;
  EXPECT_NE(s.find(">2 s</text>"), std::string::npos) << s;
  EXPECT_NE(s.find("class=\"axis-label\" text-anchor=\"end\" x=\"414.0\" y=\"256\">nodes</text>"), std::string::npos)
      << s;
  for (const char* legend : {">client p99</text>", ">held</text>", ">did not hold</text>", ">broke</text>"})
    EXPECT_NE(s.find(legend), std::string::npos) << legend;
}

TEST(SvgTest, NiceTicks) {
  EXPECT_EQ(svg::niceTicks(9.3, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(svg::niceTicks(100, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(svg::niceTicks(0.7, 4), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8}));
  EXPECT_EQ(svg::niceTicks(0, 5), (std::vector<double>{0, 1}));
}

}  // namespace
}  // namespace cpscale::reports
