// A workload kind registered in one place (workloads/kind.h) is seen everywhere a kind
// is asked for: scenario loading (its entry, its knob's axis and unit, gates on its own
// figures), its figures from its summary, the job's role, the headline's axes, and a
// run of it on the model in virtual time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "reports/headline.h"
#include "sim/calibration/calibration_file.h"
#include "sim/common/error.h"
#include "sim/engine/periodic_timer.h"
#include "sim/kube/rbac.h"
#include "sim/metrics/figures.h"
#include "sim/run/job_manifest.h"
#include "sim/run/simulate.h"
#include "sim/run/workload_figures.h"
#include "sim/scenario/scenario.h"
#include "workloads/kind.h"
#include "workloads/setup.h"

namespace cpscale::run {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// "beacons": every actor writes one ConfigMap each `interval` into the run's namespace.
struct BeaconParams {
  std::string name = "beacons";
  double perSecond = 1;
};

std::string beaconNamespace(const std::string& runId, const std::string& name) {
  return "cpscale-" + runId + "-" + name;
}

class BeaconInstance final : public workloads::WorkloadInstance {
 public:
  BeaconInstance(workloads::WorkloadContext& ctx, const BeaconParams& p)
      : ctx_(ctx),
        p_(p),
        timer_(
            ctx.sim, engine::PeriodicTimer::bind<&BeaconInstance::beacon>(this),
            std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(1 / ctx.share(p.perSecond)))) {
    timer_.start(ctx.sim.now());
    ctx.setupDone();
  }
  void stop() override { timer_.stop(); }
  json summary() const override { return {{"writes", writes_}}; }

 private:
  void beacon() {
    const json object = {{"apiVersion", "v1"},
                         {"kind", "ConfigMap"},
                         {"metadata",
                          {{"name", "beacon-" + std::to_string(ctx_.workerIndex()) + "-" + std::to_string(sent_++)},
                           {"labels", ctx_.labels(p_.name)}}}};
    ctx_.api.callAsync(kube::ApiRequest::create(
                           kube::ResourceRef(kube::gvr::kConfigMaps).in(beaconNamespace(ctx_.runId, p_.name)), object),
                       [this](kube::ApiResult r) {
                         if (r.ok()) ++writes_;
                       });
  }
  workloads::WorkloadContext ctx_;  // a copy: the caller's lives only through start()
  BeaconParams p_;
  engine::PeriodicTimer timer_;
  std::uint64_t sent_ = 0, writes_ = 0;
};

class Beacons final : public workloads::Workload {
 public:
  explicit Beacons(BeaconParams p) : p_(std::move(p)) {}
  std::string kind() const override { return "beacons"; }
  std::string name() const override { return p_.name; }
  void prepare(kube::ApiClient& api, engine::Clock&, const std::string& runId) override {
    workloads::ensureNamespace(api, beaconNamespace(runId, p_.name), runId, p_.name);
  }
  std::unique_ptr<workloads::WorkloadInstance> start(workloads::WorkloadContext& ctx) override {
    return std::make_unique<BeaconInstance>(ctx, p_);
  }
  std::vector<kube::GroupVersionResource> resources() const override { return {kube::gvr::kConfigMaps}; }
  std::vector<std::string> growableFields() const override { return {}; }
  bool loadsSteadyWindow() const override { return true; }
  std::string whyNotMeasured(const std::string& figure) const override {
    return workloads::notOwnFigure(kind(), figure);
  }

 private:
  BeaconParams p_;
};

const workloads::WorkloadKind& beaconsKind() {
  static const workloads::WorkloadKind k{
      .name = "beacons",
      .axis = "state",
      .knobs = {{"perSecond", "beacons/s"}},
      .figureNames = {"beacon_writes"},
      .ownsFamily = [](std::string_view f) { return f.starts_with("beacon_"); },
      .read = [](const YamlField& spec) -> workloads::WorkloadPtr {
        spec.expectMap({"kind", "name", "perSecond"});
        BeaconParams p;
        if (auto f = spec.get("name")) p.name = f->asString();
        if (auto f = spec.get("perSecond")) p.perSecond = f->asDouble();
        if (!(p.perSecond > 0)) throw spec.require("perSecond").error("must be > 0");
        return std::make_unique<Beacons>(p);
      },
      .grant = [](const workloads::Workload&, kube::RuleSet& g) { g.add(kube::gvr::kConfigMaps, {"create"}); },
      .figures = [](workloads::SummaryFigures& f) { f.add("beacon_writes", f.number("writes")); },
  };
  return k;
}

class WorkloadKindTest : public ::testing::Test {
 protected:
  workloads::KindRegistration registration_{beaconsKind()};
  fs::path dir_ = fs::temp_directory_path() / ("cpscale-kind-test-" + std::to_string(::getpid()));
  void TearDown() override { fs::remove_all(dir_); }

  fs::path scenario(const std::string& workloadsYaml, const std::string& gates = "") {
    fs::create_directories(dir_);
    const fs::path p = dir_ / "beacons.yaml";
    std::ofstream(p) << "apiVersion: cpscale.io/v1alpha1\nkind: Scenario\nname: beacons\nduration: 20s\n"
                     << "warmup: 0s\nworkloads:\n"
                     << workloadsYaml << gates;
    return p;
  }
};

TEST_F(WorkloadKindTest, ScenarioLoadingReadsTheEntryAndKnowsItsAxisUnitAndFigures) {
  const auto s = scenario::loadScenario(
      scenario("  - {kind: beacons, name: pings, perSecond: 4}\n", "gates:\n  - beacon_writes{workload=pings} > 0\n"),
      {});
  ASSERT_EQ(s.workloads.size(), 1u);
  EXPECT_EQ(s.workloads[0]->kind(), "beacons");
  EXPECT_EQ(s.workloads[0]->name(), "pings");
  EXPECT_EQ(scenario::axisOfKind("beacons"), "state");
  EXPECT_EQ(scenario::unitOfKnob("beacons", "perSecond"), "beacons/s");
  EXPECT_EQ(workloads::figureKindOf("beacon_writes"), "beacons");
  // Its reader's errors name the file, line and field, like a built-in kind's.
  try {
    scenario::loadScenario(scenario("  - {kind: beacons, perSecond: 0}\n"), {});
    FAIL() << "perSecond 0 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("perSecond"), std::string::npos) << e.what();
  }
  // A gate on a figure of its family that it does not report is refused when loading.
  EXPECT_THROW(scenario::loadScenario(scenario("  - {kind: beacons}\n", "gates:\n  - beacon_misses == 0\n"), {}),
               ConfigError);
}

TEST_F(WorkloadKindTest, UnknownKindsAreListedWithTheRegisteredOne) {
  try {
    scenario::loadScenario(scenario("  - {kind: beacon}\n"), {});
    FAIL() << "an unknown kind was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("known: kubelets, churn, dormant, beacons"), std::string::npos) << e.what();
  }
}

TEST_F(WorkloadKindTest, ItsFiguresComeFromItsSummaryAndAMissingNumberIsUnavailableNotZero) {
  std::vector<result::WorkloadSummary> ws{{"beacons", "pings", {{"writes", 7}}}, {"beacons", "quiet", json::object()}};
  const auto fs = workloadFigures(ws);
  const auto* pings = metrics::findFigure(fs, "beacon_writes", metrics::sortedLabels({{"workload", "pings"}}));
  ASSERT_NE(pings, nullptr);
  ASSERT_TRUE(pings->available());
  EXPECT_EQ(*pings->value, 7);
  EXPECT_EQ(pings->window, metrics::Window::kRun);
  const auto* quiet = metrics::findFigure(fs, "beacon_writes", metrics::sortedLabels({{"workload", "quiet"}}));
  ASSERT_NE(quiet, nullptr);
  EXPECT_FALSE(quiet->available());
  EXPECT_NE(quiet->unavailableReason.find("no 'writes'"), std::string::npos) << quiet->unavailableReason;
}

TEST_F(WorkloadKindTest, TheJobsRoleGrantsWhatTheKindSaysAndTheHeadlineShowsItsAxis) {
  const auto s = scenario::loadScenario(scenario("  - {kind: beacons}\n"), {});
  const auto rules = runRules(s.workloads);
  EXPECT_TRUE(kube::allows(rules, kube::requestAttributes("POST", "/api/v1/namespaces/x/configmaps")));
  EXPECT_FALSE(kube::allows(rules, kube::requestAttributes("POST", "/api/v1/namespaces/x/pods")));
  result::RunResult r;
  r.workloads.push_back({"beacons", "beacons", json::object()});
  EXPECT_EQ(reports::axesOfRun(r), std::vector<reports::Axis>{reports::Axis::kState});
}

TEST_F(WorkloadKindTest, TheModelRunsItInVirtualTime) {
  const fs::path file = scenario("  - {kind: beacons, perSecond: 2}\n", "gates:\n  - beacon_writes > 20\n");
  SimulateOptions so;
  so.calibration = calibration::readCalibration(fs::path(CPSCALE_SOURCE_DIR) / "profiles/calibration/default.json");
  so.run.runId = "kindtest";
  so.run.outDir = dir_ / "out";
  so.run.progress = false;
  const result::RunResult r = simulateScenario(file, {}, so);
  const auto* writes =
      metrics::findFigure(r.figures, "beacon_writes", metrics::sortedLabels({{"workload", "beacons"}}));
  ASSERT_NE(writes, nullptr);
  ASSERT_TRUE(writes->available()) << writes->unavailableReason;
  // 2 a second over the 20 s window and the setup before it: every one answered.
  EXPECT_GE(*writes->value, 40);
  EXPECT_EQ(writes->source, metrics::Source::kModel);
  ASSERT_EQ(r.gates.size(), 1u);
  EXPECT_TRUE(r.gates[0].passed);
}

}  // namespace
}  // namespace cpscale::run
