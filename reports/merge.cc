#include "reports/merge.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "sim/common/error.h"
#include "sim/metrics/client_figures.h"
#include "sim/metrics/gate.h"
#include "sim/result/client_stats.h"
#include "sim/result/json_io.h"

namespace cpscale::reports {

namespace {

bool isGeneratorHealth(const metrics::Figure& f) {
  return f.name.starts_with("generator_limited") || f.name.starts_with("schedule_lag_");
}

metrics::Labels withShard(metrics::Labels l, std::size_t shard) {
  l.push_back({"shard", std::to_string(shard)});
  std::sort(l.begin(), l.end(), [](const metrics::Label& a, const metrics::Label& b) { return a.name < b.name; });
  return l;
}

}  // namespace

result::RunResult mergeShards(std::vector<result::RunResult> shards, const std::vector<std::string>& names) {
  if (shards.empty()) throw ConfigError("command line", "RESULT", "give the result.json of every shard of the run");
  // One run's shards, each once, in order.
  std::vector<std::size_t> order(shards.size());
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const result::RunResult& s = shards[i];
    if (!s.shard) throw ConfigError(names[i], "/shard", "is missing: not a shard's result (cpscale run --shard I/N)");
    if (s.runId != shards[0].runId)
      throw ConfigError(names[i], "/runId", "is '" + s.runId + "', not '" + shards[0].runId + "' as in " + names[0]);
    if (s.shard->count != shards[0].shard->count)
      throw ConfigError(names[i], "/shard/count",
                        "is " + std::to_string(s.shard->count) + ", not " + std::to_string(shards[0].shard->count) +
                            " as in " + names[0]);
    if (s.clientStats.is_null())
      throw ConfigError(names[i], "/clientStats",
                        "is missing: the shard measured no steady window (" + std::string(toString(s.status)) +
                            (s.statusDetail.empty() ? "" : ": " + s.statusDetail) + ")");
  }
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return shards[a].shard->index < shards[b].shard->index; });
  const std::size_t count = shards[0].shard->count;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (shards[order[k]].shard->index != k)
      throw ConfigError(names[order[k]], "/shard/index",
                        k < shards[order[k]].shard->index
                            ? "shard " + std::to_string(k) + " of " + std::to_string(count) + " is missing"
                            : "is " + std::to_string(shards[order[k]].shard->index) + " again");
  }
  if (order.size() != count)
    throw ConfigError(names[order.back()], "/shard/count",
                      "is " + std::to_string(count) + ", but " + std::to_string(order.size()) + " results were given");

  const result::RunResult& lead = shards[order[0]];
  result::RunResult m = lead;
  m.shard.reset();
  m.mergedShards = count;
  m.figures.clear();
  m.workloads.clear();
  load::RequestStats merged;
  bool anyLimited = false, anyHealth = false;
  for (std::size_t k = 0; k < count; ++k) {
    const result::RunResult& s = shards[order[k]];
    merged.merge(result::requestStatsFromJson(result::jsonio::Reader(s.clientStats, names[order[k]], "/clientStats")));
    for (const metrics::Figure& f : s.figures) {
      // The servers were scraped by shard 0 alone.
      if (f.source != metrics::Source::kClient) {
        if (k == 0) m.figures.push_back(f);
        continue;
      }
      // The steady window's client figures come from the merged statistics below.
      if (f.window == metrics::Window::kSteady && !isGeneratorHealth(f)) continue;
      if (f.name == "generator_limited" && f.labels.empty() && f.value) {
        anyHealth = true;
        anyLimited = anyLimited || *f.value != 0;
      }
      metrics::Figure g = f;
      g.labels = withShard(f.labels, k);
      m.figures.push_back(std::move(g));
    }
    for (const result::WorkloadSummary& w : s.workloads)
      if (k == 0 || w.name != "cleanup")
        m.workloads.push_back({w.kind, w.name + "/shard-" + std::to_string(k), w.summary});
    if (s.status != result::RunStatus::kCompleted && m.status == result::RunStatus::kCompleted) {
      m.status = s.status;
      m.statusDetail = "shard " + std::to_string(k) + ": " + s.statusDetail;
    }
  }
  const engine::Duration window =
      std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(lead.measuredSeconds));
  for (auto fs : {metrics::clientLatencyFigures(merged), metrics::clientCountFigures(merged, window)}) {
    for (auto& f : fs) {
      f.window = metrics::Window::kSteady;
      m.figures.push_back(std::move(f));
    }
  }
  metrics::Figure limited =
      anyHealth ? metrics::Figure::measured("generator_limited", {}, anyLimited ? 1 : 0, "", metrics::Source::kClient)
                : metrics::Figure::unavailable("generator_limited", {}, "", metrics::Source::kClient,
                                               "no shard could tell (nothing was sent)");
  limited.window = metrics::Window::kSteady;
  m.figures.push_back(std::move(limited));
  m.clientStats = result::requestStatsJson(merged);
  // Shard 0 judged every gate; they are judged again on the merged figures.
  m.gates.clear();
  for (const auto& g : lead.gates) m.gates.push_back(metrics::evaluateGate(g.gate, m.figures));
  bool pass = true;
  for (const auto& g : m.gates) pass = pass && g.passed;
  m.exitCode = m.status != result::RunStatus::kCompleted ? 3 : pass ? 0 : 1;
  return m;
}

}  // namespace cpscale::reports
