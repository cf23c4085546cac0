#include "sim/scenario/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "sim/common/error.h"
#include "test/support/scenario_files.h"

namespace cpscale::scenario {
namespace {
namespace fs = std::filesystem;

const char* kMinimal =
    "apiVersion: cpscale.io/v1alpha1\n"
    "kind: Scenario\n"
    "name: t\n"
    "duration: 30s\n"
    "workloads:\n"
    "  - kind: kubelets\n"
    "    name: fleet\n"
    "    count: 10\n"
    "gates:\n"
    "  - write_qps{resource=leases} <= 600\n"
    "  - expr: lease_write_share >= 0.5\n";

class ScenarioTest : public testing::ScenarioFileTest {};

TEST_F(ScenarioTest, ShippedScenariosLoad) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(CPSCALE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path());
    Scenario s = loadScenario(entry.path());
    EXPECT_EQ(s.name + ".yaml", entry.path().filename().string());
    EXPECT_FALSE(s.workloads.empty());
    EXPECT_GT(s.duration.count(), 0);
    ++n;
  }
  EXPECT_GE(n, 6) << "smoke, node-bound, node-bound-realistic, churn-bound, state-bound and state-per-kind must ship";
}

TEST_F(ScenarioTest, ShippedIndexScenariosEachStepOneAxis) {
  std::map<std::string, std::string> axisOf;
  for (const auto& entry : fs::directory_iterator(fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "index")) {
    SCOPED_TRACE(entry.path());
    Scenario s = loadScenario(entry.path());
    ASSERT_TRUE(s.capacity.has_value());
    EXPECT_EQ(s.capacity->axis, entry.path().stem().string());
    EXPECT_FALSE(s.capacity->gates.empty());
    EXPECT_GT(capacityLadder(*s.capacity).size(), 2u);
    axisOf[s.capacity->axis] = s.capacity->knob;
  }
  EXPECT_EQ(axisOf, (std::map<std::string, std::string>{{"node", "workloads.fleet.count"},
                                                        {"churn", "workloads.sessions.sessionsPerMinute"},
                                                        {"state", "workloads.platform.objectsPerKind"}}));
}

TEST_F(ScenarioTest, CapacityBlockIsValidatedNamingTheField) {
  const std::string base = std::string(kMinimal);
  auto withCapacity = [&](const std::string& block) { return base + "capacity:\n" + block; };
  // Defaults: the axis from the workload's kind, hold = duration, the scenario's gates.
  Scenario s = loadScenario(write(withCapacity("  knob: workloads.fleet.count\n  start: 100\n  max: 800\n")));
  ASSERT_TRUE(s.capacity);
  EXPECT_EQ(s.capacity->axis, "node");
  EXPECT_EQ(s.capacity->unit, "nodes");
  EXPECT_EQ(s.capacity->field, "count");
  EXPECT_EQ(s.capacity->hold, std::chrono::seconds(30));
  EXPECT_EQ(s.capacity->gates.size(), 2u);
  EXPECT_EQ(capacityLadder(*s.capacity), (std::vector<double>{100, 200, 400, 800}));

  std::string e = errorOf(withCapacity("  knob: duration\n  start: 1\n  max: 2\n"));
  EXPECT_NE(e.find("field 'capacity.knob'"), std::string::npos) << e;
  EXPECT_NE(e.find("workloads.<name>.<field>"), std::string::npos) << e;
  e = errorOf(withCapacity("  knob: workloads.nodes.count\n  start: 1\n  max: 2\n"));
  EXPECT_NE(e.find("no workload named 'nodes' (the scenario has fleet)"), std::string::npos) << e;
  e = errorOf(withCapacity("  knob: workloads.fleet.nodeImages\n  start: 10\n  max: 20\n"));
  EXPECT_NE(
      e.find("field 'capacity.knob': 'nodeImages' of this kubelets workload cannot grow in place (it can: count)"),
      std::string::npos)
      << e;
  e = errorOf(withCapacity("  knob: workloads.fleet.count\n  start: 10\n  factor: 1\n  max: 20\n"));
  EXPECT_NE(e.find("field 'capacity.factor': must be > 1"), std::string::npos) << e;
  e = errorOf(withCapacity("  knob: workloads.fleet.count\n  start: 10\n  max: 5\n"));
  EXPECT_NE(e.find("field 'capacity.max': must be >= start"), std::string::npos) << e;
  e = errorOf(withCapacity("  knob: workloads.fleet.count\n  start: 10\n  max: 20\n  axis: disk\n"));
  EXPECT_NE(e.find("'disk' is not an axis"), std::string::npos) << e;
  e = errorOf(withCapacity("  knob: workloads.fleet.count\n  start: 10\n  max: 20\n  gates: [\"capacity >> 3\"]\n"));
  EXPECT_NE(e.find("capacity.gates[0]"), std::string::npos) << e;
  // --set reaches the block like any field.
  s = loadScenario(write(withCapacity("  knob: workloads.fleet.count\n  start: 100\n  max: 800\n")),
                   {{"capacity.max", "300"}});
  EXPECT_EQ(capacityLadder(*s.capacity), (std::vector<double>{100, 200, 300}));
}

TEST_F(ScenarioTest, CapacityLadderOfMoreThanAHundredStepsIsAConfigError) {
  const std::string base = std::string(kMinimal) + "capacity:\n  knob: workloads.fleet.count\n";
  // This ladder (about 7e9 steps) used to be built step by step until memory ran out.
  std::string e = errorOf(base + "  start: 1\n  factor: 1.0000001\n  max: 1e300\n");
  EXPECT_NE(e.find("field 'capacity.max': start 1, factor 1.0000001 and max 1e300 make a ladder of more than 100 "
                   "steps (raise factor or lower max)"),
            std::string::npos)
      << e;
  e = errorOf(base + "  start: 1e-300\n  max: 1e300\n");  // max / start overflows to inf
  EXPECT_NE(e.find("start 1e-300, factor 2 and max 1e300 make a ladder of more than 100 steps"), std::string::npos)
      << e;
  // The longest ladder allowed: 1, 2, 4, ..., 2^98, then max (2^99 is 6.3e29).
  Scenario s = loadScenario(write(base + "  start: 1\n  max: 6e29\n"));
  ASSERT_TRUE(s.capacity);
  EXPECT_EQ(capacityLadder(*s.capacity).size(), 100u);
  e = errorOf(base + "  start: 1\n  max: 1e30\n");
  EXPECT_NE(e.find("more than 100 steps"), std::string::npos) << e;
}

TEST_F(ScenarioTest, ReadsFieldsAndGates) {
  Scenario s = loadScenario(write(kMinimal));
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.duration, std::chrono::seconds(30));
  ASSERT_EQ(s.workloads.size(), 1u);
  EXPECT_EQ(s.workloads[0]->kind(), "kubelets");
  EXPECT_EQ(s.workloads[0]->name(), "fleet");
  ASSERT_EQ(s.gates.size(), 2u);
  EXPECT_EQ(s.gates[1].figure, "lease_write_share");
  EXPECT_EQ(s.effective["workloads"][0]["count"], 10);
}

TEST_F(ScenarioTest, OverridesByNameIndexAndNewKey) {
  Scenario s = loadScenario(write(kMinimal), {parseOverride("workloads.fleet.count=500"), parseOverride("duration=2m"),
                                              parseOverride("seed=7")});
  EXPECT_EQ(s.effective["workloads"][0]["count"], 500);
  EXPECT_EQ(s.duration, std::chrono::minutes(2));
  EXPECT_EQ(s.seed, 7u);
  Scenario t = loadScenario(write(kMinimal), {parseOverride("workloads[0].count=42")});
  EXPECT_EQ(t.effective["workloads"][0]["count"], 42);
}

TEST_F(ScenarioTest, OverridesAreValidatedLikeTheFile) {
  std::string e = errorOf(kMinimal, {parseOverride("duration=forever")});
  EXPECT_NE(e.find("field 'duration'"), std::string::npos) << e;
  e = errorOf(kMinimal, {parseOverride("durashun=10s")});
  EXPECT_NE(e.find("field 'durashun': unknown field"), std::string::npos) << e;
  e = errorOf(kMinimal, {parseOverride("workloads.nofleet.count=1")});
  EXPECT_NE(e.find("no item named 'nofleet'"), std::string::npos) << e;
  EXPECT_NE(e.find("fleet"), std::string::npos) << e;
  e = errorOf(kMinimal, {parseOverride("workloads[3].count=1")});
  EXPECT_NE(e.find("has 1 items"), std::string::npos) << e;
  EXPECT_THROW(parseOverride("novalue"), ConfigError);
}

// A variation of a parsed scenario changes what it sets, keeps the rest (the user's
// --set included) and leaves the scenario it varies as it was, without the file.
TEST_F(ScenarioTest, AVariationChangesWhatItSetsAndNotTheBase) {
  const fs::path file = write(kMinimal);
  const Scenario base = loadScenario(file, {parseOverride("seed=7")});
  fs::remove(file);  // not read again
  const Scenario v = vary(base, Variation()
                                    .setKnob("workloads.fleet.count", 500)
                                    .setDuration(std::chrono::minutes(2))
                                    .setWarmup(std::chrono::milliseconds(45500)));
  EXPECT_EQ(v.effective["workloads"][0]["count"], 500);
  EXPECT_EQ(v.duration, std::chrono::minutes(2));
  EXPECT_EQ(v.warmup, std::chrono::milliseconds(45500));
  EXPECT_EQ(v.effective["duration"], "120s");
  EXPECT_EQ(v.effective["warmup"], "45.5s");
  EXPECT_EQ(v.seed, 7u);
  EXPECT_EQ(v.source, base.source);
  ASSERT_EQ(v.workloads.size(), 1u);
  EXPECT_NE(v.workloads[0].get(), base.workloads[0].get());  // workloads of its own
  // Nothing else moved.
  nlohmann::json rest = v.effective, was = base.effective;
  for (auto* j : {&rest, &was})
    for (const char* key : {"workloads", "duration", "warmup"}) j->erase(key);
  EXPECT_EQ(rest, was);
  EXPECT_EQ(rest["workloads"], nullptr);
  // The base is as it was.
  EXPECT_EQ(base.effective["workloads"][0]["count"], 10);
  EXPECT_EQ(base.duration, std::chrono::seconds(30));
  EXPECT_EQ(base.warmup, std::chrono::seconds(0));
  // A variation of a variation keeps the first's; a file rewritten since is not read.
  std::ofstream(file) << "name: other\n";
  const Scenario w = vary(v, Variation().setKnob("workloads[0].count", 42));
  EXPECT_EQ(w.name, "t");
  EXPECT_EQ(w.effective["workloads"][0]["count"], 42);
  EXPECT_EQ(w.duration, std::chrono::minutes(2));
  EXPECT_EQ(vary(base, {}).effective, base.effective);
}

TEST_F(ScenarioTest, AVariationIsValidatedNamingTheFileLineAndField) {
  const Scenario base = loadScenario(write(kMinimal));
  auto errorOfVariation = [&](const Variation& v) -> std::string {
    try {
      vary(base, v);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  std::string e = errorOfVariation(Variation().setKnob("workloads.nofleet.count", 5));
  EXPECT_NE(e.find(base.source + ": field 'workloads.nofleet.count': no item named 'nofleet'"), std::string::npos) << e;
  e = errorOfVariation(Variation().setKnob("workloads.fleet.cnt", 5));
  EXPECT_NE(e.find("field 'workloads[0].cnt': unknown field"), std::string::npos) << e;
  e = errorOfVariation(Variation().setKnob("workloads.fleet.count", 2.5));
  EXPECT_NE(e.find("field 'workloads[0].count'"), std::string::npos) << e;
  // A fault outside the varied window is named at its line in the file.
  const Scenario faulty =
      loadScenario(write("name: t\nduration: 60s\nworkloads:\n  - kind: kubelets\n    count: 1\nfaults:\n"
                         "  - kill: kube-apiserver-0\n    at: 20s\n"));
  try {
    vary(faulty, Variation().setDuration(std::chrono::seconds(10)));
    ADD_FAILURE() << "a fault at 20s of a 10s window";
  } catch (const ConfigError& x) {
    EXPECT_NE(std::string(x.what()).find(".yaml:8: field 'faults[0].at': is not inside the steady window"),
              std::string::npos)
        << x.what();
  }
  // One built in code was parsed from nothing.
  EXPECT_THROW(vary(Scenario{}, {}), std::logic_error);
}

TEST_F(ScenarioTest, ErrorsNameFileLineAndField) {
  std::string e = errorOf("name: t\nduration: 10\nworkloads: []\n");
  EXPECT_NE(e.find("ErrorsNameFileLineAndField.yaml:2: field 'duration'"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\nworkloads: []\n");
  EXPECT_NE(e.find(":3: field 'workloads': at least one workload"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\nworkloads:\n  - kind: teleporters\n");
  EXPECT_NE(e.find(":4"), std::string::npos) << e;
  EXPECT_NE(e.find("teleporters"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\nworkloads:\n  - kind: kubelets\n    count: 1\ngates:\n  - \"write_qps ~ 3\"\n");
  EXPECT_NE(e.find(":7: field 'gates[0]'"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\nworkers: 0\nworkloads:\n  - kind: kubelets\n    count: 1\n");
  EXPECT_NE(e.find(":3: field 'workers': must be between 1 and 64"), std::string::npos) << e;
  e = errorOf(
      "name: t\nduration: 10s\nworkloads:\n  - kind: kubelets\n    count: 1\n  - kind: kubelets\n    count: 2\n");
  EXPECT_NE(e.find("duplicate workload name"), std::string::npos) << e;
}

TEST_F(ScenarioTest, YamlSyntaxErrorsNameFileAndLine) {
  std::string e = errorOf("name: t\nduration: 10s\nworkloads: [\n  - kind: kubelets\n");
  EXPECT_NE(e.find("YamlSyntaxErrorsNameFileAndLine.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\n  bad: indent\n");
  EXPECT_NE(e.find("YamlSyntaxErrorsNameFileAndLine.yaml:3:6: invalid YAML"), std::string::npos) << e;
}

TEST_F(ScenarioTest, BadNumbersAreConfigErrorsNamingTheField) {
  const std::string fleet = "workloads:\n  - kind: kubelets\n    count: 1\n";
  // A NaN passes every `q <= 0 || q >= 1` style check: it must be refused as such.
  std::string e = errorOf("name: t\nduration: 10s\ndriver:\n  lagQuantile: .nan\n" + fleet);
  EXPECT_NE(e.find(":4: field 'driver.lagQuantile': expected a finite number"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\ndriver:\n  lagQuantile: 1e999\n" + fleet);
  EXPECT_NE(e.find(":4: field 'driver.lagQuantile'"), std::string::npos) << e;
  // A duration whose number is past long double's range (std::stold threw).
  e = errorOf("name: t\nduration: 1" + std::string(5000, '0') + "s\n" + fleet);
  EXPECT_NE(e.find(":2: field 'duration'"), std::string::npos) << e;
  e = errorOf("name: t\nduration: 10s\n" + fleet + "gates:\n  - x <= 1e999\n");
  EXPECT_NE(e.find(":7: field 'gates[0]': threshold '1e999'"), std::string::npos) << e;
}

TEST_F(ScenarioTest, SetValuesWithBadYamlOrNumbersAreConfigErrors) {
  // Syntax errors in --set values, at a map key and at a list index.
  std::string e = errorOf(kMinimal, {parseOverride("duration=[10s")});
  EXPECT_NE(e.find("--set: field 'duration': value '[10s' is not valid YAML"), std::string::npos) << e;
  e = errorOf(kMinimal, {parseOverride("gates[0]={x: [")});
  EXPECT_NE(e.find("--set: field 'gates[0]': value '{x: [' is not valid YAML"), std::string::npos) << e;
  e = errorOf(kMinimal, {parseOverride("gates[0]=x <= 1e999")});
  EXPECT_NE(e.find("field 'gates[0]': threshold '1e999'"), std::string::npos) << e;
  e = errorOf(kMinimal, {parseOverride("driver.lagQuantile=.nan")});
  EXPECT_NE(e.find("field 'driver.lagQuantile': expected a finite number"), std::string::npos) << e;
}

}  // namespace
}  // namespace cpscale::scenario

namespace cpscale::scenario {
namespace {

TEST_F(ScenarioTest, FaultsAreReadAndCheckedAgainstTheSteadyWindow) {
  const std::string head = "name: t\nduration: 60s\nworkloads:\n  - kind: kubelets\n    count: 1\nfaults:\n";
  Scenario s = loadScenario(write(head + "  - kill: kube-apiserver-0\n    at: 20s\n    restartAfter: 10s\n"
                                         "  - stop: etcd-main\n    at: 40s\n    for: 5s\n"));
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_EQ(s.faults[0].action, FaultSpec::Action::kKill);
  EXPECT_EQ(s.faults[0].member, "kube-apiserver-0");
  EXPECT_EQ(s.faults[0].at, std::chrono::seconds(20));
  EXPECT_EQ(s.faults[0].restartAfter, std::chrono::seconds(10));
  EXPECT_EQ(s.faults[1].action, FaultSpec::Action::kStop);
  EXPECT_EQ(s.faults[1].stopFor, std::chrono::seconds(5));
  EXPECT_EQ(s.faults[1].path, "faults[1]");
  // Each mistake names its line and field.
  std::string e = errorOf(head + "  - kill: kube-apiserver-0\n    stop: etcd-main\n    at: 1s\n");
  EXPECT_NE(e.find(":7: field 'faults[0]': give exactly one of kill"), std::string::npos) << e;
  e = errorOf(head + "  - stop: etcd-main\n    at: 1s\n");
  EXPECT_NE(e.find("field 'faults[0].for'"), std::string::npos) << e;
  e = errorOf(head + "  - kill: etcd-main\n    at: 60s\n");
  EXPECT_NE(e.find(":8: field 'faults[0].at': is not inside the steady window"), std::string::npos) << e;
  e = errorOf(head + "  - kill: etcd-main\n    at: 1s\n    for: 2s\n");
  EXPECT_NE(e.find("field 'faults[0].for'"), std::string::npos) << e;
}

}  // namespace
}  // namespace cpscale::scenario
