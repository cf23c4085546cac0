// Scenario text in a file named after the running test, and what loading it throws:
// for the tests of the scenario schema and of the checks made when a scenario loads.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/scenario/scenario.h"

namespace cpscale::scenario::testing {

class ScenarioFileTest : public ::testing::Test {
 protected:
  // Writes `text` to <temp>/<test name>.yaml; its path.
  std::filesystem::path write(const std::string& text) {
    std::filesystem::path p = std::filesystem::path(::testing::TempDir()) /
                              (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".yaml");
    std::ofstream(p) << text;
    return p;
  }
  // The ConfigError loading `text` throws, or "" when it loads.
  std::string errorOf(const std::string& text, const std::vector<Override>& o = {}) {
    try {
      loadScenario(write(text), o);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace cpscale::scenario::testing
