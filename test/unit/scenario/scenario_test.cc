#include "sim/scenario/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/common/error.h"

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

class ScenarioTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& text) {
    fs::path p = fs::path(::testing::TempDir()) /
                 (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".yaml");
    std::ofstream(p) << text;
    return p;
  }
  std::string errorOf(const std::string& text, const std::vector<Override>& o = {}) {
    try {
      loadScenario(write(text), o);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

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
  e = errorOf("name: t\nduration: 10s\nworkloads:\n  - kind: kubelets\n    count: 1\n  - kind: kubelets\n    count: 2\n");
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
