#include "sim/run/simulate.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "reports/format.h"
#include "reports/run_outputs.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/engine/simulator_impl.h"
#include "sim/model/model_plane.h"
#include "sim/run/capacity_search.h"

namespace cpscale::cli {

namespace {

// The model's members as a scenario's faults act on them, in virtual time: a restart is
// asked for and its readiness is the model's event (ModelPlane::restart).
class ModelFaults final : public MemberFaults {
 public:
  explicit ModelFaults(model::ModelPlane& plane) : plane_(plane) {}
  std::vector<std::string> members() const override {
    std::vector<std::string> out;
    for (const auto& m : plane_.members()) out.push_back(m.name);
    return out;
  }
  void kill(const std::string& member) override { plane_.kill(member); }
  void restart(const std::string& member, const std::function<bool()>&) override {
    throw std::logic_error("restarting " + member + ": the model runs in virtual time (restartThen())");
  }
  void restartThen(const std::string& member, std::function<void()> ready) override {
    plane_.restart(member, std::move(ready));
  }
  void pause(const std::string& member) override { plane_.pause(member); }
  void resume(const std::string& member) override { plane_.resume(member); }
  // The model's members never exit on their own.
  void markDown(const std::string&) override {}

 private:
  model::ModelPlane& plane_;
};

class ModelTarget final : public Target {
 public:
  ModelTarget(const controlplane::Profile& profile, const model::Calibration& calibration, double weight,
              std::uint64_t seed)
      : profile_(profile), weight_(weight), sim_(std::make_shared<engine::VirtualSimulator>()) {
    model::ModelOptions mo;
    mo.calibration = calibration;
    mo.apiservers = static_cast<std::size_t>(std::max(1, profile.apiservers));
    // The load reaches only the replicas a role split leaves to clients.
    for (int i : profile.clientApiservers())
      if (i >= 0 && static_cast<std::size_t>(i) < mo.apiservers)
        mo.clientApiservers.push_back(static_cast<std::size_t>(i));
    mo.etcds.clear();
    for (const auto& e : profile.etcds) {
      model::ModelEtcd me{e.name, e.resources};
      // etcd's own flag, where the profile sets it (its default otherwise).
      for (const auto& a : e.extraArgs)
        if (a.starts_with("--quota-backend-bytes=")) me.quotaBytes = std::strtod(a.c_str() + 22, nullptr);
      mo.etcds.push_back(std::move(me));
    }
    // The controller-manager's node lifecycle controller, with the periods it runs with
    // on the local plane: upstream's defaults unless the profile passes its own flags.
    if (profile.controllerManager.enabled) {
      mo.nodeLifecycle.enabled = true;
      mo.nodeLifecycle.apiserver =
          static_cast<std::size_t>(std::max(0, profile.controllerManager.apiserver.value_or(0)));
      for (const auto& a : profile.controllerManager.args) {
        for (auto [flag, field] :
             {std::pair{std::string_view("--node-monitor-period="), &mo.nodeLifecycle.monitorPeriod},
              std::pair{std::string_view("--node-monitor-grace-period="), &mo.nodeLifecycle.gracePeriod}}) {
          if (!a.starts_with(flag)) continue;
          auto d = parseDuration(std::string_view(a).substr(flag.size()));
          if (!d || *d <= Duration::zero())
            throw ConfigError(profile.source.empty() ? "profile" : profile.source, "controllerManager.args",
                              "'" + a + "' is not a positive duration");
          *field = *d;
        }
      }
    }
    if (!profile.priorityAndFairness) {
      // kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight,
      // per replica; 0 is no limit, as upstream reads it.
      mo.admission.maxReadOnly = profile.maxRequestsInflight.value_or(400);
      mo.admission.maxMutating = profile.maxMutatingRequestsInflight.value_or(200);
    }
    mo.seed = seed;
    mo.epochUnixNanos = kVirtualRunStartUnixNanos;
    if (!calibration.kubernetesVersion.empty()) mo.kubernetesVersion = calibration.kubernetesVersion;
    plane_ = std::make_unique<model::ModelPlane>(*sim_, std::move(mo));
    faults_ = std::make_unique<ModelFaults>(*plane_);
    setup_ = plane_->clientTransport(1);
  }
  engine::SimulatorMode mode() const override { return engine::SimulatorMode::kVirtual; }
  void open(reports::RunResult& result) override {
    const auto& cal = plane_->options().calibration;
    result.target.kind = "model";
    result.target.kubernetesVersion = cal.kubernetesVersion;
    result.target.etcdVersion = cal.etcdVersion;
    std::size_t replica = 0;
    for (const auto& m : plane_->members()) {
      std::string serves;
      if (m.role == "kube-apiserver") {
        // Whom the replica serves, as on the local plane: a role split's dedicated
        // replicas their component, the others the workloads.
        const int i = static_cast<int>(replica++);
        serves = profile_.scheduler.apiserver == i           ? "kube-scheduler"
                 : profile_.controllerManager.apiserver == i ? "kube-controller-manager"
                                                             : "workloads";
        if (result.target.server.empty() && serves == "workloads") result.target.server = m.url;
      }
      result.target.members.push_back(
          {m.name, m.role, m.url, m.role == "etcd" ? cal.etcdVersion : cal.kubernetesVersion, serves});
    }
  }
  kube::Transport& setupTransport() override { return *setup_; }
  engine::Clock& setupClock() override { return sim_->clock(); }
  // The workloads as the profile's loadIdentity: system:masters (admin) is exempt from
  // the max-in-flight filter, an ordinary user is not. Setup and scrapes stay admin.
  kube::TransportPtr loadTransport(const scenario::Scenario&) override {
    return plane_->clientTransport(weight_, profile_.loadIdentity == controlplane::LoadIdentity::kUser
                                                ? model::ClientIdentity::kLimited
                                                : model::ClientIdentity::kMasters);
  }
  std::shared_ptr<engine::Simulator> simulator() override { return sim_; }
  std::vector<metrics::ScrapeTarget> scrapeTargets(const reports::RunResult& result) override {
    std::vector<metrics::ScrapeTarget> out;
    for (const auto& m : result.target.members) {
      auto info = scrapeInfo(m, profile_);
      if (!info) continue;
      metrics::ScrapeTarget t;
      t.info = *info;
      // As on the local plane: the heap the objects hold, after a (modelled) GC.
      if (info->role == metrics::TargetRole::kApiserver) t.heapProfilePath = "/debug/pprof/heap?gc=1&debug=1";
      t.transport = std::shared_ptr<kube::Transport>(plane_->memberTransport(m.name));
      out.push_back(std::move(t));
    }
    return out;
  }
  MemberFaults* faults() override { return faults_.get(); }
  bool needsCleanup() const override { return false; }
  std::optional<metrics::Source> figureSource() const override { return metrics::Source::kModel; }

 private:
  controlplane::Profile profile_;
  double weight_;
  std::shared_ptr<engine::VirtualSimulator> sim_;
  std::unique_ptr<model::ModelPlane> plane_;
  std::unique_ptr<ModelFaults> faults_;
  kube::TransportPtr setup_;
};

double numberOf(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      return std::stod(v.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return 0;
}

// The cores the model queued each member's work at, as the result records them.
nlohmann::json hostJson(const model::Calibration& cal) {
  if (!cal.placement.empty()) {
    nlohmann::json sets = nlohmann::json::array();
    for (const auto& set : cal.placement)
      sets.push_back({{"cpus", set.cpus}, {"cores", set.cores}, {"roles", set.roles}});
    return {{"placement", sets}};
  }
  if (cal.sharedHost) return {{"sharedCores", cal.hostCores}};
  return {{"apiserverCores", cal.apiserverCores}, {"etcdCores", cal.etcdCores}};
}

}  // namespace

std::unique_ptr<Target> modelTarget(const controlplane::Profile& profile, const model::Calibration& calibration,
                                    double weight, std::uint64_t seed) {
  return std::make_unique<ModelTarget>(profile, calibration, weight, seed);
}

std::vector<std::pair<std::string, double>> extensiveKnobs(const scenario::Scenario& sc) {
  std::vector<std::pair<std::string, double>> out;
  const auto ws = sc.effective.find("workloads");
  for (const auto& w : sc.workloads) {
    if (ws == sc.effective.end() || !ws->is_array()) break;
    for (const auto& item : *ws) {
      if (!item.is_object() || item.value("name", std::string()) != w->name()) continue;
      for (const std::string& field : w->growableFields())
        if (auto v = item.find(field); v != item.end())
          out.push_back({"workloads." + w->name() + "." + field, numberOf(*v)});
    }
  }
  return out;
}

double samplingWeight(const scenario::Scenario& sc, double maxActors) {
  double largest = 0;
  for (const auto& [path, v] : extensiveKnobs(sc)) largest = std::max(largest, v);
  if (maxActors <= 0 || largest <= maxActors) return 1;
  return std::ceil(largest / maxActors);
}

std::vector<scenario::Override> sampledOverrides(const scenario::Scenario& sc, double weight) {
  std::vector<scenario::Override> out;
  if (weight <= 1) return out;
  for (const auto& [path, v] : extensiveKnobs(sc)) {
    const double scaled = std::max(1.0, std::round(v / weight));
    char text[64];
    std::snprintf(text, sizeof text, "%.0f", scaled);
    out.push_back({path, text});
  }
  return out;
}

std::vector<model::ValidationEntry> compareLiveAndModel(const reports::RunResult& live,
                                                        const reports::RunResult& modelled, double minRate) {
  std::vector<model::ValidationEntry> out;
  auto steady = [](const reports::RunResult& r, auto&& pick) {
    std::map<std::string, double> m;
    for (const auto& f : r.figures)
      if (f.window == metrics::Window::kSteady && f.available()) pick(f, m);
    return m;
  };
  auto label = [](const metrics::Figure& f, std::string_view k) -> std::string {
    for (const auto& [name, v] : f.labels)
      if (name == k) return v;
    return "";
  };
  auto byResource = [&](const metrics::Figure& f, std::map<std::string, double>& m) {
    if (f.name != "write_qps") return;
    if (f.labels.empty())
      m["write_qps"] += *f.value;
    else
      m["write_qps{resource=" + label(f, "resource") + "}"] += *f.value;
  };
  auto others = [&](const metrics::Figure& f, std::map<std::string, double>& m) {
    if (f.name == "lease_write_share" && f.labels.empty()) m["lease_write_share"] = *f.value;
    // The heap the objects hold (after a forced GC), not the garbage a Go heap carries
    // between collections, which the model does not model.
    if (f.name == "apiserver_heap_inuse_after_gc_bytes" && !label(f, "apiserver").empty())
      m["apiserver_heap_inuse_after_gc_bytes{apiserver=" + label(f, "apiserver") + "}"] = *f.value;
  };
  auto add = [&](const std::map<std::string, double>& l, const std::map<std::string, double>& m, double tolerance,
                 double minLive) {
    for (const auto& [key, lv] : l) {
      auto it = m.find(key);
      if (it == m.end() || lv < minLive || lv <= 0) continue;
      out.push_back({key, lv, it->second, std::abs(it->second - lv) / lv, tolerance});
    }
  };
  add(steady(live, byResource), steady(modelled, byResource), 0.10, minRate);
  auto lo = steady(live, others), mo = steady(modelled, others);
  for (auto& [key, v] : lo) {
    const double tol = key.starts_with("apiserver_heap") ? 0.20 : 0.10;
    // A lease share under 5 % is the plane's own background beside another axis's
    // load: a handful of writes a minute, noise at this window's length.
    add({{key, v}}, mo, tol, key == "lease_write_share" ? 0.05 : 0);
  }
  return out;
}

std::string ValidationCase::label() const {
  return name.empty() ? std::filesystem::path(scenario).stem().string() : name;
}

bool ValidationCase::holds(const std::string& entry) const {
  const std::string prefix = label() + ": ";
  if (!entry.starts_with(prefix)) return false;
  return held || std::find(heldFigures.begin(), heldFigures.end(), entry.substr(prefix.size())) != heldFigures.end();
}

std::string validationCaseOf(const model::ValidationEntry& e) {
  if (e.figure.starts_with("fleet where PUT leases p99 crosses")) return "crossing";
  const auto colon = e.figure.find(": ");
  return colon == std::string::npos ? e.figure : e.figure.substr(0, colon);
}

std::vector<model::ValidationEntry> mergeValidation(const std::vector<model::ValidationEntry>& previous,
                                                    const std::vector<model::ValidationEntry>& fresh) {
  std::set<std::string> rerun, placed;
  for (const auto& e : fresh) rerun.insert(validationCaseOf(e));
  std::vector<model::ValidationEntry> out;
  auto place = [&](const std::string& c) {
    if (!placed.insert(c).second) return;
    for (const auto& e : fresh)
      if (validationCaseOf(e) == c) out.push_back(e);
  };
  for (const auto& e : previous) {
    const std::string c = validationCaseOf(e);
    if (rerun.contains(c)) {
      place(c);
    } else {
      out.push_back(e);
    }
  }
  for (const auto& e : fresh) place(validationCaseOf(e));
  return out;
}

std::vector<ValidationCase> defaultValidationCases() {
  return {{"node-bound.yaml", {{"workloads.fleet.count", "300"}, {"duration", "60s"}}, "", "", true, {}},
          {"churn-bound.yaml", {{"duration", "60s"}}, "", "", true, {}},
          // Its whole 150 s: the window takes in a node failure's whole cycle (silent at
          // 60 s, marked Unknown ~55 s later, back at 130 s), whose controller writes a
          // shorter window cuts in two. Its writes are held; not its pods (75 Poisson
          // replacements in the window: +-12 % by chance alone), its events (the
          // controllers' burst, 9.8 % off on 2026-12-06), nor its heap (the pods' watch
          // cache ring, whose doubling the live plane reaches 9 s before it would shrink
          // and the model, slower through its setup, does not).
          {"node-bound-realistic.yaml",
           {},
           "",
           "",
           false,
           {"write_qps", "write_qps{resource=leases}", "write_qps{resource=nodes/status}",
            "write_qps{resource=pods/status}", "lease_write_share"}},
          // Its writes are held; its heap is reported: 6.8 % off on 2026-12-06, 20.6 %
          // the day before, when the live heap was 159 MB larger (619 against 460 MB):
          // at this rate the live heap varies that much from one run to the next.
          {"churn-bound.yaml",
           {{"duration", "60s"}, {"workloads.sessions.sessionsPerMinute", "1800"}},
           "",
           "churn-bound-3x",
           false,
           {"write_qps", "write_qps{resource=agentsessions}", "write_qps{resource=agentsessions/status}",
            "write_qps{resource=leases}"}},
          {"state-bound.yaml", {{"duration", "30s"}}, "classic.yaml", "state-bound-classic", true, {}},
          // Its steady writes are the plane's idle background (the controllers' and the
          // apiservers' own Lease renewals): held, as on classic; only its heap is not:
          // the replicas that serve no controller hold ~40 MB less than the model's one
          // base heap per replica (24-25 % off).
          {"state-bound.yaml",
           {{"duration", "30s"}},
           "classic-ha.yaml",
           "state-bound-classic-ha",
           false,
           {"write_qps", "write_qps{resource=leases}", "lease_write_share"}}};
}

reports::CapacitySearch simulateCapacity(const std::filesystem::path& scenarioPath,
                                         const std::vector<scenario::Override>& overrides,
                                         const SimulateOptions& options) {
  const scenario::Scenario probe = scenario::loadScenario(scenarioPath, overrides);
  if (!probe.capacity) throw ConfigError(scenarioPath.string(), "capacity", "the scenario has no capacity block");
  const scenario::CapacitySpec spec = *probe.capacity;
  int runs = 0;
  StepRunner runSteps = [&](const std::vector<double>& values) {
    StepsOutcome o;
    for (double v : values) {
      std::vector<scenario::Override> ov = overrides;
      ov.push_back({spec.knob, knobText(v)});
      ov.push_back({"duration", knobText(std::chrono::duration<double>(spec.hold).count()) + "s"});
      // A live step waits up to `settle` for the controller-manager to work off what the
      // growth created (the model has none to wait for), then the warmup: the same time
      // for the registration's backlog to drain before the window.
      ov.push_back({"warmup", knobText(std::chrono::duration<double>(spec.settle + probe.warmup).count()) + "s"});
      SimulateOptions so = options;
      so.run.runId = options.run.runId + "-" + std::to_string(++runs);
      so.run.outDir = options.run.outDir / ("step-" + knobText(v));
      reports::RunResult r = simulateScenario(scenarioPath, ov, so);
      if (r.status != reports::RunStatus::kCompleted) {
        o.stopped = r.status == reports::RunStatus::kInterrupted ? reports::CapacityLimit::kInterrupted
                                                                 : reports::CapacityLimit::kFailed;
        o.detail = r.statusDetail;
        break;
      }
      std::vector<metrics::Figure> steady;
      for (const auto& f : r.figures)
        if (f.window == metrics::Window::kSteady) steady.push_back(f);
      const reports::Phase* w = reports::findPhase(r, "steady");
      o.steps.push_back(judgeStep(v, w ? w->startSeconds : 0, w ? w->endSeconds : 0, std::move(steady), spec.gates));
      if (!o.steps.back().held) break;
    }
    return o;
  };
  return searchCapacity(spec, runSteps, options.profile.name, probe.name);
}

std::vector<model::ValidationEntry> validateCalibration(
    const model::Calibration& calibration, const controlplane::Profile& profile, const std::filesystem::path& binDir,
    const std::filesystem::path& dir, const std::string& runId, bool progress, const std::vector<ValidationCase>& cases,
    const std::optional<CrossingCase>& crossing, const controlplane::Placement& placement) {
  std::vector<model::ValidationEntry> out;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const std::filesystem::path file = std::filesystem::path(CPSCALE_SOURCE_DIR) / "scenarios" / c.scenario;
    const std::string name = c.label();
    const controlplane::Profile caseProfile =
        c.profile.empty()
            ? profile
            : controlplane::loadProfile(std::filesystem::path(CPSCALE_SOURCE_DIR) / "profiles" / c.profile);
    scenario::Scenario sc = scenario::loadScenario(file, c.overrides);
    RunOptions ro;
    ro.runId = runId + "-v" + std::to_string(i + 1);
    ro.outDir = dir / name / "live";
    ro.profile = caseProfile;
    ro.binDir = binDir;
    ro.progress = progress;
    ro.placement = placement;
    ro.cleanup = false;  // the case's own plane is stopped and its data deleted with it
    reports::RunResult live = executeRun(sc, ro);
    if (live.status != reports::RunStatus::kCompleted)
      throw UnavailableError("validation: the live " + name + " run did not complete: " + live.statusDetail);
    SimulateOptions so;
    so.profile = caseProfile;
    so.calibration = calibration;
    so.run.runId = ro.runId + "m";
    so.run.outDir = dir / name / "model";
    so.run.progress = false;
    // The same sample: every actor simulated one by one (sampling would draw another
    // one), over the same window: the model's starts when the live one did.
    so.weight = 1;
    if (const reports::Phase* steady = reports::findPhase(live, "steady"))
      so.run.earliestSteadyStart = engine::TimePoint{
          std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(steady->startSeconds))};
    reports::RunResult modelled = simulateScenario(file, c.overrides, so);
    for (auto e : compareLiveAndModel(live, modelled)) {
      e.figure = name + ": " + e.figure;
      out.push_back(std::move(e));
    }
  }
  if (crossing) {
    const std::filesystem::path file = std::filesystem::path(CPSCALE_SOURCE_DIR) / "scenarios" / crossing->scenario;
    const scenario::Scenario probe = scenario::loadScenario(file, crossing->overrides);
    const scenario::CapacitySpec spec = *probe.capacity;
    int runs = 0, bisection = 0;
    bool ladderRan = false;
    StepRunner live = [&](const std::vector<double>& values) {
      std::vector<scenario::Override> ov = crossing->overrides;
      ov.push_back({spec.knob, knobText(values.front())});
      scenario::Scenario sc = scenario::loadScenario(file, ov);
      RunOptions ro;
      ro.runId = runId + "-c" + std::to_string(++runs);
      ro.outDir = dir / "crossing" / "live" / (ladderRan ? "bisect-" + std::to_string(++bisection) : "ladder");
      ladderRan = true;
      ro.profile = profile;
      ro.binDir = binDir;
      ro.progress = progress;
      ro.placement = placement;
      ro.capacity = &spec;
      ro.steps = values;
      ro.cleanup = false;  // as above: the search's plane goes with its data
      reports::RunResult res = executeRun(sc, ro);
      StepsOutcome o;
      if (res.capacity) o.steps = res.capacity->steps;
      if (res.status == reports::RunStatus::kInterrupted) o.stopped = reports::CapacityLimit::kInterrupted;
      if (res.status == reports::RunStatus::kFailed) o.stopped = reports::CapacityLimit::kFailed;
      o.detail = res.statusDetail;
      return o;
    };
    reports::CapacitySearch liveSearch = searchCapacity(spec, live, profile.name, probe.name);
    SimulateOptions so;
    so.profile = profile;
    so.calibration = calibration;
    so.maxActors = 1e9;  // every kubelet simulated: at these sizes it takes seconds
    so.run.runId = runId + "-cm";
    so.run.outDir = dir / "crossing" / "model";
    so.run.progress = false;
    reports::CapacitySearch modelSearch = simulateCapacity(file, crossing->overrides, so);
    if (!liveSearch.held || !modelSearch.held)
      throw UnavailableError("validation: the lease latency crossing was not found (live: " + liveSearch.detail +
                             "; model: " + modelSearch.detail + ")");
    // A search only brackets the crossing: above the largest value that held, at most
    // the smallest that broke. Each side's crossing is its bracket's middle; the error
    // is the gap between the two brackets (0 when they overlap) over the live middle.
    auto bracket = [](const reports::CapacitySearch& s) {
      double broke = *s.held;
      for (const auto& st : s.steps)
        if (!st.held && st.value > *s.held && (broke == *s.held || st.value < broke)) broke = st.value;
      return std::pair{*s.held, broke};
    };
    const auto [lh, lb] = bracket(liveSearch);
    const auto [mh, mb] = bracket(modelSearch);
    const double liveMid = (lh + lb) / 2, gap = std::max({0.0, mh - lb, lh - mb});
    out.push_back({"fleet where PUT leases p99 crosses 1s (" + spec.knob + "; live " + knobText(lh) + ".." +
                       knobText(lb) + ", model " + knobText(mh) + ".." + knobText(mb) + ")",
                   liveMid, (mh + mb) / 2, gap / liveMid, 0.25});
  }
  return out;
}

reports::RunResult simulateScenario(const std::filesystem::path& scenarioPath,
                                    const std::vector<scenario::Override>& overrides, const SimulateOptions& options) {
  scenario::Scenario full = scenario::loadScenario(scenarioPath, overrides);
  double weight = options.weight.value_or(samplingWeight(full, options.maxActors));
  if (weight < 1) throw ConfigError("command line", "--sample", "must be at least 1");
  std::vector<scenario::Override> all = overrides;
  for (auto& o : sampledOverrides(full, weight)) all.push_back(std::move(o));
  scenario::Scenario sc = scenario::loadScenario(scenarioPath, all);
  // What the user asked for is the scenario the result describes; the sampled knobs
  // are in result.model.
  sc.effective = full.effective;

  model::Calibration cal = options.calibration;
  if (options.dedicatedCores) {
    if (*options.dedicatedCores <= 0) throw ConfigError("command line", "--dedicated-cores", "must be > 0");
    cal.sharedHost = false;
    cal.placement.clear();
    cal.apiserverCores = cal.etcdCores = *options.dedicatedCores;
  }
  // Admission. With API Priority and Fairness off, kube-apiserver's max-in-flight filter,
  // which the model has (its defaults, 400 and 200, where the profile sets no limit).
  // With APF on, the limits are not a filter of their own but APF's total concurrency
  // (their sum), shared among priority levels by their shares, with fair queuing before
  // a 429: the model has none of that, and approximating it as max-in-flight would
  // answer 429 where APF would queue. Such a profile is refused, naming the field, as is
  // an ordinary user's load under APF (flow schema global-default's share of the default
  // 600 seats): on the admin identity APF exempts the load and nothing changes.
  const controlplane::Profile& pf = options.profile;
  if (pf.priorityAndFairness) {
    const char* field = pf.maxRequestsInflight                                 ? "maxRequestsInflight"
                        : pf.maxMutatingRequestsInflight                       ? "maxMutatingRequestsInflight"
                        : pf.loadIdentity == controlplane::LoadIdentity::kUser ? "loadIdentity"
                                                                               : nullptr;
    if (field)
      throw ConfigError(pf.source.empty() ? "profile" : pf.source, field,
                        "the model has no API Priority and Fairness, which applies here (priorityAndFairness is "
                        "true); it models the max-in-flight filter (priorityAndFairness: false), or rehearse APF "
                        "with `cpscale run` on the local plane");
  }
  // Where the load generator is. On the calibration's shared host it competes with the
  // plane for the same cores and its in-flight bound is the live generator's, so a run
  // can be generator-limited as the live one was. Off the plane (dedicated cores) it
  // stands for the clients themselves (100k kubelets each with a connection of its
  // own): nothing bounds what they have in flight, so it never limits the run.
  const bool generatorOnHost =
      cal.sharedHost || std::any_of(cal.placement.begin(), cal.placement.end(), [](const model::CpuSet& set) {
        return std::find(set.roles.begin(), set.roles.end(), "generator") != set.roles.end();
      });
  if (!generatorOnHost) {
    const std::size_t unbounded =
        std::numeric_limits<std::size_t>::max() / std::max<std::size_t>(1, sc.driver.connections);
    sc.driver.maxInFlight = unbounded;
    sc.driver.maxInFlightPerConnection = unbounded;
  }
  auto target = modelTarget(options.profile, cal, weight, sc.seed);
  RunOptions ro = options.run;
  ro.profile = options.profile;
  reports::RunResult result = executeRun(sc, ro, *target);

  nlohmann::json m = {{"calibration", cal.source.string()},
                      {"calibrationVersion", cal.version},
                      {"calibrationMachine", model::calibrationMachine(cal)},
                      {"calibrationMeasuredAt", cal.measuredAt},
                      {"calibrationProfile", cal.profile},
                      {"kubernetesVersion", cal.kubernetesVersion},
                      {"etcdVersion", cal.etcdVersion},
                      {"host", hostJson(cal)},
                      {"generator", generatorOnHost ? "host" : "off-plane"},
                      {"weight", weight}};
  if (!sc.faults.empty()) {
    // How long a restarted member takes to serve again is the model's assumption, from
    // the local plane's rehearsals: fault_restart_seconds is this, not a measurement.
    const model::ModelOptions defaults;
    m["faultStartupSeconds"] = {
        {"kube-apiserver", std::chrono::duration<double>(defaults.apiserverStartup).count()},
        {"etcd", std::chrono::duration<double>(defaults.etcdStartup).count()},
        {"basis",
         "assumed: the local plane's fault rehearsals (kube-apiserver killed for 8 s served again 10.5 s "
         "after it went down, etcd killed for 5 s after 5.9 s)"}};
  }
  nlohmann::json sampled = nlohmann::json::object();
  for (const auto& o : sampledOverrides(full, weight)) sampled[o.path] = o.value;
  if (!sampled.empty()) m["sampledKnobs"] = sampled;
  if (const auto worst = model::maxValidationError(cal)) {
    m["validation"] = model::validationJson(cal.validation);
    m["maxValidationError"] = *worst;
  }
  result.model = std::move(m);
  reports::writeRunOutputs(result, ro.outDir);
  return result;
}

controlplane::Placement placementOf(const model::Calibration& calibration) {
  controlplane::Placement p;
  for (const model::CpuSet& set : calibration.placement)
    for (const std::string& role : set.roles)
      p.cpus[role] = controlplane::parseCpuList(set.cpus, CPU_SETSIZE, calibration.source.string(), "placement");
  return p;
}

std::string validationLine(const model::ValidationEntry& e) {
  return e.figure + ": live " + reports::formatGrouped(e.live) + ", model " + reports::formatGrouped(e.model) +
         ", error " + reports::formatValue(e.relativeError, "ratio") + " (tolerance " +
         reports::formatValue(e.tolerance, "ratio") + ")" +
         (e.relativeError > e.tolerance ? ", past its tolerance" : "");
}

}  // namespace cpscale::cli
