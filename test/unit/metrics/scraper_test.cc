#include "sim/metrics/scraper.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include "sim/common/error.h"
#include "sim/engine/simulator_impl.h"
#include "sim/metrics/figures.h"
#include "test/support/fake_transport.h"

namespace cpscale::metrics {
namespace {

using std::chrono::seconds;
using testing::at;
ScraperOptions options(engine::Duration interval) {
  ScraperOptions o;
  o.interval = interval;
  return o;
}

class ScraperTest : public ::testing::Test {
 protected:
  std::shared_ptr<kube::FakeTransport> fake(engine::Duration latency) {
    auto t = std::make_shared<kube::FakeTransport>(static_cast<engine::Scheduler&>(sim_));
    t->setLatency(latency);
    return t;
  }
  // An apiserver whose lease PUT counter grows by 50 per scrape, plus a family the
  // figures do not read.
  std::shared_ptr<kube::FakeTransport> apiserver() {
    auto t = fake(seconds(1));
    t->setHandler([n = 0](const kube::HttpRequest&) mutable {
      kube::HttpResponse r;
      r.status = 200;
      r.body =
          "# TYPE apiserver_request_total counter\n"
          "apiserver_request_total{code=\"200\",group=\"coordination.k8s.io\",resource=\"leases\",verb=\"PUT\"} " +
          std::to_string(50 * n++) + "\n# TYPE unrelated_total counter\nunrelated_total 1\n";
      return r;
    });
    return t;
  }
  engine::VirtualSimulator sim_;
};

TEST_F(ScraperTest, ScrapesEveryTargetEachIntervalAndKeepsGoingOnFailure) {
  auto api = apiserver();
  auto etcd = fake(seconds(1));
  etcd->setFault([](const kube::HttpRequest&) { return kube::TransportOutcome::kConnectFailed; });
  Scraper scraper(
      sim_, {{{"api-0", TargetRole::kApiserver, "", {}}, api}, {{"etcd-main", TargetRole::kEtcd, "main", {}}, etcd}});
  scraper.start();
  sim_.runUntil(at(22));

  const TargetScrapes& a = scraper.targets()[0];
  ASSERT_EQ(a.history.scrapes(), 5u);  // rounds at 0, 5, 10, 15, 20
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(a.history.time(i), at(5 * static_cast<int>(i)));
  EXPECT_EQ(a.status.successes, 5u);
  EXPECT_EQ(a.status.failures, 0u);
  EXPECT_TRUE(a.history.hasFamily("apiserver_request_total"));
  EXPECT_FALSE(a.history.hasFamily("unrelated_total"));  // dropped at parse time

  const kube::HttpRequest& req = api->requests().front().request;
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.path, "/metrics");
  ASSERT_FALSE(req.headers.empty());
  EXPECT_NE(req.headers[0].value.find("version=0.0.4"), std::string::npos);
  EXPECT_EQ(req.timeout, seconds(5));

  const TargetScrapes& e = scraper.targets()[1];
  EXPECT_EQ(e.history.scrapes(), 0u);
  EXPECT_EQ(e.status.attempts, 5u);
  EXPECT_EQ(e.status.failures, 5u);
  EXPECT_NE(e.status.lastError.find("connect"), std::string::npos) << e.status.lastError;

  auto figs = allFigures(scraper.targets());
  const Figure* qps = findFigure(figs, "write_qps", {{"resource", "leases"}});
  ASSERT_TRUE(qps && qps->value);
  EXPECT_EQ(*qps->value, 10);  // 50 per 5 s
  const Figure* db = findFigure(figs, "etcd_db_total_size_bytes", {{"etcd", "etcd-main"}});
  ASSERT_TRUE(db && !db->value);
  EXPECT_NE(db->unavailableReason.find("never answered"), std::string::npos);
}

TEST(Scraper, KeepsWhatTellsProcessesAndReplicasApart) {
  EXPECT_TRUE(isFigureFamily("process_start_time_seconds"));
  EXPECT_TRUE(isFigureFamily("etcd_server_id"));
  // CPU (cpuFigures) and etcd's WAL fsync (etcdFigures), which the calibration fits.
  EXPECT_TRUE(isFigureFamily("process_cpu_seconds_total"));
  EXPECT_TRUE(isFigureFamily("etcd_disk_wal_fsync_duration_seconds"));
  // Every family the controller figures read is kept.
  for (const char* f : {"workqueue_depth", "workqueue_adds_total", "node_collector_evictions_total",
                        "node_collector_unhealthy_nodes_in_zone", "taint_eviction_controller_pod_deletions_total",
                        "scheduler_pending_pods", "scheduler_schedule_attempts_total", "leader_election_master_status"})
    EXPECT_TRUE(isFigureFamily(f)) << f;
  EXPECT_TRUE(isFigureFamily("apiserver_authentication_config_controller_last_config_info"));
  EXPECT_TRUE(isFigureFamily("apiserver_authorization_config_controller_automatic_reloads_total"));
  EXPECT_TRUE(isFigureFamily("apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds"));
  EXPECT_FALSE(isFigureFamily("apiserver_envelope_encryption_key_id_hash_total"));  // one series per key
}

TEST_F(ScraperTest, SlowTargetDoesNotDelayOthersAndOverrunsAreCounted) {
  auto api = apiserver();
  auto slow = fake(seconds(12));
  slow->setHandler([](const kube::HttpRequest&) {
    kube::HttpResponse r;
    r.status = 200;
    r.body = "etcd_server_has_leader 1\n";
    return r;
  });
  Scraper scraper(sim_,
                  {{{"api-0", TargetRole::kApiserver, "", {}}, api}, {{"etcd-slow", TargetRole::kEtcd, "", {}}, slow}});
  scraper.start();
  sim_.runUntil(at(16));
  EXPECT_EQ(scraper.targets()[0].history.scrapes(), 4u);  // 0, 5, 10, 15: on time
  const TargetStatus& s = scraper.targets()[1].status;
  EXPECT_EQ(scraper.targets()[1].history.scrapes(), 1u);  // round 0, answered at 12
  EXPECT_EQ(scraper.targets()[1].history.time(0), at(0));
  EXPECT_EQ(s.overruns, 2u);  // rounds 5 and 10 found it busy; round 15 asked again
  EXPECT_EQ(s.attempts, 2u);
}

TEST_F(ScraperTest, HttpErrorsAndMalformedBodiesAreFailuresWithReasons) {
  auto t = fake(seconds(1));
  t->enqueue(403, "{\"kind\":\"Status\",\"message\":\"forbidden: User cannot get path /metrics\"}\nmore");
  t->enqueue(200, "ok 1\nbroken{ 2\n");
  t->enqueue(200, "ok 1\n");
  Scraper scraper(sim_, {{{"api-0", TargetRole::kApiserver, "", {}}, t}}, options(seconds(5)));
  scraper.start();
  sim_.runUntil(at(2));
  EXPECT_EQ(scraper.targets()[0].status.lastError,
            "HTTP 403: {\"kind\":\"Status\",\"message\":\"forbidden: User cannot get path /metrics\"}");
  sim_.runUntil(at(7));
  EXPECT_EQ(scraper.targets()[0].status.lastError.rfind("malformed exposition: line 2: ", 0), 0u)
      << scraper.targets()[0].status.lastError;
  sim_.runUntil(at(12));
  EXPECT_EQ(scraper.targets()[0].status.failures, 2u);
  EXPECT_EQ(scraper.targets()[0].status.successes, 1u);
  EXPECT_EQ(scraper.targets()[0].history.scrapes(), 1u);
}

TEST_F(ScraperTest, ScrapeNowAndStop) {
  auto api = apiserver();
  Scraper scraper(sim_, {{{"api-0", TargetRole::kApiserver, "", {}}, api}});
  scraper.start();
  sim_.runUntil(at(7));
  scraper.stop();
  EXPECT_FALSE(scraper.running());
  scraper.scrapeNow();  // at 7: the last sample of a window
  sim_.runUntil(at(30));
  ASSERT_EQ(scraper.targets()[0].history.scrapes(), 3u);
  EXPECT_EQ(scraper.targets()[0].history.time(2), at(7));
}

TEST_F(ScraperTest, DestroyedWithScrapesInFlight) {
  auto api = apiserver();
  {
    Scraper scraper(sim_, {{{"api-0", TargetRole::kApiserver, "", {}}, api}});
    scraper.start();
    sim_.runUntil(at(0));
    EXPECT_EQ(scraper.inFlight(), 1u);
  }
  sim_.runUntil(at(10));  // the transport outlives the scraper: nothing may touch it
  SUCCEED();
}

TEST_F(ScraperTest, InvalidConfiguration) {
  auto t = fake(seconds(1));
  EXPECT_THROW(Scraper(sim_, {{{"", TargetRole::kApiserver, "", {}}, t}}), ConfigError);
  EXPECT_THROW(Scraper(sim_, {{{"a", TargetRole::kApiserver, "", {}}, nullptr}}), ConfigError);
  EXPECT_THROW(Scraper(sim_, {{{"a", TargetRole::kApiserver, "", {}}, t}, {{"a", TargetRole::kEtcd, "", {}}, t}}),
               ConfigError);
  EXPECT_THROW(Scraper(sim_, {{{"a", TargetRole::kApiserver, "", {}}, t}}, options(seconds(0))), ConfigError);
}

}  // namespace
}  // namespace cpscale::metrics
