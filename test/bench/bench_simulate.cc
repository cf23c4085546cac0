// cpscale simulate at scale, through the command a user runs: the README's example,
//   cpscale simulate scenarios/node-bound.yaml --set workloads.fleet.count=100000
//     --set duration=1h --dedicated-cores 16 [--profile P]
// run as the built binary (a child process), its result.json read back. Target
// (issue): under 10 s of wall time. The bench and the CLI cannot disagree: they are
// the same run. Each case also reports the figures that show the seeds' arithmetic:
//   ~10k liveness writes/s at 100k nodes (a lease renewal every 10 s per node),
//   apiservers multiply the watch-cache heap (every replica caches every object),
//   partitioned storage moves the lease proposals off the main etcd.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/metrics/figures.h"
#include "sim/result/result.h"
#include "test/bench/cli_run.h"

namespace cpscale {
namespace {
namespace fs = std::filesystem;

constexpr const char* kCores = "16";

double figure(const result::RunResult& r, std::string_view name, const metrics::Labels& labels = {}) {
  return bench::steadyFigure(r, name, labels);
}

void simulateFleet(benchmark::State& state, const std::string& profile) {
  const fs::path out = fs::temp_directory_path() / ("cpscale-bench-simulate-" + profile);
  fs::remove_all(out);
  fs::create_directories(out);
  std::vector<std::string> args{"simulate",
                                "scenarios/node-bound.yaml",
                                "--set",
                                "workloads.fleet.count=" + std::to_string(state.range(0)),
                                "--set",
                                "duration=1h",
                                "--dedicated-cores",
                                kCores,
                                "--quiet",
                                "--run-id",
                                "bench-simulate",
                                "--out",
                                (out / "run").string()};
  if (profile != "classic") {
    args.push_back("--profile");
    args.push_back("profiles/" + profile + ".yaml");
  }
  int code = -1;
  for (auto _ : state) code = bench::runCli(args, out / "cli.log");
  state.counters["exit_code"] = code;
  if (!fs::exists(out / "run" / result::kResultFile)) {
    state.SkipWithError(("no result.json: see " + (out / "cli.log").string()).c_str());
    return;
  }
  const result::RunResult r = result::readResult(out / "run" / result::kResultFile);
  state.counters["nodes"] = static_cast<double>(state.range(0));
  state.counters["dedicated_cores"] = std::stod(kCores);
  state.counters["sample_weight"] = r.model.value("weight", 0.0);
  state.counters["virtual_seconds"] = r.measuredSeconds;
  state.counters["gates_passed"] =
      static_cast<double>(std::count_if(r.gates.begin(), r.gates.end(), [](const auto& g) { return g.passed; }));
  state.counters["gates"] = static_cast<double>(r.gates.size());
  state.counters["write_qps"] = figure(r, "write_qps");
  state.counters["lease_writes_per_s"] = figure(r, "write_qps", {{"resource", "leases"}, {"verb", "PUT"}});
  state.counters["lease_write_share"] = figure(r, "lease_write_share");
  state.counters["heap_all_replicas_bytes"] = figure(r, "apiserver_heap_inuse_bytes_all_replicas");
  state.counters["generator_limited"] = figure(r, "generator_limited");
  for (const auto& f : r.figures)
    if (f.window == metrics::Window::kSteady && f.name == "etcd_proposals_committed_per_second" && f.available())
      for (const auto& [k, v] : f.labels)
        if (k == "etcd") state.counters["proposals_per_s_" + v] = *f.value;
  state.counters["lease_put_p99_s"] =
      figure(r, "client_latency_p99", {{"resource", "leases"}, {"verb", "PUT"}, {"measured_from", "scheduled"}});
  state.counters["server_latency_p99_s"] = figure(r, "server_latency_p99");
  if (!std::getenv("KEEP")) fs::remove_all(out);
}

BENCHMARK_CAPTURE(simulateFleet, classic, std::string("classic"))
    ->Arg(100000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(simulateFleet, classic_ha, std::string("classic-ha"))
    ->Arg(100000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(simulateFleet, partitioned_storage, std::string("partitioned-storage"))
    ->Arg(100000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace cpscale

BENCHMARK_MAIN();
