#include "sim/run/calibration_probes.h"

#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "reports/run_outputs.h"
#include "sim/common/interrupt.h"
#include "sim/run/run_progress.h"
#include "sim/run/runner.h"

namespace cpscale::cli {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

// About 13 minutes on 2 cores (about 9 with --quick), each plane's start (~15 s)
// and its controllers settling included: idle 25 s; node 2 x 25 s; churn 2 x (10 s
// warmup + 25 s); pods 3 x (1,000 pods created + 10 s warmup + 30 s); state 2 x (40 s
// of ramps + 15 s); fan-out and relist 4 x (setup + 25 s); then the validation.
std::vector<ProbePlan> probePlan(bool quick) {
  using model::ProbeKind;
  std::vector<ProbePlan> plan = {
      {"idle", ProbeKind::kIdle, "idle.yaml", {}},
      {"node", ProbeKind::kNode, "node.yaml", {}},
      {"churn", ProbeKind::kChurn, "churn.yaml", {}},
      // Built-in writes of small objects (pods, their status and Events) at two rates:
      // 10 and 40 replacements a second, 7 writes each.
      {"pods-600", ProbeKind::kWrites, "pods.yaml", {{"workloads.fleet.churn.podReplacementsPerMinute", "600"}}},
      {"pods-2400", ProbeKind::kWrites, "pods.yaml", {{"workloads.fleet.churn.podReplacementsPerMinute", "2400"}}},
      // The same pods without their Events: an Event's cost told apart from a Pod's.
      {"pods-quiet",
       ProbeKind::kWrites,
       "pods.yaml",
       {{"workloads.fleet.churn.podReplacementsPerMinute", "2400"}, {"workloads.fleet.events", "false"}}},
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
    for (ProbePlan& p : plan) {
      switch (p.kind) {
        case ProbeKind::kNode:
        case ProbeKind::kChurn: p.overrides.push_back({"capacity.hold", "15s"}); break;
        case ProbeKind::kState:
          p.overrides.push_back({"duration", "10s"});
          p.overrides.push_back({"workloads.platform.objectsPerKind", "2500"});
          p.overrides.push_back({"workloads.platform.configMaps", "2500"});
          break;
        case ProbeKind::kIdle:
        case ProbeKind::kWrites:
        case ProbeKind::kReads: p.overrides.push_back({"duration", "15s"}); break;
      }
    }
  }
  return plan;
}

ProbesOutcome runProbes(const std::vector<ProbePlan>& plan, const ProbeRunOptions& options) {
  ProbesOutcome out;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const ProbePlan& p = plan[i];
    scenario::Scenario sc = scenario::loadScenario(options.scenarioDir / p.file, p.overrides);
    std::vector<double> steps;
    if (sc.capacity) steps = scenario::capacityLadder(*sc.capacity);
    RunCounters counters;
    RunOptions ro;
    ro.runId = options.runId + "-" + std::to_string(i + 1);
    ro.outDir = options.probesDir / p.name;
    ro.profile = options.profile;
    ro.binDir = options.binDir;
    ro.progress = options.progress;
    // Each probe's plane is stopped after its run and never reused: deleting what the
    // probe created would only add time.
    ro.cleanup = false;
    ro.counters = &counters;
    ro.placement = options.placement;
    ro.capacity = sc.capacity ? &*sc.capacity : nullptr;
    ro.steps = steps;
    if (options.progress)
      std::cerr << "cpscale calibrate: probe " << i + 1 << "/" << plan.size() << ": " << p.name << " ("
                << (options.scenarioDir / p.file).string() << ")\n";
    model::ProbeResult probe;
    probe.name = p.name;
    probe.kind = p.kind;
    {
      GeneratorSampler sampler(counters);
      probe.result = executeRun(sc, ro);
      probe.generator = sampler.stop();
    }
    model::writeProbeFile(probe, ro.outDir);
    // The stopped plane's etcd data (tens of MB after a state ramp) is of no further use;
    // its logs stay beside the result.
    std::error_code ec;
    std::vector<fs::path> etcdData;
    for (const auto& e : fs::directory_iterator(ro.outDir / "plane", ec))
      if (e.is_directory() && e.path().filename().string().starts_with("etcd-")) etcdData.push_back(e.path());
    for (const auto& d : etcdData) fs::remove_all(d, ec);
    if (interrupted()) {
      out.stopped = "interrupted during probe " + p.name + "; the probes so far are in " + options.probesDir.string();
      return out;
    }
    if (probe.result.status != reports::RunStatus::kCompleted) {
      out.stopped = "probe " + p.name + " " + std::string(reports::toString(probe.result.status)) +
                    (probe.result.statusDetail.empty() ? "" : ": " + probe.result.statusDetail) + " (see " +
                    (ro.outDir / reports::kHtmlFile).string() + ")";
      return out;
    }
    out.probes.push_back(std::move(probe));
  }
  return out;
}

}  // namespace cpscale::cli
