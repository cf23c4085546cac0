#include "sim/scenario/gate_check.h"

#include <algorithm>

#include "sim/common/error.h"

namespace cpscale::scenario {

namespace {

std::string labelOf(const metrics::Gate& g, const std::string& name) {
  for (const auto& l : g.selector)
    if (l.name == name) return l.value;
  return "";
}

std::string namesOf(const Scenario& s) {
  std::string out;
  for (const auto& w : s.workloads) out += (out.empty() ? "" : ", ") + w->name();
  return out;
}

bool steadyLoadFigure(const metrics::Gate& g) {
  const std::string window = labelOf(g, "window");
  if (!window.empty() && window != "steady") return false;
  return g.figure == "generator_limited" || g.figure.starts_with("schedule_lag_") ||
         g.figure.starts_with("client_latency_");
}

std::string workloadFigure(const metrics::Gate& g, const Scenario& s, const std::string& kind) {
  const std::string named = labelOf(g, "workload");
  std::string why;
  bool any = false;
  for (const auto& w : s.workloads) {
    if (!named.empty() && w->name() != named) continue;
    if (w->kind() != kind) {
      if (!named.empty())
        return "workload '" + named + "' is of kind " + w->kind() + "; " + g.figure + " is a " + kind + " workload's";
      continue;
    }
    any = true;
    const std::string reason = w->whyNotMeasured(g.figure);
    if (reason.empty()) return "";
    if (why.empty()) why = reason;
  }
  if (!named.empty() && !any) return "no workload is named '" + named + "' (the scenario's: " + namesOf(s) + ")";
  if (!any) return g.figure + " is a " + kind + " workload's own figure and the scenario has none";
  return why;
}

}  // namespace

std::string whyGateCannotBeJudged(const metrics::Gate& g, const Scenario& s, bool stepGate) {
  if (g.figure == "capacity") {
    if (stepGate) return "capacity is what the search finds; a step holds by the figures of its own run";
    if (!s.capacity) return "capacity is found by a capacity search and the scenario has no capacity: block";
    const std::string axis = labelOf(g, "axis");
    if (!axis.empty() && axis != s.capacity->axis)
      return "the capacity block searches the " + s.capacity->axis + " axis, not " + axis;
    return "";
  }
  if (steadyLoadFigure(g) &&
      std::none_of(s.workloads.begin(), s.workloads.end(), [](const auto& w) { return w->loadsSteadyWindow(); }))
    return "no workload sends anything on a schedule once set up (a dormant population without updatesPerSecond "
           "or watchers.relistEvery is idle), so the steady window has no " +
           g.figure + " to judge";
  if (g.figure.starts_with("fault_")) {
    if (s.faults.empty()) return "the scenario has no faults:";
    const std::string member = labelOf(g, "member");
    if (!member.empty() &&
        std::none_of(s.faults.begin(), s.faults.end(), [&](const FaultSpec& f) { return f.member == member; }))
      return "no fault acts on " + member;
    return "";
  }
  if (const std::string kind = workloads::figureKindOf(g.figure); !kind.empty()) return workloadFigure(g, s, kind);
  return "";
}

void checkGatesCanBeJudged(const Scenario& s) {
  auto check = [&](const metrics::Gate& g, bool step) {
    if (const std::string why = whyGateCannotBeJudged(g, s, step); !why.empty())
      throw ConfigError(g.where, g.field, "gate '" + g.text + "' can never be judged here: " + why);
  };
  for (const auto& g : s.gates) check(g, false);
  if (s.capacity)
    for (const auto& g : s.capacity->gates) check(g, true);
}

std::string whyGateCannotBeJudgedOn(const metrics::Gate& g, const controlplane::Profile& profile) {
  const bool judgedByTheController =
      g.figure.starts_with("node_not_ready_seconds_") || g.figure.starts_with("node_ready_again_seconds_");
  if (judgedByTheController && !profile.controllerManager.enabled)
    return "profile '" + profile.name +
           "' runs no kube-controller-manager, whose node lifecycle controller is what marks a silent node NotReady";
  return "";
}

void checkGatesOnProfile(const Scenario& s, const controlplane::Profile& profile) {
  auto check = [&](const metrics::Gate& g) {
    if (const std::string why = whyGateCannotBeJudgedOn(g, profile); !why.empty())
      throw ConfigError(g.where, g.field, "gate '" + g.text + "' can never be judged here: " + why);
  };
  for (const auto& g : s.gates) check(g);
  if (s.capacity)
    for (const auto& g : s.capacity->gates) check(g);
}

void refuseCapacityGatesOutsideASearch(const Scenario& s) {
  for (const auto& g : s.gates)
    if (g.figure == "capacity")
      throw ConfigError(g.where, g.field,
                        "gate '" + g.text + "' is judged by a capacity search: run `cpscale capacity " + s.source +
                            "` (or `cpscale simulate --capacity`), or drop the gate to run one step");
}

}  // namespace cpscale::scenario
