// cpscale simulate through the real run (runner.h) on the model target, in virtual time:
// determinism, where every figure says it came from, and the sampling's arithmetic.
#include "sim/run/simulate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "reports/summary.h"
#include "sim/calibration/calibration_file.h"
#include "sim/calibration/validation.h"
#include "sim/metrics/figures.h"
#include "sim/model/calibration.h"

namespace cpscale::run {
namespace {
namespace fs = std::filesystem;

model::Calibration testCalibration() {
  using model::Param;
  model::Calibration c;
  c.measuredAt = "2026-12-01T00:00:00Z";
  c.host = "test-host";
  c.cpus = 2;
  c.kubernetesVersion = "v1.36.3";
  c.etcdVersion = "3.6.16";
  c.profile = "classic";
  c.source = "test calibration";
  c.hostCores = 2;
  c.sharedHost = true;
  c.apiserverIdleCores = Param::fixed(0.05);
  c.apiserverCpuLeaseWrite = Param::fixed(300e-6);
  c.apiserverCpuWrite = Param::fixed(600e-6);
  c.apiserverCpuCustomWrite = Param::fixed(600e-6);
  c.apiserverCpuEventWrite = Param::fixed(600e-6);
  c.apiserverCpuRead = Param::fixed(400e-6);
  c.apiserverCpuWatchEvent = Param::fixed(20e-6);
  c.etcdIdleCores = Param::fixed(0.02);
  c.etcdCpuPerProposal = Param::fixed(100e-6);
  c.generatorCpuPerRequest = Param::fixed(300e-6);
  c.latencyRead = Param::fixed(0.002);
  c.latencyWrite = Param::fixed(0.005);
  c.heapBaseBytes = Param::fixed(80e6);
  c.heapPerObject = Param::fixed(2000);
  c.heapPerObjectByte = Param::fixed(3);
  c.etcdDbBaseBytes = Param::fixed(20e6);
  c.etcdDbBytesPerWrite = Param::fixed(300);
  c.etcdFsyncSeconds = Param::fixed(0.002);
  return c;
}

class SimulateTest : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("cpscale-simulate-test-" + std::to_string(::getpid()));
  void TearDown() override {
    if (!std::getenv("KEEP")) fs::remove_all(dir_);
  }

  // A model run of the shipped test calibration into dir_/out.
  SimulateOptions options(const std::string& out, const std::string& profile = "") const {
    SimulateOptions so;
    so.calibration = testCalibration();
    if (!profile.empty()) so.profile = controlplane::loadProfile(fs::path(CPSCALE_SOURCE_DIR) / "profiles" / profile);
    so.run.runId = "simtest";
    so.run.outDir = dir_ / out;
    so.run.progress = false;
    return so;
  }
  static fs::path scenarioFile(const std::string& name) { return fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / name; }
  result::RunResult simulate(std::vector<scenario::Override> sets, const std::string& out,
                             const model::Calibration& cal = testCalibration(), std::optional<double> weight = {},
                             double maxActors = 1500, const std::string& profile = "") {
    SimulateOptions so = options(out, profile);
    so.calibration = cal;
    so.weight = weight;
    so.maxActors = maxActors;
    return simulateScenario(scenarioFile("node-bound.yaml"), sets, so);
  }
  // What the model cannot run is refused before anything starts, naming the field.
  void expectRefused(const std::string& scenario, const SimulateOptions& so, const std::string& field,
                     const std::string& says) {
    try {
      simulateScenario(scenarioFile(scenario), {}, so);
      ADD_FAILURE() << scenario << " ran on the model";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), field);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(so.run.outDir / result::kResultFile));
  }
  static double value(const result::RunResult& r, std::string_view name, const metrics::Labels& labels = {}) {
    // The steady window's (setup has figures of the same names).
    std::vector<metrics::Figure> steady;
    for (const auto& f : r.figures)
      if (f.window == metrics::Window::kSteady) steady.push_back(f);
    const metrics::Figure* f = metrics::findFigure(steady, name, labels);
    if (f == nullptr || !f->available()) {
      ADD_FAILURE() << name << " missing or unavailable" << (f ? ": " + f->unavailableReason : std::string());
      return -1;
    }
    return *f->value;
  }
  // A figure of the whole run (the workloads' own: node lifecycle timings, retries).
  static std::optional<double> runValue(const result::RunResult& r, std::string_view name,
                                        const metrics::Labels& labels = {}) {
    std::vector<metrics::Figure> run;
    for (const auto& f : r.figures)
      if (f.window == metrics::Window::kRun) run.push_back(f);
    const metrics::Figure* f = metrics::findFigure(run, name, labels);
    if (f == nullptr || !f->available()) return std::nullopt;
    return *f->value;
  }
  static std::string failedGates(const result::RunResult& r) {
    std::string out;
    for (const auto& g : r.gates)
      if (!g.passed) out += g.gate.text + ": " + (g.measured ? std::to_string(*g.measured) : g.reason) + "\n";
    return out;
  }
};

TEST_F(SimulateTest, SameSeedGivesTheSameResultBitForBit) {
  std::vector<scenario::Override> sets{{"workloads.fleet.count", "120"}, {"duration", "40s"}};
  auto a = simulate(sets, "a");
  auto b = simulate(sets, "b");
  ASSERT_EQ(a.status, result::RunStatus::kCompleted) << a.statusDetail;
  auto ja = result::toJson(a), jb = result::toJson(b);
  // Only where and when it ran differ.
  ja.erase("environment");
  jb.erase("environment");
  EXPECT_EQ(ja.dump(), jb.dump());
  // Another seed is another run.
  sets.push_back({"seed", "7"});
  auto c = simulate(sets, "c");
  auto jc = result::toJson(c);
  jc.erase("environment");
  EXPECT_NE(ja.dump(), jc.dump());
}

// The run id names the run's objects, but the schedule is the seed's: another run of
// the same seed sends the same requests at the same instants and measures the same.
TEST_F(SimulateTest, AnotherRunIdOfTheSameSeedMeasuresTheSame) {
  const std::vector<scenario::Override> sets{{"workloads.fleet.count", "120"}, {"duration", "40s"}};
  auto a = simulate(sets, "a");
  SimulateOptions so = options("other");
  so.run.runId = "other07";  // as long as "simtest": the same bytes per object
  auto b = simulateScenario(scenarioFile("node-bound.yaml"), sets, so);
  ASSERT_EQ(a.status, result::RunStatus::kCompleted) << a.statusDetail;
  auto figures = [](const result::RunResult& r) {
    nlohmann::json j = result::toJson(r);
    return j["figures"].dump() + j["phases"].dump();
  };
  EXPECT_EQ(figures(a), figures(b));
}

// The validation starts the model's window when the live one started (the live
// controllers settle first): the window waits for that instant, then runs its length.
TEST_F(SimulateTest, TheWindowStartsNoEarlierThanAsked) {
  std::vector<scenario::Override> sets{{"workloads.fleet.count", "50"}, {"duration", "20s"}};
  const auto plain = simulate(sets, "plain");
  const result::Phase* early = result::findPhase(plain, "steady");
  ASSERT_NE(early, nullptr);
  ASSERT_LT(early->startSeconds, 30);
  SimulateOptions so = options("late");
  so.run.earliestSteadyStart = engine::TimePoint{std::chrono::seconds(30)};
  const auto late = simulateScenario(scenarioFile("node-bound.yaml"), sets, so);
  const result::Phase* steady = result::findPhase(late, "steady");
  ASSERT_NE(steady, nullptr);
  EXPECT_GE(steady->startSeconds, 30);
  EXPECT_LT(steady->startSeconds, 30.1);
  EXPECT_NEAR(steady->endSeconds - steady->startSeconds, 20, 0.1);
}

TEST_F(SimulateTest, EveryFigureSaysItCameFromTheModel) {
  auto cal = testCalibration();
  auto r = simulate({{"workloads.fleet.count", "200"}, {"duration", "60s"}}, "m", cal);
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_EQ(r.target.kind, "model");
  ASSERT_FALSE(r.figures.empty());
  for (const auto& f : r.figures) EXPECT_EQ(f.source, metrics::Source::kModel) << f.name;
  // The steady window is a window of the run, after setup, as live.
  ASSERT_NE(result::findPhase(r, "steady"), nullptr);
  EXPECT_TRUE(result::findPhase(r, "steady")->complete);
  // 200 kubelets renewing every leaseDurationSeconds/4 = 10 s: 20 lease PUTs a second.
  EXPECT_NEAR(value(r, "write_qps", {{"resource", "leases"}, {"verb", "PUT"}}), 20.0, 1.0);
  EXPECT_GT(value(r, "lease_write_share"), 0.5);
  EXPECT_EQ(r.model.value("weight", 0.0), 1.0);
  EXPECT_EQ(r.model.value("calibration", std::string()), "test calibration");
  // Its gates are evaluated as live: the scenario's lease share gate passes.
  ASSERT_FALSE(r.gates.empty());
}

TEST_F(SimulateTest, SampledActorsCountTheirWeight) {
  // 3,000 nodes with at most 1,000 simulated: weight 3, and still 300 lease PUTs a second.
  auto r = simulate({{"workloads.fleet.count", "3000"}, {"duration", "60s"}}, "s", testCalibration(), {}, 1000);
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_EQ(r.model.value("weight", 0.0), 3.0);
  EXPECT_EQ(r.model["sampledKnobs"].value("workloads.fleet.count", std::string()), "1000");
  EXPECT_NEAR(value(r, "write_qps", {{"resource", "leases"}, {"verb", "PUT"}}), 300.0, 15.0);
  // The nodes the plane holds are the fleet's, not the sample's.
  EXPECT_NEAR(value(r, "apiserver_objects", {{"resource", "nodes"}}), 3000, 30);
}

TEST_F(SimulateTest, CapacitySearchOnTheModelStopsWhereTheHostSaturates) {
  // Lease PUTs at ~10.7 ms of CPU each (apiserver, etcd and generator) on 2 shared
  // cores: ~185 renewals a second, ~1,850 nodes. 1,200 nodes (65 %) hold the PUT
  // leases p99 <= 1 s gate; at 2,400 the backlog grows by a quarter second each second.
  auto cal = testCalibration();
  cal.apiserverCpuLeaseWrite = model::Param::fixed(10e-3);
  SimulateOptions so;
  so.calibration = cal;
  so.run.runId = "simcap";
  so.run.outDir = dir_ / "cap";
  so.run.progress = false;
  auto search = simulateCapacity(fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "index" / "node.yaml",
                                 {{"capacity.start", "600"}, {"capacity.factor", "2"}, {"capacity.max", "4800"}}, so);
  ASSERT_EQ(search.steps.size(), 3u);
  EXPECT_TRUE(search.steps[0].held);
  EXPECT_TRUE(search.steps[1].held);
  EXPECT_FALSE(search.steps[2].held);
  ASSERT_TRUE(search.held.has_value());
  EXPECT_EQ(*search.held, 1200);
  EXPECT_EQ(search.limit, result::CapacityLimit::kServer);
  EXPECT_NE(search.brokeBy.find("client_latency_p99"), std::string::npos) << search.brokeBy;
}

TEST_F(SimulateTest, ASaturatedPlaneStillReportsItsFiguresAndAnOffPlaneGeneratorNeverLimits) {
  // 3,000 nodes renew 300 leases a second at 0.33 s of apiserver CPU each: 100 cores
  // asked of members with 1 core of their own, 100x overloaded once the renewals start
  // (registration, 6,000 creations at 0.6 ms, is over within seconds before that). The
  // backlog grows without end and requests are cut at the 60 s request timeout.
  SimulateOptions so = options("saturated");
  so.calibration.apiserverCpuLeaseWrite = model::Param::fixed(0.33);
  so.maxActors = 3000;
  so.dedicatedCores = 1;
  auto r = simulateScenario(
      scenarioFile("node-bound.yaml"),
      {{"workloads.fleet.count", "3000"}, {"workloads.fleet.registrationQps", "3000"}, {"duration", "120s"}}, so);
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  // Every scrape of the members was answered, so the server's figures are there.
  EXPECT_GT(value(r, "write_qps"), 0);
  EXPECT_GT(value(r, "lease_write_share"), 0.5);
  EXPECT_GT(value(r, "server_latency_p99", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}}),
            10);
  EXPECT_LT(value(r, "server_latency_p99", {{"group", ""}, {"resource", "//metrics"}, {"verb", "GET"}}), 0.01);
  // The clients saw the overload as latency, not as a generator that fell behind.
  EXPECT_GT(value(r, "client_latency_p99", {{"resource", "leases"}, {"verb", "PUT"}, {"measured_from", "scheduled"}}),
            10);
  EXPECT_EQ(value(r, "generator_limited"), 0);
  EXPECT_EQ(value(r, "generator_limited_by_concurrency"), 0);
  EXPECT_EQ(r.model.value("generator", std::string()), "off-plane");
  EXPECT_NE(reports::modelLine(r).find("never generator-limited"), std::string::npos) << reports::modelLine(r);
  EXPECT_NE(reports::modelLine(r).find("1 per kube-apiserver"), std::string::npos) << reports::modelLine(r);

  // On the calibration's shared host the generator is there, with its in-flight bound.
  auto shared = simulate({{"workloads.fleet.count", "300"}, {"duration", "60s"}}, "shared");
  EXPECT_EQ(shared.model.value("generator", std::string()), "host");
  EXPECT_NE(reports::modelLine(shared).find("2 shared by every member and the load generator"), std::string::npos)
      << reports::modelLine(shared);
}

TEST_F(SimulateTest, ThePlanesOwnWatchersOnLeasesMoveTheCrossingDown) {
  // The search above with two of the plane's informers on leases, each event sent at
  // 5 ms: a renewal now costs ~20.4 ms of the shared host's CPU instead of ~10.4 ms,
  // ~98 renewals a second fit on 2 cores (~980 nodes): 600 holds, 1,200 no longer does.
  auto cal = testCalibration();
  cal.apiserverCpuLeaseWrite = model::Param::fixed(10e-3);
  cal.apiserverCpuWatchEvent = model::Param::fixed(5e-3);
  cal.planeWatchers = {{"leases.coordination.k8s.io", 2}};
  SimulateOptions so;
  so.calibration = cal;
  so.run.runId = "simcapw";
  so.run.outDir = dir_ / "capw";
  so.run.progress = false;
  auto search = simulateCapacity(fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "index" / "node.yaml",
                                 {{"capacity.start", "600"}, {"capacity.factor", "2"}, {"capacity.max", "4800"}}, so);
  ASSERT_EQ(search.steps.size(), 2u);
  EXPECT_TRUE(search.steps[0].held);
  EXPECT_FALSE(search.steps[1].held);
  ASSERT_TRUE(search.held.has_value());
  EXPECT_EQ(*search.held, 600);
}

TEST_F(SimulateTest, SamplingDividesEveryExtensiveKnob) {
  auto sc = scenario::loadScenario(fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "node-bound.yaml",
                                   {{"workloads.fleet.count", "100000"}});
  EXPECT_EQ(samplingWeight(sc, 1500), 67);
  EXPECT_EQ(samplingWeight(sc, 200000), 1);
  auto o = sampledVariation(sc, 100);
  ASSERT_EQ(o.knobs.size(), 1u);
  EXPECT_EQ(o.knobs[0].first, "workloads.fleet.count");
  EXPECT_EQ(o.knobs[0].second, 1000);
  EXPECT_FALSE(o.duration || o.warmup);
  EXPECT_TRUE(sampledVariation(sc, 1).knobs.empty());
}

TEST_F(SimulateTest, ValidationComparesSteadyFiguresAndFlagsThosePastTolerance) {
  // Two modelled runs of one scenario stand for "live" and "model": the second's heap per
  // object is ten times the first's, its rates the same.
  std::vector<scenario::Override> sets{{"workloads.fleet.count", "200"}, {"duration", "40s"}};
  auto fat = testCalibration();
  fat.heapPerObject = model::Param::fixed(20000);
  auto a = simulate(sets, "live", testCalibration());
  auto b = simulate(sets, "model", fat);
  ASSERT_EQ(a.status, result::RunStatus::kCompleted) << a.statusDetail;
  ASSERT_EQ(b.status, result::RunStatus::kCompleted) << b.statusDetail;
  auto entries = calibration::compareLiveAndModel(a, b, 1.0);
  const model::ValidationEntry* writes = nullptr;
  const model::ValidationEntry* heap = nullptr;
  for (const auto& e : entries) {
    if (e.figure == "write_qps") writes = &e;
    if (e.figure.starts_with("apiserver_heap_inuse_after_gc_bytes{apiserver=")) heap = &e;
  }
  ASSERT_NE(writes, nullptr);
  ASSERT_NE(heap, nullptr);
  EXPECT_NEAR(writes->live, value(a, "write_qps"), 1e-9);
  EXPECT_LT(writes->relativeError, 0.01);
  EXPECT_EQ(heap->tolerance, 0.20);
  EXPECT_GT(heap->relativeError, heap->tolerance);
  EXPECT_EQ(calibration::validationLine(*writes).find("past its tolerance"), std::string::npos)
      << calibration::validationLine(*writes);
  EXPECT_NE(calibration::validationLine(*heap).find("past its tolerance"), std::string::npos)
      << calibration::validationLine(*heap);

  // A run on a calibration carrying this validation says so in its result and report.
  auto validated = testCalibration();
  validated.validation = entries;
  auto c = simulate(sets, "validated", validated);
  EXPECT_NEAR(c.model.value("maxValidationError", 0.0), heap->relativeError, 1e-12);
  EXPECT_NE(reports::modelLine(c).find("measured error against live runs up to"), std::string::npos);
  std::ifstream html(dir_ / "validated" / result::kHtmlFile);
  std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<table class=\"validation\">"), std::string::npos);
  EXPECT_NE(page.find("<tr class=\"bad\"><td>apiserver_heap_inuse_after_gc_bytes"), std::string::npos);
}

// The plane's controller-manager runs the node lifecycle controller: the fleet's silent
// nodes are marked Unknown 50-60 s after their last renewal (grace period and up to two
// monitor periods) and report Ready again on their return, so the realistic
// node-bound scenario passes its gates on the model, with the shipped calibration.
TEST_F(SimulateTest, TheNodeLifecycleControllerMarksTheFleetsSilentNodes) {
  const metrics::Labels fleet{{"workload", "fleet"}};
  for (const std::string profile : {"classic.yaml", "classic-ha.yaml"}) {
    SimulateOptions so = options("realistic-" + profile, profile);
    so.calibration = calibration::readCalibration(calibration::defaultCalibrationPath());
    const auto r = simulateScenario(scenarioFile("node-bound-realistic.yaml"), {}, so);
    ASSERT_EQ(r.status, result::RunStatus::kCompleted) << profile << ": " << r.statusDetail;
    EXPECT_EQ(r.exitCode, 0) << profile << ":\n" << failedGates(r);
    // Every node seen not Ready was one that failed, and is Ready again at the end.
    EXPECT_EQ(r.workloads.at(0).summary["nodeLifecycle"].value("notReadyUnexpected", -1), 0) << profile;
    EXPECT_EQ(runValue(r, "nodes_not_ready_at_end", fleet), 0) << profile;
    EXPECT_EQ(runValue(r, "node_ready_transitions", fleet), runValue(r, "node_not_ready_transitions", fleet));
    const auto slowest = runValue(r, "node_not_ready_seconds_max", fleet);
    const auto fastest = runValue(r, "node_not_ready_seconds_p50", fleet);
    ASSERT_TRUE(slowest.has_value()) << profile;
    EXPECT_GT(*fastest, 50) << profile;
    EXPECT_LE(*slowest, 61) << profile;  // 60 s and the write's latency
    // On one apiserver the ramp is over well before the failures at 60 s: all six of
    // 2 % of 300 nodes go silent for 70 s, each is marked and comes back. (On three,
    // the shared host's ramp lasts ~85 s: the fleet's last renewals reach the plane up
    // to ~10 s late, and a node whose grace has not run out when it returns at 130 s
    // is, rightly, never marked.)
    if (profile == "classic.yaml") {
      EXPECT_EQ(runValue(r, "node_not_ready_transitions", fleet), 6);
    }
  }
  // Without a controller-manager nothing marks them, and the gate cannot be judged.
  SimulateOptions so = options("realistic-apiserver-only", "apiserver-only.yaml");
  so.calibration = calibration::readCalibration(calibration::defaultCalibrationPath());
  const auto r = simulateScenario(scenarioFile("node-bound-realistic.yaml"), {}, so);
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_FALSE(runValue(r, "node_not_ready_seconds_max", fleet).has_value());
  EXPECT_EQ(runValue(r, "node_not_ready_transitions", fleet), 0);
  EXPECT_NE(r.exitCode, 0);
}

// The real node on the model: each node's own watches, Services whose pods flip
// readiness, and the model's EndpointSlice controller writing the slices every
// kube-proxy watch receives, a few milliseconds after each flip. Without a
// controller-manager (apiserver-only) nothing writes a slice, and nothing is delivered.
TEST_F(SimulateTest, TheModelsEndpointSliceControllerReachesEveryKubeProxy) {
  const std::vector<scenario::Override> sets = {{"workloads.fleet.count", "50"},
                                                {"workloads.fleet.watches.mode", "perNode"},
                                                {"workloads.fleet.services.count", "10"},
                                                {"workloads.fleet.services.readinessFlipsPerMinute", "60"}};
  const metrics::Labels slices{{"resource", "endpointslices"}, {"workload", "fleet"}};
  SimulateOptions so = options("slices-classic", "classic.yaml");
  const auto r = simulateScenario(scenarioFile("node-bound-realistic.yaml"), sets, so);
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  const auto delivered = runValue(r, "watch_deliveries", slices);
  ASSERT_TRUE(delivered.has_value());
  // A flip a second for 150 s, each a change of one slice that the 50 kube-proxies see.
  EXPECT_GT(*delivered, 50 * 100);
  const auto p50 = runValue(r, "watch_delivery_p50", slices);
  ASSERT_TRUE(p50.has_value());
  EXPECT_GT(*p50, 0);  // the slice's write takes its time
  EXPECT_LT(*p50, 0.5);
  // The modelled controller-manager is scraped as the real one is: its queues' adds, its
  // leadership; and, as on the local plane, the window waits until two of its scrapes
  // in a row found every queue empty.
  EXPECT_GT(value(r, "workqueue_adds", {{"component", "kube-controller-manager"}, {"queue", "endpoint_slice"}}), 0);
  EXPECT_EQ(value(r, "leader_election_master",
                  {{"component", "kube-controller-manager"}, {"name", "kube-controller-manager"}}),
            1);
  auto settle =
      std::find_if(r.phases.begin(), r.phases.end(), [](const auto& p) { return p.name == "settle/controllers"; });
  ASSERT_NE(settle, r.phases.end());
  EXPECT_TRUE(settle->complete) << settle->detail;
  EXPECT_GE(settle->endSeconds - settle->startSeconds, 5.0) << "two scrapes of empty queues, 5 s apart";

  SimulateOptions none = options("slices-apiserver-only", "apiserver-only.yaml");
  const auto q = simulateScenario(scenarioFile("node-bound-realistic.yaml"), sets, none);
  ASSERT_EQ(q.status, result::RunStatus::kCompleted) << q.statusDetail;
  EXPECT_EQ(runValue(q, "watch_deliveries", slices).value_or(0), 0);
  // No controller-manager: nothing to settle, nothing of its to report.
  EXPECT_TRUE(
      std::none_of(q.phases.begin(), q.phases.end(), [](const auto& p) { return p.name == "settle/controllers"; }));
}

// The lease tier on the model: the fleet of 300 renews every 10 s, the apiserver gets
// one write per Lease every 30 s (and each return at once), a third of the writes; the
// model's node lifecycle controller still marks exactly the six silent nodes, and no
// live one, within the grace period and its monitor passes of their last write through.
TEST_F(SimulateTest, ALeaseTierWritesAThirdOfTheRenewalsAndTheControllerStillJudgesNodes) {
  const metrics::Labels fleet{{"workload", "fleet"}};
  const metrics::Labels leasePuts{{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}};
  auto run = [&](bool tier) {
    SimulateOptions so = options(tier ? "tier" : "direct", "classic.yaml");
    so.calibration = calibration::readCalibration(calibration::defaultCalibrationPath());
    if (tier) so.profile.leaseTier = controlplane::LeaseTierSpec{std::chrono::seconds(30)};
    return simulateScenario(scenarioFile("node-bound-realistic.yaml"), {}, so);
  };
  const auto direct = run(false), tiered = run(true);
  ASSERT_EQ(tiered.status, result::RunStatus::kCompleted) << tiered.statusDetail;
  // Every gate holds but the lease share's: the tier takes the renewals off the plane.
  const std::string failed = failedGates(tiered);
  EXPECT_EQ(failed.rfind("lease_write_share >= 0.5: ", 0), 0u) << failed;
  EXPECT_EQ(std::count(failed.begin(), failed.end(), '\n'), 1) << failed;
  const double kubeletPuts = value(direct, "write_qps", leasePuts), tierPuts = value(tiered, "write_qps", leasePuts);
  // 30/s from the kubelets directly; 10/s through the tier; the plane's own ~1/s both.
  EXPECT_NEAR(kubeletPuts, 31, 2);
  EXPECT_NEAR(tierPuts, 11, 1.5);
  EXPECT_LT(value(tiered, "lease_write_share"), value(direct, "lease_write_share"));
  EXPECT_EQ(tiered.workloads.at(0).summary["nodeLifecycle"].value("notReadyUnexpected", -1), 0);
  EXPECT_EQ(runValue(tiered, "node_not_ready_transitions", fleet), 6);
  EXPECT_EQ(runValue(tiered, "nodes_not_ready_at_end", fleet), 0);
  // From the kubelets' last renewal: up to 20 s sooner than without the tier.
  EXPECT_LE(runValue(tiered, "node_not_ready_seconds_max", fleet).value_or(-1), 61);
  EXPECT_GT(runValue(tiered, "node_not_ready_seconds_p50", fleet).value_or(-1), 29);
  // What the tier took and wrote, over the whole run.
  const double received = runValue(tiered, "lease_tier_renewals_received").value_or(-1);
  const double absorbed = runValue(tiered, "lease_tier_renewals_absorbed").value_or(-1);
  const double transitions = runValue(tiered, "lease_tier_writes", {{"reason", "transition"}}).value_or(-1);
  const double periodic = runValue(tiered, "lease_tier_writes", {{"reason", "periodic"}}).value_or(-1);
  EXPECT_EQ(received, absorbed + transitions + periodic);
  EXPECT_GE(transitions, 306);  // 300 first renewals, 6 returns
  // Two of every three renewals, less the first renewals and returns written through.
  EXPECT_GT(absorbed / received, 0.55);
  EXPECT_LT(absorbed / received, 2.0 / 3);
  EXPECT_FALSE(runValue(direct, "lease_tier_renewals_received").has_value());
}

// The fault rehearsal on the model, in virtual time: each fault at its exact time, the
// apiserver's downtime its 8 s down plus the model's 2.5 s startup, the etcd freeze its
// 4 s; the clients' refused connections retried, the watches reopened, the gates passed.
class SimulateFaultsTest : public SimulateTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(SimulateFaultsTest, TheFaultRehearsalRunsOnTheModelAndPassesItsGates) {
  const std::string profile = GetParam();
  const auto r = simulateScenario(scenarioFile("fault-rehearsal.yaml"), {}, options("faults-" + profile, profile));
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_EQ(r.exitCode, 0);
  ASSERT_EQ(r.gates.size(), 2u);
  for (const auto& g : r.gates) EXPECT_TRUE(g.passed) << g.gate.text << ": " << g.reason;

  const result::Phase* steady = result::findPhase(r, "steady");
  ASSERT_NE(steady, nullptr);
  std::map<std::string, const result::Incident*> faults;
  for (const auto& i : r.incidents)
    if (i.kind == "fault") faults[i.member] = &i;
  ASSERT_EQ(faults.size(), 2u);
  const result::Incident& kill = *faults.at("kube-apiserver-0");
  EXPECT_DOUBLE_EQ(kill.atSeconds, steady->startSeconds + 10);
  EXPECT_DOUBLE_EQ(*kill.untilSeconds, steady->startSeconds + 20.5);
  const result::Incident& stop = *faults.at("etcd-main");
  EXPECT_DOUBLE_EQ(stop.atSeconds, steady->startSeconds + 40);
  EXPECT_DOUBLE_EQ(*stop.untilSeconds, steady->startSeconds + 44);

  auto run = [&](const std::string& name, const std::string& member) -> double {
    for (const auto& f : r.figures) {
      if (f.name != name || f.window != metrics::Window::kRun) continue;
      for (const auto& [k, v] : f.labels)
        if (k == "member" && v == member) return f.available() ? *f.value : -1;
    }
    ADD_FAILURE() << name << "{member=" << member << "} missing";
    return -1;
  };
  EXPECT_EQ(run("fault_downtime_seconds", "kube-apiserver-0"), 10.5);
  EXPECT_EQ(run("fault_restart_seconds", "kube-apiserver-0"), 2.5);
  EXPECT_EQ(run("fault_downtime_seconds", "etcd-main"), 4.0);
  ASSERT_TRUE(r.model.contains("faultStartupSeconds"));
  EXPECT_EQ(r.model["faultStartupSeconds"]["kube-apiserver"], 2.5);

  // What the dead apiserver refused was retried, as live.
  EXPECT_GT(value(r, "client_retries", {{"reason", "connect failed"}}), 0);
  // The watchers' streams broke with it and were opened again (2 kinds x 2 watchers).
  const nlohmann::json* watched = nullptr;
  for (const auto& w : r.workloads)
    if (w.name == "watched") watched = &w.summary;
  ASSERT_NE(watched, nullptr);
  if (profile == "classic.yaml") {
    EXPECT_GT((*watched)["watchStreams"].get<double>(), 4) << watched->dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, SimulateFaultsTest, ::testing::Values("classic.yaml", "classic-ha.yaml"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(0, n.find('.')) == "classic-ha" ? std::string("ClassicHa")
                                                                           : std::string("Classic");
                         });

// A target whose members are not the run's to kill (a user's cluster): nothing of it is
// reached before the faults are refused.
class UntouchableTarget final : public Target {
 public:
  engine::SimulatorMode mode() const override { return engine::SimulatorMode::kPaced; }
  void open(result::RunResult&) override { throw std::logic_error("opened"); }
  kube::Transport& setupTransport() override { throw std::logic_error("setup transport"); }
  engine::Clock& setupClock() override { throw std::logic_error("setup clock"); }
  kube::TransportPtr loadTransport(const scenario::Scenario&) override { throw std::logic_error("load transport"); }
  std::vector<metrics::ScrapeTarget> scrapeTargets(const result::RunResult&) override {
    throw std::logic_error("scrape targets");
  }
};

TEST_F(SimulateTest, FaultsAreRefusedOnAClusterBeforeAnythingStarts) {
  scenario::Scenario sc = scenario::loadScenario(scenarioFile("fault-rehearsal.yaml"), {});
  RunOptions ro;
  ro.runId = "simtest";
  ro.outDir = dir_ / "cluster-faults";
  UntouchableTarget cluster;
  try {
    executeRun(sc, ro, cluster);
    ADD_FAILURE() << "faults ran against a cluster";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "faults[0]");
    EXPECT_NE(std::string(e.what()).find("cluster"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(ro.outDir / result::kResultFile));
}

// With API Priority and Fairness off the model has kube-apiserver's max-in-flight
// filter: the overload profile's one mutating seat answers the session churn's excess
// 429, the client waits Retry-After's second and retries, and the scenario's gates hold.
// On classic the same load runs as system:masters and nothing is refused (so its
// retry gate reads a measured 0 there: nothing was retried, as live).
TEST_F(SimulateTest, TheMaxInFlightFilterAnswersTheOverloadWith429) {
  SimulateOptions so = options("overload", "overload.yaml");
  so.calibration = calibration::readCalibration(calibration::defaultCalibrationPath());
  const auto r = simulateScenario(scenarioFile("overload.yaml"), {}, so);
  ASSERT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_EQ(r.exitCode, 0) << failedGates(r);
  EXPECT_GT(value(r, "client_retries", {{"reason", "429"}}), 0);
  EXPECT_GT(value(r, "rejected_write_requests", {{"code", "429"}}), 0);
  EXPECT_EQ(value(r, "client_retry_wait_max"), 1);

  SimulateOptions classic = options("overload-classic", "classic.yaml");
  classic.calibration = so.calibration;
  const auto c = simulateScenario(scenarioFile("overload.yaml"), {}, classic);
  ASSERT_EQ(c.status, result::RunStatus::kCompleted) << c.statusDetail;
  std::vector<metrics::Figure> steady;
  for (const auto& f : c.figures)
    if (f.window == metrics::Window::kSteady) steady.push_back(f);
  const metrics::Figure* retries = metrics::findFigure(steady, "client_retries", {{"reason", "429"}});
  EXPECT_TRUE(retries == nullptr || !retries->available() || *retries->value == 0);
}

// With API Priority and Fairness on, admission limits are APF's concurrency, which the
// model does not have: refused, naming the field, rather than run as max-in-flight.
TEST_F(SimulateTest, AdmissionLimitsUnderPriorityAndFairnessAreRefusedOnTheModel) {
  fs::create_directories(dir_);
  const fs::path file = dir_ / "apf-limits.yaml";
  std::ofstream(file) << "apiVersion: cpscale.io/v1alpha1\nkind: Profile\nname: apf-limits\n"
                         "maxMutatingRequestsInflight: 1\n";
  SimulateOptions so = options("apf");
  so.profile = controlplane::loadProfile(file);
  expectRefused("overload.yaml", so, "maxMutatingRequestsInflight", "priorityAndFairness");
  // So is an ordinary user's load, to which APF would apply.
  std::ofstream(file) << "apiVersion: cpscale.io/v1alpha1\nkind: Profile\nname: apf-user\nloadIdentity: user\n";
  so.profile = controlplane::loadProfile(file);
  expectRefused("overload.yaml", so, "loadIdentity", "cpscale run");
}

}  // namespace
}  // namespace cpscale::run
