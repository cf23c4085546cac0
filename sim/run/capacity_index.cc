#include "sim/run/capacity_index.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "reports/capacity_report.h"
#include "reports/run_outputs.h"
#include "sim/calibration/calibration_file.h"
#include "sim/common/duration.h"
#include "sim/common/interrupt.h"
#include "sim/run/capacity_search.h"
#include "sim/run/capacity_step.h"
#include "sim/run/host_info.h"

namespace cpscale::run {
namespace fs = std::filesystem;

namespace {

bool stopped(const result::CapacitySearch& s) {
  return s.limit == result::CapacityLimit::kInterrupted || s.limit == result::CapacityLimit::kFailed;
}

// What a projected index assumes: the calibration, where it was measured, the cores of
// each member, and how far the model was from the live runs it was validated on.
nlohmann::json projectionOf(const SimulateOptions& model) {
  const model::Calibration& cal = model.calibration;
  nlohmann::json p = {{"calibration", cal.source.string()},
                      {"calibrationMeasuredAt", cal.measuredAt},
                      {"calibrationMachine", calibration::calibrationMachine(cal)},
                      {"coresPerMember", *model.dedicatedCores},
                      {"generator", "off-plane"},
                      {"maxActors", model.maxActors},
                      {"validation", calibration::validationJson(cal.validation)}};
  if (const auto worst = calibration::maxValidationError(cal)) p["maxValidationError"] = *worst;
  return p;
}

class IndexBuilder {
 public:
  IndexBuilder(const IndexOptions& o, std::ostream& out) : o_(o), out_(out) {}

  // Each step a fresh simulation (simulateCapacity), its result under step-<value>/.
  result::CapacitySearch projected(const scenario::Scenario& probe, const controlplane::Profile& profile,
                                   const fs::path& dir) {
    SimulateOptions so = *o_.model;
    so.profile = profile;
    so.run.runId = o_.runId + "-" + std::to_string(++runs_);
    so.run.outDir = dir;
    so.run.progress = false;
    if (o_.progress) std::cerr << "cpscale capacity: projecting " << probe.name << " on " << profile.name << "\n";
    result::CapacitySearch search = simulateCapacity(probe, so);
    if (search.held)
      search.resultFile =
          (fs::path(dir.filename()) / ("step-" + knobText(*search.held)) / result::kResultFile).string();
    exitCode_ = std::max(exitCode_, stopped(search) ? static_cast<int>(ExitCode::kUnavailable) : 0);
    out_ << probe.name << " on " << profile.name << ": " << search.detail << "\n";
    return search;
  }

  // One run per call of the search: the ladder grows in place; each bisection value is a
  // run of its own on a fresh plane. The ladder run's result is the search's document.
  result::CapacitySearch live(const scenario::Scenario& probe, const controlplane::Profile& profile,
                              const fs::path& dir) {
    const scenario::CapacitySpec& spec = *probe.capacity;
    std::optional<result::RunResult> ladderResult;
    int bisection = 0;
    StepRunner runSteps = [&](const std::vector<double>& values) {
      RunOptions ro = o_.runOptions(profile);
      ro.runId = o_.runId + "-" + std::to_string(++runs_);
      ro.outDir = ladderResult ? dir / ("bisect-" + std::to_string(++bisection)) : dir;
      if (ro.progress)
        std::cerr << "cpscale capacity: " << probe.name << " on " << profile.name << ": " << spec.knob << " "
                  << knobText(values.front()) << (values.size() > 1 ? " .. " + knobText(values.back()) : std::string())
                  << "\n";
      result::RunResult res = runGrowing(probe, values, ro);
      StepsOutcome o = stepsOf(res, values.front(), spec);
      if (!ladderResult) ladderResult = std::move(res);
      return o;
    };
    result::CapacitySearch search = searchCapacity(spec, runSteps, profile.name, probe.name);
    search.resultFile = (fs::path(dir.filename()) / result::kResultFile).string();

    // Every step (bisection steps too), the capacity figure, and the scenario's gates
    // over them.
    result::RunResult& res = *ladderResult;
    res.capacity = search;
    res.figures.insert(res.figures.begin(), capacityFigure(search));
    res.gates.clear();
    for (const auto& g : probe.gates) res.gates.push_back(metrics::evaluateGate(g, res.figures));
    res.exitCode = gatesExitCode(res.gates, stopped(search));
    reports::writeRunOutputs(res, dir);
    if (kubernetesVersion_.empty()) kubernetesVersion_ = res.target.kubernetesVersion;
    if (etcdVersion_.empty()) etcdVersion_ = res.target.etcdVersion;
    exitCode_ = std::max(exitCode_, res.exitCode);
    out_ << probe.name << " on " << profile.name << ": " << search.detail << "\n"
         << "  " << (dir / result::kHtmlFile).string() << "\n";
    return search;
  }

  int exitCode() const { return exitCode_; }
  const std::string& kubernetesVersion() const { return kubernetesVersion_; }
  const std::string& etcdVersion() const { return etcdVersion_; }

 private:
  const IndexOptions& o_;
  std::ostream& out_;
  int runs_ = 0;
  int exitCode_ = 0;
  std::string kubernetesVersion_, etcdVersion_;
};

}  // namespace

IndexOutcome buildCapacityIndex(const std::vector<scenario::Scenario>& probes,
                                const std::vector<controlplane::Profile>& profiles, const IndexOptions& options,
                                std::ostream& out) {
  IndexOutcome outcome;
  result::CapacityIndex& index = outcome.index;
  index.cpscaleVersion = CPSCALE_VERSION;
  index.host = hostName();
  index.cpus = static_cast<int>(std::thread::hardware_concurrency());
  index.machine = machineDescription();
  index.measuredAt = utcNowRfc3339();
  IndexBuilder builder(options, out);
  for (const scenario::Scenario& probe : probes)
    for (const auto& profile : profiles) {
      if (interrupted()) break;
      const fs::path dir = options.out / (probe.name + "-" + profile.name);
      index.searches.push_back(result::indexEntry(options.model ? builder.projected(probe, profile, dir)
                                                                : builder.live(probe, profile, dir)));
    }
  if (options.model) {
    index.kubernetesVersion = options.model->calibration.kubernetesVersion;
    index.etcdVersion = options.model->calibration.etcdVersion;
    index.projection = projectionOf(*options.model);
  } else {
    index.kubernetesVersion = builder.kubernetesVersion();
    index.etcdVersion = builder.etcdVersion();
  }
  reports::writeCapacityIndexOutputs(index, options.out);
  outcome.exitCode = builder.exitCode();
  if (interrupted()) outcome.exitCode = std::max(outcome.exitCode, static_cast<int>(ExitCode::kUnavailable));
  return outcome;
}

}  // namespace cpscale::run
