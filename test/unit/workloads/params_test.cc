// Parameters, validation errors (file, line, field; nothing created) and the small
// building blocks: durations, token bucket, timestamps, templates.
#include <gtest/gtest.h>

#include <fstream>

#include "test/support/workload_harness.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/params.h"
#include "workloads/templates.h"

namespace cpscale::workloads::testing {
namespace {

std::string errorOf(const std::string& yaml) {
  try {
    makeWorkload(entry(yaml));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Durations, ParseGoStyle) {
  EXPECT_EQ(parseDuration("250ms"), engine::Duration(250ms));
  EXPECT_EQ(parseDuration("10s"), engine::Duration(10s));
  EXPECT_EQ(parseDuration("5m"), engine::Duration(5min));
  EXPECT_EQ(parseDuration("1h30m"), engine::Duration(90min));
  EXPECT_EQ(parseDuration("1.5s"), engine::Duration(1500ms));
  EXPECT_EQ(parseDuration("0"), engine::Duration(0));
  for (const char* bad : {"", "10", "s", "10x", "-1s", "1.s2", "ms"}) EXPECT_FALSE(parseDuration(bad)) << bad;
  EXPECT_EQ(formatDuration(90min), "1h30m");
  EXPECT_EQ(formatDuration(250ms), "250ms");
}

TEST(TokenBucket, BurstThenSpacedAtQps) {
  TokenBucket b(10, 3);
  engine::TimePoint t{};
  EXPECT_EQ(b.reserve(t), t);
  EXPECT_EQ(b.reserve(t), t);
  EXPECT_EQ(b.reserve(t), t);
  EXPECT_EQ(b.reserve(t), t + 100ms);
  EXPECT_EQ(b.reserve(t), t + 200ms);
  // After an idle spell the burst is back, but never more than burst.
  EXPECT_EQ(b.reserve(t + 10s), t + 10s);
  EXPECT_EQ(b.reserve(t + 10s), t + 10s);
  EXPECT_EQ(b.reserve(t + 10s), t + 10s);
  EXPECT_EQ(b.reserve(t + 10s), t + 10100ms);
  TokenBucket unlimited(0, 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.reserve(t), t);
}

TEST(Time, MicroTimeIsFixedWidthRfc3339) {
  EXPECT_EQ(microTime(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(microTime(1'700'000'000'123'456'789), "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(rfc3339(951'782'400'000'000'000), "2000-02-29T00:00:00Z");
}

TEST(Time, Rfc3339ParsesWhatTheApiWrites) {
  using std::chrono::system_clock;
  auto unix = [](std::int64_t ns) { return system_clock::time_point(std::chrono::nanoseconds(ns)); };
  EXPECT_EQ(parseRfc3339(microTime(1'700'000'000'123'456'000)), unix(1'700'000'000'123'456'000));
  EXPECT_EQ(parseRfc3339(rfc3339(951'782'400'000'000'000)), unix(951'782'400'000'000'000));
  EXPECT_EQ(parseRfc3339("2026-12-03T14:51:14.5Z"), unix(1'796'309'474'500'000'000));
  for (const char* bad : {"", "2026-12-03", "2026-12-03T14:51:14", "2026-12-03T14:51:14+01:00", "yesterday",
                          "2026-12-03T14:51:14.123Zjunk"})
    EXPECT_FALSE(parseRfc3339(bad)) << bad;
}

TEST(Validation, NegativeCountNamesFileLineAndField) {
  std::string e = errorOf("kind: kubelets\nname: fleet\ncount: -5\n");
  EXPECT_NE(e.find("scenario.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("'count'"), std::string::npos) << e;
  EXPECT_NE(e.find("negative"), std::string::npos) << e;
}

TEST(Validation, ZeroRateWithNonZeroCount) {
  std::string e = errorOf("kind: kubelets\ncount: 10\nregistrationQps: 0\n");
  EXPECT_NE(e.find("scenario.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("'registrationQps'"), std::string::npos) << e;
  e = errorOf("kind: churn\nmaxSessions: 10\nsessionsPerMinute: 0\n");
  EXPECT_NE(e.find("scenario.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("'sessionsPerMinute'"), std::string::npos) << e;
  e = errorOf("kind: dormant\ncrdKinds: 2\nobjectsPerKind: 10\ncreateQps: 0\n");
  EXPECT_NE(e.find("scenario.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("'createQps'"), std::string::npos) << e;
}

TEST(Validation, UnknownCrdGroup) {
  std::string e = errorOf("kind: churn\nsessionsPerMinute: 5\ntargets:\n  - crd: widgets.example.com\n");
  EXPECT_NE(e.find("scenario.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("targets[0].crd"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown CRD group 'example.com'"), std::string::npos) << e;
}

TEST(Validation, UnknownFieldsKindsAndBadDurations) {
  EXPECT_NE(errorOf("kind: kubelets\ncount: 1\nleaseDuration: 40\n").find("'leaseDuration': unknown field"),
            std::string::npos);
  EXPECT_NE(errorOf("kind: kubletes\ncount: 1\n").find("unknown workload kind"), std::string::npos);
  std::string e = errorOf("kind: kubelets\ncount: 1\nstatusReportFrequency: 5 minutes\n");
  EXPECT_NE(e.find("scenario.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a duration"), std::string::npos) << e;
  e = errorOf("kind: churn\nsessionsPerMinute: 5\ndwell: {running: {weibull: 3s}}\n");
  EXPECT_NE(e.find("dwell.running.weibull"), std::string::npos) << e;
}

TEST(Validation, KubeletEventsAndPodReplacementFields) {
  std::string e = errorOf("kind: kubelets\ncount: 1\nchurn: {podReplacementsPerMinute: 5}\n");
  EXPECT_NE(e.find("scenario.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("churn.podReplacementsPerMinute"), std::string::npos) << e;
  EXPECT_NE(e.find("podsPerNode is 0"), std::string::npos) << e;
  e = errorOf("kind: kubelets\ncount: 1\npodsPerNode: 1\nchurn: {podReplacementsPerMinute: -1}\n");
  EXPECT_NE(e.find("churn.podReplacementsPerMinute"), std::string::npos) << e;
  e = errorOf("kind: kubelets\ncount: 1\nevents: sometimes\n");
  EXPECT_NE(e.find("'events'"), std::string::npos) << e;
  e = errorOf("kind: kubelets\ncount: 1\nevents: true\neventQps: 0\n");
  EXPECT_NE(e.find("'eventQps'"), std::string::npos) << e;
  auto w = makeWorkload(entry("kind: kubelets\ncount: 1\nevents: true\neventQps: 40\n"));
  const auto& p = dynamic_cast<const KubeletFleet&>(*w).params();
  EXPECT_TRUE(p.events);
  EXPECT_EQ(p.eventRate.qps, 40);
  EXPECT_EQ(p.eventRate.burst, 80);                      // twice the rate, as the kubelet's 50/100
  EXPECT_EQ(w->resources().back(), kube::gvr::kEvents);  // so cleanup looks for them
  EXPECT_FALSE(dynamic_cast<const KubeletFleet&>(*makeWorkload(entry("kind: kubelets\ncount: 1\n"))).params().events);
}

TEST(Validation, InvalidTemplateNamesTheTemplateFileAndLine) {
  auto dir = std::filesystem::temp_directory_path() / ("cpscale-wl-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto bad = dir / "node.json";
  std::ofstream(bad) << "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Node\"\n  \"metadata\": {}\n}\n";
  std::string e = errorOf("kind: kubelets\ncount: 1\nnodeTemplate: " + bad.string() + "\n");
  EXPECT_NE(e.find(bad.string() + ":4"), std::string::npos) << e;
  EXPECT_NE(e.find("'nodeTemplate'"), std::string::npos) << e;
  auto notObject = dir / "lease.yaml";
  std::ofstream(notObject) << "apiVersion: v1\nspec: {}\n";
  e = errorOf("kind: kubelets\ncount: 1\nleaseTemplate: " + notObject.string() + "\n");
  EXPECT_NE(e.find("has no 'kind'"), std::string::npos) << e;
  e = errorOf("kind: kubelets\ncount: 1\nleaseTemplate: missing.json\n");
  EXPECT_NE(e.find("scenario.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("not found"), std::string::npos) << e;
  std::filesystem::remove_all(dir);
}

TEST(Validation, NothingIsCreatedForBadInput) {
  // Validation happens in makeWorkload, before any client exists.
  Harness h;
  EXPECT_THROW(makeWorkload(entry("kind: kubelets\ncount: -1\n")), ConfigError);
  EXPECT_TRUE(h.transport.requests().empty());
}

TEST(Validation, BadRunIdIsRefusedBeforeAnyRequest) {
  Harness h;
  auto w = makeWorkload(entry("kind: kubelets\ncount: 3\n"));
  h.ctx.runId = "Bad_Run";
  EXPECT_THROW(w->start(h.ctx), ConfigError);
  EXPECT_THROW(w->prepare(h.api, h.sim.clock(), "Bad_Run"), ConfigError);
  EXPECT_TRUE(h.transport.requests().empty());
}

TEST(Templates, PlaceholdersKeepTypes) {
  auto t = ObjectTemplate::load("lease.json");
  json j = t.fill({{"name", "n1"}, {"leaseDurationSeconds", 40}, {"renewTime", "T"}});
  EXPECT_EQ(j["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(j["metadata"]["name"], "n1");
  auto crd = ObjectTemplate::load("session-crd.yaml")
                 .fill({{"group", "g.cpscale.io"}, {"plural", "ps"}, {"singular", "p"}, {"kind", "P"}});
  EXPECT_EQ(crd["metadata"]["name"], "ps.g.cpscale.io");
  EXPECT_EQ(crd["spec"]["versions"][0]["served"], true);
}

TEST(Distributions, MeansAndCaps) {
  engine::RandomStream rng(7);
  auto d = Distribution::read(entry("{lognormal: {median: 1000, sigma: 0.5}, max: 1500}"), false, 0, 1e6);
  double sum = 0, mx = 0;
  for (int i = 0; i < 10000; ++i) {
    double v = d.sample(rng);
    sum += v;
    mx = std::max(mx, v);
  }
  EXPECT_LE(mx, 1500);
  EXPECT_GT(sum / 10000, 800);
  auto e = Distribution::read(entry("{exponential: 30s}"), true, 0, 1e12);
  EXPECT_DOUBLE_EQ(e.mean(), 30e9);
}

}  // namespace
}  // namespace cpscale::workloads::testing
