// cpscale calibrate: measure the cost model's parameters on this machine. Short live
// probes run one after another on the local plane (each starts a plane of its own):
// the plane idle, kubelets at two fleet sizes, session churn at two rates, and a state
// ramp per kind at two payload sizes. The fit of their results into a calibration is
// calibration::fitCalibration (sim/calibration/probe_fit.h); --from refits stored probes.
#include <algorithm>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>

#include "reports/format.h"
#include "sim/calibration/calibration_file.h"
#include "sim/calibration/fit.h"
#include "sim/calibration/probe_fit.h"
#include "sim/calibration/probes.h"
#include "sim/calibration/validation.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/local_plane.h"
#include "sim/run/calibration_probes.h"
#include "sim/run/calibration_validation.h"
#include "sim/run/host_info.h"
#include "sim/run/runner.h"
#include "sim/scenario/scenario.h"

namespace cpscale::cli {
namespace fs = std::filesystem;

namespace {

cxxopts::Options calibrateOptions() {
  cxxopts::Options opts(
      "cpscale calibrate",
      "Measure the cost model's parameters on this machine: short live probes on the local plane, one after\n"
      "another (each starts its own plane): the plane idle, kubelets at two fleet sizes, session churn at two\n"
      "rates, pods replaced at two rates and without their Events, a state ramp per kind at two payload sizes,\n"
      "updates fanned out to 10 and 50 watchers, and informers relisting in pages of 500 and 50\n"
      "(scenarios/calibration). About 14 minutes on 2 cores (10 with --quick). From their results it fits\n"
      "kube-apiserver and etcd CPU per request class, the\n"
      "generator's CPU per request, heap per object and per byte, etcd db growth per write, and measures\n"
      "unloaded latencies, background writes and RSS over heap; it writes the calibration (every parameter\n"
      "with its 95 % interval and each fit's R²) that `cpscale simulate` reads, and prints it as a table.\n"
      "The probes' results stay in --probes; --from refits them without running anything.");
  opts.add_options()("profile", "control-plane profile the probes run on (default: the built-in classic)",
                     cxxopts::value<std::string>())(
      "out", "calibration file to write (default runs/calibrate-<id>/calibration.json)", cxxopts::value<std::string>())(
      "probes", "directory for the probes' results (default runs/calibrate-<id>/probes)",
      cxxopts::value<std::string>())("from", "refit the probes stored in this directory instead of running them",
                                     cxxopts::value<std::string>())(
      "quick", "shorter probes (about 9 minutes; wider intervals)")(
      "scenario-dir", "the probe scenarios (default: scenarios/calibration of the source tree)",
      cxxopts::value<std::string>())("run-id", "run id prefix (default: random)", cxxopts::value<std::string>())(
      "no-validate", "skip the validation: node-bound and churn-bound live and simulated, compared")(
      "validate",
      "validate only this case (repeatable: node-bound, churn-bound, node-bound-realistic, churn-bound-3x, "
      "state-bound-classic, state-bound-classic-ha, crossing), keeping the other cases' entries of the --out file",
      cxxopts::value<std::vector<std::string>>())("quiet", "no progress output")(
      "bin-dir", "pinned control-plane binaries directory", cxxopts::value<std::string>())(
      "pin",
      "pin the plane's members and the generator for the probes and the validation: ROLE=CPUS, repeatable "
      "(see cpscale run --pin; default 'isolated': kube-apiserver alone on the last CPU)",
      cxxopts::value<std::vector<std::string>>())(
      "no-pin", "run every process wherever the scheduler likes (they contend for the same cores)")(
      "probe",
      "run only this probe (repeatable: idle, node, churn, pods-600, pods-2400, pods-quiet, state-small, state-large, fanout-10, fanout-50, "
      "relist-500, relist-50) into --probes, keeping the others there, then fit them all",
      cxxopts::value<std::vector<std::string>>())("h,help", "show this help");
  return opts;
}

// The profile the probes and the validation run on, and their binaries.
controlplane::Profile profileOf(const cxxopts::ParseResult& r) {
  return r.count("profile") ? controlplane::loadProfile(r["profile"].as<std::string>()) : controlplane::Profile{};
}
fs::path binDirOf(const cxxopts::ParseResult& r) {
  return r.count("bin-dir") ? fs::path(r["bin-dir"].as<std::string>()) : controlplane::defaultBinDir();
}

controlplane::Placement probePlacement(const cxxopts::ParseResult& r) {
  // Pinned, each member's cost per request is its own: unpinned, every process on a
  // 2-core machine competes for both cores and each one's CPU per request grows with the
  // others' load. The placement is recorded in every probe's result and the fit takes
  // the calibration's host from it.
  controlplane::Placement placement;
  if (r.count("no-pin") && r.count("pin")) throw ConfigError("command line", "--no-pin", "contradicts --pin");
  if (r.count("pin"))
    placement = controlplane::parsePlacement(r["pin"].as<std::vector<std::string>>(), controlplane::cpusOnline());
  else if (!r.count("no-pin"))
    placement = controlplane::isolatedPlacement(controlplane::cpusOnline());
  if (r.count("from") && r.count("pin"))
    throw ConfigError("command line", "--pin",
                      "the stored probes ran where they ran; --pin is for new probes and validation");
  return placement;
}

// The probes to fit: those stored in --from, or those run now (all of them, or those
// --probe names beside the others already in --probes). None when a probe stopped
// (said on stderr).
std::optional<std::vector<calibration::ProbeResult>> probesToFit(const cxxopts::ParseResult& r, const fs::path& base,
                                                                 const std::string& runId,
                                                                 const controlplane::Placement& placement,
                                                                 bool progress) {
  std::vector<calibration::ProbeResult> probes;
  if (r.count("from")) {
    for (const char* flag : {"probes", "quick", "scenario-dir", "probe"})
      if (r.count(flag))
        throw ConfigError("command line", std::string("--") + flag, "runs probes; --from refits stored ones");
    probes = calibration::readProbes(r["from"].as<std::string>());
  } else {
    const fs::path probesDir = r.count("probes") ? fs::path(r["probes"].as<std::string>()) : base / "probes";
    const fs::path scenarioDir = r.count("scenario-dir") ? fs::path(r["scenario-dir"].as<std::string>())
                                                         : fs::path(CPSCALE_SOURCE_DIR) / "scenarios" / "calibration";
    const controlplane::Profile profile = profileOf(r);
    const fs::path binDir = binDirOf(r);
    // Every scenario is loaded (and so validated) before the first plane starts.
    std::vector<calibration::ProbePlan> plan = calibration::probePlan(r.count("quick") > 0);
    if (r.count("probe")) {
      const auto only = r["probe"].as<std::vector<std::string>>();
      for (const auto& name : only)
        if (std::none_of(plan.begin(), plan.end(), [&](const calibration::ProbePlan& p) { return p.name == name; }))
          throw ConfigError("command line", "--probe", "no probe is named '" + name + "'");
      std::erase_if(plan, [&](const calibration::ProbePlan& p) {
        return std::find(only.begin(), only.end(), p.name) == only.end();
      });
    }
    for (const calibration::ProbePlan& p : plan) scenario::loadScenario(scenarioDir / p.file, p.overrides);

    if (const auto* g = placement.of("generator")) controlplane::pinThisThread(*g);
    installInterruptHandlers();
    if (progress)
      std::cerr << "cpscale calibrate: " << plan.size() << " probes on " << profile.name << ", about "
                << (r.count("quick") ? "10" : "14") << " minutes; results in " << probesDir.string()
                << (placement.empty() ? "; nothing pinned" : "; pinned: " + placement.text()) << "\n";
    run::ProbeRunOptions po;
    po.scenarioDir = scenarioDir;
    po.probesDir = probesDir;
    po.runId = runId;
    po.profile = profile;
    po.binDir = binDir;
    po.placement = placement;
    po.progress = progress;
    run::ProbesOutcome ran = run::runProbes(plan, po);
    if (!ran.stopped.empty()) {
      std::cerr << "cpscale calibrate: " << ran.stopped << "\n";
      return std::nullopt;
    }
    probes = std::move(ran.probes);
    // With --probe, the others come from what the directory already holds.
    if (r.count("probe")) probes = calibration::readProbes(probesDir);
  }
  return probes;
}

// Which validation cases run: all of them, or those named (the others' entries are
// kept from the file --out replaces, so a model change can be validated where it
// matters without running every case again).
struct ValidationChoice {
  std::vector<calibration::ValidationCase> cases = calibration::defaultValidationCases();
  std::optional<calibration::CrossingCase> crossing = calibration::CrossingCase{};
  std::vector<model::ValidationEntry> previous;
};

ValidationChoice validationChoice(const cxxopts::ParseResult& r, const fs::path& out) {
  ValidationChoice v;
  auto& cases = v.cases;
  if (r.count("validate")) {
    if (r.count("no-validate")) throw ConfigError("command line", "--validate", "contradicts --no-validate");
    const auto only = r["validate"].as<std::vector<std::string>>();
    for (const auto& name : only)
      if (name != "crossing" && std::none_of(cases.begin(), cases.end(),
                                             [&](const calibration::ValidationCase& c) { return c.label() == name; }))
        throw ConfigError("command line", "--validate", "no validation case is named '" + name + "'");
    std::erase_if(cases, [&](const calibration::ValidationCase& c) {
      return std::find(only.begin(), only.end(), c.label()) == only.end();
    });
    if (std::find(only.begin(), only.end(), "crossing") == only.end()) v.crossing.reset();
    if (!fs::exists(out))
      throw ConfigError("command line", "--validate",
                        out.string() + " does not exist: its other cases' entries are what --validate keeps");
    v.previous = calibration::readCalibration(out).validation;
  }
  return v;
}

// The model with calibration `c` against the live plane: its validation entries.
void validate(model::Calibration& c, const cxxopts::ParseResult& r, const fs::path& out, const fs::path& base,
              const std::string& runId, controlplane::Placement placement, const ValidationChoice& choice,
              bool progress) {
  // The model with this calibration against the live plane, on the scenarios users
  // start from: its measured error goes into the calibration, and simulate prints it.
  if (progress) std::cerr << "cpscale calibrate: validating: each validation scenario live, then simulated\n";
  // Refitted probes are validated where they ran.
  if (r.count("from") && !r.count("no-pin")) placement = calibration::placementOf(c);
  if (const auto* g = placement.of("generator")) controlplane::pinThisThread(*g);
  installInterruptHandlers();
  c.source = out;
  c.validation = run::validateCalibration(c, profileOf(r), binDirOf(r), base / "validation", runId, progress,
                                          choice.cases, choice.crossing, placement);
  if (r.count("validate")) c.validation = calibration::mergeValidation(choice.previous, c.validation);
}

}  // namespace

int calibrate(const Args& args) {
  cxxopts::Options opts = calibrateOptions();
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  const bool progress = r.count("quiet") == 0;
  const std::string runId = r.count("run-id") ? r["run-id"].as<std::string>() : newRunId();
  checkRunId(runId);
  const fs::path base = fs::path("runs") / ("calibrate-" + runId);
  const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : base / "calibration.json";
  if (fs::is_directory(out)) throw ConfigError("command line", "--out", out.string() + " is a directory, not a file");
  const controlplane::Placement placement = probePlacement(r);
  const std::optional<std::vector<calibration::ProbeResult>> probes = probesToFit(r, base, runId, placement, progress);
  if (!probes) return static_cast<int>(ExitCode::kUnavailable);
  const ValidationChoice choice = validationChoice(r, out);

  model::Calibration c;
  try {
    c = calibration::fitCalibration(*probes);
  } catch (const calibration::FitError& e) {
    std::cerr << "cpscale calibrate: the probes cannot be fitted: " << e.what()
              << "\n(their results are kept; refit with --from DIR once the cause is fixed, or run the probes again)\n";
    return static_cast<int>(ExitCode::kUnavailable);
  }
  // The results do not record the CPU model: it is this machine's when the probes ran here.
  if (c.host == run::hostName()) c.cpuModel = run::cpuModel();
  calibration::writeCalibration(c, out);
  if (!r.count("no-validate")) {
    validate(c, r, out, base, runId, placement, choice, progress);
    calibration::writeCalibration(c, out);
    for (const auto& e : c.validation) std::cout << "validation: " << calibration::validationLine(e) << "\n";
  }
  std::cout << calibration::renderCalibrationSummary(c) << "\nCalibration: " << out.string() << "\n";
  return 0;
}

}  // namespace cpscale::cli
