// `cpscale simulate`: a scenario in virtual time against the calibrated model
// (sim/model), through the same run as live (runner.h) with a model target.
//
// Sampling. A scenario larger than the model can run request by request in a few
// seconds (more than `maxActors` nodes, sessions per minute or objects per kind) is run
// with each such extensive knob (Workload::growableFields) divided by a weight w, and
// every request, object and counter of the model counts w times: one simulated kubelet
// stands for w. Watchers count once, as the live generator's shared watches do. What
// sampling cannot keep: setup ramps (registration at registrationQps) run w times
// faster, and per-actor randomness is averaged over fewer actors.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/controlplane/profile.h"
#include "sim/model/calibration.h"
#include "sim/result/capacity.h"
#include "sim/result/result.h"
#include "sim/run/runner.h"
#include "sim/run/target.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

struct SimulateOptions {
  controlplane::Profile profile;
  model::Calibration calibration;
  // Each simulated actor stands for this many; unset: chosen from maxActors.
  std::optional<double> weight;
  double maxActors = 500;
  // Model each apiserver replica and etcd with this many cores of its own instead of
  // the calibration's host (whose cores the local plane shared with the generator).
  std::optional<double> dedicatedCores;
  RunOptions run;  // runId, outDir, progress (cluster and plane fields unused)
};

// The knobs sampling divides: (path for --set, value) of every workload's extensive fields.
std::vector<std::pair<std::string, double>> extensiveKnobs(const scenario::Scenario& scenario);
// 1 when every extensive knob is at most maxActors, else the smallest whole weight
// that brings the largest under it.
double samplingWeight(const scenario::Scenario& scenario, double maxActors);
// The variation that divides each extensive knob by `weight` (rounded, at least 1); none
// at weight 1.
scenario::Variation sampledVariation(const scenario::Scenario& scenario, double weight);

// The model target for a profile and calibration; `weight`: what the load's requests count.
std::unique_ptr<Target> modelTarget(const controlplane::Profile& profile, const model::Calibration& calibration,
                                    double weight, std::uint64_t seed);

// Runs the scenario, varied by the sampling, on the model and writes the result and
// reports to options.run.outDir. result.model says which calibration and sampling were
// used (the scenario the result describes is the one given). Throws ConfigError for bad
// input.
result::RunResult simulateScenario(const scenario::Scenario& scenario, const SimulateOptions& options);

// A capacity search on the model: the scenario's `capacity:` ladder (with bisection),
// each value a fresh simulation whose steady window is the spec's hold, judged by the
// spec's gates (judgeStep) as live steps are (capacity_step.h). Each step's result is
// under options.run.outDir/step-<value>/, its run id options.run.runId-<n>.
result::CapacitySearch simulateCapacity(const scenario::Scenario& probe, const SimulateOptions& options);

// The same, the scenario loaded once from a file with `overrides`.
result::RunResult simulateScenario(const std::filesystem::path& scenarioPath,
                                   const std::vector<scenario::Override>& overrides, const SimulateOptions& options);
result::CapacitySearch simulateCapacity(const std::filesystem::path& scenarioPath,
                                        const std::vector<scenario::Override>& overrides,
                                        const SimulateOptions& options);

}  // namespace cpscale::run
