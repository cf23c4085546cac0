#include "sim/run/workload_figures.h"

#include <algorithm>
#include <string>

namespace cpscale::cli {

namespace {

using metrics::Figure;
using nlohmann::json;

double number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

std::vector<double> samples(const json& j, const char* key) {
  std::vector<double> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_number()) out.push_back(v.get<double>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Nearest rank: a sample that was observed, not an interpolation between two nodes.
double median(const std::vector<double>& sorted) { return sorted[(sorted.size() + 1) / 2 - 1]; }

void lifecycleFigures(const reports::WorkloadSummary& w, const json& lc, std::vector<Figure>& out) {
  const metrics::Labels labels = metrics::sortedLabels({{"workload", w.name}});
  auto count = [&](const char* name, double v) {
    out.push_back(Figure::measured(name, labels, v, "count", metrics::Source::kClient));
  };
  auto unavailable = [&](const char* name, const char* unit, const std::string& why) {
    out.push_back(Figure::unavailable(name, labels, unit, metrics::Source::kClient, why));
  };
  // p50 and max of one kind of sample, or both unavailable for `why` when there is one.
  auto seconds = [&](const char* p50, const char* max, const std::vector<double>& s, const std::string& why) {
    if (!why.empty()) {
      unavailable(p50, "s", why);
      unavailable(max, "s", why);
      return;
    }
    out.push_back(Figure::measured(p50, labels, median(s), "s", metrics::Source::kClient));
    out.push_back(Figure::measured(max, labels, s.back(), "s", metrics::Source::kClient));
  };

  if (number(lc, "watchStreams") == 0) {
    // Nothing was watched: no count can be told from a zero.
    std::string why = "the fleet's node watch never opened";
    if (auto e = lc.find("watchLastError"); e != lc.end() && e->is_string()) why += ": " + e->get<std::string>();
    for (const char* n : {"node_not_ready_transitions", "node_ready_transitions", "nodes_not_ready_at_end"})
      unavailable(n, "count", why);
    seconds("node_not_ready_seconds_p50", "node_not_ready_seconds_max", {}, why);
    seconds("node_ready_again_seconds_p50", "node_ready_again_seconds_max", {}, why);
    return;
  }
  const std::vector<double> notReady = samples(lc, "notReadySeconds");
  const std::vector<double> readyAgain = samples(lc, "readyAgainSeconds");
  const double failed = number(w.summary, "nodesFailed");
  const double returned = number(w.summary, "nodesReturned");
  std::string noFailure = failed == 0 ? "no node failed in this run" : "";
  std::string noNotReady = !noFailure.empty() ? noFailure
                           : notReady.empty() ? "no NotReady was seen: no node lifecycle controller ran?"
                                              : "";
  std::string noReadyAgain = !noNotReady.empty()  ? noNotReady
                             : returned == 0      ? "no failed node returned in this run"
                             : readyAgain.empty() ? "no returned node was seen Ready again"
                                                  : "";
  count("node_not_ready_transitions", number(lc, "notReadyTransitions"));
  seconds("node_not_ready_seconds_p50", "node_not_ready_seconds_max", notReady, noNotReady);
  count("node_ready_transitions", number(lc, "readyTransitions"));
  seconds("node_ready_again_seconds_p50", "node_ready_again_seconds_max", readyAgain, noReadyAgain);
  count("nodes_not_ready_at_end", number(lc, "notReadyAtEnd"));
}

// A fleet's renewals answered, and those it missed: failed (after the one re-read a
// conflict gets) or never sent because the previous one was still in flight when the
// next was due. Failed nodes stop renewing on purpose; those are not missed.
void fleetFigures(const reports::WorkloadSummary& w, std::vector<Figure>& out) {
  const metrics::Labels labels = metrics::sortedLabels({{"workload", w.name}});
  out.push_back(Figure::measured("lease_renewals_answered", labels, number(w.summary, "leaseRenewals"), "count",
                                 metrics::Source::kClient));
  out.push_back(Figure::measured("lease_renewals_missed", labels,
                                 number(w.summary, "leaseRenewalFailures") + number(w.summary, "leaseRenewalsSkipped"),
                                 "count", metrics::Source::kClient));
}

// A churn workload's writes that failed for good (after the client's retries).
void churnFigures(const reports::WorkloadSummary& w, std::vector<Figure>& out) {
  const metrics::Labels labels = metrics::sortedLabels({{"workload", w.name}});
  out.push_back(Figure::measured("session_write_failures", labels,
                                 number(w.summary, "createFailures") + number(w.summary, "writeFailures"), "count",
                                 metrics::Source::kClient));
}

// A dormant population's own account: what it was asked to create against what it
// created, and its watchers against those that hold their first list.
void dormantFigures(const reports::WorkloadSummary& w, std::vector<Figure>& out) {
  const metrics::Labels labels = metrics::sortedLabels({{"workload", w.name}});
  auto count = [&](const char* name, double v) {
    out.push_back(Figure::measured(name, labels, v, "count", metrics::Source::kClient));
  };
  const double asked = number(w.summary, "objects"), created = number(w.summary, "created");
  count("dormant_objects", asked);
  count("dormant_objects_created", created);
  count("dormant_objects_missing", std::max(0.0, asked - created));
  const double watchers = number(w.summary, "watchers"), synced = number(w.summary, "watchersSynced");
  if (watchers == 0) {
    for (const char* n : {"dormant_watchers", "dormant_watchers_synced", "dormant_watchers_unsynced"})
      out.push_back(
          Figure::unavailable(n, labels, "count", metrics::Source::kClient, "the workload opened no watchers"));
    return;
  }
  count("dormant_watchers", watchers);
  count("dormant_watchers_synced", synced);
  count("dormant_watchers_unsynced", std::max(0.0, watchers - synced));
  // What the watchers received over the run (ADDED, MODIFIED, DELETED), and per watcher:
  // a sharded watcher gets its range's events only, an unsharded one every event.
  const double events = number(w.summary, "watchEvents");
  count("dormant_watch_events", events);
  count("dormant_watch_events_per_watcher", events / watchers);
}

}  // namespace

void mergeSummary(json& merged, const json& part) {
  for (auto& [k, v] : part.items()) {
    if (!merged.contains(k)) {
      merged[k] = v;
      continue;
    }
    json& m = merged[k];
    if (v.is_boolean() && m.is_boolean()) {
      m = m.get<bool>() && v.get<bool>();
    } else if (v.is_number() && m.is_number()) {
      m = m.get<double>() + v.get<double>();
    } else if (v.is_array() && m.is_array()) {
      m.insert(m.end(), v.begin(), v.end());
    } else if (v.is_object() && m.is_object()) {
      mergeSummary(m, v);
    }
  }
}

std::vector<Figure> workloadFigures(std::vector<reports::WorkloadSummary>& workloads) {
  std::vector<Figure> out;
  for (auto& w : workloads) {
    if (w.kind == "dormant") dormantFigures(w, out);
    if (w.kind == "kubelets") fleetFigures(w, out);
    if (w.kind == "churn") churnFigures(w, out);
    auto lc = w.summary.find("nodeLifecycle");
    if (lc == w.summary.end() || !lc->is_object()) continue;
    lifecycleFigures(w, *lc, out);
    lc->erase("notReadySeconds");
    lc->erase("readyAgainSeconds");
  }
  for (auto& f : out) f.window = metrics::Window::kRun;
  return out;
}

}  // namespace cpscale::cli
