// The shards of a run meet on one ConfigMap: the run is set up once, every shard's
// window starts at one instant fixed when all are ready, and shard 0 cleans up once
// all are done. Here against a fake server holding ConfigMaps; the real plane runs
// the shards as processes in the integration tests.
#include <gtest/gtest.h>

#include <map>

#include "sim/common/error.h"
#include "sim/engine/clock.h"
#include "sim/run/shard.h"
#include "test/support/configmap_server.h"
#include "test/support/fake_transport.h"

namespace cpscale::run::testing {
namespace {

// One shard's process: its own client on the shared server.
struct Shard {
  Shard(ConfigMapServer& server, std::size_t index, std::size_t count)
      : transport(clock), api(transport, clock), meeting(api, "r1", {index, count}) {
    transport.setHandler([&server](const kube::HttpRequest& r) { return server.answer(r); });
  }
  engine::VirtualClock clock;
  kube::FakeTransport transport;
  kube::ApiClient api;
  ShardMeeting meeting;
};

const auto kNever = [] { return false; };
constexpr std::int64_t kSecond = 1'000'000'000;

TEST(ShardSpec, ParsesIOfNAndRefusesTheRest) {
  EXPECT_EQ(parseShard("0/1").count, 1u);
  const ShardSpec s = parseShard("2/4");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 4u);
  EXPECT_TRUE(s.sharded());
  for (const char* bad : {"4/4", "1", "a/2", "1/0", "-1/2", "1/2x", "/2", "0/2000"}) {
    try {
      parseShard(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "--shard") << bad;
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(ShardMeeting, TheOthersWaitForShardZerosSetupAndAgreeOnTheCount) {
  ConfigMapServer server;
  Shard zero(server, 0, 2), one(server, 1, 2), stray(server, 1, 3);
  EXPECT_THROW(one.meeting.awaitSetup(engine::Duration{0}, kNever), UnavailableError);  // not set up yet
  zero.meeting.announceSetup();
  ASSERT_EQ(server.objects.count(shardMeetingName("r1")), 1u);
  EXPECT_EQ(server.objects[shardMeetingName("r1")]["metadata"]["labels"]["cpscale.io/run"], "r1");
  EXPECT_NO_THROW(one.meeting.awaitSetup(engine::Duration{0}, kNever));
  try {
    stray.meeting.awaitSetup(engine::Duration{0}, kNever);
    ADD_FAILURE() << "a shard told of 3 shards joined a run of 2";
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("runs 2 shards"), std::string::npos) << e.what();
  }
  // A run id is one run: a second setup under it is refused.
  Shard again(server, 0, 2);
  EXPECT_THROW(again.meeting.announceSetup(), UnavailableError);
}

TEST(ShardMeeting, EveryShardStartsItsWindowAtOneInstantFixedOnceAllAreReady) {
  ConfigMapServer server;
  Shard zero(server, 0, 2), one(server, 1, 2);
  zero.meeting.announceSetup();
  std::int64_t t = 100 * kSecond;
  // Shard 0 is ready first: no start while shard 1 is not.
  EXPECT_FALSE(zero.meeting.steadyAt(t));
  EXPECT_EQ(zero.meeting.notReady(), std::vector<std::size_t>{1});
  t += kSecond;
  EXPECT_FALSE(one.meeting.steadyAt(t));  // ready now; the start is shard 0's to fix
  // Reads are at most every 500 ms.
  EXPECT_FALSE(zero.meeting.steadyAt(t - kSecond + 100'000'000));
  const auto at = zero.meeting.steadyAt(t, std::chrono::seconds(2));
  ASSERT_TRUE(at);
  EXPECT_EQ(*at, t + 2 * kSecond);
  t += kSecond;
  EXPECT_EQ(one.meeting.steadyAt(t), at);
  EXPECT_EQ(zero.meeting.steadyAt(t + 10 * kSecond), at);  // fixed once
}

TEST(ShardMeeting, ShardZeroCleansUpOnceEveryShardIsDone) {
  ConfigMapServer server;
  Shard zero(server, 0, 3), one(server, 1, 3), two(server, 2, 3);
  zero.meeting.announceSetup();
  zero.meeting.announceDone();
  two.meeting.announceDone();
  EXPECT_EQ(zero.meeting.awaitDone(engine::Duration{0}, kNever), std::vector<std::size_t>{1});
  one.meeting.announceDone();
  EXPECT_TRUE(zero.meeting.awaitDone(engine::Duration{0}, kNever).empty());
  zero.meeting.remove();
  EXPECT_TRUE(server.objects.empty());
  // Gone (or never there): every shard counts as not done.
  EXPECT_EQ(zero.meeting.awaitDone(engine::Duration{0}, kNever).size(), 3u);
}

}  // namespace
}  // namespace cpscale::run::testing
