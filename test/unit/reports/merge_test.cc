// A sharded run's results merged into one: histograms merged exactly (the merged
// percentiles are those of every shard's samples together), counts summed, the servers'
// figures shard 0's, generator health per shard, gates judged again, and results that
// are not one run's shards refused with the file and field.
#include <gtest/gtest.h>

#include <random>

#include "reports/merge.h"
#include "reports/summary.h"
#include "sim/common/error.h"
#include "sim/metrics/client_figures.h"
#include "sim/metrics/gate.h"
#include "sim/result/client_stats.h"
#include "sim/result/json_io.h"

namespace cpscale::reports::testing {
namespace {

using namespace std::chrono_literals;

const load::RequestKey kPut{"leases", "PUT", load::OutcomeClass::kSuccess};

// Requests with latencies drawn from a log-normal, as a shard's worker records them.
load::RequestStats sample(std::uint64_t seed, int n, load::RequestStats* all = nullptr) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ms(1.5, 1.0);
  load::RequestStats s;
  for (int i = 0; i < n; ++i) {
    const auto sent = std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double, std::milli>(ms(rng)));
    const auto scheduled = sent + std::chrono::microseconds(rng() % 5000);
    const auto lag = std::chrono::microseconds(rng() % 100);
    for (auto* t : {&s, all}) {
      if (t == nullptr) continue;
      t->recordLatency(kPut, scheduled, sent);
      t->recordSend(lag, 0ns);
      t->recordStatus(i % 50 == 0 ? 409 : 200);
    }
    if (i % 100 == 0) s.recordRetry("429", 1s);
    if (all && i % 100 == 0) all->recordRetry("429", 1s);
  }
  return s;
}

result::RunResult shard(std::size_t index, std::size_t count, const load::RequestStats& stats) {
  result::RunResult r;
  r.runId = "big1";
  r.scenario.name = "node-bound";
  r.target.kind = "cluster";
  r.measuredSeconds = 30;
  r.shard = result::ShardInfo{index, count};
  r.clientStats = result::requestStatsJson(stats);
  for (auto f : metrics::generatorHealthFigures(stats)) r.figures.push_back(f);
  for (auto f : metrics::clientCountFigures(stats, 30s)) r.figures.push_back(f);
  if (index == 0) {
    r.figures.push_back(metrics::Figure::measured("write_qps", {}, 33.0, "1/s", metrics::Source::kApiserver));
    r.figures.push_back(
        metrics::Figure::measured("client_watch_streams_opened", {}, 4, "count", metrics::Source::kClient));
    r.figures.back().window = metrics::Window::kRun;
  }
  for (const char* g : {"write_qps >= 30", "client_latency_p99{resource=leases,verb=PUT,measured_from=sent} <= 1s",
                        "generator_limited == false"})
    if (index == 0) r.gates.push_back(metrics::evaluateGate(metrics::parseGate(g, "s.yaml", "gates"), r.figures));
  r.workloads.push_back({"kubelets", "fleet", {{"leaseRenewals", 100 * (index + 1)}}});
  r.workloads.push_back(
      {"cleanup", "cleanup", index == 0 ? nlohmann::json{{"complete", true}} : nlohmann::json{{"skipped", "shard 0"}}});
  return r;
}

const metrics::Figure* find(const result::RunResult& r, const std::string& name, const metrics::Labels& labels) {
  for (const auto& f : r.figures)
    if (f.name == name && f.labels == labels && f.window == metrics::Window::kSteady) return &f;
  return nullptr;
}

TEST(ClientStatsJson, AHistogramAndTheStatisticsComeBackExactly) {
  const load::RequestStats s = sample(1, 5000);
  const load::RequestStats back =
      result::requestStatsFromJson(result::jsonio::Reader(result::requestStatsJson(s), "t.json"));
  EXPECT_EQ(result::requestStatsJson(back), result::requestStatsJson(s));
  const auto& a = s.latency().at(kPut).fromSent;
  const auto& b = back.latency().at(kPut).fromSent;
  for (double q : {0.5, 0.9, 0.99, 0.999}) EXPECT_EQ(a.quantile(q), b.quantile(q)) << q;
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  EXPECT_DOUBLE_EQ(a.mean(), b.mean());
  EXPECT_EQ(back.retries().at("429"), s.retries().at("429"));
  EXPECT_EQ(back.statusCounts(), s.statusCounts());
}

TEST(ClientStatsJson, CellsThatCannotBeAHistogramsAreRefusedWithThePath) {
  nlohmann::json j = result::requestStatsJson(sample(2, 10));
  j["latency"][0]["fromSent"]["counts"] = {{5000, 1}, {3000, 1}};
  try {
    result::requestStatsFromJson(result::jsonio::Reader(j, "shard1.json"));
    FAIL() << "cells out of order were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("shard1.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/latency/0/fromSent"), std::string::npos) << e.what();
  }
}

TEST(MergeShards, ThePercentilesAreThoseOfEveryShardsRequestsTogether) {
  load::RequestStats all;
  std::vector<result::RunResult> shards;
  // Shards of unequal size and speed: averaging their p99s would be wrong.
  const int sizes[] = {3000, 1000, 6000};
  for (std::size_t i = 0; i < 3; ++i) shards.push_back(shard(i, 3, sample(10 + i, sizes[i], &all)));
  std::swap(shards[0], shards[2]);  // any order
  result::RunResult m = mergeShards(shards, {"s2.json", "s1.json", "s0.json"});

  EXPECT_EQ(m.mergedShards, 3u);
  EXPECT_FALSE(m.shard);
  const auto want = metrics::clientLatencyFigures(all);
  int compared = 0;
  for (const auto& w : want) {
    const metrics::Figure* got = find(m, w.name, w.labels);
    ASSERT_NE(got, nullptr) << w.name;
    EXPECT_EQ(got->value, w.value) << w.name;
    ++compared;
  }
  EXPECT_EQ(compared, 10);  // p50..max, from scheduled and from sent
  const metrics::Figure* puts = find(m, "client_write_requests", {{"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_NE(puts, nullptr);
  EXPECT_EQ(puts->value, 10000);
  const metrics::Figure* conflicts = find(m, "client_errors_by_code", {{"code", "409"}});
  ASSERT_NE(conflicts, nullptr);
  EXPECT_EQ(conflicts->value, 60 + 20 + 120);
  // The merged statistics it keeps are those of all the requests: every cell (the sums
  // of latencies may differ in their last bits, added in another order).
  const auto kept = result::requestStatsFromJson(result::jsonio::Reader(m.clientStats, "m")).parts();
  const auto whole = all.parts();
  EXPECT_EQ(kept.latency.at(kPut).fromScheduled.cells().counts, whole.latency.at(kPut).fromScheduled.cells().counts);
  EXPECT_EQ(kept.latency.at(kPut).fromSent.cells().counts, whole.latency.at(kPut).fromSent.cells().counts);
  EXPECT_EQ(kept.scheduleLag.cells().counts, whole.scheduleLag.cells().counts);
  EXPECT_EQ(kept.completed, whole.completed);
  EXPECT_EQ(kept.statusCounts, whole.statusCounts);
  EXPECT_EQ(kept.retries, whole.retries);
  // The servers' figures are shard 0's; generator health stays per shard, and the
  // run-wide verdict is whether any shard was limited.
  const metrics::Figure* writes = find(m, "write_qps", {});
  ASSERT_NE(writes, nullptr);
  EXPECT_EQ(writes->value, 33.0);
  for (const char* s : {"0", "1", "2"}) EXPECT_NE(find(m, "generator_limited", {{"shard", s}}), nullptr) << s;
  ASSERT_NE(find(m, "generator_limited", {}), nullptr);
  EXPECT_EQ(find(m, "generator_limited", {})->value, 0);
  // Every shard's workloads, shard 0's cleanup.
  std::vector<std::string> names;
  for (const auto& w : m.workloads) names.push_back(w.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fleet/shard-0", "cleanup/shard-0", "fleet/shard-1", "fleet/shard-2"}));
  // The gates, judged again on the merged figures.
  ASSERT_EQ(m.gates.size(), 3u);
  for (const auto& g : m.gates) EXPECT_TRUE(g.passed) << g.gate.text << ": " << g.reason;
  EXPECT_EQ(m.exitCode, 0);
  // Its reports say what it is made of.
  EXPECT_NE(renderSummary(m).find("merged from 3 shards"), std::string::npos);
  // The merged result is a result: it reads back as written.
  EXPECT_EQ(result::fromJson(toJson(m), "merged.json"), m);
}

TEST(MergeShards, ResultsThatAreNotOneRunsShardsEachOnceAreRefused) {
  const auto stats = sample(3, 10);
  auto expectRefused = [](std::vector<result::RunResult> rs, const std::string& file, const std::string& path,
                          const std::string& says) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < rs.size(); ++i) names.push_back("s" + std::to_string(i) + ".json");
    try {
      mergeShards(std::move(rs), names);
      ADD_FAILURE() << "merged: " << says;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.where(), file) << e.what();
      EXPECT_EQ(e.field(), path) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  result::RunResult plain = shard(1, 2, stats);
  plain.shard.reset();
  expectRefused({shard(0, 2, stats), plain}, "s1.json", "/shard", "not a shard's result");
  result::RunResult other = shard(1, 2, stats);
  other.runId = "big2";
  expectRefused({shard(0, 2, stats), other}, "s1.json", "/runId", "not 'big1'");
  expectRefused({shard(0, 2, stats), shard(1, 3, stats)}, "s1.json", "/shard/count", "not 2");
  expectRefused({shard(0, 3, stats), shard(2, 3, stats)}, "s1.json", "/shard/index", "shard 1 of 3 is missing");
  expectRefused({shard(0, 2, stats), shard(0, 2, stats)}, "s1.json", "/shard/index", "is 0 again");
  expectRefused({shard(0, 2, stats)}, "s0.json", "/shard/count", "1 results were given");
  result::RunResult cut = shard(1, 2, stats);
  cut.clientStats = nullptr;
  expectRefused({shard(0, 2, stats), cut}, "s1.json", "/clientStats", "no steady window");
}

}  // namespace
}  // namespace cpscale::reports::testing
