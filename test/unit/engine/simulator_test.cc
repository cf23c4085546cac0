// Virtual-time tests of the event engine: nothing here waits on the wall clock.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/engine/periodic_timer.h"
#include "sim/engine/random.h"
#include "sim/engine/simulator_impl.h"

namespace cpscale::engine {
namespace {

using namespace std::chrono_literals;

TimePoint at(Duration d) { return TimePoint{d}; }

// Small buckets and a short horizon so that tests cross buckets and the overflow heap.
constexpr EventQueueOptions kTinyCalendar{.bucketWidthLog2 = 4, .bucketCountLog2 = 2};

class SimulatorTest : public ::testing::TestWithParam<EventQueueOptions> {
 protected:
  VirtualSimulator sim{GetParam()};
};

TEST_P(SimulatorTest, RunsEventsInTimeOrderAndJumpsTheClock) {
  std::vector<int> order;
  std::vector<TimePoint> times;
  sim.scheduleAt(at(300ns), [&] {
    order.push_back(3);
    times.push_back(sim.now());
  });
  sim.scheduleAt(at(100ns), [&] {
    order.push_back(1);
    times.push_back(sim.now());
  });
  sim.scheduleAt(at(5s), [&] {
    order.push_back(4);
    times.push_back(sim.now());
  });
  sim.scheduleAt(at(200ns), [&] {
    order.push_back(2);
    times.push_back(sim.now());
  });
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(times, (std::vector<TimePoint>{at(100ns), at(200ns), at(300ns), at(5s)}));
  EXPECT_EQ(sim.clock().now(), at(5s));
  EXPECT_EQ(sim.pending(), 0u);
}

TEST_P(SimulatorTest, EqualTimesRunInSchedulingOrder) {
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) sim.scheduleAt(at(1ms), [&order, i] { order.push_back(i); });
  // Scheduled from inside an event at the same time: after everything already due.
  sim.scheduleAt(at(1ms), [&] { sim.scheduleAt(at(1ms), [&] { order.push_back(100); }); });
  sim.run();
  ASSERT_EQ(order.size(), 51u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(order.back(), 100);
}

// Enough equal times that a bucket takes the radix sort, arriving in chunks stacked
// newest first and partly through the overflow heap: still scheduling order.
TEST_P(SimulatorTest, ManyEqualTimesRunInSchedulingOrderAcrossChunksAndOverflow) {
  std::vector<int> order;
  for (int i = 0; i < 300; ++i) sim.scheduleAt(at(100s), [&order, i] { order.push_back(i); });
  sim.scheduleAt(at(32s), [&] {
    for (int i = 300; i < 600; ++i) sim.scheduleAt(at(100s), [&order, i] { order.push_back(i); });
  });
  for (int i = 0; i < 1000; ++i) sim.scheduleAt(at(5ms), [&order, i] { order.push_back(1000 + i); });
  sim.run();
  ASSERT_EQ(order.size(), 1600u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[i], 1000 + i);
  for (int i = 0; i < 600; ++i) ASSERT_EQ(order[1000 + i], i);
}

TEST_P(SimulatorTest, PastTimesRunAtNow) {
  TimePoint ran{};
  sim.scheduleAt(at(10ms), [&] { sim.scheduleAt(at(1ms), [&] { ran = sim.now(); }); });
  sim.run();
  EXPECT_EQ(ran, at(10ms));
}

TEST_P(SimulatorTest, CancelledEventsDoNotRun) {
  int ran = 0;
  const EventId a = sim.scheduleAt(at(1ms), [&] { ran += 1; });
  const EventId b = sim.scheduleAt(at(2ms), [&] { ran += 10; });
  sim.scheduleAt(at(3ms), [&] { ran += 100; });
  EXPECT_NE(a, 0u);
  EXPECT_EQ(sim.pending(), 3u);
  sim.cancel(b);
  sim.cancel(b);  // twice: no-op
  EXPECT_EQ(sim.pending(), 2u);
  sim.run();
  EXPECT_EQ(ran, 101);
  sim.cancel(a);  // already ran: no-op
  sim.cancel(0);
  sim.cancel(~EventId{0});
  EXPECT_EQ(sim.stats().cancelled, 1u);
}

TEST_P(SimulatorTest, ACancelledSlotReusedByANewEventIsNotConfused) {
  int ran = 0;
  const EventId a = sim.scheduleAt(at(1ms), [&] { ran += 1; });
  sim.cancel(a);
  const EventId b = sim.scheduleAt(at(2ms), [&] { ran += 10; });
  EXPECT_NE(a, b);
  sim.cancel(a);  // stale id of the reused slot must not cancel b
  sim.run();
  EXPECT_EQ(ran, 10);
}

TEST_P(SimulatorTest, RunUntilStopsAtTheBoundAndLeavesNowThere) {
  int ran = 0;
  sim.scheduleAt(at(1s), [&] { ++ran; });
  sim.scheduleAt(at(2s), [&] { ++ran; });
  sim.scheduleAt(at(3s), [&] { ++ran; });
  sim.runUntil(at(2s));
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(sim.now(), at(2s));
  sim.runFor(500ms);
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(sim.now(), at(2500ms));
  sim.run();
  EXPECT_EQ(ran, 3);
}

TEST_P(SimulatorTest, StopFromInsideAnEventReturnsAfterIt) {
  int ran = 0;
  sim.scheduleAt(at(1s), [&] {
    ++ran;
    sim.stop();
  });
  sim.scheduleAt(at(2s), [&] { ++ran; });
  sim.run();
  EXPECT_EQ(ran, 1);
  sim.run();
  EXPECT_EQ(ran, 2);
}

struct Ticker {
  explicit Ticker(Simulator& sim, Duration period, Duration jitter = 0ns, std::uint64_t seed = 7)
      : sim(sim), timer(sim, PeriodicTimer::bind<&Ticker::tick>(this), period, jitter, seed) {}
  void tick() {
    fires.push_back(sim.now());
    if (stopAfter && fires.size() == stopAfter) timer.stop();
  }
  Simulator& sim;
  std::vector<TimePoint> fires;
  std::size_t stopAfter = 0;
  PeriodicTimer timer;
};

TEST_P(SimulatorTest, PeriodicTimerFiresEveryPeriod) {
  Ticker t(sim, 10s);
  t.timer.start(at(3s));
  sim.runUntil(at(43s));
  EXPECT_EQ(t.fires, (std::vector<TimePoint>{at(3s), at(13s), at(23s), at(33s), at(43s)}));
  EXPECT_EQ(sim.pending(), 1u);
  t.timer.stop();
  EXPECT_FALSE(t.timer.armed());
  EXPECT_EQ(sim.pending(), 0u);
  sim.runUntil(at(100s));
  EXPECT_EQ(t.fires.size(), 5u);
}

TEST_P(SimulatorTest, JitteredPeriodsStayWithinBounds) {
  Ticker t(sim, 10s, 400ms);
  t.timer.start(at(0s));
  sim.runUntil(at(10000s));
  ASSERT_GT(t.fires.size(), 900u);
  Duration lo = 1h, hi = 0s;
  for (std::size_t i = 1; i < t.fires.size(); ++i) {
    const Duration gap = t.fires[i] - t.fires[i - 1];
    lo = std::min(lo, gap);
    hi = std::max(hi, gap);
  }
  EXPECT_GE(lo, 10s);
  EXPECT_LT(hi, 10400ms);
  // The jitter is spread over its range, not stuck at one end.
  EXPECT_LT(lo, 10040ms);
  EXPECT_GT(hi, 10360ms);
}

TEST_P(SimulatorTest, TimerCanStopItselfAndBeRestarted) {
  Ticker t(sim, 1s);
  t.stopAfter = 3;
  t.timer.start(at(0s));
  sim.run();  // ends: the timer stopped itself, nothing else pending
  EXPECT_EQ(t.fires.size(), 3u);
  EXPECT_EQ(sim.now(), at(2s));
  t.stopAfter = 0;
  t.timer.startAfter(5s);
  t.timer.start(at(20s));  // restarting replaces the pending fire
  sim.runUntil(at(21s));
  EXPECT_EQ(t.fires.back(), at(21s));
  EXPECT_EQ(t.fires[3], at(20s));
}

// Actors destroyed by other actors while their next fire is among the events the
// engine looks ahead at (and prefetches) must neither run nor be read (under ASan a
// read of a freed timer would fail here).
TEST_P(SimulatorTest, TimersDestroyedWhileQueuedCloseAheadAreNeverTouched) {
  struct Victim {
    Victim(Simulator& sim, int id, std::vector<int>& ran)
        : id(id), ran(ran), timer(sim, PeriodicTimer::bind<&Victim::fire>(this), 1s, 1ms, 100 + id) {}
    void fire() { ran.push_back(id); }
    int id;
    std::vector<int>& ran;
    PeriodicTimer timer;
  };
  std::vector<int> ran;
  std::vector<std::unique_ptr<Victim>> victims;
  for (int i = 0; i < 2000; ++i) {
    victims.push_back(std::make_unique<Victim>(sim, i, ran));
    // 2000 fires within 2 ms, in a later bucket so that they are sorted into a run.
    victims.back()->timer.start(at(1s + Duration{i * 1us}));
  }
  // Every 10 us, destroy every 4th victim due in the next 40 us, before it first fires.
  std::vector<bool> destroyed(victims.size());
  struct Reap {
    static void run(Simulator& sim, std::vector<std::unique_ptr<Victim>>& v, std::vector<bool>& gone) {
      const auto us = (sim.now().time_since_epoch() - 1s) / 1us;
      for (auto i = us + 1; i < us + 40 && i < static_cast<std::int64_t>(v.size()); ++i) {
        if (i % 4 != 0 || !v[i]) continue;
        v[i].reset();
        gone[i] = true;
      }
      if (us + 10 < static_cast<std::int64_t>(v.size())) {
        sim.scheduleAfter(10us, [&sim, &v, &gone] { run(sim, v, gone); });
      }
    }
  };
  sim.scheduleAt(at(1s), [&] { Reap::run(sim, victims, destroyed); });
  sim.runUntil(at(3s));
  ASSERT_FALSE(ran.empty());
  for (int id : ran) EXPECT_FALSE(destroyed[id]) << id;
}

TEST_P(SimulatorTest, DestroyedTimerNeverFires) {
  auto t = std::make_unique<Ticker>(sim, 1s);
  t->timer.start(at(1s));
  int other = 0;
  sim.scheduleAt(at(2s), [&] { ++other; });
  t.reset();
  // A new timer may take the freed slot; the stale entry must not fire it.
  Ticker u(sim, 1s);
  u.timer.start(at(1500ms));
  sim.runUntil(at(2s));
  EXPECT_EQ(other, 1);
  EXPECT_EQ(u.fires, (std::vector<TimePoint>{at(1500ms)}));
}

TEST_P(SimulatorTest, TimersAndOneShotsInterleaveInOrder) {
  std::vector<std::string> log;
  Ticker t(sim, 10ms);
  t.timer.start(at(5ms));
  for (int i = 0; i < 5; ++i) {
    sim.scheduleAt(at(Duration{i * 10ms + 5ms}), [&log] { log.push_back("one-shot"); });
  }
  sim.runUntil(at(45ms));
  EXPECT_EQ(t.fires.size(), 5u);
  EXPECT_EQ(log.size(), 5u);
  EXPECT_EQ(sim.stats().eventsRun, 10u);
  EXPECT_EQ(sim.stats().timerFires, 5u);
}

// A trace of (actor, time) for many jittered timers and random one-shots.
std::vector<std::pair<int, std::int64_t>> trace(std::uint64_t seed, EventQueueOptions q, int actorCount = 200,
                                                Duration length = 30s) {
  VirtualSimulator sim(q);
  std::vector<std::pair<int, std::int64_t>> out;
  struct Actor {
    Actor(Simulator& s, int id, std::uint64_t seed, std::vector<std::pair<int, std::int64_t>>& out)
        : sim(s),
          id(id),
          rng(seed, "actor-" + std::to_string(id)),
          out(out),
          timer(s, PeriodicTimer::bind<&Actor::fire>(this), 1s, 40ms, rng.next()) {}
    void fire() {
      out.emplace_back(id, sim.now().time_since_epoch().count());
      sim.scheduleAfter(rng.interArrival(5.0), [this] { out.emplace_back(-id, sim.now().time_since_epoch().count()); });
    }
    Simulator& sim;
    int id;
    RandomStream rng;
    std::vector<std::pair<int, std::int64_t>>& out;
    PeriodicTimer timer;
  };
  std::vector<std::unique_ptr<Actor>> actors;
  for (int i = 0; i < actorCount; ++i) {
    actors.push_back(std::make_unique<Actor>(sim, i, seed, out));
    actors.back()->timer.start(TimePoint{actors.back()->rng.uniformDuration(0s, 1s)});
  }
  sim.runUntil(TimePoint{length});
  return out;
}

TEST_P(SimulatorTest, SameSeedSameEventOrderBitForBit) {
  const auto a = trace(42, GetParam());
  const auto b = trace(42, GetParam());
  const auto c = trace(43, GetParam());
  ASSERT_GT(a.size(), 10000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

INSTANTIATE_TEST_SUITE_P(Calendars, SimulatorTest, ::testing::Values(EventQueueOptions{}, kTinyCalendar),
                         [](const auto& info) { return info.index == 0 ? "Default" : "Tiny"; });

TEST(SimulatorOrder, IndependentOfCalendarGeometry) {
  EXPECT_EQ(trace(9, EventQueueOptions{}), trace(9, kTinyCalendar));
  EXPECT_EQ(trace(9, EventQueueOptions{}), trace(9, {.bucketWidthLog2 = 30, .bucketCountLog2 = 1}));
}

// Busy buckets (hundreds of events per 16.8 ms, or all of them in 1 s buckets) are
// radix-sorted; tiny buckets use the comparison sort. Same order either way.
TEST(SimulatorOrder, RadixSortedBucketsGiveTheSameOrder) {
  const auto tiny = trace(5, kTinyCalendar, 20000, 3s);
  ASSERT_GT(tiny.size(), 100000u);
  EXPECT_EQ(tiny, trace(5, EventQueueOptions{}, 20000, 3s));
  EXPECT_EQ(tiny, trace(5, {.bucketWidthLog2 = 30, .bucketCountLog2 = 1}, 20000, 3s));
  EXPECT_EQ(tiny, trace(5, {.bucketWidthLog2 = 40, .bucketCountLog2 = 1}, 20000, 3s));
}

TEST(PeriodicTimerConfig, RejectsNonPositivePeriodAndNegativeJitter) {
  VirtualSimulator sim;
  const PeriodicTimer::Action noop{[](void*) {}, nullptr};
  try {
    PeriodicTimer t(sim, noop, 0s);
    FAIL() << "zero period accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "period");
  }
  EXPECT_THROW(PeriodicTimer(sim, noop, -1s), ConfigError);
  try {
    PeriodicTimer t(sim, noop, 1s, -1ms);
    FAIL() << "negative jitter accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "jitter");
  }
  PeriodicTimer ok(sim, noop, 1s);
  EXPECT_THROW(ok.setPeriod(0s, 0s), ConfigError);
}

TEST(EventQueueConfig, RejectsBadGeometry) {
  try {
    EventQueue q({.bucketWidthLog2 = 24, .bucketCountLog2 = 0});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "bucketCountLog2");
  }
  EXPECT_THROW(EventQueue({.bucketWidthLog2 = -1}), ConfigError);
}

// A late virtual clock stands in for a generator slower than its schedule.
TEST(VirtualSimulatorLag, EventsThatRunLateRecordTheirLag) {
  VirtualSimulator sim;
  int ran = 0;
  for (int i = 1; i <= 10; ++i) {
    sim.scheduleAt(at(Duration{i * 1ms}), [&] {
      ++ran;
      sim.virtualClock().advance(3ms);  // each event "costs" 3 ms of generator time
    });
  }
  sim.run();
  EXPECT_EQ(ran, 10);
  EXPECT_EQ(sim.stats().lag.count(), 10u);
  EXPECT_EQ(sim.stats().lag.min(), 0u);
  // The 10th event was due at 10 ms and ran at 1 + 9 * 3 = 28 ms.
  EXPECT_EQ(sim.stats().lag.max(), std::uint64_t{18'000'000});
}

// Paced mode over a clock the test controls: the idle hook plays the network poll and
// moves time forward, so no wall-clock waiting happens.
TEST(PacedSimulator, WaitsThroughTheIdleHookAndRunsEventsOnTime) {
  VirtualClock wall;
  PacedSimulator sim(wall);
  EXPECT_EQ(sim.mode(), SimulatorMode::kPaced);
  std::vector<TimePoint> deadlines;
  std::vector<TimePoint> fired;
  int polls = 0;
  sim.setIdleHook([&](TimePoint deadline) {
    deadlines.push_back(deadline);
    ++polls;
    // A response arrives halfway to the deadline and its handler schedules work.
    const TimePoint half = wall.now() + (deadline - wall.now()) / 2;
    wall.advanceTo(polls == 1 ? half : deadline);
    if (polls == 1) {
      EXPECT_EQ(sim.now(), half);  // inside the hook now() is the actual time
      sim.scheduleAfter(1ms, [&] { fired.push_back(sim.now()); });
    }
  });
  sim.scheduleAt(at(100ms), [&] { fired.push_back(sim.now()); });
  sim.runUntil(at(200ms));
  EXPECT_EQ(fired, (std::vector<TimePoint>{at(51ms), at(100ms)}));
  EXPECT_EQ(deadlines.front(), at(100ms));
  EXPECT_EQ(sim.now(), at(200ms));
  EXPECT_GE(wall.now(), at(200ms) - 1ns);
}

TEST(PacedSimulator, BehindScheduleRunsBestEffortAndRecordsLag) {
  VirtualClock wall;
  PacedSimulator sim(wall);
  std::vector<TimePoint> seen;
  sim.scheduleAt(at(1ms), [&] {
    seen.push_back(sim.now());
    wall.advance(10ms);
  });
  sim.scheduleAt(at(2ms), [&] { seen.push_back(sim.now()); });
  sim.run();
  // The second event keeps its scheduled time as now() but ran 9 ms late.
  EXPECT_EQ(seen, (std::vector<TimePoint>{at(1ms), at(2ms)}));
  EXPECT_EQ(sim.stats().lag.max(), std::uint64_t{9'000'000});
}

TEST(SimulatorRunning, TrueOnlyInsideTheLoop) {
  VirtualSimulator sim;
  EXPECT_FALSE(sim.running());
  bool inside = false;
  sim.scheduleAfter(std::chrono::seconds(1), [&] { inside = sim.running(); });
  sim.runUntil(TimePoint{std::chrono::seconds(2)});
  EXPECT_TRUE(inside);
  EXPECT_FALSE(sim.running());
}

}  // namespace
}  // namespace cpscale::engine
