// cpscale capacity: the largest load a recipe holds along one axis, per recipe and
// scenario, and the index over them (capacity.json/.md/.html).
#include <unistd.h>

#include <cxxopts.hpp>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "reports/capacity_report.h"
#include "reports/format.h"
#include "reports/run_outputs.h"
#include "sim/calibration/calibration_file.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/scenario_args.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/local_plane.h"
#include "sim/result/capacity.h"
#include "sim/result/result.h"
#include "sim/run/capacity_index.h"
#include "sim/run/capacity_search.h"
#include "sim/run/runner.h"
#include "sim/run/simulate.h"
#include "sim/run/target_check.h"
#include "sim/scenario/gate_check.h"

namespace cpscale::cli {
namespace fs = std::filesystem;

int capacity(const Args& args) {
  cxxopts::Options opts("cpscale capacity",
                        "Step a scenario knob until the recipe stops holding: the largest load each profile holds, "
                        "per axis, and the index over them.");
  addTargetOptions(opts);
  addLeaseTierOption(opts);
  opts.add_options()("scenario", "scenario files with a capacity: block (or use --axis)",
                     cxxopts::value<std::vector<std::string>>())(
      "profile", "recipe (control-plane profile) for the local plane; repeat for the index's rows",
      cxxopts::value<std::vector<std::string>>())(
      "axis", "the knob to step, e.g. workloads.fleet.count (overrides capacity.knob)", cxxopts::value<std::string>())(
      "start", "first step (capacity.start)", cxxopts::value<std::string>())(
      "factor", "growth factor between steps (capacity.factor, default 2)", cxxopts::value<std::string>())(
      "max", "last step (capacity.max)", cxxopts::value<std::string>())(
      "hold", "steady window of each step (capacity.hold, default the scenario's duration)",
      cxxopts::value<std::string>())("bisect", "refinement runs between the last pass and the first fail",
                                     cxxopts::value<std::string>())(
      "set",
      "override a scenario field: path.to.field=value, or NAME:path.to.field=value for the scenario named "
      "NAME alone (repeatable)",
      cxxopts::value<std::vector<std::string>>())("out", "output directory (default runs/capacity-<id>)",
                                                  cxxopts::value<std::string>())(
      "run-id", "run id prefix (default: random)", cxxopts::value<std::string>())(
      "no-cleanup", "keep the objects the runs created")("yes", "confirm load on a non-loopback server")(
      "quiet", "no progress output")("bin-dir", "pinned control-plane binaries directory",
                                     cxxopts::value<std::string>())(
      "model", "project the index with the calibrated model in virtual time instead of measuring it live")(
      "dedicated-cores", "with --model: each kube-apiserver and each etcd on N cores of its own (default 16)",
      cxxopts::value<double>())("calibration",
                                "with --model: the calibration (default profiles/calibration/default.json)",
                                cxxopts::value<std::string>())(
      "max-actors", "with --model: largest node count, sessions/min or objects/kind simulated one by one (default 500)",
      cxxopts::value<double>())("h,help", "show this help");
  opts.parse_positional({"scenario"});
  opts.positional_help("SCENARIO...");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("scenario"))
    throw ConfigError("command line", "SCENARIO", "at least one scenario is required (e.g. scenarios/index/node.yaml)");

  // Everything is validated before anything starts: every scenario with its capacity
  // block, every profile.
  std::vector<scenario::Override> overrides = scenarioOverrides(r);
  for (const auto& [flag, field] : std::vector<std::pair<std::string, std::string>>{{"axis", "knob"},
                                                                                    {"start", "start"},
                                                                                    {"factor", "factor"},
                                                                                    {"max", "max"},
                                                                                    {"hold", "hold"},
                                                                                    {"bisect", "bisect"}})
    if (r.count(flag)) overrides.push_back({"capacity." + field, r[flag].as<std::string>()});
  // SCENARIO-NAME:path=value applies to that scenario alone (a heap budget for the state
  // axis, a ladder for the node axis), the rest to every scenario.
  std::vector<std::pair<std::string, scenario::Override>> scoped;
  std::erase_if(overrides, [&](const scenario::Override& o) {
    const std::size_t colon = o.path.find(':');
    if (colon == std::string::npos || o.path.find('.') < colon) return false;
    scoped.push_back({o.path.substr(0, colon), {o.path.substr(colon + 1), o.value}});
    return true;
  });
  std::vector<scenario::Scenario> probes;
  for (const auto& path : r["scenario"].as<std::vector<std::string>>()) {
    const std::string name = scenario::loadScenario(path, overrides).name;
    std::vector<scenario::Override> own = overrides;
    for (const auto& [scope, o] : scoped)
      if (scope == name) own.push_back(o);
    scenario::Scenario probe = scenario::loadScenario(path, own);
    if (!probe.capacity)
      throw ConfigError(path, "capacity",
                        "the scenario has no capacity: block (add one, or give --axis KNOB --start N --max N)");
    probes.push_back(std::move(probe));
  }
  for (const auto& [scope, o] : scoped)
    if (std::none_of(probes.begin(), probes.end(), [&](const scenario::Scenario& p) { return p.name == scope; }))
      throw ConfigError("command line", "--set",
                        "'" + scope + ":" + o.path + "' names no scenario given (by its name:)");
  const std::vector<controlplane::Profile> profiles = loadProfiles(r);
  for (const auto& probe : probes)
    for (const auto& profile : profiles) scenario::checkGatesOnProfile(probe, profile);

  const bool projected = r.count("model") > 0;
  for (const char* flag : {"dedicated-cores", "calibration", "max-actors"})
    if (r.count(flag) && !projected)
      throw ConfigError("command line", std::string("--") + flag, "applies to a projection: add --model");
  run::SimulateOptions model;
  if (projected) {
    if (namesCluster(r))
      throw ConfigError("command line", "--model", std::string("projects on the model; drop ") + kClusterOptions);
    model.calibration = calibration::readCalibration(
        r.count("calibration") ? fs::path(r["calibration"].as<std::string>()) : calibration::defaultCalibrationPath());
    model.dedicatedCores = r.count("dedicated-cores") ? r["dedicated-cores"].as<double>() : 16.0;
    if (*model.dedicatedCores <= 0) throw ConfigError("command line", "--dedicated-cores", "must be > 0");
    if (r.count("max-actors")) model.maxActors = r["max-actors"].as<double>();
    if (model.maxActors < 1) throw ConfigError("command line", "--max-actors", "must be at least 1");
  }
  if (!projected && namesCluster(r) && profiles.size() > 1)
    throw ConfigError("command line", "--profile",
                      std::string("several profiles need the local plane; drop ") + kClusterOptions);
  std::optional<kube::RestConfig> cluster;
  if (!projected) {
    const ClusterArg target = clusterArg(r, "cpscale capacity", "send growing load, until it stops holding, to");
    if (target.refused) return static_cast<int>(ExitCode::kBadInput);
    cluster = target.cluster;
  }
  const std::string runId = runIdArg(r);
  const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : fs::path("runs") / ("capacity-" + runId);
  const fs::path binDir = binDirArg(r);

  run::IndexOptions io;
  io.runId = runId;
  io.out = out;
  io.progress = r.count("quiet") == 0;
  if (projected) io.model = model;
  io.runOptions = [&](const controlplane::Profile& profile) { return runOptions(r, cluster, profile, binDir); };
  installInterruptHandlers();
  const run::IndexOutcome index = run::buildCapacityIndex(probes, profiles, io, std::cout);
  std::cout << "\n"
            << reports::renderCapacityIndexMarkdown(index.index)
            << "\nIndex: " << (out / result::kCapacityIndexFile).string() << " (and capacity.md, capacity.html)\n";
  return index.exitCode;
}

}  // namespace cpscale::cli
