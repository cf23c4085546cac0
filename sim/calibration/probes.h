// The live probes `cpscale calibrate` fits the model's cost terms to (probe_fit.h): which
// scenarios under scenarios/calibration run, with which overrides. Running them is a
// live run each, sim/run's (calibration_probes.h).
#pragma once

#include <string>
#include <vector>

#include "sim/calibration/probe_fit.h"
#include "sim/scenario/scenario.h"

namespace cpscale::calibration {

// One probe: a scenario under scenarios/calibration with its overrides.
struct ProbePlan {
  std::string name;
  ProbeKind kind;
  std::string file;
  std::vector<scenario::Override> overrides;
};

// The probes, about 14 minutes on 2 cores (about 10 with `quick`).
std::vector<ProbePlan> probePlan(bool quick);

}  // namespace cpscale::calibration
