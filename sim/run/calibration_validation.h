// Validating a calibration (sim/calibration/validation.h): each case run live on a local
// plane and on the model, and the lease latency crossing searched on both. Here, not in
// sim/calibration, because both halves are runs (runner.h, simulate.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/calibration/validation.h"
#include "sim/controlplane/placement.h"
#include "sim/controlplane/profile.h"
#include "sim/model/calibration.h"

namespace cpscale::run {

// Runs each case live on a local plane of `profile` (binaries in binDir) and on the
// model with `calibration`, results under dir/<case>/{live,model}, and returns every
// compared figure (calibration::compareLiveAndModel), prefixed with the scenario's name.
std::vector<model::ValidationEntry> validateCalibration(
    const model::Calibration& calibration, const controlplane::Profile& profile, const std::filesystem::path& binDir,
    const std::filesystem::path& dir, const std::string& runId, bool progress,
    const std::vector<calibration::ValidationCase>& cases = calibration::defaultValidationCases(),
    const std::optional<calibration::CrossingCase>& crossing = calibration::CrossingCase{},
    const controlplane::Placement& placement = {});

}  // namespace cpscale::run
