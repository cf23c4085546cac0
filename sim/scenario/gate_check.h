// Whether a scenario's gates can be judged at all: a gate on a figure the scenario can
// never produce fails every run for a reason that says nothing about the plane, so it
// is refused when the scenario loads, naming the gate's file:line.
#pragma once

#include <string>

#include "sim/controlplane/profile.h"
#include "sim/scenario/scenario.h"

namespace cpscale::scenario {

// Why `gate` can never be judged in `s` (its workloads as configured, its capacity block
// and faults), or "" when it can. `stepGate`: one of capacity.gates (what holds means
// for one step), which cannot be the search's own result. What is checked:
//   capacity{axis}                 a capacity block, on that axis, judged by the search
//   generator_limited, schedule_lag_*, client_latency_* (steady window)
//                                  a workload sending on a schedule once set up
//   fault_*{member}                a fault on that member
//   a workload's own figures       (workloads::figureKindOf) a workload of that kind,
//                                  named by the gate's workload= label if it has one,
//                                  configured to measure it (Workload::whyNotMeasured)
// Figures of the plane (write_qps, heap, ...) exist in every scenario and pass.
std::string whyGateCannotBeJudged(const metrics::Gate& gate, const Scenario& s, bool stepGate = false);

// Throws ConfigError(gate.where, gate.field, ...) for the first gate of `s` (and of its
// capacity block) that cannot be judged.
void checkGatesCanBeJudged(const Scenario& s);

// Why `gate` can never be judged on the plane `profile` describes, or "": a node is
// marked NotReady only by kube-controller-manager's node lifecycle controller, so the
// node_not_ready_seconds_* and node_ready_again_seconds_* figures need one.
std::string whyGateCannotBeJudgedOn(const metrics::Gate& gate, const controlplane::Profile& profile);

// Throws ConfigError(gate.where, gate.field, ...) for the first gate of `s` (and of its
// capacity block) that cannot be judged on `profile`'s plane; the commands call it for
// every profile before anything starts.
void checkGatesOnProfile(const Scenario& s, const controlplane::Profile& profile);

// A run that is not a capacity search cannot judge capacity{...}: ConfigError naming
// the gate and the command that can.
void refuseCapacityGatesOutsideASearch(const Scenario& s);

}  // namespace cpscale::scenario
