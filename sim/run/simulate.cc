#include "sim/run/simulate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "reports/run_outputs.h"
#include "sim/calibration/calibration_file.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/engine/simulator_impl.h"
#include "sim/model/model_plane.h"
#include "sim/run/capacity_search.h"
#include "sim/run/capacity_step.h"

namespace cpscale::run {

namespace {

// The model's members as a scenario's faults act on them, in virtual time: a restart is
// asked for and its readiness is the model's event (ModelPlane::restart).
class ModelFaults final : public MemberFaults {
 public:
  explicit ModelFaults(model::ModelPlane& plane) : plane_(plane) {}
  std::vector<std::string> members() const override {
    // The modelled controller-manager serves its metrics only: not a member to fault.
    std::vector<std::string> out;
    for (const auto& m : plane_.members())
      if (m.role != model::kControllerManagerMember) out.push_back(m.name);
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
      mo.endpointSlices.enabled = true;
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
        // The endpoint controllers' batching, slice size, workers and client, where the
        // profile sets them.
        for (auto [flag, field] :
             {std::pair{std::string_view("--endpointslice-updates-batch-period="), &mo.endpointSlices.batchPeriod},
              std::pair{std::string_view("--endpoint-updates-batch-period="),
                        &mo.endpointSlices.endpointsBatchPeriod}}) {
          if (!a.starts_with(flag)) continue;
          auto d = parseDuration(std::string_view(a).substr(flag.size()));
          if (!d || *d < Duration::zero())
            throw ConfigError(profile.source.empty() ? "profile" : profile.source, "controllerManager.args",
                              "'" + a + "' is not a duration");
          *field = *d;
        }
        for (auto [flag, field, low, high] : {std::tuple{std::string_view("--max-endpoints-per-slice="),
                                                         &mo.endpointSlices.maxEndpointsPerSlice, 1L, 1000L},
                                              std::tuple{std::string_view("--concurrent-service-endpoint-syncs="),
                                                         &mo.endpointSlices.sliceWorkers, 1L, 10000L},
                                              std::tuple{std::string_view("--concurrent-endpoint-syncs="),
                                                         &mo.endpointSlices.endpointsWorkers, 1L, 10000L}}) {
          if (!a.starts_with(flag)) continue;
          char* end = nullptr;
          const long n = std::strtol(a.c_str() + flag.size(), &end, 10);
          if (end == a.c_str() + flag.size() || *end != '\0' || n < low || n > high)
            throw ConfigError(
                profile.source.empty() ? "profile" : profile.source, "controllerManager.args",
                "'" + a + "' is not a whole number in [" + std::to_string(low) + ", " + std::to_string(high) + "]");
          *field = static_cast<std::size_t>(n);
        }
        if (constexpr std::string_view f = "--kube-api-qps="; a.starts_with(f)) {
          char* end = nullptr;
          const double v = std::strtod(a.c_str() + f.size(), &end);
          if (end == a.c_str() + f.size() || *end != '\0' || !(v > 0))
            throw ConfigError(profile.source.empty() ? "profile" : profile.source, "controllerManager.args",
                              "'" + a + "' is not a positive number");
          mo.controllerManager.clientQps = v;
        }
        if (constexpr std::string_view f = "--kube-api-burst="; a.starts_with(f)) {
          char* end = nullptr;
          const long n = std::strtol(a.c_str() + f.size(), &end, 10);
          if (end == a.c_str() + f.size() || *end != '\0' || n < 1)
            throw ConfigError(profile.source.empty() ? "profile" : profile.source, "controllerManager.args",
                              "'" + a + "' is not a whole number of one or more");
          mo.controllerManager.clientBurst = static_cast<double>(n);
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
  void open(result::RunResult& result) override {
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
  std::vector<metrics::ScrapeTarget> scrapeTargets(const result::RunResult& result) override {
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

scenario::Variation sampledVariation(const scenario::Scenario& sc, double weight) {
  scenario::Variation out;
  if (weight <= 1) return out;
  for (const auto& [path, v] : extensiveKnobs(sc)) out.setKnob(path, std::max(1.0, std::round(v / weight)));
  return out;
}

result::CapacitySearch simulateCapacity(const scenario::Scenario& probe, const SimulateOptions& options) {
  if (!probe.capacity) throw ConfigError(probe.source, "capacity", "the scenario has no capacity block");
  const scenario::CapacitySpec& spec = *probe.capacity;
  int runs = 0;
  StepRunner runSteps = [&](const std::vector<double>& values) {
    StepsOutcome o;
    for (double v : values) {
      SimulateOptions so = options;
      so.run.runId = options.run.runId + "-" + std::to_string(++runs);
      so.run.outDir = options.run.outDir / ("step-" + knobText(v));
      StepsOutcome one = stepsOf(simulateScenario(stepScenario(probe, v, StepRun::kAlone), so), v, spec);
      o.steps.insert(o.steps.end(), one.steps.begin(), one.steps.end());
      if (one.stopped) {
        o.stopped = one.stopped;
        o.detail = one.detail;
        break;
      }
      if (!o.steps.back().held) break;
    }
    return o;
  };
  return searchCapacity(spec, runSteps, options.profile.name, probe.name);
}

result::CapacitySearch simulateCapacity(const std::filesystem::path& scenarioPath,
                                        const std::vector<scenario::Override>& overrides,
                                        const SimulateOptions& options) {
  return simulateCapacity(scenario::loadScenario(scenarioPath, overrides), options);
}

result::RunResult simulateScenario(const std::filesystem::path& scenarioPath,
                                   const std::vector<scenario::Override>& overrides, const SimulateOptions& options) {
  return simulateScenario(scenario::loadScenario(scenarioPath, overrides), options);
}

result::RunResult simulateScenario(const scenario::Scenario& full, const SimulateOptions& options) {
  double weight = options.weight.value_or(samplingWeight(full, options.maxActors));
  if (weight < 1) throw ConfigError("command line", "--sample", "must be at least 1");
  const scenario::Variation sampling = sampledVariation(full, weight);
  scenario::Scenario sc = scenario::vary(full, sampling);
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
  result::RunResult result = executeRun(sc, ro, *target);

  nlohmann::json m = {{"calibration", cal.source.string()},
                      {"calibrationVersion", cal.version},
                      {"calibrationMachine", calibration::calibrationMachine(cal)},
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
  for (const auto& [path, v] : sampling.knobs) sampled[path] = knobText(v);
  if (!sampled.empty()) m["sampledKnobs"] = sampled;
  if (const auto worst = calibration::maxValidationError(cal)) {
    m["validation"] = calibration::validationJson(cal.validation);
    m["maxValidationError"] = *worst;
  }
  result.model = std::move(m);
  reports::writeRunOutputs(result, ro.outDir);
  return result;
}

}  // namespace cpscale::run
