// What one node costs the generator, the real node against the heartbeat-only node
// (issue: the real node at most 2x), through the command a user runs against the local
// plane: `cpscale run` at two fleet sizes per kind of node, each a fresh plane, its
// generator_cpu_cores and generator_rss_bytes over the steady window read back.
//
//   heartbeat  scenarios/node-bound.yaml: Lease renewals and status PATCHes, the
//              fleet's one shared node watch (watches: shared)
//   shared     scenarios/node-bound-realistic.yaml as shipped: the same plus pods, pod
//              status, replacements, Events and node failures, still one shared watch
//   real       the same with each node's own seven watches (watches: perNode) and
//              Services over its pods whose readiness flips, so every kube-proxy watch
//              receives each EndpointSlice change
//
// Per 1,000 nodes two ways: the average at the larger fleet (fixed costs included) and
// the marginal cost between the two sizes (fixed costs cancel). The real node's cost
// per node grows with the fleet: each change reaches every node's watch, so it is
// stated at the sizes measured, never extrapolated. The last benchmark, `ratio`, sets
// the kinds side by side.
//
//   cpscale_bench_node [--benchmark_out=FILE --benchmark_out_format=json]
// Sizes and window: BENCH_NODE_SIZES=50,150 (two), BENCH_NODE_SECONDS=60.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/metrics/figures.h"
#include "sim/result/result.h"
#include "test/bench/cli_run.h"

namespace cpscale {
namespace {
namespace fs = std::filesystem;

std::vector<long> sizes() {
  std::vector<long> out;
  std::stringstream in(std::getenv("BENCH_NODE_SIZES") ? std::getenv("BENCH_NODE_SIZES") : "50,150");
  for (std::string s; std::getline(in, s, ',');) out.push_back(std::stol(s));
  if (out.size() != 2 || out[0] <= 0 || out[1] <= out[0]) out = {50, 150};
  return out;
}

std::string window() {
  const char* s = std::getenv("BENCH_NODE_SECONDS");
  return std::to_string(s ? std::max(10L, std::stol(s)) : 60L) + "s";
}

struct Measured {
  double cpuCores = -1;
  double rssBytes = -1;
};
// kind -> nodes -> what the run measured (filled in order; `ratio` reads it last).
std::map<std::string, std::map<long, Measured>>& measured() {
  static std::map<std::string, std::map<long, Measured>> m;
  return m;
}

double runFigure(const result::RunResult& r, std::string_view name, const metrics::Labels& labels = {}) {
  const metrics::Figure* f = metrics::findFigure(r.figures, name, labels);
  return f && f->available() ? *f->value : -1;
}

std::vector<std::string> argsFor(const std::string& kind, long nodes, const fs::path& out) {
  std::vector<std::string> a{
      "run",   kind == "heartbeat" ? "scenarios/node-bound.yaml" : "scenarios/node-bound-realistic.yaml",
      "--set", "workloads.fleet.count=" + std::to_string(nodes),
      "--set", "duration=" + window()};
  if (kind == "real") {
    for (const char* s : {"workloads.fleet.watches.mode=perNode", "workloads.fleet.services.count=50",
                          "workloads.fleet.services.readinessFlipsPerMinute=30"}) {
      a.push_back("--set");
      a.push_back(s);
    }
  }
  a.insert(a.end(), {"--quiet", "--run-id", "bench-node", "--out", (out / "run").string()});
  return a;
}

void nodeCost(benchmark::State& state, const std::string& kind, int size) {
  const long nodes = sizes()[size];
  const fs::path out = fs::temp_directory_path() / ("cpscale-bench-node-" + kind + "-" + std::to_string(nodes));
  fs::remove_all(out);
  fs::create_directories(out);
  int code = -1;
  for (auto _ : state) code = bench::runCli(argsFor(kind, nodes, out), out / "cli.log");
  state.counters["exit_code"] = code;
  if (!fs::exists(out / "run" / result::kResultFile)) {
    state.SkipWithError(("no result.json: see " + (out / "cli.log").string()).c_str());
    return;
  }
  const result::RunResult r = result::readResult(out / "run" / result::kResultFile);
  Measured m{bench::steadyFigure(r, "generator_cpu_cores"), bench::steadyFigure(r, "generator_rss_bytes")};
  measured()[kind][nodes] = m;
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["window_s"] = r.measuredSeconds;
  state.counters["generator_cpu_cores"] = m.cpuCores;
  state.counters["generator_rss_bytes"] = m.rssBytes;
  state.counters["generator_rss_bytes_peak"] = bench::steadyFigure(r, "generator_rss_bytes_peak");
  state.counters["cpu_cores_per_1000_nodes"] = m.cpuCores < 0 ? -1 : m.cpuCores / static_cast<double>(nodes) * 1000;
  state.counters["rss_bytes_per_1000_nodes"] = m.rssBytes < 0 ? -1 : m.rssBytes / static_cast<double>(nodes) * 1000;
  state.counters["generator_limited"] = bench::steadyFigure(r, "generator_limited");
  state.counters["schedule_lag_p99_s"] = bench::steadyFigure(r, "schedule_lag_p99");
  state.counters["write_qps"] = bench::steadyFigure(r, "write_qps");
  state.counters["watch_stream_bytes"] = runFigure(r, "client_watch_stream_bytes");
  state.counters["watch_streams_peak_open"] = runFigure(r, "client_watch_streams_peak_open");
  state.counters["endpointslice_deliveries"] =
      runFigure(r, "watch_deliveries", {{"resource", "endpointslices"}, {"workload", "fleet"}});
  state.counters["apiserver_cpu_cores"] = bench::steadyFigure(r, "apiserver_cpu_cores_all_replicas");
  if (!std::getenv("KEEP")) fs::remove_all(out);
}

// Per 1,000 nodes, marginal between the two sizes (fixed costs cancel), and each kind
// over the heartbeat-only node.
void ratio(benchmark::State& state) {
  for (auto _ : state) {
  }
  const std::vector<long> n = sizes();
  auto marginal = [&](const std::string& kind, double Measured::*what) {
    const auto& k = measured()[kind];
    if (!k.contains(n[0]) || !k.contains(n[1])) return -1.0;
    const double a = k.at(n[0]).*what, b = k.at(n[1]).*what;
    if (a < 0 || b < 0) return -1.0;
    return (b - a) / static_cast<double>(n[1] - n[0]) * 1000;
  };
  for (const char* kind : {"heartbeat", "shared", "real"}) {
    state.counters[std::string(kind) + "_cpu_cores_per_1000_marginal"] = marginal(kind, &Measured::cpuCores);
    state.counters[std::string(kind) + "_rss_bytes_per_1000_marginal"] = marginal(kind, &Measured::rssBytes);
  }
  auto over = [&](const std::string& a, const std::string& b, double Measured::*what) {
    const double x = marginal(a, what), y = marginal(b, what);
    return x < 0 || y <= 0 ? -1.0 : x / y;
  };
  state.counters["real_over_heartbeat_cpu"] = over("real", "heartbeat", &Measured::cpuCores);
  state.counters["real_over_shared_cpu"] = over("real", "shared", &Measured::cpuCores);
  state.counters["real_over_heartbeat_rss"] = over("real", "heartbeat", &Measured::rssBytes);
  state.counters["real_over_shared_rss"] = over("real", "shared", &Measured::rssBytes);
}

void registerAll() {
  for (const char* kind : {"heartbeat", "shared", "real"}) {
    for (int i = 0; i < 2; ++i) {
      benchmark::RegisterBenchmark((std::string("nodeCost/") + kind + "/" + std::to_string(sizes()[i])).c_str(),
                                   [kind, i](benchmark::State& s) { nodeCost(s, kind, i); })
          ->Iterations(1)
          ->Unit(benchmark::kSecond)
          ->UseRealTime();
    }
  }
  benchmark::RegisterBenchmark("ratio", ratio)->Iterations(1);
}

}  // namespace
}  // namespace cpscale

int main(int argc, char** argv) {
  cpscale::registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
