#include "sim/run/calibration_validation.h"

#include <algorithm>

#include "sim/common/error.h"
#include "sim/run/capacity_search.h"
#include "sim/run/capacity_step.h"
#include "sim/run/runner.h"
#include "sim/run/simulate.h"

namespace cpscale::run {

namespace {

// What every case of one validation shares.
struct ValidationRun {
  const model::Calibration& calibration;
  const controlplane::Profile& profile;
  const std::filesystem::path& binDir;
  const std::filesystem::path& dir;
  const std::string& runId;
  bool progress;
  const controlplane::Placement& placement;
};

// Case `i`: live, then on the model over the same window; its entries prefixed with its
// name.
std::vector<model::ValidationEntry> validateCase(const ValidationRun& v, const calibration::ValidationCase& c,
                                                 std::size_t i) {
  std::vector<model::ValidationEntry> out;
  const std::filesystem::path file = std::filesystem::path(CPSCALE_SOURCE_DIR) / "scenarios" / c.scenario;
  const std::string name = c.label();
  const controlplane::Profile caseProfile =
      c.profile.empty() ? v.profile
                        : controlplane::loadProfile(std::filesystem::path(CPSCALE_SOURCE_DIR) / "profiles" / c.profile);
  scenario::Scenario sc = scenario::loadScenario(file, c.overrides);
  RunOptions ro;
  ro.runId = v.runId + "-v" + std::to_string(i + 1);
  ro.outDir = v.dir / name / "live";
  ro.profile = caseProfile;
  ro.binDir = v.binDir;
  ro.progress = v.progress;
  ro.placement = v.placement;
  ro.cleanup = false;  // the case's own plane is stopped and its data deleted with it
  result::RunResult live = executeRun(sc, ro);
  if (live.status != result::RunStatus::kCompleted)
    throw UnavailableError("validation: the live " + name + " run did not complete: " + live.statusDetail);
  SimulateOptions so;
  so.profile = caseProfile;
  so.calibration = v.calibration;
  so.run.runId = ro.runId + "m";
  so.run.outDir = v.dir / name / "model";
  so.run.progress = false;
  // The same sample: every actor simulated one by one (sampling would draw another
  // one), over the same window: the model's starts when the live one did.
  so.weight = 1;
  if (const result::Phase* steady = result::findPhase(live, "steady"))
    so.run.earliestSteadyStart = engine::TimePoint{
        std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(steady->startSeconds))};
  // The same scenario (the model's run varies it afresh: the live run's workloads are spent).
  result::RunResult modelled = simulateScenario(sc, so);
  for (auto e : calibration::compareLiveAndModel(live, modelled)) {
    e.figure = name + ": " + e.figure;
    out.push_back(std::move(e));
  }
  return out;
}

// The lease latency crossing: the search live and on the model, compared where each
// brackets it.
model::ValidationEntry validateCrossing(const ValidationRun& v, const calibration::CrossingCase& crossing) {
  const std::filesystem::path file = std::filesystem::path(CPSCALE_SOURCE_DIR) / "scenarios" / crossing.scenario;
  const scenario::Scenario probe = scenario::loadScenario(file, crossing.overrides);
  const scenario::CapacitySpec& spec = *probe.capacity;
  int runs = 0, bisection = 0;
  bool ladderRan = false;
  StepRunner live = [&](const std::vector<double>& values) {
    RunOptions ro;
    ro.runId = v.runId + "-c" + std::to_string(++runs);
    ro.outDir = v.dir / "crossing" / "live" / (ladderRan ? "bisect-" + std::to_string(++bisection) : "ladder");
    ladderRan = true;
    ro.profile = v.profile;
    ro.binDir = v.binDir;
    ro.progress = v.progress;
    ro.placement = v.placement;
    ro.cleanup = false;  // as above: the search's plane goes with its data
    return stepsOf(runGrowing(probe, values, ro), values.front(), spec);
  };
  result::CapacitySearch liveSearch = searchCapacity(spec, live, v.profile.name, probe.name);
  SimulateOptions so;
  so.profile = v.profile;
  so.calibration = v.calibration;
  so.maxActors = 1e9;  // every kubelet simulated: at these sizes it takes seconds
  so.run.runId = v.runId + "-cm";
  so.run.outDir = v.dir / "crossing" / "model";
  so.run.progress = false;
  result::CapacitySearch modelSearch = simulateCapacity(probe, so);
  if (!liveSearch.held || !modelSearch.held)
    throw UnavailableError("validation: the lease latency crossing was not found (live: " + liveSearch.detail +
                           "; model: " + modelSearch.detail + ")");
  // A search only brackets the crossing: above the largest value that held, at most
  // the smallest that broke. Each side's crossing is its bracket's middle; the error
  // is the gap between the two brackets (0 when they overlap) over the live middle.
  auto bracket = [](const result::CapacitySearch& s) {
    double broke = *s.held;
    for (const auto& st : s.steps)
      if (!st.held && st.value > *s.held && (broke == *s.held || st.value < broke)) broke = st.value;
    return std::pair{*s.held, broke};
  };
  const auto [lh, lb] = bracket(liveSearch);
  const auto [mh, mb] = bracket(modelSearch);
  const double liveMid = (lh + lb) / 2, gap = std::max({0.0, mh - lb, lh - mb});
  return {"fleet where PUT leases p99 crosses 1s (" + spec.knob + "; live " + knobText(lh) + ".." + knobText(lb) +
              ", model " + knobText(mh) + ".." + knobText(mb) + ")",
          liveMid, (mh + mb) / 2, gap / liveMid, 0.25};
}

}  // namespace

std::vector<model::ValidationEntry> validateCalibration(
    const model::Calibration& calibration, const controlplane::Profile& profile, const std::filesystem::path& binDir,
    const std::filesystem::path& dir, const std::string& runId, bool progress,
    const std::vector<calibration::ValidationCase>& cases, const std::optional<calibration::CrossingCase>& crossing,
    const controlplane::Placement& placement) {
  const ValidationRun v{calibration, profile, binDir, dir, runId, progress, placement};
  std::vector<model::ValidationEntry> out;
  for (std::size_t i = 0; i < cases.size(); ++i)
    for (auto& e : validateCase(v, cases[i], i)) out.push_back(std::move(e));
  if (crossing) out.push_back(validateCrossing(v, *crossing));
  return out;
}

}  // namespace cpscale::run
