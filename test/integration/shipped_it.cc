// The shipped scenarios a user adopts first, live, on the two recipes most clusters
// start from: smoke on classic and classic-ha, through the command line, must pass its
// own gates (exit 0), each profile's result completed with every gate passed.
// state-bound's live runs on both are the validation's (test/integration/simulate_it.cc),
// which holds their gates too. The model's side of the matrix (every scenario on every
// profile) is test/unit/cli/matrix_test.cc.
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

TEST(ShippedLive, SmokePassesItsGatesOnClassicAndClassicHa) {
  const fs::path out = makeTempDir("shipped-smoke");
  const std::string command = std::string(CPSCALE_BINARY) +
                              " run " CPSCALE_SOURCE_DIR "/scenarios/smoke.yaml --profile " CPSCALE_SOURCE_DIR
                              "/profiles/classic.yaml --profile " CPSCALE_SOURCE_DIR
                              "/profiles/classic-ha.yaml --quiet --run-id itsmoke --out " +
                              out.string();
  const CommandResult r = runCommand(command);
  EXPECT_EQ(r.exitCode, 0) << command << "\n" << r.output;
  for (const char* profile : {"classic", "classic-ha"}) {
    SCOPED_TRACE(profile);
    const json result = json::parse(controlplane::readFile(out / profile / "result.json"));
    EXPECT_EQ(result["status"], "completed") << result["statusDetail"];
    EXPECT_FALSE(result["gates"].empty());
    for (const auto& g : result["gates"]) EXPECT_TRUE(g["passed"].get<bool>()) << g.dump();
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace cpscale::testing
