// A gate on a figure the scenario can never produce is refused when the scenario
// loads, naming the gate's file:line; one that can be judged loads.
#include "sim/scenario/gate_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/common/error.h"
#include "test/support/scenario_files.h"

namespace cpscale::scenario {
namespace {
namespace fs = std::filesystem;

const std::string kHead = "apiVersion: cpscale.io/v1alpha1\nkind: Scenario\nname: t\nduration: 30s\n";
const std::string kIdle =
    "workloads:\n"
    "  - kind: dormant\n"
    "    name: platform\n"
    "    crdKinds: 1\n"
    "    objectsPerKind: 10\n";
const std::string kFleet =
    "workloads:\n"
    "  - kind: kubelets\n"
    "    name: fleet\n"
    "    count: 10\n";

class GateCheckTest : public testing::ScenarioFileTest {
 protected:
  // The ConfigError loading `body` (after the head) throws, or "" when it loads.
  std::string refusal(const std::string& body, const std::vector<Override>& o = {}) { return errorOf(kHead + body, o); }
};

TEST_F(GateCheckTest, AnIdlePopulationHasNoGeneratorHealthToJudge) {
  // The gate is on line 11 of the file (4 head lines, 5 workload lines, "gates:").
  const std::string e = refusal(kIdle + "gates:\n  - generator_limited == false\n");
  EXPECT_NE(e.find(":11: field 'gates[0]'"), std::string::npos) << e;
  EXPECT_NE(e.find("no workload sends anything on a schedule"), std::string::npos) << e;
  EXPECT_NE(refusal(kIdle + "gates:\n  - schedule_lag_p99 <= 1s\n"), "");
  EXPECT_NE(refusal(kIdle + "gates:\n  - client_latency_p99{resource=widgets,verb=POST} <= 1s\n"), "");
  // The setup window has the creations' latency; updates or relists load the steady one.
  EXPECT_EQ(refusal(kIdle + "gates:\n  - client_latency_p99{resource=widgets,verb=POST,window=setup} <= 1s\n"), "");
  EXPECT_EQ(refusal(kIdle + "    updatesPerSecond: 1\ngates:\n  - generator_limited == false\n"), "");
  EXPECT_EQ(refusal(kIdle + "    watchers: {perKind: 1, relistEvery: 30s}\ngates:\n  - generator_limited == false\n"),
            "");
  // A figure of the plane exists whatever the workloads.
  EXPECT_EQ(refusal(kIdle + "gates:\n  - max(apiserver_heap_inuse_bytes_peak) <= 1GiB\n"), "");
}

TEST_F(GateCheckTest, AWorkloadsOwnFiguresNeedThatWorkloadConfiguredToMeasureThem) {
  EXPECT_EQ(refusal(kIdle + "gates:\n  - dormant_objects_missing{workload=platform} == 0\n"), "");
  std::string e = refusal(kIdle + "gates:\n  - dormant_watchers_unsynced == 0\n");
  EXPECT_NE(e.find("opens no watchers"), std::string::npos) << e;
  EXPECT_EQ(refusal(kIdle + "    watchers: {perKind: 1}\ngates:\n  - dormant_watchers_unsynced == 0\n"), "");
  e = refusal(kIdle + "gates:\n  - dormant_objects_missing{workload=fleet} == 0\n");
  EXPECT_NE(e.find("no workload is named 'fleet' (the scenario's: platform)"), std::string::npos) << e;
  e = refusal(kFleet + "gates:\n  - dormant_objects_missing == 0\n");
  EXPECT_NE(e.find("the scenario has none"), std::string::npos) << e;
  e = refusal(kIdle + "gates:\n  - dormant_object_missing == 0\n");
  EXPECT_NE(e.find("reports no figure named dormant_object_missing"), std::string::npos) << e;
  e = refusal(kFleet +
              "  - kind: dormant\n    name: platform\n    crdKinds: 1\n    objectsPerKind: 1\n"
              "gates:\n  - nodes_not_ready_at_end{workload=platform} == 0\n");
  EXPECT_NE(e.find("workload 'platform' is of kind dormant"), std::string::npos) << e;
}

TEST_F(GateCheckTest, NodeFailureFiguresNeedNodesThatFailAndReturn) {
  EXPECT_EQ(refusal(kFleet + "gates:\n  - nodes_not_ready_at_end{workload=fleet} == 0\n"), "");
  EXPECT_EQ(refusal(kFleet + "gates:\n  - lease_renewals_missed{workload=fleet} == 0\n"), "");
  EXPECT_NE(refusal(kIdle + "gates:\n  - lease_renewals_missed == 0\n"), "");
  EXPECT_NE(refusal(kFleet + "gates:\n  - session_write_failures == 0\n"), "");
  std::string e = refusal(kFleet + "gates:\n  - node_not_ready_seconds_max <= 65s\n");
  EXPECT_NE(e.find("no node of fleet 'fleet' fails"), std::string::npos) << e;
  // 10 nodes x 5 % is under one node: none fails.
  EXPECT_NE(refusal(kFleet + "    failures: {fraction: 0.05, at: 5s}\ngates:\n  - node_not_ready_seconds_max <= 65s\n"),
            "");
  EXPECT_EQ(refusal(kFleet + "    failures: {fraction: 0.1, at: 5s}\ngates:\n  - node_not_ready_seconds_max <= 65s\n"),
            "");
  e = refusal(kFleet + "    failures: {fraction: 0.1, at: 5s}\ngates:\n  - node_ready_again_seconds_max <= 30s\n");
  EXPECT_NE(e.find("never return"), std::string::npos) << e;
  // An override is checked like the file: --set that removes the failures refuses.
  e = refusal(kFleet + "    failures: {fraction: 0.1, at: 5s}\ngates:\n  - node_not_ready_seconds_max <= 65s\n",
              {{"workloads.fleet.failures.fraction", "0"}});
  EXPECT_NE(e.find("fails"), std::string::npos) << e;
}

TEST_F(GateCheckTest, CapacityIsJudgedOnlyByASearchOnItsAxis) {
  const std::string capacity = "capacity:\n  knob: workloads.fleet.count\n  start: 10\n  max: 20\n";
  EXPECT_EQ(refusal(kFleet + capacity + "  gates: [\"write_qps <= 100\"]\ngates:\n  - capacity{axis=node} >= 10\n"),
            "");
  std::string e =
      refusal(kFleet + capacity + "  gates: [\"write_qps <= 100\"]\ngates:\n  - capacity{axis=state} >= 10\n");
  EXPECT_NE(e.find("searches the node axis, not state"), std::string::npos) << e;
  e = refusal(kFleet + "gates:\n  - capacity{axis=node} >= 10\n");
  EXPECT_NE(e.find("no capacity: block"), std::string::npos) << e;
  e = refusal(kFleet + capacity + "  gates: [\"capacity >= 3\"]\n");
  EXPECT_NE(e.find("a step holds by the figures of its own run"), std::string::npos) << e;

  // Loaded, a capacity scenario still cannot be run as one plain run: the command says
  // which command judges it.
  Scenario s = loadScenario(
      write(kHead + kFleet + capacity + "  gates: [\"write_qps <= 100\"]\ngates:\n  - capacity{axis=node} >= 10\n"));
  try {
    refuseCapacityGatesOutsideASearch(s);
    ADD_FAILURE() << "a plain run of a capacity gate was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cpscale capacity"), std::string::npos) << e.what();
    EXPECT_EQ(e.field(), "gates[0]");
  }
}

TEST_F(GateCheckTest, NotReadyTimingsNeedAPlaneWithTheNodeLifecycleController) {
  Scenario s =
      loadScenario(write(kHead + kFleet +
                         "    failures: {fraction: 0.1, at: 5s, returnAfter: 20s}\n"
                         "gates:\n  - nodes_not_ready_at_end == 0\n  - node_ready_again_seconds_max <= 30s\n"));
  controlplane::Profile classic;
  EXPECT_NO_THROW(checkGatesOnProfile(s, classic));
  controlplane::Profile bare;
  bare.name = "apiserver-only";
  bare.controllerManager.enabled = false;
  EXPECT_EQ(whyGateCannotBeJudgedOn(s.gates[0], bare), "");  // counted by the fleet's watch: 0 is a measurement
  try {
    checkGatesOnProfile(s, bare);
    ADD_FAILURE() << "a NotReady timing was accepted on a plane that marks no node NotReady";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "gates[1]");
    EXPECT_NE(std::string(e.what()).find("profile 'apiserver-only' runs no kube-controller-manager"), std::string::npos)
        << e.what();
  }
}

TEST_F(GateCheckTest, FaultFiguresNeedAFaultOnThatMember) {
  const std::string fault = "faults:\n  - kill: kube-apiserver-0\n    at: 5s\n    restartAfter: 5s\n";
  EXPECT_EQ(refusal(kFleet + fault + "gates:\n  - fault_downtime_seconds{member=kube-apiserver-0} <= 60s\n"), "");
  std::string e = refusal(kFleet + fault + "gates:\n  - fault_downtime_seconds{member=etcd-main} <= 60s\n");
  EXPECT_NE(e.find("no fault acts on etcd-main"), std::string::npos) << e;
  EXPECT_NE(refusal(kFleet + "gates:\n  - fault_downtime_seconds <= 60s\n"), "");
}

TEST_F(GateCheckTest, EveryShippedScenarioGatesOnlyOnWhatItCanMeasure) {
  int n = 0;
  for (const char* dir : {"scenarios", "scenarios/index"})
    for (const auto& entry : fs::directory_iterator(fs::path(CPSCALE_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".yaml") continue;
      SCOPED_TRACE(entry.path());
      Scenario s = loadScenario(entry.path());
      EXPECT_FALSE(s.gates.empty()) << "a shipped scenario says what it is judged by";
      for (const auto& g : s.gates) EXPECT_EQ(whyGateCannotBeJudged(g, s), "") << g.text;
      ++n;
    }
  EXPECT_GE(n, 11);
}

}  // namespace
}  // namespace cpscale::scenario
