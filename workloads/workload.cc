#include "workloads/workload.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/common/error.h"

#include "workloads/churn.h"
#include "workloads/dormant.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/params.h"

namespace cpscale::workloads {

void PhaseLog::releaseFreeMemory() { ::malloc_trim(0); }

WorkloadPtr makeWorkload(const YamlField& spec) {
  if (!spec.isMap()) throw spec.error("expected a workload entry (a map with 'kind')");
  const YamlField kind = spec.require("kind");
  const std::string k = kind.asString();
  if (k == "kubelets") return std::make_unique<KubeletFleet>(KubeletFleetParams::read(spec));
  if (k == "churn") return std::make_unique<ChurnWorkload>(ChurnParams::read(spec));
  if (k == "dormant") return std::make_unique<DormantWorkload>(DormantParams::read(spec));
  throw kind.error("unknown workload kind '" + k + "' (known: kubelets, churn, dormant)");
}

const std::vector<std::string>& ownFigures(const std::string& kind) {
  static const std::map<std::string, std::vector<std::string>> kOwn = {
      {"kubelets",
       {"lease_renewals_answered", "lease_renewals_missed", "node_not_ready_transitions", "node_not_ready_seconds_p50",
        "node_not_ready_seconds_max", "node_ready_transitions", "node_ready_again_seconds_p50",
        "node_ready_again_seconds_max", "nodes_not_ready_at_end"}},
      {"churn", {"session_write_failures"}},
      {"dormant",
       {"dormant_objects", "dormant_objects_created", "dormant_objects_missing", "dormant_watchers",
        "dormant_watchers_synced", "dormant_watchers_unsynced", "dormant_watch_events",
        "dormant_watch_events_per_watcher"}},
  };
  static const std::vector<std::string> kNone;
  auto it = kOwn.find(kind);
  return it == kOwn.end() ? kNone : it->second;
}

std::string notOwnFigure(const std::string& kind, const std::string& figure) {
  const auto& own = ownFigures(kind);
  if (std::find(own.begin(), own.end(), figure) != own.end()) return "";
  std::string list;
  for (const auto& f : own) list += (list.empty() ? "" : ", ") + f;
  return "a " + kind + " workload reports no figure named " + figure + " (its own: " + list + ")";
}

std::string figureKindOf(const std::string& figure) {
  // By family, so that a misspelt name is refused as not one of the kind's own.
  if (figure.starts_with("node_not_ready_") || figure.starts_with("node_ready_") ||
      figure == "nodes_not_ready_at_end" || figure.starts_with("lease_renewals_"))
    return "kubelets";
  if (figure.starts_with("session_")) return "churn";
  if (figure.starts_with("dormant_")) return "dormant";
  return "";
}

nlohmann::json WorkloadContext::labels(const std::string& workload) const {
  nlohmann::json l = runLabels(runId, workload);
  if (shards > 1) l[kShardLabel] = std::to_string(shard);
  return l;
}

namespace {

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

}  // namespace

void checkGrowth(const Workload& w, const std::string& field, double from, double to, double max, bool whole,
                 double own, std::string_view ownWhat) {
  const std::string where = "workload '" + w.name() + "'";
  if (!std::isfinite(from) || !std::isfinite(to))
    throw ConfigError(where, field, "growth bounds must be finite numbers");
  if (whole && (from != std::floor(from) || to != std::floor(to))) {
    throw ConfigError(where, field, "is a count: cannot grow from " + number(from) + " to " + number(to));
  }
  if (from < 0) throw ConfigError(where, field, "cannot grow from a negative value (" + number(from) + ")");
  if (!(to > from)) {
    throw ConfigError(where, field,
                      "growth must go up: to (" + number(to) + ") must exceed from (" + number(from) + ")");
  }
  if (to > max) throw ConfigError(where, field, "cannot grow to " + number(to) + ": at most " + number(max));
  if (from < own)
    throw ConfigError(where, field,
                      "cannot grow from " + number(from) + ": " + std::string(ownWhat) + " below " + number(own) +
                          " are this workload's own");
}

}  // namespace cpscale::workloads
