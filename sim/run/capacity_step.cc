#include "sim/run/capacity_step.h"

#include <stdexcept>

namespace cpscale::run {

scenario::Scenario stepScenario(const scenario::Scenario& probe, double value, StepRun how) {
  if (!probe.capacity) throw std::logic_error("stepScenario: '" + probe.name + "' has no capacity block");
  const scenario::CapacitySpec& spec = *probe.capacity;
  scenario::Variation step;
  step.setKnob(spec.knob, value);
  if (how == StepRun::kAlone) step.setDuration(spec.hold).setWarmup(spec.settle + probe.warmup);
  return scenario::vary(probe, step);
}

StepsOutcome stepsOf(const result::RunResult& run, double value, const scenario::CapacitySpec& spec) {
  StepsOutcome o;
  o.detail = run.statusDetail;
  if (run.status != result::RunStatus::kCompleted)
    o.stopped = run.status == result::RunStatus::kInterrupted ? result::CapacityLimit::kInterrupted
                                                              : result::CapacityLimit::kFailed;
  if (run.capacity) {
    o.steps = run.capacity->steps;
  } else if (!o.stopped) {
    std::vector<metrics::Figure> steady;
    for (const auto& f : run.figures)
      if (f.window == metrics::Window::kSteady) steady.push_back(f);
    const result::Phase* w = result::findPhase(run, "steady");
    o.steps.push_back(judgeStep(value, w ? w->startSeconds : 0, w ? w->endSeconds : 0, std::move(steady), spec.gates));
  }
  return o;
}

result::RunResult runGrowing(const scenario::Scenario& probe, const std::vector<double>& values, RunOptions options) {
  scenario::Scenario first = stepScenario(probe, values.front(), StepRun::kGrowing);
  options.capacity = &*probe.capacity;
  options.steps = values;
  return executeRun(first, options);
}

}  // namespace cpscale::run
