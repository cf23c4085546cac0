// The capacity index: each scenario's capacity search on each profile, measured live (a
// ladder run growing the knob in place, each bisection value a run on a fresh plane) or
// projected on the calibrated model, and the index over the searches
// (capacity.json/.md/.html). `cpscale capacity` parses the command line into these.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/controlplane/profile.h"
#include "sim/result/capacity.h"
#include "sim/run/runner.h"
#include "sim/run/simulate.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

struct IndexOptions {
  std::string runId;  // each search's runs are <runId>-<n>
  std::filesystem::path out;
  bool progress = true;
  // Set: every search is projected on the model with these options (calibration,
  // dedicated cores, max actors); its profile and output are filled per search.
  std::optional<SimulateOptions> model;
  // Live: a run's options for a profile (target, binaries, cleanup, progress).
  std::function<RunOptions(const controlplane::Profile&)> runOptions;
};

struct IndexOutcome {
  result::CapacityIndex index;
  int exitCode = 0;  // the worst of the searches'
};

// Every search in turn, each probe (a scenario with a capacity block) on each profile
// (none starts after Ctrl-C), one line per search on `out`; each search's results under
// options.out/<scenario>-<profile>/, and the index beside them.
IndexOutcome buildCapacityIndex(const std::vector<scenario::Scenario>& probes,
                                const std::vector<controlplane::Profile>& profiles, const IndexOptions& options,
                                std::ostream& out);

}  // namespace cpscale::run
