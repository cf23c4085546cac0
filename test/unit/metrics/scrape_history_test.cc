#include "sim/metrics/scrape_history.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include <string>

namespace cpscale::metrics {
namespace {

using testing::at;
using testing::series;

// One scrape of a server process: its start time, optionally its replica identity
// (apiserver_id_hash), and a PUT counter.
struct Scrape {
  int at;
  double startTime;  // 0: not exposed
  std::string replica;
  double puts;      // < 0: the series is absent
  double cpu = -1;  // process_cpu_seconds_total; < 0: not exposed
};

ScrapeHistory historyOf(std::initializer_list<Scrape> scrapes) {
  ScrapeHistory h;
  for (const Scrape& s : scrapes) {
    std::string body = "# TYPE apiserver_request_total counter\n";
    if (s.puts >= 0) body += "apiserver_request_total{code=\"200\",verb=\"PUT\"} " + std::to_string(s.puts) + "\n";
    if (s.startTime > 0) {
      body +=
          "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds " + std::to_string(s.startTime) + "\n";
    }
    if (s.cpu >= 0) {
      body += "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " + std::to_string(s.cpu) + "\n";
    }
    if (!s.replica.empty()) {
      body += "apiserver_authentication_config_controller_last_config_info{apiserver_id_hash=\"sha256:" + s.replica +
              "\",hash=\"sha256:c0ffee\"} 1\n";
    }
    ParseResult r = parsePrometheusText(body);
    EXPECT_TRUE(r.ok()) << r.error->describe();
    h.record(at(s.at), r.families);
  }
  return h;
}

TimeSeries puts(const ScrapeHistory& h) {
  const auto& ids = h.seriesNamed("apiserver_request_total");
  EXPECT_EQ(ids.size(), 1u);
  return h.counter(ids.front());
}

TEST(ScrapeHistory, RestartIsANewStartTimeEvenWhenTheCounterDidNotDrop) {
  // The apiserver restarts between 10 and 20 and has already served 180 PUTs by 20:
  // above the 150 before, yet all 180 are new.
  ScrapeHistory h = historyOf({{0, 1000, "", 100}, {10, 1000, "", 150}, {20, 1015, "", 180}, {30, 1015, "", 200}});
  EXPECT_EQ(puts(h), series({{0, 0}, {10, 50}, {20, 230}, {30, 250}}));
  EXPECT_EQ(totalIncrease(puts(h)), 50 + 180 + 20);
  ScrapeProcesses p = h.processes();
  EXPECT_EQ(p.ofScrape, (std::vector<std::size_t>{0, 0, 1, 1}));
  EXPECT_EQ(p.startedWithin, (std::vector<bool>{false, true}));
  EXPECT_EQ(p.firstScrape, (std::vector<std::size_t>{0, 2}));
  ASSERT_TRUE(h.identity(2).startTime);
  EXPECT_EQ(*h.identity(2).startTime, 1015);
}

TEST(ScrapeHistory, AStartTimeMovedByAClockStepIsTheSameProcess) {
  // The host's clock is stepped 40 s ahead between 10 and 20: the kernel's boot time,
  // and with it process_start_time_seconds, moves by as much, while the process runs on
  // (its CPU time grows on). Counting its 150 PUTs again as a new process' would put
  // its whole lifetime into one interval.
  ScrapeHistory h = historyOf({{0, 1000, "", 100, 5.0},
                               {10, 1000, "", 150, 6.0},
                               {20, 1040, "", 180, 7.0},
                               {30, 1040, "", 200, 8.0},
                               {40, 1040, "", 230, 9.0}});
  EXPECT_EQ(puts(h), series({{0, 0}, {10, 50}, {20, 80}, {30, 100}, {40, 130}}));
  EXPECT_EQ(h.processes().count(), 1u);
  // A slice across the step, as a run's steady window would take it.
  EXPECT_EQ(totalIncrease(puts(h.slice(at(10), at(30)))), 50);
}

TEST(ScrapeHistory, ARestartIsToldFromAClockStepByItsCpuTimeStartingAgain) {
  // Same start times as a clock step, but the CPU time starts again: a restart, whose
  // 180 PUTs are all new.
  ScrapeHistory h = historyOf({{0, 1000, "", 100, 50.0}, {10, 1000, "", 150, 55.0}, {20, 1015, "", 180, 1.5}});
  EXPECT_EQ(totalIncrease(puts(h)), 50 + 180);
  EXPECT_EQ(h.processes().startedWithin, (std::vector<bool>{false, true}));
}

TEST(ScrapeHistory, AlternatingStartTimesAreReplicasEvenWhenTheirCpuTimesGrow) {
  // Two processes behind one address whose CPU times happen to rise in the order they
  // answer: the first start time answering again tells them apart from a clock step.
  ScrapeHistory h = historyOf(
      {{0, 1000, "", 100, 10.0}, {10, 2000, "", 1000, 20.0}, {20, 1000, "", 130, 30.0}, {30, 2000, "", 1100, 40.0}});
  EXPECT_EQ(totalIncrease(puts(h)), 30 + 100);
  EXPECT_EQ(h.processes().count(), 2u);
}

TEST(ScrapeHistory, ADropWithinOneProcessIsStillAReset) {
  // Without a start time (or with an unchanged one) a drop is all there is to go by.
  ScrapeHistory h = historyOf({{0, 0, "", 100}, {10, 0, "", 130}, {20, 0, "", 20}, {30, 0, "", 50}});
  EXPECT_EQ(puts(h), series({{0, 0}, {10, 30}, {20, 50}, {30, 80}}));
  EXPECT_EQ(h.processes().count(), 1u);
}

TEST(ScrapeHistory, ASeriesCreatedAfterARestartCountsFromZero) {
  // The restarted process had no PUT yet at 20; its series appears at 30 with 7.
  ScrapeHistory h = historyOf({{0, 1000, "", 100}, {10, 1000, "", 150}, {20, 1015, "", -1}, {30, 1015, "", 7}});
  EXPECT_EQ(puts(h), series({{0, 0}, {10, 50}, {20, 50}, {30, 57}}));
}

TEST(ScrapeHistory, ReplicasBehindALoadBalancerAreToldApartByTheirIdentity) {
  // Scrapes alternate between replicas a and b; each one's counter only grows.
  ScrapeHistory h = historyOf(
      {{0, 1000, "a", 100}, {10, 2000, "b", 1000}, {20, 1000, "a", 130}, {30, 2000, "b", 1100}, {40, 1000, "a", 150}});
  // a: +30 +20, b: +100; b's first reading is a baseline (it ran before the run).
  EXPECT_EQ(puts(h), series({{0, 0}, {10, 0}, {20, 30}, {30, 130}, {40, 150}}));
  ScrapeProcesses p = h.processes();
  EXPECT_EQ(p.ofScrape, (std::vector<std::size_t>{0, 1, 0, 1, 0}));
  EXPECT_EQ(p.startedWithin, (std::vector<bool>{false, false}));
  EXPECT_EQ(h.identity(1).replica, "sha256:b");
}

TEST(ScrapeHistory, ARestartOfOneReplicaBehindALoadBalancer) {
  // a restarts between 0 and 20 (same identity, new start time) and has served 5 by 20.
  ScrapeHistory h = historyOf(
      {{0, 1000, "a", 100}, {10, 2000, "b", 1000}, {20, 3000, "a", 5}, {30, 2000, "b", 1010}, {40, 3000, "a", 25}});
  EXPECT_EQ(totalIncrease(puts(h)), 5 + 20 + 10);
  EXPECT_EQ(h.processes().startedWithin, (std::vector<bool>{false, false, true}));
}

TEST(ScrapeHistory, AlternatingStartTimesWithoutIdentityAreReplicasNotRestarts) {
  // No apiserver_id_hash: start times 1000, 2000, 1000 cannot be successive processes.
  ScrapeHistory h = historyOf({{0, 1000, "", 100}, {10, 2000, "", 1000}, {20, 1000, "", 130}, {30, 2000, "", 1100}});
  EXPECT_EQ(totalIncrease(puts(h)), 30 + 100);
  EXPECT_EQ(h.processes().startedWithin, (std::vector<bool>{false, false}));
}

TEST(ScrapeHistory, SliceKeepsWhichProcessAnswered) {
  ScrapeHistory h = historyOf({{0, 1000, "", 100}, {10, 1000, "", 150}, {20, 1015, "", 180}, {30, 1015, "", 200}});
  ScrapeHistory s = h.slice(at(10), at(30));
  ASSERT_EQ(s.scrapes(), 3u);
  EXPECT_EQ(puts(s), series({{10, 0}, {20, 180}, {30, 200}}));
  EXPECT_EQ(s.processes().startedWithin, (std::vector<bool>{false, true}));
  // A slice starting after the restart sees one process, its first reading a baseline.
  EXPECT_EQ(puts(h.slice(at(20), at(30))), series({{20, 0}, {30, 20}}));
}

TEST(ScrapeHistory, AScrapeWithoutAStartTimeBelongsToItsNeighbours) {
  // The first scrape lacks the start time (taken as the next one's), the fourth too
  // (taken as the previous one's): no restart at either, one at 40.
  ScrapeHistory h =
      historyOf({{0, 0, "", 100}, {10, 1000, "", 110}, {20, 1000, "", 120}, {30, 0, "", 130}, {40, 2000, "", 5}});
  EXPECT_EQ(h.processes().ofScrape, (std::vector<std::size_t>{0, 0, 0, 0, 1}));
  EXPECT_EQ(h.processes().startedWithin, (std::vector<bool>{false, true}));
  EXPECT_EQ(totalIncrease(puts(h)), 30 + 5);
  EXPECT_FALSE(h.identity(3).startTime);
}

TEST(ScrapeHistory, EtcdServerIdIsAReplicaIdentity) {
  ScrapeHistory h;
  for (auto [t, id, v] : {std::tuple{0, "m1", 10.0}, {10, "m2", 500.0}, {20, "m1", 15.0}}) {
    ParseResult r = parsePrometheusText("etcd_server_id{server_id=\"" + std::string(id) +
                                        "\"} 1\netcd_server_proposals_committed_total " + std::to_string(v) + "\n");
    ASSERT_TRUE(r.ok());
    h.record(at(t), r.families);
  }
  EXPECT_EQ(h.identity(1).replica, "m2");
  EXPECT_EQ(totalIncrease(h.counter(h.seriesNamed("etcd_server_proposals_committed_total").front())), 5);
}

}  // namespace
}  // namespace cpscale::metrics
