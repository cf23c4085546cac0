// Figures over one phase of a run: the steady window's write rate must not include the
// registration POSTs of the setup phase, and a phase boundary scrape is the start of
// the next phase's increases.
#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include "sim/metrics/figures.h"
#include "sim/metrics/scrape_history.h"

namespace cpscale::metrics {
namespace {

using testing::at;

std::string body(double posts, double puts) {
  return "# TYPE apiserver_request_total counter\n"
         "apiserver_request_total{code=\"201\",group=\"\",resource=\"nodes\",subresource=\"\",verb=\"POST\"} " +
         std::to_string(posts) +
         "\n"
         "apiserver_request_total{code=\"200\",group=\"coordination.k8s.io\",resource=\"leases\",subresource=\"\","
         "verb=\"PUT\"} " +
         std::to_string(puts) + "\n";
}

// Setup 0-20 s: 300 nodes registered (15/s), leases renewed as they come up. Steady
// 20-80 s: exactly 30 renewals/s, no registration.
TargetScrapes run() {
  TargetScrapes t;
  t.info.name = "kube-apiserver-0";
  const std::pair<int, std::string> scrapes[] = {{0, body(0, 0)},      {10, body(150, 50)},   {20, body(300, 200)},
                                                 {40, body(300, 800)}, {60, body(300, 1400)}, {80, body(300, 2000)}};
  for (const auto& [s, b] : scrapes) {
    auto r = parsePrometheusText(b);
    t.history.record(at(s), r.families);
  }
  return t;
}

double value(const std::vector<Figure>& fs, const std::string& name, const Labels& l = {}) {
  const Figure* f = findFigure(fs, name, l);
  EXPECT_TRUE(f && f->available()) << name;
  return f && f->value ? *f->value : -1;
}

TEST(PhaseSlice, SteadyWindowFiguresExcludeTheSetupRamp) {
  std::vector<TargetScrapes> all{run()};
  auto steady = sliceTargets(all, at(20), at(80));
  ASSERT_EQ(steady[0].history.scrapes(), 4u);
  auto w = writeFigures(steady);
  EXPECT_DOUBLE_EQ(value(w, "write_qps", {{"resource", "leases"}, {"verb", "PUT"}}), 30.0);
  EXPECT_EQ(findFigure(w, "write_qps", {{"resource", "nodes"}, {"verb", "POST"}}) == nullptr ||
                value(w, "write_qps", {{"resource", "nodes"}, {"verb", "POST"}}) == 0,
            true);
  EXPECT_DOUBLE_EQ(value(leaseShareFigures(steady), "lease_write_share"), 1.0);

  // Over the whole run the same counters mix the two: what the headline used to show.
  auto whole = writeFigures(all);
  EXPECT_DOUBLE_EQ(value(whole, "write_qps", {{"resource", "leases"}, {"verb", "PUT"}}), 2000.0 / 80);
  EXPECT_DOUBLE_EQ(value(leaseShareFigures(all), "lease_write_share"), 2000.0 / 2300);

  auto setup = sliceTargets(all, at(0), at(20));
  EXPECT_DOUBLE_EQ(value(writeFigures(setup), "write_qps", {{"resource", "nodes"}, {"verb", "POST"}}), 15.0);
}

TEST(PhaseSlice, KeepsIdentityAndOutcomesAndDropsScrapesOutside) {
  std::vector<TargetScrapes> all{run()};
  all[0].status.attempts = 7;
  auto s = sliceTargets(all, at(30), at(65));
  EXPECT_EQ(s[0].info.name, "kube-apiserver-0");
  EXPECT_EQ(s[0].status.attempts, 7u);
  ASSERT_EQ(s[0].history.scrapes(), 2u);
  EXPECT_EQ(s[0].history.time(0), at(40));
  EXPECT_EQ(s[0].history.time(1), at(60));
  EXPECT_EQ(s[0].history.seriesCount(), all[0].history.seriesCount());
}

}  // namespace
}  // namespace cpscale::metrics
