// A shard's result stored in ConfigMaps for `cpscale collect`: one ConfigMap when it
// fits, chunks when it does not (never splitting a character), read back whole, never
// half; the run's cleanup leaves them; collect waits for the missing ones and deletes
// them at the end. Against a fake server holding ConfigMaps.
#include <gtest/gtest.h>

#include "sim/engine/clock.h"
#include "sim/run/runner.h"
#include "sim/run/shard.h"
#include "sim/run/shard_results.h"
#include "test/support/configmap_server.h"
#include "test/support/fake_transport.h"
#include "workloads/cleanup.h"

namespace cpscale::run::testing {
namespace {

struct Client {
  explicit Client(ConfigMapServer& server) : transport(clock), api(transport, clock) {
    transport.setHandler([&server](const kube::HttpRequest& r) { return server.answer(r); });
  }
  engine::VirtualClock clock;
  kube::FakeTransport transport;
  kube::ApiClient api;
};

// A shard's result.json as cpscale run writes it, `bytes` long or more.
std::string result(std::size_t shard, std::size_t count, std::size_t bytes = 0) {
  json j = {{"runId", "r1"}, {"shard", {{"index", shard}, {"count", count}}}};
  // Two- and three-byte characters, so that chunk boundaries fall inside them.
  std::string text;
  while (text.size() < bytes) text += "aé€";
  j["padding"] = text;
  return j.dump();
}

TEST(ShardResults, SplitsNeverInsideACharacter) {
  const std::string s = "aé€😀b";  // 1, 2, 3, 4 and 1 bytes
  for (std::size_t max = 4; max <= s.size() + 1; ++max) {
    const auto parts = splitUtf8(s, max);
    std::string joined;
    for (const auto& p : parts) {
      EXPECT_LE(p.size(), max);
      EXPECT_FALSE(p.empty());
      // No part starts with a continuation byte (10xxxxxx).
      EXPECT_NE(static_cast<unsigned char>(p.front()) & 0xC0, 0x80) << max;
      joined += p;
    }
    EXPECT_EQ(joined, s);
  }
  EXPECT_EQ(splitUtf8("", 10), std::vector<std::string>{""});
}

TEST(ShardResults, ALargeResultIsChunkedAndReadBackWhole) {
  ConfigMapServer server;
  Client shard0(server), shard1(server);
  const std::string small = result(0, 2), large = result(1, 2, 2000);
  ASSERT_TRUE(publishShardResult(shard0.api, "r1", 0, small, 400).ok);
  const PublishOutcome p = publishShardResult(shard1.api, "r1", 1, large, 400);
  ASSERT_TRUE(p.ok) << p.detail;
  ASSERT_GE(p.names.size(), 3u);
  for (std::size_t k = 0; k < p.names.size(); ++k) EXPECT_EQ(p.names[k], "cpscale-r1-result-1-" + std::to_string(k));
  ASSERT_EQ(server.objects.size(), 1 + p.names.size());
  const json& one = server.objects.at("cpscale-r1-result-0");
  EXPECT_EQ(one["data"]["result.json"], small);
  EXPECT_EQ(one["data"]["chunks"], "1");
  // Not labelled cpscale.io/run: the run's cleanup must leave them.
  EXPECT_EQ(one["metadata"]["labels"], (json{{"cpscale.io/result-of", "r1"}, {"cpscale.io/shard", "0"}}));
  for (const auto& name : p.names) {
    const json& c = server.objects.at(name);
    EXPECT_LE(c["data"]["result.json"].get<std::string>().size(), 400u);
    EXPECT_EQ(c["data"]["chunks"], std::to_string(p.names.size()));
  }

  Client collector(server);
  CollectedResults c = readShardResults(collector.api, "r1");
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(c.shards, 2u);  // as the results say
  EXPECT_EQ(c.results.at(0), small);
  EXPECT_EQ(c.results.at(1), large);
  EXPECT_TRUE(c.problems.empty());
  EXPECT_GT(server.lists, 1u) << "read in pages";
  // Another run's results are not this one's.
  EXPECT_FALSE(readShardResults(collector.api, "r2").shards);

  EXPECT_TRUE(deleteShardResults(collector.api, "r1").empty());
  EXPECT_TRUE(server.objects.empty());
}

TEST(ShardResults, AFailedPublishLeavesNothingAndARepeatedOneIsRefused) {
  ConfigMapServer server;
  Client shard(server);
  server.failCreatesWith = 500;
  server.failCreatesAfter = 1;
  PublishOutcome p = publishShardResult(shard.api, "r1", 0, result(0, 2, 1000), 400);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.detail.find("cpscale-r1-result-0-1"), std::string::npos) << p.detail;
  EXPECT_TRUE(server.objects.empty()) << "half a result was left";

  server.failCreatesWith = 0;
  ASSERT_TRUE(publishShardResult(shard.api, "r1", 0, result(0, 2)).ok);
  p = publishShardResult(shard.api, "r1", 0, result(0, 2));
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.detail.find("has published a result before"), std::string::npos) << p.detail;
  EXPECT_EQ(server.objects.size(), 1u);
}

TEST(ShardResults, CollectWaitsForTheMissingAndSaysWhichAndIgnoresHalfResults) {
  ConfigMapServer server;
  Client shard(server), collector(server);
  ASSERT_TRUE(publishShardResult(shard.api, "r1", 2, result(2, 3)).ok);
  // Shard 0's first chunk of two only (its publisher died half-way).
  ASSERT_TRUE(publishShardResult(shard.api, "r1", 0, result(0, 3, 1000), 600).ok);
  server.objects.erase("cpscale-r1-result-0-1");

  const auto start = collector.clock.now();
  int looks = 0;
  CollectedResults c = awaitShardResults(
      collector.api, collector.clock, "r1", std::nullopt, std::chrono::seconds(10), std::chrono::seconds(2),
      [] { return false; }, [&](const CollectedResults&) { ++looks; });
  EXPECT_FALSE(c.complete());
  EXPECT_EQ(collector.clock.now() - start, std::chrono::seconds(10));  // the whole timeout, in virtual time
  EXPECT_GE(looks, 5);
  EXPECT_EQ(c.shards, 3u);
  EXPECT_EQ(c.missing, (std::vector<std::size_t>{0, 1}));
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_NE(c.problems[0].find("shard 0's result: 1 of 2 chunks"), std::string::npos) << c.problems[0];

  // Told how many: no result at all is N missing.
  EXPECT_EQ(readShardResults(collector.api, "r9", 2).missing, (std::vector<std::size_t>{0, 1}));
}

// Shard 0's cleanup at the end of the run (and `cpscale cleanup --run`) deletes what
// carries the run's label: the meeting goes, the results stay for collect.
TEST(ShardResults, TheRunsCleanupLeavesTheResults) {
  ConfigMapServer server;
  Client shard(server);
  ShardMeeting meeting(shard.api, "r1", {0, 2});
  meeting.announceSetup();
  ASSERT_TRUE(publishShardResult(shard.api, "r1", 1, result(1, 2)).ok);
  workloads::CleanupOptions co;
  co.timeout = std::chrono::seconds(5);
  const auto cleaned = workloads::cleanupRun(shard.api, shard.clock, "r1", {}, co);
  EXPECT_EQ(cleaned.deleted, (std::map<std::string, std::int64_t>{{"configmaps", 1}})) << cleanupJson(cleaned).dump();
  EXPECT_EQ(server.objects.count(shardMeetingName("r1")), 0u);
  EXPECT_EQ(server.objects.count("cpscale-r1-result-1"), 1u);
}

}  // namespace
}  // namespace cpscale::run::testing
