// The shipped scenarios a user adopts first, live, on the two recipes most clusters
// start from: smoke and state-bound on classic and classic-ha must pass their own
// gates (exit 0), each profile's result completed with every gate passed. The model's
// side of the matrix (every scenario on every profile) is test/unit/cli/matrix_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/controlplane/pki.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

void expectPassesOnClassicAndClassicHa(const std::string& scenario, const std::string& extra) {
  const fs::path out = makeTempDir("shipped-" + scenario);
  const std::string command = std::string(CPSCALE_BINARY) + " run " CPSCALE_SOURCE_DIR "/scenarios/" + scenario +
                              ".yaml --profile " CPSCALE_SOURCE_DIR "/profiles/classic.yaml --profile " CPSCALE_SOURCE_DIR
                              "/profiles/classic-ha.yaml --quiet --run-id it" +
                              scenario.substr(0, 5) + " --out " + out.string() + extra;
  const CommandResult r = runCommand(command);
  EXPECT_EQ(r.exitCode, 0) << command << "\n" << r.output;
  for (const char* profile : {"classic", "classic-ha"}) {
    SCOPED_TRACE(profile);
    const json result = json::parse(controlplane::readFile(out / profile / "result.json"));
    EXPECT_EQ(result["status"], "completed") << result["statusDetail"];
    ASSERT_FALSE(result["gates"].empty());
    for (const auto& g : result["gates"]) EXPECT_TRUE(g["passed"].get<bool>()) << g.dump();
  }
  fs::remove_all(out);
}

TEST(ShippedLive, SmokePassesItsGatesOnClassicAndClassicHa) { expectPassesOnClassicAndClassicHa("smoke", ""); }

// Shortened: the population is created in setup; 30 s of steady window hold its heap.
TEST(ShippedLive, StateBoundPassesItsGatesOnClassicAndClassicHa) {
  expectPassesOnClassicAndClassicHa("state-bound", " --set duration=30s");
}

}  // namespace
}  // namespace cpscale::testing
