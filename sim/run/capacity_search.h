// The capacity search's logic, apart from what runs the steps: judging one step from
// its window's figures, and a search over the ladder with optional bisection. The live
// runner (runner.cc) holds the steps on a real plane; tests hold them against a
// scripted server in virtual time.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/metrics/figures.h"
#include "sim/metrics/gate.h"
#include "sim/result/capacity.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

// One step held at `value` over [startSeconds, endSeconds]: it held when every gate
// passed and the generator kept its schedule. A step where the generator itself ran
// late (generator_limited_by_schedule) is generator-limited: it says nothing about the
// server, whatever its gates say. Waiting for in-flight slots is the server's doing
// (it answered too slowly for the bound), so it does not make a step generator-limited.
result::CapacityStep judgeStep(double value, double startSeconds, double endSeconds,
                               std::vector<metrics::Figure> figures, std::span<const metrics::Gate> gates);

// What a target made of a list of values held in order, growing in place: the steps it
// judged, ending with the first that did not hold, or cut short (`stopped`: interrupted
// or failed, with why) before the list ran out.
struct StepsOutcome {
  std::vector<result::CapacityStep> steps;
  std::optional<result::CapacityLimit> stopped;
  std::string detail;
};
using StepRunner = std::function<StepsOutcome(const std::vector<double>& values)>;

// The search: the spec's ladder on one target, then up to spec.bisect rounds between the
// last value that held and the first that broke on the server, each round one value on
// a fresh target (rounded to whole numbers when `whole`; it stops early once the two are
// adjacent). Fills held, limit, brokeBy and detail; profile/scenario/axis/knob/unit from
// the spec and the arguments.
result::CapacitySearch searchCapacity(const scenario::CapacitySpec& spec, const StepRunner& run,
                                      const std::string& profile, const std::string& scenario, bool whole = true);

using scenario::knobText;

// capacity{axis, knob} (the knob's unit): the largest value that held; unavailable,
// with the reason, when none did or the search could not tell (generator-limited first
// step, interrupted). `atLeast` label "true" when every step held (the max was reached).
metrics::Figure capacityFigure(const result::CapacitySearch& s);

}  // namespace cpscale::run
