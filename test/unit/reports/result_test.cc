#include "sim/result/result.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "reports/run_outputs.h"
#include "sim/common/error.h"
#include "test/support/sample_result.h"

namespace cpscale::result {
namespace {

namespace fs = std::filesystem;

class ResultFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cpscale-result-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  // A valid document with one change made to it.
  fs::path writeEdited(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = toJson(testing::sampleResult());
    edit(j);
    return write("edited.json", j.dump());
  }
  fs::path dir_;
};

TEST_F(ResultFileTest, RoundTripIsExact) {
  RunResult r = testing::sampleResult();
  // Values JSON cannot hold, and a time that is not a round number of seconds.
  r.figures[0].overTime.values[1] = std::nan("");
  r.figures[1].overTime.values[2] = INFINITY;
  r.figures[1].overTime.times[3] = engine::TimePoint{engine::Duration{30'000'000'007}};
  r.status = RunStatus::kInterrupted;
  r.statusDetail = "SIGINT after 60 s";
  writeResult(r, dir_ / "out" / "result.json");
  RunResult back = readResult(dir_ / "out" / "result.json");
  EXPECT_TRUE(back == r);
  EXPECT_EQ(toJson(back), toJson(r));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "result.json.tmp"));
}

TEST_F(ResultFileTest, AFoldedGateRoundTripsAndAnUnfoldedOneWritesNoFold) {
  RunResult r = testing::sampleResult();
  ASSERT_GE(r.gates.size(), 2u);
  r.gates[0].gate = metrics::parseGate("max(apiserver_heap_inuse_bytes_peak) <= 1GiB", "s.yaml:3", "gates[0]");
  writeResult(r, dir_ / "result.json");
  RunResult back = readResult(dir_ / "result.json");
  EXPECT_EQ(back.gates[0].gate.fold, metrics::GateFold::kMax);
  EXPECT_TRUE(back == r);
  const nlohmann::json j = toJson(r);
  EXPECT_EQ(j["gates"][0]["gate"]["fold"], "max");
  EXPECT_FALSE(j["gates"][1]["gate"].contains("fold"));
}

TEST_F(ResultFileTest, ControllerSourcesRoundTrip) {
  RunResult r = testing::controllerResult();
  writeResult(r, dir_ / "result.json");
  RunResult back = readResult(dir_ / "result.json");
  EXPECT_TRUE(back == r);
  const metrics::Figure* f = metrics::findFigure(back.figures, "scheduler_pending_pods_max");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->source, metrics::Source::kScheduler);
  nlohmann::json j = toJson(r);
  EXPECT_EQ(j["figures"].back()["source"], "client");
  bool cm = false;
  for (const auto& fig : j["figures"]) cm = cm || fig["source"] == "kube-controller-manager";
  EXPECT_TRUE(cm);
}

TEST_F(ResultFileTest, DocumentIdentifiesItselfAndMarksUnavailableFigures) {
  nlohmann::json j = toJson(testing::sampleResult());
  EXPECT_EQ(j["apiVersion"], "cpscale.io/v1alpha1");
  EXPECT_EQ(j["kind"], "RunResult");
  EXPECT_EQ(j["schemaVersion"], 2);
  const nlohmann::json& share = j["figures"][4];
  ASSERT_EQ(share["name"], "etcd_lease_proposal_share");
  EXPECT_TRUE(share["value"].is_null());
  EXPECT_EQ(share["unavailable"], "leases share an etcd with everything else");
  EXPECT_EQ(j["figures"][0]["overTime"]["seconds"][1], 15.0);
  EXPECT_FALSE(j["figures"][0].contains("unavailable"));
}

void expectConfigError(const fs::path& file, const std::string& field, const std::string& fragment) {
  try {
    readResult(file);
    FAIL() << "expected ConfigError for " << field;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), file.string());
    EXPECT_EQ(e.field(), field);
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST_F(ResultFileTest, MissingFileNamesIt) { expectConfigError(dir_ / "nope.json", "", "cannot be read"); }

TEST_F(ResultFileTest, MalformedJsonNamesTheFile) {
  expectConfigError(write("bad.json", "{\"apiVersion\": \"cpscale.io/v1alpha1\",\n  \"kind\": }"), "",
                    "not valid JSON");
}

TEST_F(ResultFileTest, WrongApiVersionKindOrSchemaVersion) {
  expectConfigError(writeEdited([](auto& j) { j["apiVersion"] = "cpscale.io/v2"; }), "/apiVersion", "cpscale.io/v2");
  expectConfigError(writeEdited([](auto& j) { j["kind"] = "Scenario"; }), "/kind", "not a RunResult");
  expectConfigError(writeEdited([](auto& j) { j["schemaVersion"] = 1; }), "/schemaVersion", "reads version 2");
  expectConfigError(writeEdited([](auto& j) { j.erase("apiVersion"); }), "/apiVersion", "missing");
}

TEST_F(ResultFileTest, BadFieldsAreNamedByJsonPath) {
  expectConfigError(writeEdited([](auto& j) { j["figures"][3]["value"] = "lots"; }), "/figures/3/value",
                    "expected a number");
  expectConfigError(writeEdited([](auto& j) { j["figures"][4].erase("unavailable"); }), "/figures/4/value",
                    "no \"unavailable\" reason");
  expectConfigError(writeEdited([](auto& j) { j["figures"][0]["source"] = "guess"; }), "/figures/0/source",
                    "unknown source 'guess'");
  expectConfigError(writeEdited([](auto& j) { j["gates"][1]["gate"]["op"] = "~"; }), "/gates/1/gate/op",
                    "unknown operator");
  expectConfigError(writeEdited([](auto& j) { j["gates"][1]["gate"]["fold"] = "avg"; }), "/gates/1/gate/fold",
                    "unknown fold 'avg' (one of max, min, sum)");
  expectConfigError(writeEdited([](auto& j) { j["status"] = "done"; }), "/status", "unknown status 'done'");
  expectConfigError(writeEdited([](auto& j) { j["figures"][0]["overTime"]["values"].erase(0); }),
                    "/figures/0/overTime/values", "7 times");
  expectConfigError(writeEdited([](auto& j) { j["figures"][0]["overTime"]["seconds"][2] = 5.0; }),
                    "/figures/0/overTime/seconds/2", "strictly increase");
  expectConfigError(writeEdited([](auto& j) { j["target"]["kind"] = "cloud"; }), "/target/kind",
                    "one of local, cluster");
}

TEST_F(ResultFileTest, RunOutputsAreAllWritten) {
  reports::writeRunOutputs(testing::sampleResult(), dir_ / "runs" / "x");
  for (std::string_view f : {kResultFile, kSummaryFile, kHtmlFile, kJunitFile})
    EXPECT_GT(fs::file_size(dir_ / "runs" / "x" / f), 100u) << f;
}

}  // namespace
}  // namespace cpscale::result
