// The shipped scenarios a user adopts first, live, on the two recipes most clusters
// start from: smoke and state-bound on classic and classic-ha must pass their own
// gates (exit 0), each profile's result completed with every gate passed. The model's
// side of the matrix (every scenario on every profile) is test/unit/cli/matrix_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/controlplane/pki.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// Every profile's result of the run, after checking what all must have.
std::vector<json> expectPassesOnClassicAndClassicHa(const std::string& scenario, const std::string& extra) {
  const fs::path out = makeTempDir("shipped-" + scenario);
  const std::string command = std::string(CPSCALE_BINARY) + " run " CPSCALE_SOURCE_DIR "/scenarios/" + scenario +
                              ".yaml --profile " CPSCALE_SOURCE_DIR
                              "/profiles/classic.yaml --profile " CPSCALE_SOURCE_DIR
                              "/profiles/classic-ha.yaml --quiet --run-id it" +
                              scenario.substr(0, 5) + " --out " + out.string() + extra;
  const CommandResult r = runCommand(command);
  EXPECT_EQ(r.exitCode, 0) << command << "\n" << r.output;
  std::vector<json> results;
  for (const char* profile : {"classic", "classic-ha"}) {
    SCOPED_TRACE(profile);
    results.push_back(json::parse(controlplane::readFile(out / profile / "result.json")));
    const json& result = results.back();
    EXPECT_EQ(result["status"], "completed") << result["statusDetail"];
    EXPECT_FALSE(result["gates"].empty());
    for (const auto& g : result["gates"]) EXPECT_TRUE(g["passed"].get<bool>()) << g.dump();
  }
  fs::remove_all(out);
  return results;
}

TEST(ShippedLive, SmokePassesItsGatesOnClassicAndClassicHa) { expectPassesOnClassicAndClassicHa("smoke", ""); }

// Shortened: the population is created in setup; 30 s of steady window hold its heap.
TEST(ShippedLive, StateBoundPassesItsGatesOnClassicAndClassicHa) {
  const auto results = expectPassesOnClassicAndClassicHa("state-bound", " --set duration=30s");
  // What one dormant custom resource takes in storage, by each apiserver's estimate:
  // ~2 KiB payloads (lognormal, median 2048), so between 1 and 16 KiB with metadata.
  for (const json& result : results) {
    int seen = 0;
    for (const auto& f : result["figures"])
      if (f["name"] == "stored_bytes_per_object" && f["window"] == "steady" &&
          f["labels"].value("resource", "") == "widgets") {
        ASSERT_TRUE(f["value"].is_number()) << f.dump();
        EXPECT_GT(f["value"].get<double>(), 1024) << f.dump();
        EXPECT_LT(f["value"].get<double>(), 16384) << f.dump();
        ++seen;
      }
    // 20 kinds on every replica.
    EXPECT_EQ(seen % 20, 0);
    EXPECT_GE(seen, 20);
  }
}

}  // namespace
}  // namespace cpscale::testing
