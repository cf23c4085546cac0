#include "sim/calibration/probes.h"

namespace cpscale::calibration {

// About 14 minutes on 2 cores (about 10 with --quick), each plane's start (~15 s)
// and its controllers settling included: idle 25 s; node 2 x 25 s; churn 2 x (10 s
// warmup + 25 s); pods 3 x (1,000 pods created + 10 s warmup + 30 s); state 2 x (40 s
// of ramps + 15 s); fan-out and relist 5 x (setup + 25 s); then the validation.
std::vector<ProbePlan> probePlan(bool quick) {
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
      // Changes dispatched to watchers that select none of them (a kube-proxy's slice
      // watch filters out what is not its own, a kubelet's what is not its node's): the
      // same updates, a thousand watchers with a label selector that matches nothing.
      // The watch cache wakes each for every change and sends it nothing: the dispatch's
      // cost told apart from the event's, and the heap of a thousand open watches.
      {"fanout-filtered",
       ProbeKind::kReads,
       "fanout.yaml",
       {{"workloads.fanout.watchers.perKind", "1000"},
        {"workloads.fanout.watchers.labelSelector", "cpscale.io/selects=nothing"}}},
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

}  // namespace cpscale::calibration
