// cpscale simulate at scale: a 100,000-node kubelet fleet for one hour of virtual time
// against the shipped calibration, on one core. Target (issue): under 10 s of wall
// time. Each case also reports the figures that show the seeds' arithmetic:
//   ~10k liveness writes/s at 100k nodes (a lease renewal every 10 s per node),
//   apiservers multiply the watch-cache heap (every replica caches every object),
//   partitioned storage moves the lease proposals off the main etcd.
// Members get 32 cores each (--dedicated-cores 32): at this calibration's ~2.3 ms of apiserver CPU per lease PUT, 10k renewals a second need ~23 cores.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "sim/run/simulate.h"
#include "sim/metrics/figures.h"

namespace cpscale::cli {
namespace {
namespace fs = std::filesystem;

double figure(const reports::RunResult& r, std::string_view name, const metrics::Labels& labels = {}) {
  const metrics::Figure* f = metrics::findFigure(r.figures, name, labels);
  return f && f->available() ? *f->value : -1;
}

void simulateFleet(benchmark::State& state, const std::string& profile) {
  const fs::path src = CPSCALE_SOURCE_DIR;
  SimulateOptions so;
  so.calibration = model::readCalibration(model::defaultCalibrationPath());
  so.profile = controlplane::loadProfile(src / "profiles" / (profile + ".yaml"));
  // A plane for 100k nodes: members with 32 cores of their own (the calibration's host,
  // 2 cores shared with the generator, would be saturated many times over).
  so.dedicatedCores = 32;
  so.run.runId = "bench-simulate";
  so.run.outDir = fs::temp_directory_path() / ("cpscale-bench-simulate-" + profile);
  so.run.progress = false;
  const std::vector<scenario::Override> sets{{"workloads.fleet.count", std::to_string(state.range(0))},
                                             {"duration", "1h"}};
  reports::RunResult r;
  for (auto _ : state) r = simulateScenario(src / "scenarios" / "node-bound.yaml", sets, so);
  state.counters["nodes"] = static_cast<double>(state.range(0));
  state.counters["sample_weight"] = r.model.value("weight", 0.0);
  state.counters["virtual_seconds"] = r.measuredSeconds;
  state.counters["lease_writes_per_s"] = figure(r, "write_qps", {{"resource", "leases"}, {"verb", "PUT"}});
  state.counters["lease_write_share"] = figure(r, "lease_write_share");
  state.counters["heap_all_replicas_bytes"] = figure(r, "apiserver_heap_inuse_bytes_all_replicas");
  for (const auto& f : r.figures)
    if (f.name == "etcd_proposals_committed_per_second" && f.available())
      for (const auto& [k, v] : f.labels)
        if (k == "etcd") state.counters["proposals_per_s_" + v] = *f.value;
  state.counters["lease_put_p99_s"] =
      figure(r, "client_latency_p99", {{"resource", "leases"}, {"verb", "PUT"}, {"measured_from", "scheduled"}});
  fs::remove_all(so.run.outDir);
}

BENCHMARK_CAPTURE(simulateFleet, classic, std::string("classic"))->Arg(100000)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(simulateFleet, classic_ha, std::string("classic-ha"))->Arg(100000)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(simulateFleet, partitioned_storage, std::string("partitioned-storage"))
    ->Arg(100000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace cpscale::cli

BENCHMARK_MAIN();
