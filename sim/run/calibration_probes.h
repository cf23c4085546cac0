// Running the live probes `cpscale calibrate` fits the model's cost terms to
// (sim/calibration/probes.h names them): short runs of the scenarios under
// scenarios/calibration, one after another, each on a local plane of its own, with this
// process's CPU sampled beside each (the generator's cost). Here, not in
// sim/calibration, because each probe is a live run (runner.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/calibration/probes.h"
#include "sim/controlplane/placement.h"
#include "sim/controlplane/profile.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

struct ProbeRunOptions {
  std::filesystem::path scenarioDir;  // where the probes' scenario files are
  std::filesystem::path probesDir;    // each probe's result under <probesDir>/<name>
  std::string runId;                  // probe i is run <runId>-<i+1>
  controlplane::Profile profile;
  std::filesystem::path binDir;
  controlplane::Placement placement;
  bool progress = true;
};

struct ProbesOutcome {
  std::vector<calibration::ProbeResult> probes;  // those that completed, in order
  // Set when a probe was interrupted or did not complete: what to tell the user. The
  // probes before it are on disk.
  std::string stopped;
};

// Runs the probes in order, writing each probe file as it completes; stops at the first
// that is interrupted or does not complete.
ProbesOutcome runProbes(const std::vector<calibration::ProbePlan>& plan, const ProbeRunOptions& options);

}  // namespace cpscale::run
