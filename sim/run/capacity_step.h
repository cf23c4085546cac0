// One capacity step, for every search that runs them (the model's, a projected or live
// index's, the calibration's crossing live and on the model): the scenario a step runs,
// and what a finished run says of the steps it held.
#pragma once

#include <vector>

#include "sim/result/result.h"
#include "sim/run/capacity_search.h"
#include "sim/run/runner.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

// How a run holds a capacity step.
//   kAlone: the run is the step, on a fresh target (the model's): its steady window is
//     the spec's hold, after the spec's settle and the probe's warmup (a live step
//     waits up to `settle` for the controller-manager to work off what the growth
//     created; the model has none to wait for, and gives the registration's backlog
//     the same time to drain before the window).
//   kGrowing: a run that grows the knob in place from this value and settles, warms up
//     and holds each step itself (RunOptions::capacity): only the knob is set.
enum class StepRun { kAlone, kGrowing };

// The probe (a scenario with a capacity block) with its knob at `value`, as `how` runs
// it; the probe is unchanged.
scenario::Scenario stepScenario(const scenario::Scenario& probe, double value, StepRun how);

// What a finished run says of its steps: a growing run's judged steps (result.capacity);
// a run alone, its steady window as the step at `value` (the steady figures judged by
// the spec's gates: judgeStep). Cut short (interrupted or failed, with the run's
// detail) when the run did not complete.
StepsOutcome stepsOf(const result::RunResult& run, double value, const scenario::CapacitySpec& spec);

// A live search's call of its step runner: one run on `options`' target growing the
// probe's knob through `values` (its capacity block judges each).
result::RunResult runGrowing(const scenario::Scenario& probe, const std::vector<double>& values, RunOptions options);

}  // namespace cpscale::run
