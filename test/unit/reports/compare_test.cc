#include "reports/compare.h"

#include <gtest/gtest.h>

#include "sample_result.h"

namespace cpscale::reports {
namespace {

using metrics::Figure;
using metrics::Source;

const FigureChange& byKey(const Comparison& c, const std::string& key) {
  for (const auto& ch : c.changes)
    if (ch.key == key) return ch;
  throw std::runtime_error("no change for " + key);
}

RunResult withFigures(std::vector<Figure> figures, std::string id) {
  RunResult r;
  r.runId = std::move(id);
  r.figures = std::move(figures);
  return r;
}

TEST(CompareTest, ExactDeltasToleranceAndDirection) {
  RunResult a = withFigures({Figure::measured("client_latency_p99", {{"resource", "leases"}}, 0.010, "s", Source::kClient),
                             Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, 1000, "bytes", Source::kApiserver),
                             Figure::measured("lease_write_share", {}, 0.70, "ratio", Source::kApiserver),
                             Figure::measured("write_qps", {}, 200, "1/s", Source::kApiserver),
                             Figure::measured("generator_limited", {}, 0, "", Source::kClient)},
                            "A");
  RunResult b = withFigures({Figure::measured("client_latency_p99", {{"resource", "leases"}}, 0.0125, "s", Source::kClient),
                             Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, 950, "bytes", Source::kApiserver),
                             Figure::measured("lease_write_share", {}, 0.35, "ratio", Source::kApiserver),
                             Figure::measured("write_qps", {}, 100, "1/s", Source::kApiserver),
                             Figure::measured("generator_limited", {}, 1, "", Source::kClient)},
                            "B");
  Comparison c = compareResults(a, b);
  const auto& lat = byKey(c, "client_latency_p99{resource=leases}");
  EXPECT_DOUBLE_EQ(lat.absoluteChange, 0.0025);
  EXPECT_DOUBLE_EQ(*lat.relativeChange, 0.25);
  EXPECT_EQ(lat.direction, Direction::kWorse);
  EXPECT_TRUE(lat.crossedTolerance);

  const auto& heap = byKey(c, "apiserver_heap_inuse_bytes_all_replicas");
  EXPECT_DOUBLE_EQ(heap.absoluteChange, -50);
  EXPECT_DOUBLE_EQ(*heap.relativeChange, -0.05);
  EXPECT_EQ(heap.direction, Direction::kBetter);
  EXPECT_FALSE(heap.crossedTolerance);

  const auto& share = byKey(c, "lease_write_share");
  EXPECT_EQ(share.direction, Direction::kNeutral);
  EXPECT_TRUE(share.crossedTolerance);

  EXPECT_EQ(byKey(c, "write_qps").direction, Direction::kBetter);
  // From 0, any change is beyond tolerance, with no relative figure.
  const auto& lim = byKey(c, "generator_limited");
  EXPECT_FALSE(lim.relativeChange);
  EXPECT_TRUE(lim.crossedTolerance);
  EXPECT_EQ(lim.direction, Direction::kWorse);
  EXPECT_TRUE(c.regressed());
}

TEST(CompareTest, OverridesByKeyThenByName) {
  RunResult a = withFigures({Figure::measured("client_latency_p99", {{"resource", "leases"}}, 0.010, "s", Source::kClient),
                             Figure::measured("client_latency_p99", {{"resource", "pods"}}, 0.010, "s", Source::kClient)},
                            "A");
  RunResult b = withFigures({Figure::measured("client_latency_p99", {{"resource", "leases"}}, 0.0125, "s", Source::kClient),
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
  RunResult a = withFigures({Figure::unavailable("etcd_keys", {}, "count", Source::kEtcd, "no etcd target"),
                             Figure::measured("write_qps", {}, 10, "1/s", Source::kApiserver)},
                            "A");
  RunResult b = withFigures({Figure::measured("etcd_keys", {}, 5, "count", Source::kEtcd),
                             Figure::measured("bytes_per_object", {}, 3000, "bytes", Source::kApiserver)},
                            "B");
  Comparison c = compareResults(a, b);
  ASSERT_EQ(c.changes.size(), 3u);
  EXPECT_FALSE(c.changes[0].comparable);
  EXPECT_EQ(c.changes[0].notComparableReason, "unavailable in A: no etcd target");
  EXPECT_EQ(c.changes[1].notComparableReason, "only in A");
  EXPECT_EQ(c.changes[2].notComparableReason, "only in B");
  EXPECT_FALSE(c.regressed());
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("| etcd_keys        |    - |       5 | unavailable in A: no etcd target |"), std::string::npos)
      << text;
  EXPECT_NE(text.find("0 of 0 comparable figures moved beyond tolerance (0 worse, 0 better), 3 not comparable: no regression."),
            std::string::npos)
      << text;
}

TEST(CompareTest, TextAndMarkdownRenderings) {
  RunResult a = testing::sampleResult();
  RunResult b = testing::sampleResult();
  b.runId = "other";
  b.figures[0].value = 50;  // lease writes halved
  Comparison c = compareResults(a, b);
  EXPECT_FALSE(c.regressed());
  std::string text = renderComparisonText(c);
  EXPECT_NE(text.find("Beyond tolerance:\n| figure "), std::string::npos) << text;
  EXPECT_NE(text.find("| write_qps{group=coordination.k8s.io,resource=leases,verb=PUT} | 100/s | 50/s |  -50/s |  -50.0 % | "
                      "better beyond 10 % |"),
            std::string::npos)
      << text;
  std::string md = renderComparisonMarkdown(c, "classic-ha vs node-plane");
  EXPECT_EQ(md.rfind("## classic-ha vs node-plane\n\nA is 20250301-101500-ab12, B is other. 1 of ", 0), 0u) << md;
}

}  // namespace
}  // namespace cpscale::reports
