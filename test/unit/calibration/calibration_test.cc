// The calibration: least-squares fits (fit.h), the calibration file (calibration_file.h),
// the fit of stored probe results into a calibration (probe_fit.h) on fixtures
// generated from known parameters (test/fixtures/calibration), the probes' plan
// (probes.h) and the validation's merge (validation.h).
#include <gtest/gtest.h>
#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "sim/calibration/calibration_file.h"
#include "sim/calibration/fit.h"
#include "sim/calibration/probe_fit.h"
#include "sim/calibration/probes.h"
#include "sim/calibration/validation.h"
#include "sim/common/error.h"
#include "sim/model/calibration.h"
#include "sim/scenario/scenario.h"

namespace cpscale::calibration {
namespace {

using model::BackgroundRate;
using model::Calibration;
using model::CpuSet;
using model::FitQuality;
using model::kCalibrationVersion;
using model::Param;
using model::ValidationEntry;

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(CPSCALE_SOURCE_DIR) / "test" / "fixtures" / "calibration";

// ---- fits ----

TEST(Fit, RecoversExactCoefficientsFromNoiselessData) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i < 12; ++i) {
    double a = i, b = (i * 7) % 5, c = std::sin(i);
    x.push_back({a, b, c});
    y.push_back(3 + 2 * a - 0.5 * b + 0.1 * c);
  }
  FitResult f = fitLeastSquares(x, y, {"a", "b", "c"});
  ASSERT_EQ(f.coefficients.size(), 4u);
  EXPECT_NEAR(f.at("intercept").value, 3, 1e-10);
  EXPECT_NEAR(f.at("a").value, 2, 1e-10);
  EXPECT_NEAR(f.at("b").value, -0.5, 1e-10);
  EXPECT_NEAR(f.at("c").value, 0.1, 1e-10);
  EXPECT_NEAR(f.r2, 1, 1e-12);
  EXPECT_NEAR(f.residualStd, 0, 1e-9);
  EXPECT_EQ(f.observations, 12u);
  EXPECT_EQ(f.parameters, 4u);
  EXPECT_EQ(f.degreesOfFreedom, 8u);
  EXPECT_TRUE(f.note.empty());
}

TEST(Fit, WithoutInterceptThroughTheOrigin) {
  std::vector<std::vector<double>> x{{1}, {2}, {3}, {4}};
  std::vector<double> y{2, 4, 6, 8};
  FitOptions o;
  o.intercept = false;
  FitResult f = fitLeastSquares(x, y, {"x"}, o);
  ASSERT_EQ(f.coefficients.size(), 1u);
  EXPECT_NEAR(f.at("x").value, 2, 1e-12);
  EXPECT_NEAR(f.r2, 1, 1e-12);
}

// Montgomery, Peck & Vining, Introduction to Linear Regression Analysis, example 3.1
// (the delivery time data): time against cases and distance, 25 observations.
TEST(Fit, TextbookDeliveryTimeExample) {
  const double time[] = {16.68, 11.50, 12.03, 14.88, 13.75, 18.11, 8.00,  17.83, 79.24, 21.50, 40.33, 21.00, 13.50,
                         19.75, 24.00, 29.00, 15.35, 19.00, 9.50,  35.10, 17.90, 52.32, 18.75, 19.83, 10.75};
  const double cases[] = {7, 3, 3, 4, 6, 7, 2, 7, 30, 5, 16, 10, 4, 6, 9, 10, 6, 7, 3, 17, 10, 26, 9, 8, 4};
  const double distance[] = {560, 220, 340, 80,  150, 330, 110, 210, 1460, 605, 688, 215, 255,
                             462, 448, 776, 200, 132, 36,  770, 140, 810,  450, 635, 150};
  std::vector<std::vector<double>> x;
  for (int i = 0; i < 25; ++i) x.push_back({cases[i], distance[i]});
  FitResult f = fitLeastSquares(x, std::vector<double>(std::begin(time), std::end(time)), {"cases", "distance"});
  // The book: y = 2.34123 + 1.61591 x1 + 0.01438 x2, se 1.09673, 0.17073, 0.00361,
  // MSres 10.6239, R² 0.9596.
  EXPECT_NEAR(f.at("intercept").value, 2.34123, 5e-6);
  EXPECT_NEAR(f.at("cases").value, 1.61591, 5e-6);
  EXPECT_NEAR(f.at("distance").value, 0.014385, 5e-7);
  EXPECT_NEAR(f.at("intercept").standardError, 1.09673, 5e-6);
  EXPECT_NEAR(f.at("cases").standardError, 0.17073, 5e-6);
  EXPECT_NEAR(f.at("distance").standardError, 0.0036131, 5e-7);
  EXPECT_NEAR(f.residualStd * f.residualStd, 10.6239, 5e-4);
  EXPECT_NEAR(f.r2, 0.9596, 5e-5);
  // 95 % interval with t(0.975, 22) = 2.0739: 1.2618 <= b1 <= 1.9700.
  EXPECT_NEAR(f.at("cases").low, 1.2618, 1e-4);
  EXPECT_NEAR(f.at("cases").high, 1.9700, 1e-4);
  EXPECT_EQ(f.degreesOfFreedom, 22u);
}

TEST(Fit, StudentTQuantiles) {
  EXPECT_NEAR(tQuantile(0.95, 22), 2.0739, 1e-4);
  EXPECT_NEAR(tQuantile(0.95, 1), 12.7062, 1e-4);
  EXPECT_NEAR(tQuantile(0.95, 1000000), 1.95996, 1e-4);
  EXPECT_NEAR(tQuantile(0.99, 10), 3.1693, 1e-4);
  EXPECT_THROW(tQuantile(0.95, 0), FitError);
}

TEST(Fit, ConfidenceIntervalCoversTheTrueValueOnNoisyData) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0, 0.5);
  std::uniform_real_distribution<double> u(0, 10);
  auto sample = [&](std::size_t n) {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (std::size_t i = 0; i < n; ++i) {
      double a = u(rng), b = u(rng);
      x.push_back({a, b});
      y.push_back(1.5 + 0.8 * a + 0.3 * b + noise(rng));
    }
    return fitLeastSquares(x, y, {"a", "b"});
  };
  FitResult one = sample(40);
  EXPECT_LE(one.at("a").low, 0.8);
  EXPECT_GE(one.at("a").high, 0.8);
  EXPECT_LE(one.at("intercept").low, 1.5);
  EXPECT_GE(one.at("intercept").high, 1.5);
  EXPECT_LT(one.at("a").high - one.at("a").low, 0.2);
  EXPECT_NEAR(one.residualStd, 0.5, 0.15);
  // Over many samples, a 95 % interval covers the true value about 95 % of the time:
  // not too narrow (over-confident), not too wide.
  int covered = 0;
  const int trials = 1000;
  for (int t = 0; t < trials; ++t) {
    FitResult f = sample(12);
    if (f.at("b").low <= 0.3 && 0.3 <= f.at("b").high) ++covered;
  }
  EXPECT_GT(covered, trials * 0.93);
  EXPECT_LT(covered, trials * 0.97);
}

TEST(Fit, RefusesTooFewObservations) {
  std::vector<std::vector<double>> x{{1, 2}, {2, 1}, {3, 5}};
  std::vector<double> y{1, 2, 3};
  try {
    fitLeastSquares(x, y, {"a", "b"});
    FAIL() << "3 observations fitted 3 parameters";
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("3 observations cannot fit 3 parameters (intercept, a, b)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fitLeastSquares({}, std::vector<double>{}, {"a"}), FitError);
}

TEST(Fit, NamesTheRegressorThatDependsOnTheOthers) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i < 8; ++i) {
    x.push_back({double(i), 2.0 * i, 0});
    y.push_back(i);
  }
  try {
    fitLeastSquares(x, y, {"reads", "writes", "watch"});
    FAIL();
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("'writes'"), std::string::npos) << e.what();
  }
  // A regressor that is zero everywhere is named too.
  for (auto& row : x) row[1] = row[0] * row[0];
  try {
    fitLeastSquares(x, y, {"reads", "writes", "watch"});
    FAIL();
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("'watch'"), std::string::npos) << e.what();
  }
  std::vector<double> bad = y;
  bad[3] = std::nan("");
  for (auto& row : x) row[2] = row[0] + 1;
  EXPECT_THROW(fitLeastSquares(x, bad, {"reads", "writes", "watch"}), FitError);
}

TEST(Fit, NonNegativeCoefficientIsClampedAtZeroAndTheRestRefitted) {
  // y depends negatively on b; b must not be negative: the fit holds it at 0 and
  // fits y on a alone.
  std::vector<std::vector<double>> x, xa;
  std::vector<double> y;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.05);
  for (int i = 0; i < 30; ++i) {
    double a = i % 7, b = (i * 3) % 11;
    x.push_back({a, b});
    xa.push_back({a});
    y.push_back(2 + 1.0 * a - 0.2 * b + noise(rng));
  }
  FitOptions o;
  o.nonNegative = {true, true};
  FitResult f = fitLeastSquares(x, y, {"a", "b"}, o);
  EXPECT_TRUE(f.at("b").clamped);
  EXPECT_EQ(f.at("b").value, 0);
  EXPECT_EQ(f.at("b").low, 0);
  EXPECT_EQ(f.at("b").high, 0);  // the unconstrained interval is all below 0
  EXPECT_FALSE(f.at("a").clamped);
  EXPECT_EQ(f.parameters, 2u);
  EXPECT_EQ(f.degreesOfFreedom, 28u);
  EXPECT_NE(f.note.find("b held at 0"), std::string::npos) << f.note;
  FitResult alone = fitLeastSquares(xa, y, {"a"});
  EXPECT_NEAR(f.at("a").value, alone.at("a").value, 1e-12);
  EXPECT_NEAR(f.at("intercept").value, alone.at("intercept").value, 1e-12);
  EXPECT_NEAR(f.r2, alone.r2, 1e-12);
  // Unconstrained, b is negative.
  EXPECT_LT(fitLeastSquares(x, y, {"a", "b"}).at("b").value, -0.1);
  // A constrained coefficient that is positive anyway is left alone, its interval
  // clipped at 0.
  FitResult positive = fitLeastSquares(xa, y, {"a"}, FitOptions{true, 0.95, {true}, true});
  EXPECT_FALSE(positive.at("a").clamped);
  EXPECT_NEAR(positive.at("a").value, alone.at("a").value, 1e-12);
}

TEST(Fit, NonNegativeLeastSquaresPicksTheBestFeasibleSubset) {
  // Two negative unconstrained estimates where clamping the most negative alone is not
  // optimal: the enumeration compares every feasible subset.
  std::vector<std::vector<double>> x{{1, 0, 1}, {0, 1, 1}, {1, 1, 0}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 0}};
  std::vector<double> y{1, -1, 0.5, 1.2, -0.8, 0.9, 2.0};
  FitOptions o;
  o.intercept = false;
  o.nonNegative = {true, true, true};
  FitResult f = fitLeastSquares(x, y, {"a", "b", "c"}, o);
  for (const auto& c : f.coefficients) EXPECT_GE(c.value, 0) << c.name;
  // No feasible point on a small grid does better.
  double ssr = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double r = y[i] - f.at("a").value * x[i][0] - f.at("b").value * x[i][1] - f.at("c").value * x[i][2];
    ssr += r * r;
  }
  for (double a = 0; a <= 1.5; a += 0.01)
    for (double c = 0; c <= 1.5; c += 0.01)
      for (double b : {0.0, 0.05, 0.1}) {
        double s = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
          double r = y[i] - a * x[i][0] - b * x[i][1] - c * x[i][2];
          s += r * r;
        }
        ASSERT_GE(s, ssr - 1e-9) << a << " " << b << " " << c;
      }
}

// ---- the calibration file ----

Calibration sample() {
  Calibration c;
  c.measuredAt = "2026-06-11T10:05:00Z";
  c.host = "box";
  c.cpus = 2;
  c.cpuModel = "AMD EPYC 7B13";
  c.kubernetesVersion = "v1.36.3";
  c.etcdVersion = "3.6.16";
  c.profile = "classic";
  c.hostCores = 2;
  c.sharedHost = false;
  c.apiserverCores = 1;
  c.etcdCores = 1;
  c.placement = {{"1", 1, {"kube-apiserver"}}, {"0", 1, {"etcd", "generator", "kube-controller-manager"}}};
  c.planeWatchers = {{"leases", 1}, {"nodes", 3}, {"csinodes.storage.k8s.io", 2}};
  c.planeWatchersPerCustomResource = 1;
  c.apiserverCpuListObject = {6e-6, 5e-6, 7e-6};
  c.apiserverIdleCores = {0.06, 0.05, 0.07};
  c.apiserverCpuLeaseWrite = {0.0009, 0.0008, 0.001};
  c.apiserverCpuWrite = {0.0025, 0.002, 0.003};
  c.apiserverCpuCustomWrite = {0.0031, 0.0027, 0.0035};
  c.apiserverCpuEventWrite = {0.0008, 0.0006, 0.001};
  c.apiserverCpuRead = {0, 0, 0.0004};
  c.apiserverCpuWatchEvent = {4e-5, 1e-5, 7e-5};
  c.apiserverCpuWatchDispatch = {8e-6, 6e-6, 1e-5};
  c.heapPerWatch = {20000, 15000, 25000};
  c.etcdIdleCores = {0.02, 0.019, 0.021};
  c.etcdCpuPerProposal = {0.0004, 0.00039, 0.00041};
  c.generatorCpuPerRequest = {0.0002, 0.00019, 0.00021};
  c.latencyRead = {0.0015, 0.0015, 0.0015};
  c.latencyWrite = {0.004, 0.0035, 0.006};
  c.heapBaseBytes = {6e7, 5.9e7, 6.1e7};
  c.heapPerObject = {1800, 1500, 2100};
  c.heapPerObjectByte = {2.2, 2.1, 2.3};
  c.heapBytesPerObjectByResource = {{"leases", 3120}, {"nodes", 9000.5}};
  c.rssOverHeap = 1.45;
  c.etcdDbBaseBytes = {2.4e6, 2.4e6, 2.5e6};
  c.etcdDbBytesPerWrite = {900, 880, 920};
  c.etcdFsyncSeconds = Param::fixed(0.0015);
  c.background = {{"leases", "coordination.k8s.io", "PUT", 1.1},
                  {"prioritylevelconfigurations/status", "flowcontrol.apiserver.k8s.io", "PATCH", 0.05}};
  c.fits = {{"apiserver_cpu", 105, 5, 0.98, 0.008}, {"etcd_cpu", 105, 2, 0.99, 0.003}};
  c.validation = {{"write_qps{resource=leases}", 41.2, 40.0, 0.029, 0.1}};
  c.notes = {"etcdFsyncSeconds: not measured"};
  return c;
}

fs::path tempDir() {
  fs::path d = fs::temp_directory_path() / ("cpscale-calibration-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void expectSameParam(const Param& a, const Param& b, const char* name) {
  EXPECT_EQ(a.value, b.value) << name;
  EXPECT_EQ(a.low, b.low) << name;
  EXPECT_EQ(a.high, b.high) << name;
}

TEST(CalibrationFile, RoundTripsEveryField) {
  const Calibration c = sample();
  const fs::path file = tempDir() / "round-trip.json";
  writeCalibration(c, file);
  Calibration r = readCalibration(file);
  EXPECT_EQ(r.version, kCalibrationVersion);
  EXPECT_EQ(r.source, file);
  EXPECT_EQ(r.measuredAt, c.measuredAt);
  EXPECT_EQ(r.host, c.host);
  EXPECT_EQ(r.cpus, c.cpus);
  EXPECT_EQ(r.cpuModel, c.cpuModel);
  EXPECT_EQ(r.kubernetesVersion, c.kubernetesVersion);
  EXPECT_EQ(r.etcdVersion, c.etcdVersion);
  EXPECT_EQ(r.profile, c.profile);
  EXPECT_EQ(r.hostCores, c.hostCores);
  EXPECT_EQ(r.sharedHost, c.sharedHost);
  EXPECT_EQ(r.apiserverCores, c.apiserverCores);
  EXPECT_EQ(r.etcdCores, c.etcdCores);
  EXPECT_EQ(r.placement, c.placement);
  EXPECT_EQ(r.planeWatchers, c.planeWatchers);
  EXPECT_EQ(r.planeWatchersPerCustomResource, c.planeWatchersPerCustomResource);
#define SAME(p) expectSameParam(r.p, c.p, #p)
  SAME(apiserverIdleCores);
  SAME(apiserverCpuLeaseWrite);
  SAME(apiserverCpuWrite);
  SAME(apiserverCpuCustomWrite);
  SAME(apiserverCpuEventWrite);
  SAME(apiserverCpuRead);
  SAME(apiserverCpuWatchEvent);
  SAME(apiserverCpuWatchDispatch);
  SAME(heapPerWatch);
  SAME(apiserverCpuListObject);
  SAME(etcdIdleCores);
  SAME(etcdCpuPerProposal);
  SAME(generatorCpuPerRequest);
  SAME(latencyRead);
  SAME(latencyWrite);
  SAME(heapBaseBytes);
  SAME(heapPerObject);
  SAME(heapPerObjectByte);
  SAME(etcdDbBaseBytes);
  SAME(etcdDbBytesPerWrite);
  SAME(etcdFsyncSeconds);
#undef SAME
  EXPECT_EQ(r.heapBytesPerObjectByResource, c.heapBytesPerObjectByResource);
  EXPECT_EQ(r.rssOverHeap, c.rssOverHeap);
  ASSERT_EQ(r.background.size(), 2u);
  EXPECT_EQ(r.background[1].resource, "prioritylevelconfigurations/status");
  EXPECT_EQ(r.background[1].group, "flowcontrol.apiserver.k8s.io");
  EXPECT_EQ(r.background[1].verb, "PATCH");
  EXPECT_EQ(r.background[1].perSecond, 0.05);
  ASSERT_EQ(r.fits.size(), 2u);
  EXPECT_EQ(r.fits[0].name, "apiserver_cpu");
  EXPECT_EQ(r.fits[0].observations, 105u);
  EXPECT_EQ(r.fits[0].parameters, 5u);
  EXPECT_EQ(r.fits[0].r2, 0.98);
  EXPECT_EQ(r.fits[0].residualStd, 0.008);
  ASSERT_EQ(r.validation.size(), 1u);
  EXPECT_EQ(r.validation[0].figure, "write_qps{resource=leases}");
  EXPECT_EQ(r.validation[0].live, 41.2);
  EXPECT_EQ(r.validation[0].model, 40.0);
  EXPECT_EQ(r.validation[0].relativeError, 0.029);
  EXPECT_EQ(r.validation[0].tolerance, 0.1);
  EXPECT_EQ(r.notes, c.notes);
  // The written document is the same after a second trip.
  EXPECT_EQ(toJson(r), toJson(c));
  // Param as {"value","low","high"}.
  EXPECT_EQ(toJson(c)["heapPerObject"], (json{{"value", 1800.0}, {"low", 1500.0}, {"high", 2100.0}}));
}

// The error calibrationFromJson gives for a document changed by `edit`.
ConfigError errorFor(const std::function<void(json&)>& edit) {
  json j = toJson(sample());
  edit(j);
  try {
    calibrationFromJson(j, "cal.json");
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return ConfigError("", "", "");
}

TEST(CalibrationFile, ErrorsNameTheFileAndTheField) {
  ConfigError e = errorFor([](json& j) { j.erase("apiserverCpuRead"); });
  EXPECT_EQ(e.where(), "cal.json");
  EXPECT_EQ(e.field(), "/apiserverCpuRead");
  EXPECT_NE(std::string(e.what()).find("is missing"), std::string::npos);

  e = errorFor([](json& j) { j["heapPerObject"].erase("high"); });
  EXPECT_EQ(e.field(), "/heapPerObject/high");

  e = errorFor([](json& j) { j["heapPerObject"]["low"] = 5000; });
  EXPECT_EQ(e.field(), "/heapPerObject/low");
  EXPECT_NE(std::string(e.what()).find("above value"), std::string::npos);

  e = errorFor([](json& j) { j["latencyRead"]["value"] = "fast"; });
  EXPECT_EQ(e.field(), "/latencyRead/value");
  EXPECT_NE(std::string(e.what()).find("expected a number"), std::string::npos);

  // A version 1 file was measured with every member contending for the same cores.
  e = errorFor([](json& j) { j["version"] = 1; });
  EXPECT_EQ(e.field(), "/version");
  EXPECT_NE(std::string(e.what()).find("this cpscale reads version 3"), std::string::npos) << e.what();

  e = errorFor([](json& j) { j["placement"] = json::array({{{"cpus", "1"}, {"cores", 0}, {"roles", {"etcd"}}}}); });
  EXPECT_EQ(e.field(), "/placement/0/cores");

  e = errorFor([](json& j) {
    j["sharedHost"] = true;
    j["placement"] = json::array({{{"cpus", "1"}, {"cores", 1}, {"roles", {"etcd", "kube-apiserver"}}}});
  });
  EXPECT_EQ(e.field(), "/sharedHost");

  e = errorFor([](json& j) { j["planeWatchers"]["leases"] = -1; });
  EXPECT_EQ(e.field(), "/planeWatchers/leases");

  e = errorFor([](json& j) { j["kind"] = "RunResult"; });
  EXPECT_EQ(e.field(), "/kind");

  e = errorFor([](json& j) { j["hostCores"] = 0; });
  EXPECT_EQ(e.field(), "/hostCores");

  e = errorFor([](json& j) { j["background"][1].erase("verb"); });
  EXPECT_EQ(e.field(), "/background/1/verb");

  e = errorFor([](json& j) { j["fits"][0]["observations"] = -1; });
  EXPECT_EQ(e.field(), "/fits/0/observations");

  e = errorFor([](json& j) { j["heapBytesPerObjectByResource"]["nodes"] = -3; });
  EXPECT_EQ(e.field(), "/heapBytesPerObjectByResource/nodes");

  e = errorFor([](json& j) { j["validation"][0].erase("tolerance"); });
  EXPECT_EQ(e.field(), "/validation/0/tolerance");

  // Notes are optional.
  json j = toJson(sample());
  j.erase("notes");
  EXPECT_TRUE(calibrationFromJson(j, "cal.json").notes.empty());
}

TEST(CalibrationFile, UnreadableOrMalformedFilesSaySo) {
  const fs::path dir = tempDir();
  try {
    readCalibration(dir / "absent.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), (dir / "absent.json").string());
    EXPECT_NE(std::string(e.what()).find("cannot be read"), std::string::npos);
  }
  std::ofstream(dir / "broken.json") << "{\"kind\": ";
  try {
    readCalibration(dir / "broken.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

TEST(CalibrationFile, DefaultPathIsTheShippedOne) {
  EXPECT_EQ(defaultCalibrationPath(), fs::path(CPSCALE_SOURCE_DIR) / "profiles/calibration/default.json");
  // The shipped one reads back, was measured pinned on the classic recipe, and carries
  // its validation: the cases the model is held to (ValidationCase::held) within
  // their tolerances, the others (known gaps, in the README) recorded with their error.
  Calibration c = readCalibration(defaultCalibrationPath());
  EXPECT_EQ(c.profile, "classic");
  EXPECT_FALSE(c.placement.empty());
  EXPECT_GT(c.apiserverCpuLeaseWrite.value, 0);
  EXPECT_GT(c.apiserverCpuWatchEvent.low, 0);
  EXPECT_GT(c.apiserverCpuListObject.low, 0);
  EXPECT_GT(c.heapPerObject.value, 0);
  ASSERT_FALSE(c.validation.empty());
  std::size_t held = 0;
  bool background = false;
  for (const auto& e : c.validation) {
    for (const auto& vc : defaultValidationCases()) {
      if (!vc.holds(e.figure)) continue;
      ++held;
      EXPECT_LE(e.relativeError, e.tolerance) << e.figure;
    }
    // classic-ha's idle background: the live plane's steady writes, all Lease renewals.
    background = background || e.figure == "state-bound-classic-ha: write_qps";
  }
  EXPECT_GE(held, 13u);
  EXPECT_TRUE(background);
  EXPECT_TRUE(std::any_of(c.validation.begin(), c.validation.end(),
                          [](const auto& e) { return e.figure.find("crosses 1s") != std::string::npos; }));
}

// ---- probes into a calibration ----

json truth() {
  std::ifstream in(kFixtures / "truth.json");
  return json::parse(in);
}

void expectCovers(const Param& p, double truth, const char* name) {
  EXPECT_LE(p.low, truth) << name << " = " << p.value << " [" << p.low << ", " << p.high << "], truth " << truth;
  EXPECT_GE(p.high, truth) << name << " = " << p.value << " [" << p.low << ", " << p.high << "], truth " << truth;
  EXPECT_LE(p.low, p.value) << name;
  EXPECT_LE(p.value, p.high) << name;
}

TEST(CalibrateFit, ReadsTheStoredProbes) {
  std::vector<ProbeResult> probes = readProbes(kFixtures / "probes");
  ASSERT_EQ(probes.size(), 13u);
  EXPECT_EQ(probes[0].name, "churn");
  EXPECT_EQ(probes[0].kind, ProbeKind::kChurn);
  ASSERT_TRUE(probes[0].result.capacity.has_value());
  EXPECT_EQ(probes[0].result.capacity->steps.size(), 2u);
  EXPECT_FALSE(probes[0].generator.empty());
  EXPECT_EQ(probes[1].name, "fanout-10");
  EXPECT_EQ(probes[1].kind, ProbeKind::kReads);
  EXPECT_EQ(probes[3].name, "fanout-filtered");
  EXPECT_EQ(probes[4].kind, ProbeKind::kIdle);
  EXPECT_EQ(probes[4].result.environment.placement.at("kube-apiserver"), "1");
  EXPECT_EQ(probes[6].name, "pods-2400");
  EXPECT_EQ(probes[6].kind, ProbeKind::kWrites);
  EXPECT_EQ(probes[11].name, "state-large");
  EXPECT_EQ(probes[11].kind, ProbeKind::kState);
}

TEST(CalibrateFit, WithoutThePodsProbesEveryWriteButALeasesHasOneCost) {
  // Probe sets from before the pods probes: their built-in writes are a Node's status
  // now and then, too few to tell apart, and one cost stands for both, with a note.
  std::vector<ProbeResult> probes = readProbes(kFixtures / "probes");
  std::erase_if(probes, [](const ProbeResult& p) { return p.kind == ProbeKind::kWrites; });
  ASSERT_EQ(probes.size(), 10u);
  Calibration c = fitCalibration(probes);
  EXPECT_EQ(c.apiserverCpuCustomWrite.value, c.apiserverCpuWrite.value);
  EXPECT_EQ(c.apiserverCpuCustomWrite.low, c.apiserverCpuWrite.low);
  EXPECT_EQ(c.apiserverCpuEventWrite.value, c.apiserverCpuWrite.value);
  // The probes' other writes are mostly custom resources': the one cost is near theirs.
  const json t = truth();
  EXPECT_GT(c.apiserverCpuWrite.value, t["apiserverCpuWrite"].get<double>());
  EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(),
                          [](const std::string& n) { return n.find("no pods probe") != std::string::npos; }));
}

TEST(CalibrateFit, RecoversTheParametersTheFixturesWereMadeFrom) {
  const json t = truth();
  Calibration c = fitCalibration(readProbes(kFixtures / "probes"));
  expectCovers(c.apiserverIdleCores, t["apiserverIdleCores"], "apiserverIdleCores");
  expectCovers(c.apiserverCpuLeaseWrite, t["apiserverCpuLeaseWrite"], "apiserverCpuLeaseWrite");
  expectCovers(c.apiserverCpuWrite, t["apiserverCpuWrite"], "apiserverCpuWrite");
  // The pods probes' built-in writes tell a custom resource's writes apart.
  expectCovers(c.apiserverCpuCustomWrite, t["apiserverCpuCustomWrite"], "apiserverCpuCustomWrite");
  EXPECT_LT(c.apiserverCpuWrite.high, c.apiserverCpuCustomWrite.low);
  // And the pods probes with and without their Events, an Event's.
  expectCovers(c.apiserverCpuEventWrite, t["apiserverCpuEventWrite"], "apiserverCpuEventWrite");
  EXPECT_LT(c.apiserverCpuEventWrite.high, c.apiserverCpuWrite.low);
  expectCovers(c.apiserverCpuRead, t["apiserverCpuRead"], "apiserverCpuRead");
  expectCovers(c.apiserverCpuWatchEvent, t["apiserverCpuWatchEvent"], "apiserverCpuWatchEvent");
  // fanout-filtered's watchers, dispatched every change and sent none, tell the dispatch
  // apart from the event sent; its thousand open watches give each one's heap.
  expectCovers(c.apiserverCpuWatchDispatch, t["apiserverCpuWatchDispatch"], "apiserverCpuWatchDispatch");
  EXPECT_GT(c.apiserverCpuWatchDispatch.low, 0);
  EXPECT_LT(c.apiserverCpuWatchDispatch.high, c.apiserverCpuWatchEvent.low);
  expectCovers(c.heapPerWatch, t["heapPerWatch"], "heapPerWatch");
  EXPECT_LT(c.heapPerWatch.high - c.heapPerWatch.low, c.heapPerWatch.value);
  expectCovers(c.apiserverCpuListObject, t["apiserverCpuListObject"], "apiserverCpuListObject");
  expectCovers(c.etcdIdleCores, t["etcdIdleCores"], "etcdIdleCores");
  expectCovers(c.etcdCpuPerProposal, t["etcdCpuPerProposal"], "etcdCpuPerProposal");
  expectCovers(c.generatorCpuPerRequest, t["generatorCpuPerRequest"], "generatorCpuPerRequest");
  expectCovers(c.heapPerObject, t["heapPerObject"], "heapPerObject");
  expectCovers(c.heapPerObjectByte, t["heapPerObjectByte"], "heapPerObjectByte");
  expectCovers(c.heapBaseBytes, t["heapBaseBytes"], "heapBaseBytes");
  // The watch cache: each held event's own cost and the custom resource's, from the
  // churn probe's heap against watch_cache_events.
  expectCovers(c.heapPerCustomResourceEvent, t["heapPerCustomResourceEvent"], "heapPerCustomResourceEvent");
  expectCovers(c.heapPerCustomResource, t["heapPerCustomResource"], "heapPerCustomResource");
  expectCovers(c.etcdDbBytesPerWrite, t["etcdDbBytesPerWrite"], "etcdDbBytesPerWrite");
  expectCovers(c.etcdFsyncSeconds, t["etcdFsyncSeconds"], "etcdFsyncSeconds");
  // The CPU intervals are informative, not merely wide.
  EXPECT_LT(c.apiserverCpuWrite.high - c.apiserverCpuWrite.low, 0.5 * c.apiserverCpuWrite.value);
  EXPECT_LT(c.apiserverCpuLeaseWrite.high - c.apiserverCpuLeaseWrite.low, c.apiserverCpuLeaseWrite.value);
  EXPECT_LT(c.etcdCpuPerProposal.high - c.etcdCpuPerProposal.low, 0.5 * c.etcdCpuPerProposal.value);
  // The reads probes tell the fan-out's and the LISTs' CPU apart from the writes': each
  // is fitted away from 0 with an interval narrower than its value.
  EXPECT_GT(c.apiserverCpuWatchEvent.low, 0);
  EXPECT_LT(c.apiserverCpuWatchEvent.high - c.apiserverCpuWatchEvent.low, c.apiserverCpuWatchEvent.value);
  EXPECT_GT(c.apiserverCpuListObject.low, 0);
  EXPECT_LT(c.apiserverCpuListObject.high - c.apiserverCpuListObject.low, c.apiserverCpuListObject.value);
  EXPECT_GT(c.apiserverCpuRead.low, 0);

  // The plane's own watchers: the idle plane's cluster-wide ones, not the apiserver's
  // own on kube-system's Leases.
  std::map<std::string, double> watchers;
  for (const auto& [k, v] : t["planeWatchers"].items()) watchers[k] = v.get<double>();
  EXPECT_EQ(c.planeWatchers, watchers);
  // On a custom resource: its watches less the probes' own informers on it.
  EXPECT_EQ(c.planeWatchersPerCustomResource, t["planeWatchersPerCustomResource"].get<double>());

  // Nodes: the node with its Lease costs what the fixtures put in, split by the
  // per-object rule for the Lease.
  ASSERT_EQ(c.heapBytesPerObjectByResource.count("nodes"), 1u);
  ASSERT_EQ(c.heapBytesPerObjectByResource.count("leases"), 1u);
  EXPECT_NEAR(c.heapBytesPerObjectByResource["nodes"] + c.heapBytesPerObjectByResource["leases"],
              t["heapPerNodeWithLease"].get<double>(), 0.05 * t["heapPerNodeWithLease"].get<double>());
  EXPECT_NEAR(c.heapBytesPerObjectByResource["leases"], c.heapPerObject.value + c.heapPerObjectByte.value * 600, 1e-6);

  // Measured rather than fitted.
  EXPECT_NEAR(c.rssOverHeap, t["rssOverHeap"].get<double>(), 1e-3);
  // Writes: the node probe's small step has the least load; its lease PUTs and node
  // status PATCHes weighted by their requests.
  EXPECT_GT(c.latencyWrite.value, 0.004);
  EXPECT_LT(c.latencyWrite.value, 0.0062);
  EXPECT_LE(c.latencyWrite.low, c.latencyWrite.value);
  EXPECT_EQ(c.latencyWrite.high, 0.006);
  // Reads: only the churn probe's GETs.
  EXPECT_DOUBLE_EQ(c.latencyRead.value, t["latencyRead"].get<double>());
  ASSERT_EQ(c.background.size(), 2u);
  for (const BackgroundRate& b : c.background) {
    const json* expected = nullptr;
    for (const json& e : t["background"])
      if (e["resource"] == b.resource && e["verb"] == b.verb && e["group"] == b.group) expected = &e;
    ASSERT_NE(expected, nullptr) << b.resource;
    EXPECT_NEAR(b.perSecond, (*expected)["perSecond"].get<double>(), 0.4 * (*expected)["perSecond"].get<double>() + 0.1)
        << b.resource;
  }
  EXPECT_GT(c.etcdDbBaseBytes.value, 0);

  // Where and when.
  EXPECT_EQ(c.host, "fixture-host");
  EXPECT_EQ(c.cpus, 2);
  EXPECT_EQ(c.hostCores, 2);
  // Pinned: the host is the placement, kube-apiserver alone on CPU 1.
  EXPECT_FALSE(c.sharedHost);
  EXPECT_EQ(c.placement,
            (std::vector<CpuSet>{{"0", 1, {"etcd", "generator", "kube-controller-manager", "kube-scheduler"}},
                                 {"1", 1, {"kube-apiserver"}}}));
  EXPECT_EQ(c.apiserverCores, 1);
  EXPECT_EQ(c.etcdCores, 1);
  EXPECT_EQ(c.kubernetesVersion, "v1.36.3");
  EXPECT_EQ(c.etcdVersion, "3.6.16");
  EXPECT_EQ(c.profile, "classic");
  EXPECT_EQ(c.measuredAt, "2026-06-11T10:13:00Z");  // the last probe's end

  // Every fit's quality is recorded.
  std::set<std::string> fits;
  for (const FitQuality& f : c.fits) {
    fits.insert(f.name);
    EXPECT_GT(f.observations, f.parameters) << f.name;
    EXPECT_GT(f.r2, 0.5) << f.name;
  }
  EXPECT_EQ(fits, (std::set<std::string>{"apiserver_cpu", "apiserver_cpu_watch_event", "etcd_cpu", "generator_cpu",
                                         "heap_per_object", "heap_per_custom_resource_event", "heap_per_node",
                                         "etcd_db", "heap_per_watch"}));
  const FitQuality& cpu =
      *std::find_if(c.fits.begin(), c.fits.end(), [](const auto& f) { return f.name == "apiserver_cpu"; });
  EXPECT_EQ(cpu.observations, 15u * 15u);  // 15 windows of 15 scrape intervals
  EXPECT_NEAR(cpu.residualStd, 0.008, 0.003);

  // The result is a valid calibration file.
  const fs::path file = tempDir() / "fitted.json";
  writeCalibration(c, file);
  EXPECT_EQ(toJson(readCalibration(file)), toJson(c));
  const std::string summary = renderCalibrationSummary(c);
  EXPECT_NE(summary.find("apiserverCpuLeaseWrite"), std::string::npos);
  EXPECT_NE(summary.find("apiserver_cpu"), std::string::npos);
  EXPECT_NE(summary.find("heap nodes"), std::string::npos);
}

TEST(CalibrateFit, PerWindowMeansWhenFiguresCarryNoSeries) {
  // Without series over time each window is one observation: 15 windows still fit the
  // etcd line.
  std::vector<ProbeResult> probes = readProbes(kFixtures / "probes");
  auto strip = [](std::vector<metrics::Figure>& fs) {
    for (auto& f : fs)
      if (f.name == "etcd_cpu_cores" || f.name == "etcd_proposals_committed_per_second") f.overTime = {};
  };
  for (auto& p : probes) {
    strip(p.result.figures);
    if (p.result.capacity)
      for (auto& s : p.result.capacity->steps) strip(s.figures);
  }
  Calibration c = fitCalibration(probes);
  const FitQuality& etcd =
      *std::find_if(c.fits.begin(), c.fits.end(), [](const auto& f) { return f.name == "etcd_cpu"; });
  EXPECT_EQ(etcd.observations, 15u);
  expectCovers(c.etcdCpuPerProposal, truth()["etcdCpuPerProposal"], "etcdCpuPerProposal");
}

TEST(CalibrateFit, MissingProbesOrDataAreNamed) {
  std::vector<ProbeResult> probes = readProbes(kFixtures / "probes");
  std::vector<ProbeResult> noIdle;
  for (auto& p : probes)
    if (p.kind != ProbeKind::kIdle) noIdle.push_back(p);
  try {
    fitCalibration(noIdle);
    FAIL();
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("no idle probe"), std::string::npos) << e.what();
  }
  // One state probe: the heap per byte cannot be told from per object with 2 kinds.
  std::vector<ProbeResult> oneState;
  for (auto& p : probes)
    if (p.name != "state-large") oneState.push_back(p);
  try {
    fitCalibration(oneState);
    FAIL();
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("heap per object"), std::string::npos) << e.what();
  }
  // A probe that failed is not fitted.
  probes[5].result.status = result::RunStatus::kFailed;
  probes[5].result.statusDetail = "setup timed out";
  try {
    fitCalibration(probes);
    FAIL();
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("probe node did not complete (failed: setup timed out)"), std::string::npos)
        << e.what();
  }
}

TEST(CalibrateFit, ARegressorNoProbeExercisedIsHeldAtZeroWithANote) {
  std::vector<ProbeResult> probes = readProbes(kFixtures / "probes");
  auto strip = [](std::vector<metrics::Figure>& fs) {
    std::erase_if(fs, [](const metrics::Figure& f) { return f.name == "apiserver_watch_events_total_per_second"; });
  };
  for (auto& p : probes) {
    strip(p.result.figures);
    if (p.result.capacity)
      for (auto& s : p.result.capacity->steps) strip(s.figures);
  }
  Calibration c = fitCalibration(probes);
  EXPECT_EQ(c.apiserverCpuWatchEvent.value, 0);
  EXPECT_EQ(c.apiserverCpuWatchEvent.high, 0);
  bool noted = std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("apiserver CPU: watchEvents was not exercised by any probe") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

TEST(CalibrateFit, ProbeFileRoundTripsAndNamesItsErrors) {
  const fs::path dir = tempDir() / "probe";
  fs::create_directories(dir);
  fs::copy_file(kFixtures / "probes" / "idle" / "result.json", dir / "result.json",
                fs::copy_options::overwrite_existing);
  ProbeResult p;
  p.name = "my-probe";
  p.kind = ProbeKind::kNode;
  p.generator = {{0, 0.1, 0, false}, {1, 0.2, 10, true}, {2, 0.35, 25, true}};
  writeProbeFile(p, dir);
  ProbeResult r = readProbe(dir);
  EXPECT_EQ(r.name, "my-probe");
  EXPECT_EQ(r.kind, ProbeKind::kNode);
  EXPECT_EQ(r.generator, p.generator);
  EXPECT_EQ(r.result.runId, "calib-fixture-idle");

  json j = json::parse(std::ifstream(dir / kProbeFile));
  j["probe"] = "storm";
  std::ofstream(dir / kProbeFile) << j.dump();
  try {
    readProbe(dir);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "/probe");
    EXPECT_NE(e.where().find("probe.json"), std::string::npos);
  }
  EXPECT_THROW(readProbes(tempDir() / "nothing-here"), ConfigError);
}

// ---- the probe scenarios `cpscale calibrate` runs ----

TEST(CalibrationScenarios, EveryProbeScenarioLoads) {
  std::map<std::string, bool> ladder;
  for (const auto& entry : fs::directory_iterator(fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "calibration")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path());
    scenario::Scenario s = scenario::loadScenario(entry.path());
    EXPECT_EQ(s.name + ".yaml", "calibration-" + entry.path().filename().string());
    ladder[entry.path().stem().string()] = s.capacity.has_value();
    if (s.capacity) {
      EXPECT_EQ(scenario::capacityLadder(*s.capacity).size(), 2u);
    }
  }
  EXPECT_EQ(ladder, (std::map<std::string, bool>{{"idle", false},
                                                 {"node", true},
                                                 {"churn", true},
                                                 {"pods", false},
                                                 {"state", false},
                                                 {"fanout", false},
                                                 {"relist", false}}));
}

TEST(CalibrationScenarios, EveryProbeOfThePlanLoadsAndQuickShortensEachOne) {
  // What `cpscale calibrate` runs: every probe's scenario with its overrides loads, the
  // names are apart (they name the probes' directories), the pods probes are there as
  // built-in writes, and --quick holds each one for less time than the full plan.
  const std::vector<ProbePlan> full = probePlan(false), quick = probePlan(true);
  ASSERT_EQ(full.size(), quick.size());
  std::set<std::string> names;
  const fs::path dir = fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "calibration";
  for (std::size_t i = 0; i < full.size(); ++i) {
    SCOPED_TRACE(full[i].name);
    EXPECT_TRUE(names.insert(full[i].name).second);
    EXPECT_EQ(quick[i].name, full[i].name);
    const scenario::Scenario a = scenario::loadScenario(dir / full[i].file, full[i].overrides);
    const scenario::Scenario b = scenario::loadScenario(dir / quick[i].file, quick[i].overrides);
    if (a.capacity) {
      ASSERT_TRUE(b.capacity.has_value());
      EXPECT_LT(b.capacity->hold, a.capacity->hold);
    } else {
      EXPECT_LT(b.duration, a.duration);
    }
  }
  for (const char* p : {"pods-600", "pods-2400", "pods-quiet"}) {
    auto it = std::find_if(full.begin(), full.end(), [&](const ProbePlan& x) { return x.name == p; });
    ASSERT_NE(it, full.end()) << p;
    EXPECT_EQ(it->kind, ProbeKind::kWrites) << p;
  }
}

// ---- validation ----

TEST(ValidationMerge, ACaseValidatedAgainReplacesItsEntriesWhereTheyWereAndKeepsTheOthers) {
  // `cpscale calibrate --validate node-bound-realistic`: that case's entries are the new
  // run's, in the place the case had; every other case's stay as they were measured.
  auto entry = [](const std::string& figure, double model) { return ValidationEntry{figure, 1, model, 0, 0.1}; };
  const std::vector<ValidationEntry> previous = {
      entry("node-bound: write_qps", 1), entry("node-bound-realistic: write_qps", 2),
      entry("node-bound-realistic: write_qps{resource=events}", 3), entry("churn-bound: write_qps", 4),
      entry("fleet where PUT leases p99 crosses 1s (workloads.fleet.count; live 2,747..3,052)", 5)};
  const std::vector<ValidationEntry> fresh = {entry("node-bound-realistic: write_qps", 20),
                                              entry("node-bound-realistic: write_qps{resource=pods}", 21),
                                              entry("state-bound-classic: write_qps", 22)};
  EXPECT_EQ(validationCaseOf(previous[1]), "node-bound-realistic");
  EXPECT_EQ(validationCaseOf(previous[4]), "crossing");
  std::vector<std::string> got;
  for (const auto& e : mergeValidation(previous, fresh)) got.push_back(e.figure + " " + std::to_string(int(e.model)));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "node-bound: write_qps 1", "node-bound-realistic: write_qps 20",
                     "node-bound-realistic: write_qps{resource=pods} 21", "churn-bound: write_qps 4",
                     "fleet where PUT leases p99 crosses 1s (workloads.fleet.count; live 2,747..3,052) 5",
                     "state-bound-classic: write_qps 22"}));
}

}  // namespace
}  // namespace cpscale::calibration
