#include "sim/metrics/figures.h"

#include "sim/metrics/bytes_per_object.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace cpscale::metrics {
namespace {

using std::chrono::seconds;
using testing::at;
using testing::target;

TargetScrapes etcd(std::string name, std::vector<std::string> resources,
                   std::vector<std::pair<int, std::string>> scrapes) {
  TargetScrapes t = target(name, TargetRole::kEtcd, std::move(scrapes));
  t.info.etcdCluster = name;
  t.info.etcdResources = std::move(resources);
  return t;
}

std::string requests(std::string group, std::string resource, std::string sub, std::string verb, double v,
                     std::string dryRun = "") {
  return "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"" + dryRun + "\",group=\"" + group +
         "\",resource=\"" + resource + "\",scope=\"resource\",subresource=\"" + sub + "\",verb=\"" + verb +
         "\",version=\"v1\"} " + std::to_string(v) + "\n";
}
const std::string kReqType = "# TYPE apiserver_request_total counter\n";

std::string leases(double v) { return requests("coordination.k8s.io", "leases", "", "PUT", v); }
std::string nodeStatus(double v) { return requests("", "nodes", "status", "PATCH", v); }
std::string podGets(double v) { return requests("", "pods", "", "GET", v); }
std::string podDryRuns(double v) { return requests("", "pods", "", "POST", v, "All"); }

std::vector<TargetScrapes> twoApiservers() {
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver,
                      {{0, kReqType + leases(0) + nodeStatus(50) + podGets(0) + podDryRuns(0)},
                       {10, kReqType + leases(100) + nodeStatus(50) + podGets(1000) + podDryRuns(10)},
                       {20, kReqType + leases(300) + nodeStatus(150) + podGets(2000) + podDryRuns(20)}}));
  // api-1 restarts between 10 and 20 (leases counter drops to 50) and creates the
  // configmaps series at its first POST.
  ts.push_back(target("api-1", TargetRole::kApiserver,
                      {{0, kReqType + leases(1000)},
                       {10, kReqType + leases(1100)},
                       {20, kReqType + leases(50) + requests("", "configmaps", "", "POST", 40)}}));
  return ts;
}

double valueOf(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  const Figure* f = findFigure(figs, name, labels);
  if (!f) throw std::runtime_error("no figure " + std::string(name));
  if (!f->value) throw std::runtime_error(std::string(name) + " unavailable: " + f->unavailableReason);
  return *f->value;
}

TEST(Figures, WriteQpsByResourceAcrossApiservers) {
  auto ts = twoApiservers();
  auto figs = writeFigures(ts);
  // leases: 300 on api-0, 100 + 50 (after the restart) on api-1; nodes/status 100;
  // configmaps 40 (its series appeared with 40); GETs and dry runs are not writes.
  EXPECT_EQ(valueOf(figs, "write_requests", {{"resource", "leases"}, {"verb", "PUT"}}), 450);
  EXPECT_EQ(valueOf(figs, "write_requests", {{"resource", "nodes/status"}, {"verb", "PATCH"}}), 100);
  EXPECT_EQ(valueOf(figs, "write_requests", {{"resource", "configmaps"}, {"verb", "POST"}}), 40);
  EXPECT_EQ(findFigure(figs, "write_requests", {{"resource", "pods"}}), nullptr);
  EXPECT_EQ(valueOf(figs, "write_requests"), 590);
  EXPECT_EQ(valueOf(figs, "write_qps"), 29.5);
  EXPECT_EQ(valueOf(figs, "write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}}), 22.5);
  const Figure* all = findFigure(figs, "write_qps");
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->source, Source::kApiserver);
  EXPECT_EQ(all->unit, "1/s");
  TimeSeries expected;
  expected.push(at(10), 20);  // leases 10/s + 10/s
  expected.push(at(20), 39);  // leases 20/s + 5/s, nodes/status 10/s, configmaps 4/s
  EXPECT_EQ(all->overTime, expected);
}

TEST(Figures, LeaseShareOverallAndOverTime) {
  auto ts = twoApiservers();
  auto figs = leaseShareFigures(ts);
  const Figure* share = findFigure(figs, "lease_write_share");
  ASSERT_TRUE(share && share->value);
  EXPECT_DOUBLE_EQ(*share->value, 450.0 / 590.0);
  TimeSeries expected;
  expected.push(at(10), 1.0);
  expected.push(at(20), 25.0 / 39.0);
  EXPECT_EQ(share->overTime, expected);
  // No etcd target: the etcd-level share is unavailable, with the reason, never 0.
  const Figure* etcdShare = findFigure(figs, "etcd_lease_proposal_share");
  ASSERT_NE(etcdShare, nullptr);
  EXPECT_FALSE(etcdShare->value);
  EXPECT_NE(etcdShare->unavailableReason.find("no etcd target"), std::string::npos);
}

std::string coded(std::string group, std::string resource, std::string verb, std::string code, double v,
                  std::string dryRun = "") {
  return "apiserver_request_total{code=\"" + code + "\",component=\"apiserver\",dry_run=\"" + dryRun + "\",group=\"" +
         group + "\",resource=\"" + resource + "\",scope=\"resource\",subresource=\"\",verb=\"" + verb +
         "\",version=\"v1\"} " + std::to_string(v) + "\n";
}

TEST(Figures, StatusClass) {
  EXPECT_EQ(statusClass("201"), "2xx");
  EXPECT_EQ(statusClass("429"), "4xx");
  EXPECT_EQ(statusClass("504"), "5xx");
  EXPECT_EQ(statusClass(""), "unknown");
  EXPECT_EQ(statusClass("0"), "unknown");
  EXPECT_EQ(statusClass("600"), "unknown");
}

TEST(Figures, HeadlineWritesAreOnlyThoseThatReachedStorage) {
  auto body = [](double ok, double conflicts, double created, double throttled, std::optional<double> failed,
                 double dryRunInvalid) {
    std::string s = kReqType + coded("coordination.k8s.io", "leases", "PUT", "200", ok) +
                    coded("coordination.k8s.io", "leases", "PUT", "409", conflicts) +
                    coded("", "pods", "POST", "201", created) + coded("", "pods", "POST", "429", throttled) +
                    coded("", "pods", "POST", "422", dryRunInvalid, "All") + coded("", "pods", "GET", "404", 1000);
    if (failed) s += coded("", "pods", "POST", "500", *failed);
    return s;
  };
  std::vector<TargetScrapes> ts{target("api-0", TargetRole::kApiserver,
                                       {{0, body(0, 0, 0, 5, std::nullopt, 0)},
                                        {10, body(100, 10, 50, 5, std::nullopt, 7)},
                                        {20, body(200, 30, 50, 25, 4, 7)}})};
  auto figs = writeFigures(ts);
  // Stored: 200 lease PUTs and 50 pod POSTs; the 409s, 429s, 500s and the dry run are not.
  EXPECT_EQ(valueOf(figs, "write_requests"), 250);
  EXPECT_EQ(valueOf(figs, "write_qps"), 12.5);
  EXPECT_EQ(valueOf(figs, "write_requests", {{"resource", "leases"}, {"verb", "PUT"}}), 200);
  EXPECT_EQ(valueOf(figs, "write_qps", {{"resource", "pods"}, {"verb", "POST"}}), 2.5);
  TimeSeries stored;
  stored.push(at(10), 15);  // (100 + 50) / 10 s
  stored.push(at(20), 10);
  EXPECT_EQ(findFigure(figs, "write_qps")->overTime, stored);

  EXPECT_EQ(valueOf(figs, "write_qps_by_class", {{"code_class", "2xx"}}), 12.5);
  EXPECT_EQ(valueOf(figs, "write_qps_by_class", {{"code_class", "3xx"}}), 0);
  EXPECT_EQ(valueOf(figs, "write_qps_by_class", {{"code_class", "4xx"}}), 2.5);  // 30 conflicts + 20 throttled
  EXPECT_DOUBLE_EQ(valueOf(figs, "write_qps_by_class", {{"code_class", "5xx"}}), 0.2);
  const Figure* fourXX = findFigure(figs, "write_qps_by_class", {{"code_class", "4xx"}});
  TimeSeries fourOverTime;
  fourOverTime.push(at(10), 1);
  fourOverTime.push(at(20), 4);
  EXPECT_EQ(fourXX->overTime, fourOverTime);
  EXPECT_EQ(fourXX->unit, "1/s");

  const Figure* rejected = findFigure(figs, "rejected_write_qps");
  ASSERT_TRUE(rejected && rejected->value);
  EXPECT_DOUBLE_EQ(*rejected->value, 54.0 / 20.0);
  EXPECT_EQ(rejected->unit, "1/s");
  ASSERT_EQ(rejected->overTime.size(), 2u);
  EXPECT_DOUBLE_EQ(rejected->overTime.values[0], 1.0);
  EXPECT_DOUBLE_EQ(rejected->overTime.values[1], 4.4);  // the 500s' series appeared at 20 with 4
  EXPECT_EQ(valueOf(figs, "rejected_write_requests"), 54);
  EXPECT_EQ(valueOf(figs, "rejected_write_requests", {{"code", "409"}}), 30);
  EXPECT_EQ(valueOf(figs, "rejected_write_requests", {{"code", "429"}}), 20);
  EXPECT_EQ(valueOf(figs, "rejected_write_requests", {{"code", "500"}}), 4);
  EXPECT_EQ(findFigure(figs, "rejected_write_requests", {{"code", "422"}}), nullptr);  // dry run
  EXPECT_EQ(findFigure(figs, "rejected_write_requests", {{"code", "404"}}), nullptr);  // a read
  EXPECT_EQ(findFigure(figs, "rejected_write_requests", {{"code", "409"}})->unit, "count");

  EXPECT_DOUBLE_EQ(valueOf(leaseShareFigures(ts), "lease_write_share"), 200.0 / 250.0);
}

std::string startTime(double s) {
  return "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds " + std::to_string(s) + "\n";
}

TEST(Figures, WritesOverARestartAreTheIncreasesBeforeAndAfterIt) {
  // The apiserver restarts between 10 and 20; by 20 the new process has counted 180
  // lease PUTs, more than the 150 before, so only the start time shows the restart.
  std::vector<TargetScrapes> ts{target("api-0", TargetRole::kApiserver,
                                       {{0, startTime(1000) + kReqType + leases(100)},
                                        {10, startTime(1000) + kReqType + leases(150)},
                                        {20, startTime(1015) + kReqType + leases(180)},
                                        {30, startTime(1015) + kReqType + leases(200)}})};
  auto figs = writeFigures(ts);
  EXPECT_EQ(valueOf(figs, "write_requests", {{"resource", "leases"}}), 50 + 180 + 20);
  EXPECT_DOUBLE_EQ(valueOf(figs, "write_qps"), 250.0 / 30.0);
  TimeSeries expected;
  expected.push(at(10), 5);
  expected.push(at(20), 18);
  expected.push(at(30), 2);
  EXPECT_EQ(findFigure(figs, "write_qps")->overTime, expected);
}

TEST(Figures, ServerLatencyOverARestartAddsTheBucketsOfBothProcesses) {
  const std::string kDuration = "# TYPE apiserver_request_duration_seconds histogram\n";
  auto put = [&](double start, double fast, double medium, double all) {
    std::string s = startTime(start) + kDuration;
    for (auto [le, v] : {std::pair{"0.1", fast}, {"0.5", medium}, {"+Inf", all}}) {
      s +=
          "apiserver_request_duration_seconds_bucket{group=\"\",resource=\"pods\",subresource=\"\",verb=\"PUT\",le=\"" +
          std::string(le) + "\"} " + std::to_string(v) + "\n";
    }
    return s;
  };
  // Before the restart: +10 fast, +10 medium; after it, from 0: 150 fast, 40 medium, 10 slower.
  std::vector<TargetScrapes> ts{
      target("api-0", TargetRole::kApiserver,
             {{0, put(1000, 100, 100, 100)}, {10, put(1000, 110, 120, 120)}, {20, put(2000, 150, 190, 200)}})};
  auto figs = serverLatencyFigures(ts);
  Labels pods{{"resource", "pods"}, {"verb", "PUT"}};
  // 160 <= 0.1, 210 <= 0.5, 220 in all.
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_p50", pods), 0.1 * 110.0 / 160.0);
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_p90", pods), 0.1 + 0.4 * (198.0 - 160.0) / 50.0);
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_p99", pods), 0.5);
  EXPECT_FALSE(findFigure(figs, "server_latency_max", pods)->value);
}

TEST(Figures, RequestsPerApiserverReplica) {
  auto api0 = [](double ok, double gets, double watches, double conflicts) {
    return kReqType + coded("coordination.k8s.io", "leases", "PUT", "200", ok) + coded("", "pods", "GET", "200", gets) +
           coded("", "pods", "WATCH", "200", watches) + coded("coordination.k8s.io", "leases", "PUT", "409", conflicts);
  };
  auto api1 = [](double ok, double lists) {
    return kReqType + coded("coordination.k8s.io", "leases", "PUT", "200", ok) +
           coded("", "pods", "LIST", "200", lists);
  };
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver,
                      {{0, api0(0, 0, 0, 0)}, {10, api0(100, 300, 2, 10)}, {20, api0(200, 600, 3, 10)}}));
  ts.push_back(target("api-1", TargetRole::kApiserver, {{0, api1(0, 10)}, {10, api1(50, 20)}, {20, api1(100, 30)}}));
  TargetScrapes dead;
  dead.info.name = "api-2";
  dead.status.attempts = 3;
  dead.status.failures = 3;
  dead.status.lastError = "connect failed";
  ts.push_back(dead);
  auto figs = apiserverRequestFigures(ts);
  Labels a0{{"apiserver", "api-0"}}, a1{{"apiserver", "api-1"}};
  // api-0: 200 PUTs + 600 GETs + 10 conflicting PUTs; the WATCHes are counted apart.
  EXPECT_EQ(valueOf(figs, "apiserver_requests", a0), 810);
  EXPECT_EQ(valueOf(figs, "apiserver_request_qps", a0), 40.5);
  EXPECT_EQ(valueOf(figs, "apiserver_write_qps", a0), 10);
  EXPECT_EQ(valueOf(figs, "apiserver_long_running_requests", a0), 3);
  EXPECT_EQ(valueOf(figs, "apiserver_requests", a1), 120);
  EXPECT_EQ(valueOf(figs, "apiserver_request_qps", a1), 6);
  EXPECT_EQ(valueOf(figs, "apiserver_write_qps", a1), 5);
  // The replicas' write rates add up to the cluster's.
  EXPECT_EQ(valueOf(writeFigures(ts), "write_qps"), 15);
  const Figure* qps = findFigure(figs, "apiserver_request_qps", a0);
  TimeSeries expected;
  expected.push(at(10), 41);
  expected.push(at(20), 40);
  EXPECT_EQ(qps->overTime, expected);
  EXPECT_EQ(qps->unit, "1/s");
  EXPECT_EQ(findFigure(figs, "apiserver_requests", a0)->unit, "count");
  const Figure* none = findFigure(figs, "apiserver_requests", {{"apiserver", "api-2"}});
  ASSERT_TRUE(none && !none->value);
  EXPECT_NE(none->unavailableReason.find("never answered"), std::string::npos);
}

std::string proposals(double v) {
  return "# TYPE etcd_server_proposals_committed_total gauge\netcd_server_proposals_committed_total " +
         std::to_string(v) + "\n";
}

TEST(Figures, EtcdLeaseShareNeedsLeasesInAnEtcdOfTheirOwn) {
  std::vector<TargetScrapes> ts;
  ts.push_back(etcd("main", {}, {{0, proposals(1000)}, {10, proposals(1100)}}));
  ts.push_back(etcd("leases", {"coordination.k8s.io/leases"}, {{0, proposals(5)}, {10, proposals(305)}}));
  auto figs = leaseShareFigures(ts);
  EXPECT_DOUBLE_EQ(valueOf(figs, "etcd_lease_proposal_share"), 0.75);

  // Leases sharing their etcd with events (partitioned-storage): measured, and the
  // label says what else is in the count.
  ts.back() = etcd("ephemeral", {"coordination.k8s.io/leases", "events"}, {{0, proposals(5)}, {10, proposals(305)}});
  figs = leaseShareFigures(ts);
  const Figure* shared = findFigure(figs, "etcd_lease_proposal_share", {{"with", "events"}});
  ASSERT_TRUE(shared && shared->value);
  EXPECT_DOUBLE_EQ(*shared->value, 0.75);

  ts.pop_back();
  figs = leaseShareFigures(ts);
  const Figure* f = findFigure(figs, "etcd_lease_proposal_share");
  ASSERT_TRUE(f && !f->value);
  EXPECT_NE(f->unavailableReason.find("no etcd cluster of its own holds coordination.k8s.io/leases"),
            std::string::npos);
}

std::string etcdBody(double proposalsV, double db, double inUse, double keys, double renewals) {
  return "# TYPE etcd_server_proposals_committed_total gauge\netcd_server_proposals_committed_total " +
         std::to_string(proposalsV) +
         "\n# TYPE etcd_mvcc_db_total_size_in_bytes gauge\netcd_mvcc_db_total_size_in_bytes " + std::to_string(db) +
         "\netcd_mvcc_db_total_size_in_use_in_bytes " + std::to_string(inUse) + "\netcd_debugging_mvcc_keys_total " +
         std::to_string(keys) +
         "\n# TYPE etcd_debugging_lease_renewed_total counter\netcd_debugging_lease_renewed_total " +
         std::to_string(renewals) + "\netcd_server_has_leader 1\n";
}

TEST(Figures, EtcdFigures) {
  std::vector<TargetScrapes> ts;
  ts.push_back(etcd("main", {}, {{0, etcdBody(100, 4096, 2048, 10, 0)}, {20, etcdBody(500, 8192, 4096, 30, 60)}}));
  auto figs = etcdFigures(ts);
  Labels self{{"etcd", "main"}};
  EXPECT_EQ(valueOf(figs, "etcd_proposals_committed_per_second", self), 20);
  EXPECT_EQ(valueOf(figs, "etcd_db_total_size_bytes", self), 8192);
  EXPECT_EQ(valueOf(figs, "etcd_db_total_size_bytes_peak", self), 8192);
  EXPECT_EQ(valueOf(figs, "etcd_db_total_size_in_use_bytes", self), 4096);
  EXPECT_EQ(valueOf(figs, "etcd_keys", self), 30);
  EXPECT_EQ(valueOf(figs, "etcd_lease_renewals_per_second", self), 3);
  EXPECT_EQ(valueOf(figs, "etcd_lease_renewals", self), 60);
  EXPECT_EQ(valueOf(figs, "etcd_has_leader", self), 1);
  for (const Figure& f : figs) EXPECT_EQ(f.source, Source::kEtcd) << f.name;
}

TEST(Figures, AGaugeWithNoSampleInTheWindowIsUnavailableNotACrash) {
  // The db gauge was seen before the window (scrape at 0) and not in any of the
  // window's scrapes (an etcd, or a saturated apiserver, that answered without it).
  std::vector<TargetScrapes> ts;
  ts.push_back(etcd(
      "main", {},
      {{0, etcdBody(100, 4096, 2048, 10, 0)}, {10, "etcd_server_has_leader 1\n"}, {20, "etcd_server_has_leader 1\n"}}));
  auto window = sliceTargets(ts, at(10), at(20));
  auto figs = etcdFigures(window);
  const Figure* db = findFigure(figs, "etcd_db_total_size_bytes", {{"etcd", "main"}});
  ASSERT_NE(db, nullptr);
  EXPECT_FALSE(db->available());
  EXPECT_NE(db->unavailableReason.find("had no sample in the window"), std::string::npos) << db->unavailableReason;
  EXPECT_EQ(valueOf(figs, "etcd_has_leader", {{"etcd", "main"}}), 1);
}

TEST(Figures, NoEtcdTargetMakesEtcdFiguresUnavailableNotZero) {
  auto ts = twoApiservers();
  auto figs = etcdFigures(ts);
  ASSERT_GE(figs.size(), 7u);
  for (const Figure& f : figs) {
    EXPECT_FALSE(f.value) << f.name;
    EXPECT_NE(f.unavailableReason.find("no etcd target was scraped"), std::string::npos) << f.name;
    EXPECT_EQ(f.source, Source::kEtcd);
  }
  EXPECT_NE(findFigure(figs, "etcd_proposals_committed_per_second"), nullptr);
  EXPECT_NE(findFigure(figs, "etcd_db_total_size_bytes"), nullptr);
}

TEST(Figures, TargetThatNeverAnsweredGivesItsError) {
  TargetScrapes dead;
  dead.info = TargetInfo{"etcd-main", TargetRole::kEtcd, "main", {}};
  dead.status.attempts = 3;
  dead.status.failures = 3;
  dead.status.lastError = "connect failed: Connection refused";
  std::vector<TargetScrapes> ts{dead};
  for (const Figure& f : etcdFigures(ts)) {
    EXPECT_FALSE(f.value) << f.name;
    EXPECT_NE(f.unavailableReason.find("never answered a scrape (3 failed; last error: connect failed"),
              std::string::npos)
        << f.unavailableReason;
  }
  auto health = scrapeHealthFigures(ts);
  EXPECT_EQ(valueOf(health, "scrape_failures", {{"target", "etcd-main"}}), 3);
  EXPECT_FALSE(findFigure(health, "scrape_successes")->value);

  TargetScrapes api;
  api.info.name = "api-0";
  api.status.attempts = 1;
  api.status.failures = 1;
  api.status.lastError = "HTTP 403: forbidden";
  std::vector<TargetScrapes> apis{api};
  const auto writes = writeFigures(apis);  // outlives the pointer into it
  const Figure* w = findFigure(writes, "write_qps");
  ASSERT_TRUE(w && !w->value);
  EXPECT_NE(w->unavailableReason.find("HTTP 403"), std::string::npos);
}

std::string memBody(double heap, double rss) {
  return "# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes " + std::to_string(heap) +
         "\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes " + std::to_string(rss) + "\n";
}

TEST(Figures, HeapAndRssPerApiserverAndAcrossReplicas) {
  std::vector<TargetScrapes> ts;
  ts.push_back(
      target("api-0", TargetRole::kApiserver, {{0, memBody(100, 10)}, {10, memBody(200, 20)}, {20, memBody(150, 30)}}));
  ts.push_back(target("api-1", TargetRole::kApiserver, {{0, memBody(1000, 1)}, {20, memBody(1100, 2)}}));
  auto figs = apiserverMemoryFigures(ts);
  EXPECT_EQ(valueOf(figs, "apiserver_heap_inuse_bytes", {{"apiserver", "api-0"}}), 150);
  EXPECT_EQ(valueOf(figs, "apiserver_heap_inuse_bytes_peak", {{"apiserver", "api-0"}}), 200);
  EXPECT_EQ(valueOf(figs, "apiserver_rss_bytes", {{"apiserver", "api-1"}}), 2);
  const Figure* total = findFigure(figs, "apiserver_heap_inuse_bytes_all_replicas");
  ASSERT_TRUE(total && total->value);
  EXPECT_EQ(*total->value, 1250);
  TimeSeries expected;
  expected.push(at(0), 1100);
  expected.push(at(10), 1200);  // api-1 missed this scrape: its last value carries
  expected.push(at(20), 1250);
  EXPECT_EQ(total->overTime, expected);
  EXPECT_EQ(valueOf(figs, "apiserver_heap_inuse_bytes_all_replicas_peak"), 1250);

  // A replica whose heap is unknown makes the total unknown, not smaller.
  TargetScrapes dead;
  dead.info.name = "api-2";
  dead.status.attempts = 1;
  dead.status.failures = 1;
  dead.status.lastError = "timeout";
  ts.push_back(dead);
  figs = apiserverMemoryFigures(ts);
  const Figure* partial = findFigure(figs, "apiserver_heap_inuse_bytes_all_replicas");
  ASSERT_TRUE(partial && !partial->value);
  EXPECT_NE(partial->unavailableReason.find("api-2"), std::string::npos);
}

std::string objects(double pods, double leasesV) {
  return "# TYPE apiserver_resource_objects gauge\napiserver_resource_objects{group=\"\",resource=\"pods\"} " +
         std::to_string(pods) + "\napiserver_resource_objects{group=\"coordination.k8s.io\",resource=\"leases\"} " +
         std::to_string(leasesV) + "\n";
}

TEST(Figures, ObjectsPerResourceWithDeprecatedFallback) {
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver, {{0, objects(3, 4)}}));
  ts.push_back(target("api-old", TargetRole::kApiserver,
                      {{0,
                        "apiserver_storage_objects{resource=\"leases.coordination.k8s.io\"} 9\n"
                        "apiserver_storage_objects{resource=\"pods\"} 2\n"}}));
  auto figs = apiserverMemoryFigures(ts);
  EXPECT_EQ(valueOf(figs, "apiserver_objects", {{"apiserver", "api-0"}, {"resource", "pods"}}), 3);
  EXPECT_EQ(valueOf(figs, "apiserver_objects_total", {{"apiserver", "api-0"}}), 7);
  EXPECT_EQ(valueOf(figs, "apiserver_objects",
                    {{"apiserver", "api-old"}, {"group", "coordination.k8s.io"}, {"resource", "leases"}}),
            9);
  EXPECT_EQ(valueOf(figs, "apiserver_objects", {{"apiserver", "api-old"}, {"group", ""}, {"resource", "pods"}}), 2);
}

// What one object of a kind takes in storage: kube-apiserver's size estimate over its
// object count at the window's last scrape; a kind with no object has no such figure,
// and an apiserver that serves no estimate says so.
TEST(Figures, StoredBytesPerObjectFromTheApiserversOwnEstimate) {
  const std::string cms = "apiserver_resource_objects{group=\"\",resource=\"configmaps\"} ";
  const std::string cmBytes = "apiserver_resource_size_estimate_bytes{group=\"\",resource=\"configmaps\"} ";
  const std::string crs = "apiserver_resource_objects{group=\"op0.example.com\",resource=\"widgets\"} ";
  const std::string crBytes = "apiserver_resource_size_estimate_bytes{group=\"op0.example.com\",resource=\"widgets\"} ";
  const std::string none =
      "apiserver_resource_objects{group=\"\",resource=\"secrets\"} 0\n"
      "apiserver_resource_size_estimate_bytes{group=\"\",resource=\"secrets\"} 0\n";
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver,
                      {{0, cms + "10\n" + cmBytes + "20000\n" + crs + "0\n" + crBytes + "0\n" + none},
                       {5, cms + "36\n" + cmBytes + "132444\n" + crs + "50\n" + crBytes + "204800\n" + none}}));
  ts.push_back(target("api-old", TargetRole::kApiserver, {{0, objects(3, 4)}}));
  auto figs = apiserverMemoryFigures(ts);
  const Labels cm = {{"apiserver", "api-0"}, {"group", ""}, {"resource", "configmaps"}};
  EXPECT_EQ(valueOf(figs, "stored_bytes", cm), 132444);
  EXPECT_DOUBLE_EQ(valueOf(figs, "stored_bytes_per_object", cm), 132444.0 / 36);
  EXPECT_DOUBLE_EQ(valueOf(figs, "stored_bytes_per_object",
                           {{"apiserver", "api-0"}, {"group", "op0.example.com"}, {"resource", "widgets"}}),
                   4096);
  EXPECT_EQ(
      findFigure(figs, "stored_bytes_per_object", {{"apiserver", "api-0"}, {"group", ""}, {"resource", "secrets"}}),
      nullptr);
  const Figure* old = findFigure(figs, "stored_bytes_per_object", {{"apiserver", "api-old"}});
  ASSERT_NE(old, nullptr);
  EXPECT_FALSE(old->available());
  EXPECT_EQ(old->unavailableReason, "apiserver_resource_size_estimate_bytes is not served by api-old");
}

// The events a watch cache's ring holds, replayed from its capacity and the events it
// received: everything until the ring is full, then the capacity; a restart (the
// counter drops) starts over; a resource that never received an event holds none.
TEST(Figures, WatchCacheEventsHeldReplayTheRing) {
  auto scrape = [](int capacity, std::optional<int> received) {
    std::string s =
        "# TYPE watch_cache_capacity gauge\n"
        "watch_cache_capacity{group=\"x.io\",resource=\"widgets\"} " +
        std::to_string(capacity) +
        "\n"
        "watch_cache_capacity{group=\"\",resource=\"pods\"} 100\n"
        "# TYPE apiserver_watch_cache_events_received_total counter\n";
    if (received)
      s += "apiserver_watch_cache_events_received_total{group=\"x.io\",resource=\"widgets\"} " +
           std::to_string(*received) + "\n";
    return s;
  };
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver,
                      {{0, scrape(100, std::nullopt)},
                       {5, scrape(100, 60)},
                       {10, scrape(200, 250)},
                       {15, scrape(200, 300)},
                       {20, scrape(100, 10)}}));
  auto figs = apiserverMemoryFigures(ts);
  const Figure* held = findFigure(figs, "watch_cache_events", {{"apiserver", "api-0"}, {"resource", "widgets"}});
  ASSERT_TRUE(held && held->value);
  EXPECT_EQ(held->overTime.values, (std::vector<double>{0, 60, 200, 200, 10}));
  EXPECT_EQ(*held->value, 10);
  EXPECT_EQ(held->unit, "events");
  EXPECT_EQ(valueOf(figs, "watch_cache_events", {{"apiserver", "api-0"}, {"resource", "pods"}}), 0);
}

// A relist storm's figures: the initial events new watches were sent and the watchers
// closed for falling behind, counted over the window per resource (a series that first
// appears mid-window counts from 0, and a restart's reset is not a negative count), and
// the goroutines every open watch holds, per replica and summed.
TEST(Figures, InitEventsTerminatedWatchersAndGoroutines) {
  auto scrape = [](int goroutines, std::optional<int> init, std::optional<int> terminated) {
    std::string s = "# TYPE go_goroutines gauge\ngo_goroutines " + std::to_string(goroutines) +
                    "\n# TYPE apiserver_init_events_total counter\n";
    if (init)
      s += "apiserver_init_events_total{group=\"discovery.k8s.io\",resource=\"endpointslices\"} " +
           std::to_string(*init) + "\n";
    s += "# TYPE apiserver_terminated_watchers_total counter\n";
    if (terminated)
      s += "apiserver_terminated_watchers_total{group=\"discovery.k8s.io\",resource=\"endpointslices\"} " +
           std::to_string(*terminated) + "\n";
    return s;
  };
  std::vector<TargetScrapes> ts;
  // init: 100 -> 400 (+300), then the apiserver restarts (counter back to 50: +50);
  // terminated: absent, then 7 (created mid-window: +7), then 9 (+2).
  ts.push_back(target("api-0", TargetRole::kApiserver,
                      {{0, scrape(900, 100, std::nullopt)}, {5, scrape(5200, 400, 7)}, {10, scrape(1200, 50, 9)}}));
  ts.push_back(target("api-1", TargetRole::kApiserver, {{0, scrape(800, 0, 0)}, {10, scrape(1000, 0, 0)}}));
  auto figs = apiserverMemoryFigures(ts);
  const Labels slices = {{"apiserver", "api-0"}, {"group", "discovery.k8s.io"}, {"resource", "endpointslices"}};
  EXPECT_EQ(valueOf(figs, "watch_init_events", slices), 350);
  EXPECT_EQ(valueOf(figs, "watchers_terminated", slices), 9);
  EXPECT_EQ(findFigure(figs, "watch_init_events", slices)->unit, "count");
  EXPECT_EQ(valueOf(figs, "apiserver_goroutines", {{"apiserver", "api-0"}}), 1200);
  EXPECT_EQ(valueOf(figs, "apiserver_goroutines_peak", {{"apiserver", "api-0"}}), 5200);
  EXPECT_EQ(valueOf(figs, "apiserver_goroutines_all_replicas"), 2200);
  // A replica that does not expose the family says so.
  ts.push_back(target("api-2", TargetRole::kApiserver, {{0, "up 1\n"}, {10, "up 1\n"}}));
  figs = apiserverMemoryFigures(ts);
  const Figure* none = findFigure(figs, "apiserver_goroutines", {{"apiserver", "api-2"}});
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->available());
  EXPECT_FALSE(findFigure(figs, "apiserver_goroutines_all_replicas")->available());
}

TEST(Figures, BytesPerObjectByRegression) {
  std::vector<std::pair<int, std::string>> scrapes;
  for (int i = 0; i <= 5; ++i) {
    double n = 1000.0 * i;
    scrapes.push_back({i * 5, objects(n * 0.75, n * 0.25) + memBody(1e8 + 2000 * n, 0)});
  }
  std::vector<TargetScrapes> ts{target("api-0", TargetRole::kApiserver, scrapes)};
  auto figs = bytesPerObjectFigures(ts);
  EXPECT_NEAR(valueOf(figs, "bytes_per_object", {{"apiserver", "api-0"}}), 2000, 1e-6);
  EXPECT_NEAR(valueOf(figs, "heap_base_bytes", {{"apiserver", "api-0"}}), 1e8, 1e-3);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_r2", {{"apiserver", "api-0"}}), 1.0);
  EXPECT_NEAR(valueOf(figs, "bytes_per_object_all_replicas"), 2000, 1e-6);

  // The ramp window: only scrapes 10..20 s (3 points) -> too few for minPoints 5.
  BytesPerObjectOptions window;
  window.from = at(10);
  window.to = at(20);
  auto windowed = bytesPerObjectFigures(ts, window);
  const Figure* f = findFigure(windowed, "bytes_per_object");
  ASSERT_TRUE(f && !f->value);
  EXPECT_NE(f->unavailableReason.find("3 scrape(s)"), std::string::npos) << f->unavailableReason;
  window.minPoints = 3;
  EXPECT_NEAR(valueOf(bytesPerObjectFigures(ts, window), "bytes_per_object"), 2000, 1e-6);

  // No ramp: the object count never changes.
  std::vector<std::pair<int, std::string>> flat;
  for (int i = 0; i < 6; ++i) flat.push_back({i * 5, objects(10, 10) + memBody(1e8 + i, 0)});
  std::vector<TargetScrapes> flatTs{target("api-0", TargetRole::kApiserver, flat)};
  auto flatFigs = bytesPerObjectFigures(flatTs);
  f = findFigure(flatFigs, "bytes_per_object");
  ASSERT_TRUE(f && !f->value);
  EXPECT_NE(f->unavailableReason.find("did not change"), std::string::npos);
}

const std::string kDurationType = "# TYPE apiserver_request_duration_seconds histogram\n";
std::string durations(const std::string& verb, const std::string& resource,
                      std::vector<std::pair<std::string, double>> buckets) {
  std::string s;
  for (auto& [le, v] : buckets) {
    s += "apiserver_request_duration_seconds_bucket{component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"" +
         resource + "\",scope=\"resource\",subresource=\"\",verb=\"" + verb + "\",version=\"v1\",le=\"" + le + "\"} " +
         std::to_string(v) + "\n";
  }
  return s;
}

TEST(Figures, ServerLatencyFromBucketDeltasAcrossApiservers) {
  std::vector<TargetScrapes> ts;
  // Before the window: 1000 fast requests that must not count.
  ts.push_back(target(
      "api-0", TargetRole::kApiserver,
      {{0, kDurationType + durations("PUT", "pods", {{"0.1", 1000}, {"0.5", 1000}, {"1", 1000}, {"+Inf", 1000}})},
       {10, kDurationType + durations("PUT", "pods", {{"0.1", 1030}, {"0.5", 1060}, {"1", 1060}, {"+Inf", 1060}})}}));
  // A restart in the window: its counts start again from 0.
  ts.push_back(
      target("api-1", TargetRole::kApiserver,
             {{0, kDurationType + durations("PUT", "pods", {{"0.1", 500}, {"0.5", 600}, {"1", 700}, {"+Inf", 700}})},
              {10, kDurationType + durations("PUT", "pods", {{"0.1", 20}, {"0.5", 30}, {"1", 40}, {"+Inf", 40}}) +
                       durations("WATCH", "pods", {{"0.1", 0}, {"+Inf", 5}})}}));
  // In the window: <=0.1: 50, (0.1,0.5]: 40, (0.5,1]: 10, total 100.
  auto figs = serverLatencyFigures(ts);
  Labels pods{{"resource", "pods"}, {"verb", "PUT"}};
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_p50", pods), 0.1);
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_p90", pods), 0.5);
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_p99", pods), 0.5 + 0.5 * 9.0 / 10.0);
  EXPECT_DOUBLE_EQ(valueOf(figs, "server_latency_max", pods), 1.0);
  EXPECT_EQ(findFigure(figs, "server_latency_p50", {{"verb", "WATCH"}}), nullptr);
}

TEST(Figures, AReplicaThatStoppedAnsweringDropsOutOfTheTotals) {
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver,
                      {{0, memBody(100, 1)},
                       {5, memBody(100, 1)},
                       {10, memBody(100, 1)},
                       {15, memBody(100, 1)},
                       {20, memBody(100, 1)}}));
  ts.push_back(target("api-1", TargetRole::kApiserver, {{0, memBody(1000, 10)}, {5, memBody(1000, 10)}}));
  auto figs = apiserverMemoryFigures(ts);
  const Figure* total = findFigure(figs, "apiserver_heap_inuse_bytes_all_replicas");
  ASSERT_TRUE(total && total->value);
  EXPECT_EQ(*total->value, 100);
  TimeSeries expected;
  expected.push(at(0), 1100);
  expected.push(at(5), 1100);
  expected.push(at(10), 1100);  // one missed scrape: still counted
  expected.push(at(15), 100);   // the second: gone
  expected.push(at(20), 100);
  EXPECT_EQ(total->overTime, expected);
  EXPECT_EQ(valueOf(figs, "apiserver_heap_inuse_bytes_all_replicas_peak"), 1100);
  EXPECT_EQ(valueOf(figs, "apiserver_rss_bytes_all_replicas"), 1);
  // Its own figure keeps its last value and says since when it has not answered.
  const Figure* gone = findFigure(figs, "apiserver_heap_inuse_bytes", {{"apiserver", "api-1"}});
  ASSERT_TRUE(gone && gone->value);
  EXPECT_EQ(*gone->value, 1000);
  EXPECT_EQ(labelValue(gone->labels, "stopped_answering_at"), "10s");
  EXPECT_EQ(labelValue(findFigure(figs, "apiserver_rss_bytes_peak", {{"apiserver", "api-1"}})->labels,
                       "stopped_answering_at"),
            "10s");
  EXPECT_EQ(findFigure(figs, "apiserver_heap_inuse_bytes", {{"apiserver", "api-0"}})->labels.size(), 1u);

  ReplicaOptions never;
  never.staleAfterMissedScrapes = 0;
  auto carried = apiserverMemoryFigures(ts, never);
  EXPECT_EQ(valueOf(carried, "apiserver_heap_inuse_bytes_all_replicas"), 1100);
  EXPECT_EQ(labelValue(findFigure(carried, "apiserver_heap_inuse_bytes", {{"apiserver", "api-1"}})->labels,
                       "stopped_answering_at"),
            "");
  ReplicaOptions patient;
  patient.staleAfterMissedScrapes = 3;  // missed 10, 15, 20
  EXPECT_EQ(valueOf(apiserverMemoryFigures(ts, patient), "apiserver_heap_inuse_bytes_all_replicas"), 100);
  patient.staleAfterMissedScrapes = 4;
  EXPECT_EQ(valueOf(apiserverMemoryFigures(ts, patient), "apiserver_heap_inuse_bytes_all_replicas"), 1100);
}

std::string cpuBody(double seconds) {
  return "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " + std::to_string(seconds) + "\n";
}

TEST(Figures, CpuCoresPerTargetAndAcrossReplicasFromTheRateOfProcessCpu) {
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver, {{0, cpuBody(10)}, {10, cpuBody(15)}, {20, cpuBody(25)}}));
  ts.push_back(target("api-1", TargetRole::kApiserver, {{0, cpuBody(100)}, {10, cpuBody(102)}, {20, cpuBody(104)}}));
  ts.push_back(etcd("main", {}, {{0, cpuBody(1)}, {10, cpuBody(3)}, {20, cpuBody(4)}}));
  auto figs = cpuFigures(ts);
  const Figure* a0 = findFigure(figs, "apiserver_cpu_cores", {{"apiserver", "api-0"}});
  ASSERT_TRUE(a0 && a0->value);
  EXPECT_DOUBLE_EQ(*a0->value, 0.75);  // 15 s of CPU over 20 s
  EXPECT_EQ(a0->unit, "cores");
  EXPECT_EQ(a0->source, Source::kApiserver);
  EXPECT_EQ(a0->overTime.values, (std::vector<double>{0.5, 1.0}));  // per scrape interval
  EXPECT_DOUBLE_EQ(valueOf(figs, "apiserver_cpu_cores_all_replicas"), 0.95);
  EXPECT_EQ(findFigure(figs, "apiserver_cpu_cores_all_replicas")->overTime.values, (std::vector<double>{0.7, 1.2}));
  const Figure* e = findFigure(figs, "etcd_cpu_cores", {{"etcd", "main"}, {"cluster", "main"}});
  ASSERT_TRUE(e && e->value);
  EXPECT_DOUBLE_EQ(*e->value, 0.15);
  EXPECT_EQ(e->source, Source::kEtcd);
  EXPECT_DOUBLE_EQ(valueOf(figs, "etcd_cpu_cores_all_replicas"), 0.15);
  // allFigures carries them.
  auto all = allFigures(ts);
  EXPECT_NE(findFigure(all, "apiserver_cpu_cores", {{"apiserver", "api-1"}}), nullptr);
}

TEST(Figures, CpuCoresUnavailableWithTheReason) {
  // No etcd target; an apiserver without the family; one with a single scrape.
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver, {{0, memBody(1, 1)}, {10, memBody(1, 1)}}));
  ts.push_back(target("api-1", TargetRole::kApiserver, {{0, cpuBody(1)}}));
  auto figs = cpuFigures(ts);
  const Figure* a0 = findFigure(figs, "apiserver_cpu_cores", {{"apiserver", "api-0"}});
  ASSERT_TRUE(a0 && !a0->value);
  EXPECT_NE(a0->unavailableReason.find("process_cpu_seconds_total is not exposed by kube-apiserver api-0"),
            std::string::npos);
  const Figure* a1 = findFigure(figs, "apiserver_cpu_cores", {{"apiserver", "api-1"}});
  ASSERT_TRUE(a1 && !a1->value);
  EXPECT_NE(a1->unavailableReason.find("answered 1 scrape"), std::string::npos) << a1->unavailableReason;
  const Figure* total = findFigure(figs, "apiserver_cpu_cores_all_replicas");
  ASSERT_TRUE(total && !total->value);
  const Figure* e = findFigure(figs, "etcd_cpu_cores");
  ASSERT_TRUE(e && !e->value);
  EXPECT_NE(e->unavailableReason.find("no etcd target was scraped"), std::string::npos);
  EXPECT_EQ(e->source, Source::kEtcd);
}

TEST(Figures, CpuAndFsyncFromRealScrapes) {
  // The pinned binaries' own exposition carries both families the figures read.
  auto read = [](const char* file) {
    std::ifstream in(std::string(CPSCALE_METRICS_FIXTURES) + "/" + file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string api = read("kube-apiserver.prom"), e = read("etcd.prom");
  ASSERT_FALSE(api.empty());
  ASSERT_FALSE(e.empty());
  std::vector<TargetScrapes> ts;
  ts.push_back(target("kube-apiserver-0", TargetRole::kApiserver, {{0, api}, {10, api}}));
  ts.push_back(etcd("etcd-main", {}, {{0, e}, {10, e}}));
  auto figs = cpuFigures(ts);
  EXPECT_EQ(valueOf(figs, "apiserver_cpu_cores", {{"apiserver", "kube-apiserver-0"}}), 0);
  EXPECT_EQ(valueOf(figs, "etcd_cpu_cores", {{"etcd", "etcd-main"}}), 0);
  // The same scrape twice: no fsync in between, which the figure says.
  auto etcdFigs = etcdFigures(ts);
  const Figure* fsync = findFigure(etcdFigs, "etcd_wal_fsync_seconds_mean", {{"etcd", "etcd-main"}});
  ASSERT_TRUE(fsync && !fsync->value);
  EXPECT_NE(fsync->unavailableReason.find("did not fsync"), std::string::npos) << fsync->unavailableReason;
}

TEST(Figures, WalFsyncMeanOverTheWindow) {
  auto body = [](double sum, double count) {
    return "# TYPE etcd_disk_wal_fsync_duration_seconds histogram\n"
           "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} " +
           std::to_string(count) + "\netcd_disk_wal_fsync_duration_seconds_sum " + std::to_string(sum) +
           "\netcd_disk_wal_fsync_duration_seconds_count " + std::to_string(count) + "\n";
  };
  std::vector<TargetScrapes> ts;
  ts.push_back(etcd("main", {}, {{0, body(1.0, 100)}, {10, body(1.5, 200)}}));
  EXPECT_DOUBLE_EQ(valueOf(etcdFigures(ts), "etcd_wal_fsync_seconds_mean", {{"etcd", "main"}}), 0.005);
  auto noEtcd = etcdFigures(twoApiservers());
  const Figure* none = findFigure(noEtcd, "etcd_wal_fsync_seconds_mean");
  ASSERT_TRUE(none && !none->value);
}

TEST(Figures, HeapAfterGcWhereTheScraperReadIt) {
  auto body = [](double heap, double afterGc) {
    return memBody(heap, heap) + "# TYPE cpscale_heap_inuse_after_gc_bytes gauge\ncpscale_heap_inuse_after_gc_bytes " +
           std::to_string(afterGc) + "\n";
  };
  std::vector<TargetScrapes> ts;
  ts.push_back(target("api-0", TargetRole::kApiserver, {{0, body(300, 100)}, {10, body(400, 120)}}));
  auto figs = apiserverMemoryFigures(ts);
  EXPECT_EQ(valueOf(figs, "apiserver_heap_inuse_after_gc_bytes", {{"apiserver", "api-0"}}), 120);
  EXPECT_EQ(valueOf(figs, "apiserver_heap_inuse_after_gc_bytes_all_replicas"), 120);
  // Not read (a user's cluster): one figure says why.
  std::vector<TargetScrapes> plain;
  plain.push_back(target("api-0", TargetRole::kApiserver, {{0, memBody(1, 1)}}));
  auto plainFigs = apiserverMemoryFigures(plain);
  const Figure* f = findFigure(plainFigs, "apiserver_heap_inuse_after_gc_bytes");
  ASSERT_TRUE(f && !f->value);
  EXPECT_NE(f->unavailableReason.find("local plane"), std::string::npos);
}

}  // namespace
}  // namespace cpscale::metrics
