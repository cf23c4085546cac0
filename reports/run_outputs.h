// A run's output directory: result.json and every rendering of it, written together.
#pragma once

#include <filesystem>

#include "sim/result/result.h"

namespace cpscale::reports {

// Writes result.json and every rendering of it into `dir` (created if needed).
void writeRunOutputs(const result::RunResult& r, const std::filesystem::path& dir);

}  // namespace cpscale::reports
