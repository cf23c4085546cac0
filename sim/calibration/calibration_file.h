// The calibration file: a model::Calibration (sim/model/calibration.h) as the versioned
// JSON document `cpscale calibrate` writes and `cpscale simulate` reads, with where it
// was measured, every parameter's interval, the fits' quality and the validation.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/model/calibration.h"

namespace cpscale::calibration {

// The calibration that ships with cpscale, measured on the machine described in it
// (profiles/calibration/default.json under the source tree).
std::filesystem::path defaultCalibrationPath();

// The fitted parameters in the order the file lists them: name, member and unit.
struct ParamField {
  const char* name;
  model::Param model::Calibration::*member;
  const char* unit;
};
std::span<const ParamField> calibrationParams();

nlohmann::json toJson(const model::Calibration& c);
// The validation entries as the calibration file, a model run's result and a projected
// index write them.
nlohmann::json validationJson(const std::vector<model::ValidationEntry>& validation);
// The largest relative error of the validation; none when it was not validated.
std::optional<double> maxValidationError(const model::Calibration& c);
// Where it was measured: "vm (2 CPUs, AMD EPYC)".
std::string calibrationMachine(const model::Calibration& c);
// Throws ConfigError naming the file and the field for a missing or bad field, or a
// version this build does not read.
model::Calibration calibrationFromJson(const nlohmann::json& j, const std::filesystem::path& file);
model::Calibration readCalibration(const std::filesystem::path& file);
void writeCalibration(const model::Calibration& c, const std::filesystem::path& file);

}  // namespace cpscale::calibration
