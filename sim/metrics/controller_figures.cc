#include "sim/metrics/controller_figures.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace cpscale::metrics {

namespace {

constexpr std::string_view kDepth = "workqueue_depth";
constexpr std::string_view kAdds = "workqueue_adds_total";
constexpr std::string_view kEvictions = "node_collector_evictions_total";
constexpr std::string_view kUnhealthy = "node_collector_unhealthy_nodes_in_zone";
constexpr std::string_view kTaintDeletions = "taint_eviction_controller_pod_deletions_total";
constexpr std::string_view kPending = "scheduler_pending_pods";
constexpr std::string_view kAttempts = "scheduler_schedule_attempts_total";
constexpr std::string_view kLeader = "leader_election_master_status";

Source sourceOf(TargetRole r) { return r == TargetRole::kScheduler ? Source::kScheduler : Source::kControllerManager; }

std::string notExposed(std::string_view metric, const std::vector<const TargetScrapes*>& ts) {
  if (ts.size() == 1)
    return std::string(metric) + " is not exposed by " + roleName(ts.front()->info.role) + " " + ts.front()->info.name;
  return std::string(metric) + " is not exposed by any " + roleName(ts.front()->info.role) + " target";
}

// A counter's increase over the window per value of one label, summed over the targets
// and the series' other labels. Needs two scrapes of a target.
struct Increases {
  std::map<std::string, double> byLabel;
  bool exposed = false;
  double total() const {
    double s = 0;
    for (const auto& [k, v] : byLabel) s += v;
    return s;
  }
};
Increases increases(const std::vector<const TargetScrapes*>& ts, std::string_view metric, std::string_view label) {
  Increases out;
  for (const TargetScrapes* t : ts) {
    const ScrapeHistory& h = t->history;
    if (h.scrapes() < 2) continue;
    for (ScrapeHistory::SeriesId id : h.seriesNamed(metric)) {
      out.exposed = true;
      out.byLabel[std::string(labelValue(h.key(id).labels, label))] += totalIncrease(h.counter(id));
    }
  }
  return out;
}

// A gauge's peak over the window per value of one label, across the targets; `sum`,
// the peak of its sum over the label's values within one scrape of one target (the
// targets are replicas of one component, not parts of a whole).
struct Peaks {
  std::map<std::string, double> byLabel;
  double sum = 0;
  bool exposed = false;
  double max() const {
    double m = 0;
    for (const auto& [k, v] : byLabel) m = std::max(m, v);
    return m;
  }
};
Peaks peaks(const std::vector<const TargetScrapes*>& ts, std::string_view metric, std::string_view label) {
  Peaks out;
  for (const TargetScrapes* t : ts) {
    const ScrapeHistory& h = t->history;
    const auto& ids = h.seriesNamed(metric);
    if (h.scrapes() == 0 || ids.empty()) continue;
    out.exposed = true;
    for (ScrapeHistory::SeriesId id : ids) {
      TimeSeries g = h.gauge(id);
      if (g.empty()) continue;
      double peak = *std::max_element(g.values.begin(), g.values.end());
      auto [it, inserted] = out.byLabel.try_emplace(std::string(labelValue(h.key(id).labels, label)), peak);
      if (!inserted) it->second = std::max(it->second, peak);
    }
    for (std::size_t s = 0; s < h.scrapes(); ++s) {
      double sum = 0;
      for (ScrapeHistory::SeriesId id : ids)
        if (auto v = h.value(s, id)) sum += *v;
      out.sum = std::max(out.sum, sum);
    }
  }
  return out;
}

void workqueueFigures(std::vector<Figure>& out, const std::vector<const TargetScrapes*>& ts, TargetRole role) {
  const std::string component = roleName(role);
  const Source src = sourceOf(role);
  Peaks depth = peaks(ts, kDepth, "name");
  Increases adds = increases(ts, kAdds, "name");
  // Every controller of the controller-manager runs on workqueues; the scheduler's own
  // queue has figures of its own, and it may have no workqueue at all.
  if (role == TargetRole::kScheduler && !depth.exposed && !adds.exposed) return;
  const Labels self = sortedLabels({{"component", component}});
  std::string depthWhy = whyNoRoleData(ts, role, 1);
  if (depthWhy.empty() && !depth.exposed) depthWhy = notExposed(kDepth, ts);
  std::string addsWhy = whyNoRoleData(ts, role, 2);
  if (addsWhy.empty() && !adds.exposed) addsWhy = notExposed(kAdds, ts);
  out.push_back(depthWhy.empty() ? Figure::measured("workqueue_depth_max", self, depth.max(), "count", src)
                                 : Figure::unavailable("workqueue_depth_max", self, "count", src, depthWhy));
  out.push_back(addsWhy.empty() ? Figure::measured("workqueue_adds", self, adds.total(), "count", src)
                                : Figure::unavailable("workqueue_adds", self, "count", src, addsWhy));
  // Dozens of queues sit idle in any window: only those that held or took an item.
  std::set<std::string> queues;
  for (const auto& [q, v] : depth.byLabel) queues.insert(q);
  for (const auto& [q, v] : adds.byLabel) queues.insert(q);
  for (const std::string& q : queues) {
    auto d = depth.byLabel.find(q);
    auto a = adds.byLabel.find(q);
    bool busy = (d != depth.byLabel.end() && d->second > 0) || (a != adds.byLabel.end() && a->second > 0);
    if (!busy) continue;
    Labels l = sortedLabels({{"component", component}, {"queue", q}});
    if (d != depth.byLabel.end()) out.push_back(Figure::measured("workqueue_depth_max", l, d->second, "count", src));
    if (a != adds.byLabel.end()) out.push_back(Figure::measured("workqueue_adds", l, a->second, "count", src));
  }
}

void leaderFigures(std::vector<Figure>& out, const std::vector<const TargetScrapes*>& ts, TargetRole role) {
  std::map<std::string, double> leads;  // lease name -> 1 when a process of the component holds it
  for (const TargetScrapes* t : ts) {
    const ScrapeHistory& h = t->history;
    for (ScrapeHistory::SeriesId id : h.seriesNamed(kLeader)) {
      TimeSeries g = h.gauge(id);
      if (g.empty()) continue;
      auto [it, inserted] = leads.try_emplace(std::string(labelValue(h.key(id).labels, "name")), g.values.back());
      if (!inserted) it->second = std::max(it->second, g.values.back());
    }
  }
  for (const auto& [name, v] : leads) {
    Labels l = sortedLabels({{"component", roleName(role)}, {"name", name}});
    out.push_back(Figure::measured("leader_election_master", std::move(l), v, "", sourceOf(role)));
  }
}

// A counter per label value and its total, or the total unavailable with the reason.
void countFigures(std::vector<Figure>& out, const std::string& figure, std::string_view label, const Increases& inc,
                  const std::string& why, Source src) {
  if (!why.empty()) {
    out.push_back(Figure::unavailable(figure, {}, "count", src, why));
    return;
  }
  out.push_back(Figure::measured(figure, {}, inc.total(), "count", src));
  for (const auto& [v, n] : inc.byLabel)
    out.push_back(Figure::measured(figure, sortedLabels({{label, v}}), n, "count", src));
}

// A gauge's peak summed over label values and per value, or unavailable with the reason.
void peakFigures(std::vector<Figure>& out, const std::string& figure, std::string_view label, const Peaks& p,
                 const std::string& why, Source src) {
  if (!why.empty()) {
    out.push_back(Figure::unavailable(figure, {}, "count", src, why));
    return;
  }
  out.push_back(Figure::measured(figure, {}, p.sum, "count", src));
  for (const auto& [v, n] : p.byLabel)
    out.push_back(Figure::measured(figure, sortedLabels({{label, v}}), n, "count", src));
}

void controllerManagerFigures(std::vector<Figure>& out, std::span<const TargetScrapes> targets) {
  constexpr TargetRole role = TargetRole::kControllerManager;
  const Source src = sourceOf(role);
  auto cms = ofRole(targets, role);
  workqueueFigures(out, cms, role);

  // The node lifecycle controller makes node_collector_* series per zone once it has
  // seen a node there: their absence says it is off or saw no node, not that all is well.
  const std::string noNodes = " (the node lifecycle controller is off, or has seen no node)";
  Increases evictions = increases(cms, kEvictions, "zone");
  std::string why = whyNoRoleData(cms, role, 2);
  if (why.empty() && !evictions.exposed) why = notExposed(kEvictions, cms) + noNodes;
  countFigures(out, "node_lifecycle_evictions", "zone", evictions, why, src);

  Peaks unhealthy = peaks(cms, kUnhealthy, "zone");
  why = whyNoRoleData(cms, role, 1);
  if (why.empty() && !unhealthy.exposed) why = notExposed(kUnhealthy, cms) + noNodes;
  peakFigures(out, "node_lifecycle_unhealthy_nodes_max", "zone", unhealthy, why, src);

  Increases deletions = increases(cms, kTaintDeletions, "");
  why = whyNoRoleData(cms, role, 2);
  if (why.empty() && !deletions.exposed)
    why = notExposed(kTaintDeletions, cms) + " (the taint eviction controller is off)";
  out.push_back(why.empty() ? Figure::measured("taint_eviction_pod_deletions", {}, deletions.total(), "count", src)
                            : Figure::unavailable("taint_eviction_pod_deletions", {}, "count", src, why));

  leaderFigures(out, cms, role);
}

void schedulerFigures(std::vector<Figure>& out, std::span<const TargetScrapes> targets) {
  constexpr TargetRole role = TargetRole::kScheduler;
  const Source src = sourceOf(role);
  auto scheds = ofRole(targets, role);

  Peaks pending = peaks(scheds, kPending, "queue");
  std::string why = whyNoRoleData(scheds, role, 1);
  if (why.empty() && !pending.exposed) why = notExposed(kPending, scheds);
  peakFigures(out, "scheduler_pending_pods_max", "queue", pending, why, src);

  Increases attempts = increases(scheds, kAttempts, "result");
  why = whyNoRoleData(scheds, role, 2);
  // The scheduler makes a result's series at its first attempt, but its queue gauges
  // from the start: with those present, a result without a series had no attempts.
  bool schedulerMetrics = attempts.exposed || std::any_of(scheds.begin(), scheds.end(), [](const TargetScrapes* t) {
                            return t->history.scrapes() >= 2 && !t->history.seriesNamed(kPending).empty();
                          });
  if (why.empty() && !schedulerMetrics) why = notExposed(kAttempts, scheds);
  if (why.empty())
    for (const char* result : {"scheduled", "unschedulable", "error"}) attempts.byLabel.try_emplace(result, 0);
  countFigures(out, "scheduler_schedule_attempts", "result", attempts, why, src);

  workqueueFigures(out, scheds, role);
  leaderFigures(out, scheds, role);
}

}  // namespace

std::vector<Figure> controllerFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  controllerManagerFigures(out, targets);
  schedulerFigures(out, targets);
  return out;
}

}  // namespace cpscale::metrics
