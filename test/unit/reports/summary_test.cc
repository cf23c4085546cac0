#include "reports/summary.h"

#include <fstream>

#include <gtest/gtest.h>

#include "reports/format.h"
#include "sample_result.h"

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

TEST(FormatTest, FigureKeyIsGateSyntax) {
  EXPECT_EQ(figureKey("write_qps", {{"resource", "leases"}, {"verb", "PUT"}}), "write_qps{resource=leases,verb=PUT}");
  EXPECT_EQ(figureKey("lease_write_share", {}), "lease_write_share");
}

TEST(SummaryTest, TitleHeadlineGatesAndHealth) {
  std::string md = renderSummary(testing::sampleResult());
  if (const char* dump = std::getenv("CPSCALE_DUMP_SUMMARY")) std::ofstream(dump) << md;
  EXPECT_EQ(md.rfind("# node-bound-smoke on classic-ha (local plane): completed\n\n"
                     "- run: 20250301-101500-ab12\n"
                     "- scenario: node-bound-smoke (scenarios/node-bound.yaml)\n"
                     "- profile: classic-ha (applied to the local plane)\n"
                     "- target: local plane (context cpscale-local), https://127.0.0.1:6443 (kubernetes v1.33.1, etcd 3.5.21)\n"
                     "- status: completed\n"
                     "- measured: 1m, 2025-03-01T10:15:00Z to 2025-03-01T10:16:05Z\n\n",
                     0),
            0u)
      << md;
  for (std::string line : {
           // clang-format off
           "## Headline",
           "| axis        | figure                                                                                  | value                                                   | source    |",
           "| node-bound  | write_qps{group=coordination.k8s.io,resource=leases,verb=PUT}                           | 100/s                                                   | apiserver |",
           "|             | lease_write_share                                                                       | 71.4 %                                                  | apiserver |",
           "|             | etcd_lease_proposal_share                                                               | unavailable (leases share an etcd with everything else) | etcd      |",
           "|             | client_latency_p99{measured_from=scheduled,resource=leases,verb=PUT}                    | 12.3 ms                                                 | client    |",
           "|             | server_latency_p99{group=coordination.k8s.io,resource=leases,verb=PUT}                  | 8.0 ms                                                  | apiserver |",
           "|             | apiserver_objects{apiserver=kube-apiserver-0,group=,resource=nodes}                     | 1,000                                                   | apiserver |",
           "| churn-bound | write_qps                                                                               | 140/s                                                   | apiserver |",
           "|             | write_qps{group=cpscale.io,resource=sessions,verb=POST}                                 | 40/s                                                    | apiserver |",
           "|             | server_latency_p99{group=cpscale.io,resource=sessions,verb=POST}                        | unavailable (no observations in the window)             | apiserver |",
           "| state-bound | apiserver_heap_inuse_bytes{apiserver=kube-apiserver-0}                                  | 300 MiB                                                 | apiserver |",
           "|             | apiserver_heap_inuse_bytes_all_replicas                                                 | 580 MiB                                                 | apiserver |",
           "|             | bytes_per_object{apiserver=kube-apiserver-0}                                            | 3.4 KiB                                                 | apiserver |",
           "|             | apiserver_objects{apiserver=kube-apiserver-0,group=coordination.k8s.io,resource=leases} | 1,002                                                   | apiserver |",
           "## Gates",
           "| gate                                                 |    measured | threshold | verdict | reason                                                                              |",
           "| write_qps{resource=leases} <= 600                    |       100/s | <= 600    | pass    |                                                                                     |",
           "| client_latency_p99{verb=PUT,resource=leases} <= 10ms |     12.3 ms | <= 10ms   | FAIL    |                                                                                     |",
           "| etcd_lease_proposal_share >= 50%                     | unavailable | >= 50%    | FAIL    | etcd_lease_proposal_share is unavailable: leases share an etcd with everything else |",
           "1 of 3 gates passed.",
           "## Generator health",
           "| schedule_lag_p99  | 2.1 ms | client |",
           "| generator_limited | 0      | client |",
           "## All figures (18)",
           // clang-format on
       })
    EXPECT_NE(md.find(line + "\n"), std::string::npos) << "missing line:\n" << line << "\nin:\n" << md;
}

}  // namespace
}  // namespace cpscale::reports
