// The Scraper against the real plane through CurlTransport: two intervals of scrapes
// of kube-apiserver (TLS, client certificate) and etcd (plain http), then every
// figure that a quiet plane can give.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/engine/simulator_impl.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/kubeconfig.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/scraper.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::metrics {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ScraperIT, ScrapesTheLocalPlane) {
  const controlplane::PlaneRecord& rec = testing::PlaneEnvironment::instance().plane().record();
  kube::LoadOptions lo;
  lo.explicitPath = rec.kubeconfig.string();
  kube::RestConfig apiConfig = kube::loadKubeconfig(lo);
  std::vector<ScrapeTarget> targets;
  std::vector<std::shared_ptr<kube::Transport>> transports;
  for (const controlplane::Component& c : rec.components) {
    kube::RestConfig cfg = apiConfig;
    TargetInfo info{c.name, TargetRole::kApiserver, "", {}};
    if (c.role == "etcd") {
      cfg = kube::RestConfig{};
      cfg.server = c.url;
      info = TargetInfo{c.name, TargetRole::kEtcd, c.name, {}};
    } else {
      // The controllers' secure ports take the same CA and admin certificate.
      cfg.server = c.url;
      if (c.role == "kube-controller-manager") info.role = TargetRole::kControllerManager;
      if (c.role == "kube-scheduler") info.role = TargetRole::kScheduler;
    }
    auto t = std::make_shared<kube::CurlTransport>(cfg);
    transports.push_back(t);
    targets.push_back(ScrapeTarget{info, t});
  }

  engine::WallClock clock;
  engine::PacedSimulator sim(clock);
  sim.setIdleHook([&](engine::TimePoint deadline) {
    auto wait = std::clamp<engine::Duration>(deadline - clock.now(), engine::Duration::zero(), milliseconds(20));
    for (auto& t : transports) t->poll(t->inFlight() ? wait : engine::Duration::zero());
    if (std::none_of(transports.begin(), transports.end(), [](auto& t) { return t->inFlight() > 0; })) {
      clock.sleepUntil(std::min(deadline, clock.now() + wait));
    }
  });
  ScraperOptions options;
  options.interval = seconds(2);
  Scraper scraper(sim, std::move(targets), options);
  scraper.start();
  sim.runUntil(engine::TimePoint{seconds(4) + milliseconds(1500)});  // rounds at 0, 2, 4

  for (const TargetScrapes& t : scraper.targets()) {
    SCOPED_TRACE(t.info.name);
    EXPECT_EQ(t.status.failures, 0u) << t.status.lastError;
    ASSERT_EQ(t.history.scrapes(), 3u);
    // The real servers say which process answered: one process, started before the run.
    for (std::size_t r = 0; r < t.history.scrapes(); ++r) EXPECT_TRUE(t.history.identity(r).startTime);
    EXPECT_EQ(t.history.processes().count(), 1u);
    if (t.info.role == TargetRole::kEtcd) {
      EXPECT_FALSE(t.history.identity(0).replica.empty());
    }
    // What the controller figures read is kept from the real controllers' expositions.
    if (t.info.role == TargetRole::kControllerManager) {
      EXPECT_FALSE(t.history.seriesNamed("workqueue_depth").empty());
    }
    if (t.info.role == TargetRole::kScheduler) {
      EXPECT_FALSE(t.history.seriesNamed("scheduler_pending_pods").empty());
    }
    if (t.info.role != TargetRole::kApiserver) continue;
    const auto& ids = t.history.seriesNamed("apiserver_request_total");
    ASSERT_FALSE(ids.empty());
    for (auto id : ids) {
      for (std::size_t r = 1; r < t.history.scrapes(); ++r) {
        auto prev = t.history.value(r - 1, id), cur = t.history.value(r, id);
        if (prev && cur) {
          EXPECT_GE(*cur, *prev);
        }
      }
    }
  }

  auto figs = allFigures(scraper.targets());
  for (const char* name :
       {"write_qps", "write_requests", "apiserver_heap_inuse_bytes_all_replicas", "apiserver_rss_bytes_all_replicas"}) {
    const Figure* f = findFigure(figs, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->value) << name << ": " << f->unavailableReason;
    if (f->value) {
      EXPECT_GE(*f->value, 0) << name;
    }
  }
  for (const char* name : {"workqueue_depth_max", "scheduler_pending_pods_max"}) {
    const Figure* f = findFigure(figs, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->value) << name << ": " << f->unavailableReason;
  }
  for (const char* name :
       {"etcd_proposals_committed_per_second", "etcd_db_total_size_bytes", "etcd_keys", "etcd_has_leader"}) {
    const Figure* f = findFigure(figs, name, {{"etcd", "etcd-main"}});
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->value) << name << ": " << f->unavailableReason;
  }
  const Figure* requests = findFigure(figs, "apiserver_requests");
  ASSERT_TRUE(requests && requests->value) << (requests ? requests->unavailableReason : "missing");
  EXPECT_GT(*requests->value, 0);  // the plane's own controllers read and write
  for (const char* cls : {"2xx", "3xx", "4xx", "5xx"}) {
    const Figure* f = findFigure(figs, "write_qps_by_class", {{"code_class", cls}});
    ASSERT_TRUE(f && f->value) << cls;
  }
  EXPECT_GT(*findFigure(figs, "etcd_db_total_size_bytes")->value, 0);
  EXPECT_EQ(*findFigure(figs, "etcd_has_leader")->value, 1);
  const Figure* objects = findFigure(figs, "apiserver_objects_total");
  ASSERT_TRUE(objects && objects->value);
  EXPECT_GT(*findFigure(figs, "apiserver_heap_inuse_bytes_all_replicas")->value, 1e6);
}

}  // namespace
}  // namespace cpscale::metrics

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new cpscale::testing::PlaneEnvironment());
  return RUN_ALL_TESTS();
}
