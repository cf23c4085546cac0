// Sharded generation: N processes (shards) each drive their share of every population.
// The shares must be exact and disjoint: together the shards create what one process
// would, each object once, labelled with the shard that created it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "test/support/workload_harness.h"
#include "workloads/workload.h"

namespace cpscale::workloads::testing {
namespace {

// The objects one process creates in 5 virtual minutes, by path and name, with the
// shard label each carries ("" when none).
std::map<std::string, std::string> created(const std::string& spec, std::size_t shard, std::size_t shards) {
  Harness h;
  h.ctx.shard = shard;
  h.ctx.shards = shards;
  auto w = makeWorkload(entry(spec));
  auto inst = w->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{std::chrono::minutes(5)});
  inst->stop();
  std::map<std::string, std::string> out;
  for (const auto& r : h.transport.requests()) {
    if (r.request.method != "POST") continue;
    const json obj = json::parse(r.request.body);
    const json& labels = obj["metadata"]["labels"];
    EXPECT_TRUE(
        out.emplace(pathOf(r.request) + "/" + obj["metadata"]["name"].get<std::string>(), labels.value(kShardLabel, ""))
            .second);
  }
  return out;
}

class ShardedPopulation : public ::testing::TestWithParam<const char*> {};

TEST_P(ShardedPopulation, TheShardsTogetherCreateWhatOneProcessDoesEachObjectOnce) {
  constexpr std::size_t kShards = 3;
  const auto whole = created(GetParam(), 0, 1);
  ASSERT_GT(whole.size(), 30u);
  for (const auto& [name, shard] : whole) EXPECT_EQ(shard, "") << name << ": an unsharded run labels no shard";
  std::set<std::string> union_;
  for (std::size_t s = 0; s < kShards; ++s) {
    const auto part = created(GetParam(), s, kShards);
    EXPECT_GT(part.size(), whole.size() / kShards / 2) << "shard " << s << " drove too little of the population";
    for (const auto& [name, shard] : part) {
      EXPECT_EQ(shard, std::to_string(s)) << name;
      EXPECT_TRUE(union_.insert(name).second) << name << " created by two shards";
      EXPECT_TRUE(whole.count(name)) << name << " is not one the unsharded run creates";
    }
  }
  EXPECT_EQ(union_.size(), whole.size());
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, ShardedPopulation,
    ::testing::Values("kind: kubelets\nname: fleet\ncount: 60\nregistrationQps: 100\n",
                      "kind: churn\nname: s\nsessionsPerMinute: 60\nmaxSessions: 90\ncreateQps: 100\n"
                      "dwell: {running: 5s, suspended: 5s}\n",
                      "kind: dormant\nname: d\ncrdKinds: 0\nconfigMaps: 40\nsecrets: 20\ncreateQps: 100\n"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      return std::string(info.index == 0 ? "Kubelets" : info.index == 1 ? "Churn" : "Dormant");
    });

}  // namespace
}  // namespace cpscale::workloads::testing
