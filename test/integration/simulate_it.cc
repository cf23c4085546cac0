// The model against the live plane on this machine: the same scenario run live
// (`cpscale run`) and simulated (`cpscale simulate` with the shipped calibration) must
// agree within the tolerances the model promises: write QPS in total and by resource
// and the lease share within 10 %, heap per apiserver replica within 20 %.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "reports/format.h"
#include "reports/result.h"
#include "sim/cli/simulate.h"
#include "sim/controlplane/process.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;

const fs::path kSource = CPSCALE_SOURCE_DIR;

class SimulateValidationTest : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("cpscale-simulate-it-" + std::to_string(::getpid()));
  void TearDown() override { fs::remove_all(dir_); }

  reports::RunResult cpscale(const std::string& command, const std::string& scenario, const std::string& out,
                             const std::string& sets) {
    const fs::path dir = dir_ / out;
    auto r = runCommand(std::string(CPSCALE_BINARY) + " " + command + " " + (kSource / "scenarios" / scenario).string() +
                        " --quiet --out " + dir.string() + " " + sets);
    EXPECT_TRUE(fs::exists(dir / "result.json")) << r.output;
    return reports::readResult(dir / "result.json");
  }
  // Live and model, side by side; every compared figure within its tolerance.
  void validate(const std::string& scenario, const std::string& sets) {
    reports::RunResult live = cpscale("run", scenario, "live", sets);
    reports::RunResult modelled = cpscale("simulate", scenario, "model", sets);
    ASSERT_EQ(live.status, reports::RunStatus::kCompleted) << live.statusDetail;
    ASSERT_EQ(modelled.status, reports::RunStatus::kCompleted) << modelled.statusDetail;
    auto entries = cli::compareLiveAndModel(live, modelled);
    bool heap = false, share = false, resources = false;
    for (const auto& e : entries) {
      std::cout << scenario << ": " << e.figure << " live " << reports::formatGrouped(e.live) << " model "
                << reports::formatGrouped(e.model) << " error " << reports::formatValue(e.relativeError, "ratio")
                << "\n";
      EXPECT_LE(e.relativeError, e.tolerance)
          << scenario << ": " << e.figure << " live " << e.live << ", model " << e.model;
      heap = heap || e.figure.starts_with("apiserver_heap_inuse_bytes");
      share = share || e.figure == "lease_write_share";
      resources = resources || e.figure.starts_with("write_qps{resource=");
    }
    // Nothing the tolerances are about may silently go uncompared.
    EXPECT_TRUE(heap && share && resources) << scenario << ": compared " << entries.size() << " figures";
  }
};

TEST_F(SimulateValidationTest, NodeBoundAgreesWithTheLivePlane) {
  validate("node-bound.yaml", "--set workloads.fleet.count=300 --set duration=60s");
}

TEST_F(SimulateValidationTest, ChurnBoundAgreesWithTheLivePlane) { validate("churn-bound.yaml", "--set duration=60s"); }

}  // namespace
}  // namespace cpscale::testing
