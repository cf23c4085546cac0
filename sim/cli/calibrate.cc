// cpscale calibrate: measure the cost model's parameters on this machine. Short live
// probes run one after another on the local plane (each starts a plane of its own):
// the plane idle, kubelets at two fleet sizes, session churn at two rates, and a state
// ramp per kind at two payload sizes. The fit of their results into a calibration is
// model::fitCalibration (sim/model/calibrate_fit.h); --from refits stored probes.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cxxopts.hpp>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "reports/format.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/local_plane.h"
#include "sim/model/calibrate_fit.h"
#include "sim/model/calibration.h"
#include "sim/model/fit.h"
#include "sim/run/run_progress.h"
#include "sim/run/runner.h"
#include "sim/run/simulate.h"
#include "sim/scenario/scenario.h"

namespace cpscale::cli {
namespace fs = std::filesystem;

namespace {

// One probe: a scenario under scenarios/calibration with its overrides.
struct ProbePlan {
  std::string name;
  model::ProbeKind kind;
  std::string file;
  std::vector<scenario::Override> overrides;
};

// About 8 minutes on 2 cores (about 6 with --quick), each plane's start (~15 s)
// and its controllers settling included: idle 25 s; node 2 x 25 s; churn 2 x (10 s
// warmup + 25 s); state 2 x (40 s of ramps + 15 s); fan-out and relist 4 x (setup +
// 25 s); then the validation (live runs of a minute and their simulations).
std::vector<ProbePlan> probePlan(bool quick) {
  using model::ProbeKind;
  std::vector<ProbePlan> plan = {
      {"idle", ProbeKind::kIdle, "idle.yaml", {}},
      {"node", ProbeKind::kNode, "node.yaml", {}},
      {"churn", ProbeKind::kChurn, "churn.yaml", {}},
      {"state-small", ProbeKind::kState, "state.yaml", {{"workloads.platform.objectBytes", "256"}}},
      {"state-large", ProbeKind::kState, "state.yaml", {{"workloads.platform.objectBytes", "8192"}}},
      // Watch events sent per watcher, told apart from the writes that cause them: the
      // same updates fanned out to 10 and to 50 watchers.
      {"fanout-10", ProbeKind::kReads, "fanout.yaml", {{"workloads.fanout.watchers.perKind", "10"}}},
      {"fanout-50", ProbeKind::kReads, "fanout.yaml", {{"workloads.fanout.watchers.perKind", "50"}}},
      // Objects returned by LISTs, told apart from LIST calls: informers relisting 5,000
      // objects in pages of 500 and of 50.
      {"relist-500", ProbeKind::kReads, "relist.yaml", {{"workloads.relist.watchers.pageSize", "500"}}},
      {"relist-50",
       ProbeKind::kReads,
       "relist.yaml",
       {{"workloads.relist.watchers.pageSize", "50"}, {"workloads.relist.watchers.relistEvery", "10s"}}},
  };
  if (quick) {
    plan[0].overrides.push_back({"duration", "15s"});
    plan[1].overrides.push_back({"capacity.hold", "15s"});
    plan[2].overrides.push_back({"capacity.hold", "15s"});
    for (std::size_t i : {3u, 4u}) {
      plan[i].overrides.push_back({"duration", "10s"});
      plan[i].overrides.push_back({"workloads.platform.objectsPerKind", "2500"});
      plan[i].overrides.push_back({"workloads.platform.configMaps", "2500"});
    }
    for (std::size_t i = 5; i < plan.size(); ++i) plan[i].overrides.push_back({"duration", "15s"});
  }
  return plan;
}

double processCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// Samples this process's CPU and the run's completed requests once a second while a
// probe runs: the generator's own cost per request.
class GeneratorSampler {
 public:
  explicit GeneratorSampler(const RunCounters& counters)
      : counters_(counters), start_(std::chrono::steady_clock::now()), thread_([this] { loop(); }) {}
  ~GeneratorSampler() { stop(); }

  std::vector<model::GeneratorSample> stop() {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return samples_;
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
    sample();
    return samples_;
  }

 private:
  void sample() {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    model::GeneratorSample s{t, processCpuSeconds(), counters_.completed.load(), counters_.phase.load() == 1};
    if (samples_.empty() || t > samples_.back().seconds) samples_.push_back(s);
  }
  void loop() {
    std::unique_lock lock(mu_);
    while (!stopped_) {
      sample();
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_; });
    }
  }

  const RunCounters& counters_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::vector<model::GeneratorSample> samples_;
  std::thread thread_;  // last: starts once the rest is initialised
};

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "";
}

std::string hostName() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

int calibrate(const Args& args) {
  cxxopts::Options opts(
      "cpscale calibrate",
      "Measure the cost model's parameters on this machine: short live probes on the local plane, one after\n"
      "another (each starts its own plane): the plane idle, kubelets at two fleet sizes, session churn at two\n"
      "rates, and a state ramp per kind at two payload sizes (scenarios/calibration). About 6 minutes on 2 cores\n"
      "(4.5 with --quick). From their results it fits kube-apiserver and etcd CPU per request class, the\n"
      "generator's CPU per request, heap per object and per byte, etcd db growth per write, and measures\n"
      "unloaded latencies, background writes and RSS over heap; it writes the calibration (every parameter\n"
      "with its 95 % interval and each fit's R²) that `cpscale simulate` reads, and prints it as a table.\n"
      "The probes' results stay in --probes; --from refits them without running anything.");
  opts.add_options()("profile", "control-plane profile the probes run on (default: the built-in classic)",
                     cxxopts::value<std::string>())(
      "out", "calibration file to write (default runs/calibrate-<id>/calibration.json)", cxxopts::value<std::string>())(
      "probes", "directory for the probes' results (default runs/calibrate-<id>/probes)",
      cxxopts::value<std::string>())("from", "refit the probes stored in this directory instead of running them",
                                     cxxopts::value<std::string>())(
      "quick", "shorter probes (about 4.5 minutes; wider intervals)")(
      "scenario-dir", "the probe scenarios (default: scenarios/calibration of the source tree)",
      cxxopts::value<std::string>())("run-id", "run id prefix (default: random)", cxxopts::value<std::string>())(
      "no-validate", "skip the validation: node-bound and churn-bound live and simulated, compared")(
      "quiet", "no progress output")("bin-dir", "pinned control-plane binaries directory",
                                     cxxopts::value<std::string>())(
      "pin",
      "pin the plane's members and the generator for the probes and the validation: ROLE=CPUS, repeatable "
      "(see cpscale run --pin; default 'isolated': kube-apiserver alone on the last CPU)",
      cxxopts::value<std::vector<std::string>>())(
      "no-pin", "run every process wherever the scheduler likes (they contend for the same cores)")(
      "probe",
      "run only this probe (repeatable: idle, node, churn, state-small, state-large, fanout-10, fanout-50, "
      "relist-500, relist-50) into --probes, keeping the others there, then fit them all",
      cxxopts::value<std::vector<std::string>>())("h,help", "show this help");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  const bool progress = r.count("quiet") == 0;
  const std::string runId = r.count("run-id") ? r["run-id"].as<std::string>() : newRunId();
  checkRunId(runId);
  const fs::path base = fs::path("runs") / ("calibrate-" + runId);
  const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : base / "calibration.json";
  if (fs::is_directory(out)) throw ConfigError("command line", "--out", out.string() + " is a directory, not a file");

  // Pinned, each member's cost per request is its own: unpinned, every process on a
  // 2-core machine competes for both cores and each one's CPU per request grows with the
  // others' load. The placement is recorded in every probe's result and the fit takes
  // the calibration's host from it.
  controlplane::Placement placement;
  if (r.count("no-pin") && r.count("pin")) throw ConfigError("command line", "--no-pin", "contradicts --pin");
  if (r.count("pin"))
    placement = controlplane::parsePlacement(r["pin"].as<std::vector<std::string>>(), controlplane::cpusOnline());
  else if (!r.count("no-pin"))
    placement = controlplane::isolatedPlacement(controlplane::cpusOnline());
  if (r.count("from") && r.count("pin"))
    throw ConfigError("command line", "--pin",
                      "the stored probes ran where they ran; --pin is for new probes and validation");

  std::vector<model::ProbeResult> probes;
  if (r.count("from")) {
    for (const char* flag : {"probes", "quick", "scenario-dir", "probe"})
      if (r.count(flag))
        throw ConfigError("command line", std::string("--") + flag, "runs probes; --from refits stored ones");
    probes = model::readProbes(r["from"].as<std::string>());
  } else {
    const fs::path probesDir = r.count("probes") ? fs::path(r["probes"].as<std::string>()) : base / "probes";
    const fs::path scenarioDir = r.count("scenario-dir") ? fs::path(r["scenario-dir"].as<std::string>())
                                                         : fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "calibration";
    controlplane::Profile profile =
        r.count("profile") ? controlplane::loadProfile(r["profile"].as<std::string>()) : controlplane::Profile{};
    const fs::path binDir =
        r.count("bin-dir") ? fs::path(r["bin-dir"].as<std::string>()) : controlplane::defaultBinDir();
    // Every scenario is loaded (and so validated) before the first plane starts.
    std::vector<ProbePlan> plan = probePlan(r.count("quick") > 0);
    if (r.count("probe")) {
      const auto only = r["probe"].as<std::vector<std::string>>();
      for (const auto& name : only)
        if (std::none_of(plan.begin(), plan.end(), [&](const ProbePlan& p) { return p.name == name; }))
          throw ConfigError("command line", "--probe", "no probe is named '" + name + "'");
      std::erase_if(plan,
                    [&](const ProbePlan& p) { return std::find(only.begin(), only.end(), p.name) == only.end(); });
    }
    for (const ProbePlan& p : plan) scenario::loadScenario(scenarioDir / p.file, p.overrides);

    if (const auto* g = placement.of("generator")) controlplane::pinThisThread(*g);
    installInterruptHandlers();
    if (progress)
      std::cerr << "cpscale calibrate: " << plan.size() << " probes on " << profile.name << ", about "
                << (r.count("quick") ? "6" : "8") << " minutes; results in " << probesDir.string()
                << (placement.empty() ? "; nothing pinned" : "; pinned: " + placement.text()) << "\n";
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const ProbePlan& p = plan[i];
      scenario::Scenario sc = scenario::loadScenario(scenarioDir / p.file, p.overrides);
      std::vector<double> steps;
      if (sc.capacity) steps = scenario::capacityLadder(*sc.capacity);
      RunCounters counters;
      RunOptions ro;
      ro.runId = runId + "-" + std::to_string(i + 1);
      ro.outDir = probesDir / p.name;
      ro.profile = profile;
      ro.binDir = binDir;
      ro.progress = progress;
      // Each probe's plane is stopped after its run and never reused: deleting what
      // the probe created would only add time.
      ro.cleanup = false;
      ro.counters = &counters;
      ro.placement = placement;
      ro.capacity = sc.capacity ? &*sc.capacity : nullptr;
      ro.steps = steps;
      if (progress)
        std::cerr << "cpscale calibrate: probe " << i + 1 << "/" << plan.size() << ": " << p.name << " ("
                  << (scenarioDir / p.file).string() << ")\n";
      model::ProbeResult probe;
      probe.name = p.name;
      probe.kind = p.kind;
      {
        GeneratorSampler sampler(counters);
        probe.result = executeRun(sc, ro);
        probe.generator = sampler.stop();
      }
      model::writeProbeFile(probe, ro.outDir);
      // The stopped plane's etcd data (tens of MB after a state ramp) is of no further
      // use; its logs stay beside the result.
      std::error_code ec;
      std::vector<fs::path> etcdData;
      for (const auto& e : fs::directory_iterator(ro.outDir / "plane", ec))
        if (e.is_directory() && e.path().filename().string().starts_with("etcd-")) etcdData.push_back(e.path());
      for (const auto& d : etcdData) fs::remove_all(d, ec);
      if (interrupted()) {
        std::cerr << "cpscale calibrate: interrupted during probe " << p.name << "; the probes so far are in "
                  << probesDir.string() << "\n";
        return static_cast<int>(ExitCode::kUnavailable);
      }
      if (probe.result.status != reports::RunStatus::kCompleted) {
        std::cerr << "cpscale calibrate: probe " << p.name << " " << reports::toString(probe.result.status)
                  << (probe.result.statusDetail.empty() ? "" : ": " + probe.result.statusDetail) << " (see "
                  << (ro.outDir / reports::kHtmlFile).string() << ")\n";
        return static_cast<int>(ExitCode::kUnavailable);
      }
      probes.push_back(std::move(probe));
    }
    // With --probe, the others come from what the directory already holds.
    if (r.count("probe")) probes = model::readProbes(probesDir);
  }

  model::Calibration c;
  try {
    c = model::fitCalibration(probes);
  } catch (const model::FitError& e) {
    std::cerr << "cpscale calibrate: the probes cannot be fitted: " << e.what()
              << "\n(their results are kept; refit with --from DIR once the cause is fixed, or run the probes again)\n";
    return static_cast<int>(ExitCode::kUnavailable);
  }
  // The results do not record the CPU model: it is this machine's when the probes ran here.
  if (c.host == hostName()) c.cpuModel = cpuModel();
  model::writeCalibration(c, out);
  if (!r.count("no-validate")) {
    // The model with this calibration against the live plane, on the scenarios users
    // start from: its measured error goes into the calibration, and simulate prints it.
    controlplane::Profile profile =
        r.count("profile") ? controlplane::loadProfile(r["profile"].as<std::string>()) : controlplane::Profile{};
    const fs::path binDir =
        r.count("bin-dir") ? fs::path(r["bin-dir"].as<std::string>()) : controlplane::defaultBinDir();
    if (progress) std::cerr << "cpscale calibrate: validating: each validation scenario live, then simulated\n";
    // Refitted probes are validated where they ran.
    if (r.count("from") && !r.count("no-pin")) placement = placementOf(c);
    if (const auto* g = placement.of("generator")) controlplane::pinThisThread(*g);
    installInterruptHandlers();
    c.source = out;
    c.validation = validateCalibration(c, profile, binDir, base / "validation", runId, progress,
                                       defaultValidationCases(), CrossingCase{}, placement);
    model::writeCalibration(c, out);
    for (const auto& e : c.validation) std::cout << "validation: " << validationLine(e) << "\n";
  }
  std::cout << model::renderCalibrationSummary(c) << "\nCalibration: " << out.string() << "\n";
  return 0;
}

}  // namespace cpscale::cli
