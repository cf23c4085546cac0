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

namespace cpscale::run {
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

  std::vector<calibration::GeneratorSample> stop() {
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
    calibration::GeneratorSample s{t, processCpuSeconds(), counters_.completed.load(), counters_.phase.load() == 1};
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
  std::vector<calibration::GeneratorSample> samples_;
  std::thread thread_;  // last: starts once the rest is initialised
};

}  // namespace

ProbesOutcome runProbes(const std::vector<calibration::ProbePlan>& plan, const ProbeRunOptions& options) {
  ProbesOutcome out;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const calibration::ProbePlan& p = plan[i];
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
    calibration::ProbeResult probe;
    probe.name = p.name;
    probe.kind = p.kind;
    {
      GeneratorSampler sampler(counters);
      probe.result = executeRun(sc, ro);
      probe.generator = sampler.stop();
    }
    calibration::writeProbeFile(probe, ro.outDir);
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
    if (probe.result.status != result::RunStatus::kCompleted) {
      out.stopped = "probe " + p.name + " " + std::string(result::toString(probe.result.status)) +
                    (probe.result.statusDetail.empty() ? "" : ": " + probe.result.statusDetail) + " (see " +
                    (ro.outDir / result::kHtmlFile).string() + ")";
      return out;
    }
    out.probes.push_back(std::move(probe));
  }
  return out;
}

}  // namespace cpscale::run
