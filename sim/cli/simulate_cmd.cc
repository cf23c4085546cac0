// cpscale simulate: a scenario in virtual time against the calibrated model.
#include <cxxopts.hpp>
#include <iostream>

#include "reports/format.h"
#include "reports/summary.h"
#include "sim/calibration/calibration_file.h"
#include "sim/calibration/validation.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/scenario_args.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/run/simulate.h"
#include "sim/scenario/gate_check.h"

namespace cpscale::cli {
namespace fs = std::filesystem;

namespace {

// Which calibration, where it was measured, and how far its model was from the live
// plane when it was validated.
void printCalibration(const model::Calibration& cal, std::ostream& out) {
  out << "cpscale simulate: calibration " << cal.source.string() << " (version " << cal.version << "), measured "
      << cal.measuredAt << " on " << calibration::calibrationMachine(cal) << ", profile " << cal.profile
      << ", kubernetes " << cal.kubernetesVersion << ", etcd " << cal.etcdVersion << "\n";
  if (cal.validation.empty()) {
    out << "cpscale simulate: this calibration's error against live runs was not measured\n";
    return;
  }
  out << "cpscale simulate: its measured error against live runs on that machine:\n";
  for (const auto& e : cal.validation) out << "  " << calibration::validationLine(e) << "\n";
}

}  // namespace

int simulate(const Args& args) {
  cxxopts::Options opts("cpscale simulate",
                        "Run a scenario in virtual time against the calibrated control-plane model.");
  addLeaseTierOption(opts);
  opts.add_options()("scenario", "scenario file (YAML)", cxxopts::value<std::string>())(
      "profile", "control-plane profile the model takes its shape from (replicas, etcd split)",
      cxxopts::value<std::string>())("set", "override a scenario field: path.to.field=value (repeatable)",
                                     cxxopts::value<std::vector<std::string>>())(
      "calibration", "calibration file (default: the one shipped, profiles/calibration/default.json)",
      cxxopts::value<std::string>())(
      "sample", "each simulated actor stands for N (default: chosen so no knob exceeds --max-actors)",
      cxxopts::value<double>())("max-actors",
                                "largest node count, sessions/min or objects/kind simulated one by one (default 500)",
                                cxxopts::value<double>()->default_value("500"))(
      "dedicated-cores", "model every apiserver and etcd with N cores of its own, not the calibration's shared host",
      cxxopts::value<double>())("out", "output directory (default runs/<run-id>)", cxxopts::value<std::string>())(
      "run-id", "run id (default: random)", cxxopts::value<std::string>())(
      "capacity", "search the scenario's capacity block on the model: each step a fresh simulation")(
      "quiet", "no progress output")("h,help", "show this help");
  opts.parse_positional({"scenario"});
  opts.positional_help("SCENARIO");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("scenario"))
    throw ConfigError("command line", "SCENARIO", "a scenario file is required (e.g. scenarios/node-bound.yaml)");

  std::vector<scenario::Override> overrides;
  if (r.count("set"))
    for (const auto& s : r["set"].as<std::vector<std::string>>()) overrides.push_back(scenario::parseOverride(s));
  run::SimulateOptions so;
  if (r.count("profile")) so.profile = controlplane::loadProfile(r["profile"].as<std::string>());
  applyLeaseTierOption(r, so.profile);
  fs::path calPath =
      r.count("calibration") ? fs::path(r["calibration"].as<std::string>()) : calibration::defaultCalibrationPath();
  so.calibration = calibration::readCalibration(calPath);
  if (r.count("sample")) so.weight = r["sample"].as<double>();
  so.maxActors = r["max-actors"].as<double>();
  if (so.maxActors < 1) throw ConfigError("command line", "--max-actors", "must be at least 1");
  if (r.count("dedicated-cores")) so.dedicatedCores = r["dedicated-cores"].as<double>();
  std::string runId = r.count("run-id") ? r["run-id"].as<std::string>() : newRunId();
  checkRunId(runId);
  so.run.runId = runId;
  so.run.outDir = r.count("out") ? fs::path(r["out"].as<std::string>()) : fs::path("runs") / runId;
  so.run.progress = r.count("quiet") == 0;

  const scenario::Scenario probe = scenario::loadScenario(r["scenario"].as<std::string>(), overrides);
  // One simulation cannot judge what only a capacity search finds, nor a gate the
  // profile's plane can never produce.
  if (!r.count("capacity")) scenario::refuseCapacityGatesOutsideASearch(probe);
  scenario::checkGatesOnProfile(probe, so.profile);
  printCalibration(so.calibration, std::cerr);
  installInterruptHandlers();
  const auto started = std::chrono::steady_clock::now();
  if (r.count("capacity")) {
    result::CapacitySearch search = run::simulateCapacity(probe, so);
    for (const auto& s : search.steps)
      std::cout << search.knob << "=" << reports::formatKnobValue(s.value, search.unit) << ": "
                << (s.held ? "held" : "did not hold: " + s.brokeBy) << "\n";
    std::cout << search.detail << "\nSteps' results under " << so.run.outDir.string() << "\n";
    return search.held ? 0 : static_cast<int>(ExitCode::kGateFailed);
  }
  result::RunResult res = run::simulateScenario(probe, so);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string summary = reports::renderTerminalSummary(res);
  std::cout << summary << "\n";
  std::cout << "Simulated in " << reports::formatGrouped(wall) << " s of wall time.\n";
  std::cout << "Report: " << (so.run.outDir / "report.html").string()
            << "\nResult: " << (so.run.outDir / "result.json").string() << "\n";
  return res.exitCode;
}

}  // namespace cpscale::cli
