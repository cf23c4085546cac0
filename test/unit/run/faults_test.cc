// The fault injector on a virtual engine: each fault strikes, and each restart and
// resume is asked for, at its exact time; the incidents and figures are those of a live
// run, with the exact downtime.
#include "sim/run/faults.h"

#include <gtest/gtest.h>

#include <map>

#include "sim/engine/simulator_impl.h"

namespace cpscale::run {
namespace {

using namespace std::chrono_literals;
using engine::TimePoint;

// Members that become ready a fixed startup after their restart, as the model's do.
class FakeMembers final : public MemberFaults {
 public:
  FakeMembers(engine::Simulator& sim, engine::Duration startup) : sim_(sim), startup_(startup) {}
  std::vector<std::string> members() const override { return {"kube-apiserver-0", "etcd-main"}; }
  void kill(const std::string& m) override { log("kill " + m); }
  void restart(const std::string&, const std::function<bool()>&) override { FAIL() << "a blocking restart"; }
  void restartThen(const std::string& m, std::function<void()> ready) override {
    log("restart " + m);
    sim_.scheduleAfter(startup_, [this, m, ready = std::move(ready)] {
      log("ready " + m);
      ready();
    });
  }
  void pause(const std::string& m) override { log("pause " + m); }
  void resume(const std::string& m) override { log("resume " + m); }
  void markDown(const std::string& m) override { log("down " + m); }

  std::vector<std::pair<double, std::string>> events;

 private:
  void log(std::string what) {
    events.emplace_back(std::chrono::duration<double>(sim_.now().time_since_epoch()).count(), std::move(what));
  }
  engine::Simulator& sim_;
  engine::Duration startup_;
};

std::vector<scenario::FaultSpec> rehearsal() {
  scenario::FaultSpec kill;
  kill.action = scenario::FaultSpec::Action::kKill;
  kill.member = "kube-apiserver-0";
  kill.at = 10s;
  kill.restartAfter = 8s;
  kill.path = "faults[0]";
  scenario::FaultSpec stop;
  stop.action = scenario::FaultSpec::Action::kStop;
  stop.member = "etcd-main";
  stop.at = 40s;
  stop.stopFor = 4s;
  stop.path = "faults[1]";
  return {kill, stop};
}

const metrics::Figure* find(const std::vector<metrics::Figure>& fs, const std::string& name,
                            const std::string& member) {
  for (const auto& f : fs)
    for (const auto& [k, v] : f.labels)
      if (f.name == name && k == "member" && v == member) return &f;
  return nullptr;
}

TEST(FaultInjectorVirtual, FaultsStrikeAtTheirExactTimesAndTheirFiguresAreExact) {
  engine::VirtualSimulator sim;
  FakeMembers members(sim, 2500ms);
  FaultInjector injector(members, rehearsal(), sim);
  const TimePoint steadyStart = TimePoint{} + 5s;
  sim.scheduleAt(steadyStart, [&] { injector.start(sim.now()); });
  sim.runUntil(TimePoint{} + 70s);
  injector.finish();

  // Steady window from 5 s: the kill at 15 s, its restart at 23 s, ready 2.5 s later;
  // etcd frozen from 45 s to 49 s.
  using Log = std::vector<std::pair<double, std::string>>;
  EXPECT_EQ(members.events, (Log{{15, "kill kube-apiserver-0"},
                                 {23, "restart kube-apiserver-0"},
                                 {25.5, "ready kube-apiserver-0"},
                                 {45, "pause etcd-main"},
                                 {49, "resume etcd-main"}}));
  const auto figures = injector.figures();
  const metrics::Figure* down = find(figures, "fault_downtime_seconds", "kube-apiserver-0");
  ASSERT_TRUE(down && down->available());
  EXPECT_EQ(*down->value, 10.5);  // 8 s down + 2.5 s starting
  const metrics::Figure* restart = find(figures, "fault_restart_seconds", "kube-apiserver-0");
  ASSERT_TRUE(restart && restart->available());
  EXPECT_EQ(*restart->value, 2.5);
  const metrics::Figure* frozen = find(figures, "fault_downtime_seconds", "etcd-main");
  ASSERT_TRUE(frozen && frozen->available());
  EXPECT_EQ(*frozen->value, 4.0);
  EXPECT_EQ(find(figures, "fault_restart_seconds", "etcd-main"), nullptr);

  const auto incidents = injector.incidents(TimePoint{} + 70s);
  ASSERT_EQ(incidents.size(), 2u);
  EXPECT_EQ(incidents[0].kind, "fault");
  EXPECT_EQ(incidents[0].atSeconds, 15);
  EXPECT_EQ(incidents[0].untilSeconds, 25.5);
  EXPECT_EQ(incidents[0].detail,
            "kill: killed at 10s into the steady window, restart after 8s; ready again 10.5 s after it went down");
  EXPECT_EQ(incidents[1].atSeconds, 45);
  EXPECT_EQ(incidents[1].untilSeconds, 49);
  EXPECT_EQ(incidents[1].detail, "stop: frozen at 40s into the steady window for 4s; resumed after 4.0 s");
  EXPECT_EQ(injector.downAtEnd(), "");
}

TEST(FaultInjectorVirtual, WhatIsDueAfterTheRunEndedDoesNotHappen) {
  engine::VirtualSimulator sim;
  FakeMembers members(sim, 2500ms);
  FaultInjector injector(members, rehearsal(), sim);
  injector.start(sim.now());
  // The run ends 12 s in: killed at 10 s, its restart (18 s) and the freeze (40 s) never come.
  sim.runUntil(TimePoint{} + 12s);
  injector.finish();
  sim.runUntil(TimePoint{} + 70s);
  using Log = std::vector<std::pair<double, std::string>>;
  EXPECT_EQ(members.events, (Log{{10, "kill kube-apiserver-0"}}));
  EXPECT_EQ(injector.downAtEnd(), "kube-apiserver-0");
  const auto figures = injector.figures();
  const metrics::Figure* down = find(figures, "fault_downtime_seconds", "kube-apiserver-0");
  ASSERT_TRUE(down);
  EXPECT_FALSE(down->available());
  const auto incidents = injector.incidents(TimePoint{} + 12s);
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].untilSeconds, 12);
}

TEST(FaultInjectorVirtual, AReadinessAfterTheRunEndedIsNotCounted) {
  engine::VirtualSimulator sim;
  FakeMembers members(sim, 2500ms);
  FaultInjector injector(members, rehearsal(), sim);
  injector.start(sim.now());
  sim.runUntil(TimePoint{} + 19s);  // restarted at 18 s, ready at 20.5 s: after the end
  injector.finish();
  sim.runUntil(TimePoint{} + 21s);
  const auto figures = injector.figures();
  const metrics::Figure* down = find(figures, "fault_downtime_seconds", "kube-apiserver-0");
  ASSERT_TRUE(down);
  EXPECT_FALSE(down->available());
  EXPECT_NE(down->unavailableReason.find("still starting"), std::string::npos) << down->unavailableReason;
}

}  // namespace
}  // namespace cpscale::run
