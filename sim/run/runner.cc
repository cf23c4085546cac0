#include "sim/run/runner.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <iostream>
#include <thread>

#include "reports/run_outputs.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/load/lease_tier.h"
#include "sim/load/worker_pool.h"
#include "sim/metrics/axis_pressure.h"
#include "sim/metrics/bytes_per_object.h"
#include "sim/metrics/client_figures.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/process_usage.h"
#include "sim/result/client_stats.h"
#include "sim/run/capacity_search.h"
#include "sim/run/host_info.h"
#include "sim/run/run_progress.h"
#include "sim/run/run_scrapes.h"
#include "sim/run/supervisor.h"
#include "sim/run/target.h"
#include "sim/run/workload_figures.h"
#include "workloads/cleanup.h"
#include "workloads/phases.h"

namespace cpscale::run {
using namespace std::chrono_literals;

namespace {

// How long the steady window waits for the controller-manager to catch up with what
// setup created (its queues still hold the registrations' node updates, the
// namespaces' service accounts, ...) before it starts anyway, saying so.
constexpr engine::Duration kSettleLimit = std::chrono::minutes(2);

// `steady`: the run has one steady window (a capacity search has its steps instead).
void recordPhases(result::RunResult& r, const RunTimeline& tl, const std::vector<workloads::PhaseLog::Span>& spans,
                  engine::Duration duration, bool steady, engine::Duration settleLimit) {
  const double end = secondsAt(*tl.end);
  result::Phase setup{"setup", 0, tl.steadyStart ? secondsAt(*tl.steadyStart) : end, tl.ready.has_value(), ""};
  if (!tl.ready)
    setup.detail = tl.cut;
  else if (tl.steadyStart && *tl.steadyStart > *tl.ready)
    setup.detail = "includes " +
                   formatDuration(std::chrono::duration_cast<std::chrono::seconds>(*tl.steadyStart - *tl.ready)) +
                   " of warmup";
  r.phases.push_back(setup);
  if (tl.workloadsReady && tl.ready && *tl.ready > *tl.workloadsReady) {
    // Setup's tail: the controllers working off what setup created.
    result::Phase settle{"settle/controllers", secondsAt(*tl.workloadsReady), secondsAt(*tl.ready), tl.settledInTime,
                         ""};
    if (!tl.settledInTime)
      settle.detail = "the controller-manager's workqueues were still not empty after " + formatDuration(settleLimit) +
                      "; the steady window started anyway";
    r.phases.push_back(std::move(settle));
  }
  for (const auto& sp : spans) {
    result::Phase p{sp.name, secondsAt(sp.start), sp.ended() ? secondsAt(sp.end) : end, sp.ended(), ""};
    if (!sp.ended()) p.detail = "still open when the load stopped";
    r.phases.push_back(std::move(p));
  }
  if (tl.steadyStart && steady) {
    // A window that ran its full duration is complete; the supervisor ends it within
    // one polling pass of the deadline.
    bool full = *tl.end - *tl.steadyStart >= duration - std::chrono::milliseconds(100) && tl.cut.empty();
    r.phases.push_back({"steady", secondsAt(*tl.steadyStart), end, full, full ? "" : tl.cut});
  }
}

// Every figure of one steady window: the server's from the scrapes between its
// boundaries, the client's from the requests scheduled in it.
std::vector<metrics::Figure> windowFigures(std::span<const metrics::TargetScrapes> slice,
                                           const load::RequestStats& stats, engine::Duration length,
                                           const load::DriverOptions& driver) {
  std::vector<metrics::Figure> out;
  auto add = [&](std::vector<metrics::Figure> fs) {
    for (auto& f : fs) {
      f.window = metrics::Window::kSteady;
      out.push_back(std::move(f));
    }
  };
  add(metrics::serverWindowFigures(slice));
  add(metrics::clientLatencyFigures(stats));
  add(metrics::clientCountFigures(stats, length));
  add(metrics::generatorHealthFigures(stats, metrics::GeneratorHealthOptions{driver.lagQuantile, driver.lagThreshold}));
  // Last: read from the figures above, in the units classify compares with.
  add(metrics::axisPressureFigures(out));
  return out;
}

// One run of a scenario against a target, from the target's opening to the result on
// disk. The supervisor (supervisor.h) decides when each stage starts and ends; the
// session carries its decisions out on the load, the scrapes and the target, and is
// the supervisor's capacity ladder, shard window and fault recovery when the run has
// them. Live, the supervisor runs on a monitor thread of its own, beside the workers',
// the scrape loop's and the progress reporter's; in virtual time, everything runs on
// the target's one engine.
class RunSession final : public SupervisedRun, public LadderPolicy, public ShardPolicy, public FaultPolicy {
 public:
  RunSession(scenario::Scenario& sc, const RunOptions& opt, Target& target)
      : sc_(sc),
        opt_(opt),
        target_(target),
        virtual_(target.mode() == engine::SimulatorMode::kVirtual),
        stepped_(opt.capacity != nullptr && !opt.steps.empty()),
        sharded_(opt.shard.sharded()),
        lead_(opt.shard.index == 0),
        counters_(opt.counters ? *opt.counters : ownCounters_) {
    // A virtual target runs everything on one engine: one worker.
    if (virtual_) sc_.workers = 1;
  }

  result::RunResult run();

 private:
  struct PerWorker {
    std::unique_ptr<kube::ApiClient> api;
    std::vector<std::unique_ptr<workloads::WorkloadInstance>> instances;
    std::vector<std::unique_ptr<workloads::WorkloadInstance>> grown;  // capacity steps' growth
    std::function<void()> pollGrowth;
  };

  // Before anything is contacted (bad input throws ConfigError).
  void describe();
  void planLadder();
  void checkBeforeStart();
  // The run, in order.
  void openTarget();
  void prepare();
  void drive();
  void startWorker(load::Worker& w);
  void collect();
  std::vector<metrics::Figure> figuresOfTheRun();
  void judgeGates();
  void settleStatus();
  void stopMonitor();
  void stopThreads();
  void releaseLoad();
  void meetAtEnd();
  void cleanUp();
  result::RunResult finish();

  const engine::Clock& clock() const {
    return virtual_ ? vsim_->clock() : static_cast<const engine::Clock&>(*runClock_);
  }

  // SupervisedRun
  bool interrupted() override { return cpscale::interrupted(); }
  std::optional<std::string> crashed() override { return target_.crashed(); }
  bool setupComplete() override { return phaseLog_->setupComplete(); }
  std::size_t setupPending() override { return phaseLog_->setupPending(); }
  void startSettling() override { scrapes_->startSettling(); }
  bool controllersSettled() override { return scrapes_->controllersSettled(); }
  void windowStarts(engine::TimePoint now, std::size_t step) override;
  void stopLoad(engine::TimePoint now, bool boundaryRound) override;
  // LadderPolicy
  std::size_t steps() const override { return opt_.steps.size(); }
  std::string stepName(std::size_t step) const override { return knobText(opt_.steps[step]); }
  std::string knob() const override { return opt_.capacity->knob; }
  engine::Duration hold() const override { return opt_.capacity->hold; }
  Verdict judge(std::size_t step, engine::TimePoint start, engine::TimePoint end) override;
  void grow(std::size_t toStep) override;
  // ShardPolicy
  std::optional<engine::TimePoint> sharedStart(engine::TimePoint now) override;
  std::vector<std::size_t> notReady() const override { return meeting_->notReady(); }
  // FaultPolicy
  void strikeFrom(engine::TimePoint windowStart) override { injector_->start(windowStart); }
  void recover(const std::string& member, const std::string& how) override;

  scenario::Scenario& sc_;
  const RunOptions& opt_;
  Target& target_;
  const bool virtual_, stepped_, sharded_, lead_;
  result::RunResult result_;
  RunCounters ownCounters_;
  RunCounters& counters_;
  // The profile's lease tier, in front of the local plane or the model (against a
  // cluster the profile is only recorded): its counts, shared by every worker's tier.
  bool leaseTierOn() const { return opt_.profile.leaseTier && !opt_.cluster; }
  load::LeaseTierCounters leaseTier_;

  // A capacity ladder: growth_[k] takes the knob's workload from steps[k] to steps[k+1].
  std::vector<workloads::WorkloadPtr> growth_;
  std::size_t knobIndex_ = 0;
  std::atomic<std::size_t> grownTo_{0};  // growth instances the workers are to have started
  std::vector<result::CapacityStep> judged_;
  std::size_t boundariesAsked_ = 0, stepStartBoundary_ = 0;

  // Synchronous setup and cleanup calls go through the target's setup transport.
  std::unique_ptr<kube::ApiClient> setupClient_;
  bool created_ = false;      // the run may have created objects: clean up, whatever happens
  bool planeBroken_ = false;  // a member of the local plane exited: the plane goes, and its objects with it
  std::string downAtEnd_;     // a member a fault left down (the plane goes too, with its objects)
  std::unique_ptr<ShardMeeting> meeting_;

  // The load and the scrapes on one timeline, whose origin is the run's t = 0 in every
  // series and phase.
  std::chrono::steady_clock::time_point origin_;
  std::int64_t originUnixNanos_ = 0;  // the origin in Unix time
  std::unique_ptr<engine::WallClock> runClock_;
  std::shared_ptr<engine::Simulator> vsim_;
  std::unique_ptr<RunScrapes> scrapes_;
  VirtualScrapes* vscrapes_ = nullptr;
  std::unique_ptr<load::WorkerPool> pool_;
  // Live: the generator's own CPU and memory at the steady window's start and end.
  std::optional<metrics::ProcessSample> selfAtSteady_, selfAtEnd_;
  std::unique_ptr<workloads::PhaseLog> phaseLog_;
  std::vector<PerWorker> perWorker_;  // after the pool: gone before its drivers
  std::unique_ptr<FaultInjector> injector_;
  std::unique_ptr<ProgressReporter> progress_;
  std::unique_ptr<Supervisor> supervisor_;
  std::thread monitor_;
  std::atomic<bool> runDone_{false};
  engine::TimePoint drainUntil_{};
  std::function<void()> drainCheck_, supervise_;
};

result::RunResult RunSession::run() {
  describe();
  planLadder();
  checkBeforeStart();
  try {
    openTarget();
    prepare();
    drive();
    collect();
    judgeGates();
    settleStatus();
  } catch (const ConfigError&) {
    releaseLoad();
    throw;
  } catch (const std::exception& e) {
    result_.statusDetail = e.what();
    if (cpscale::interrupted()) result_.status = result::RunStatus::kInterrupted;
    std::cerr << "cpscale run: " << e.what() << "\n";
  }
  releaseLoad();
  meetAtEnd();
  cleanUp();
  return finish();
}

void RunSession::describe() {
  auto& r = result_;
  r.runId = opt_.runId;
  r.scenario.name = sc_.name;
  r.scenario.description = sc_.description;
  r.scenario.sourceFile = sc_.source;
  r.scenario.effectiveConfig = sc_.effective;
  r.profile.name = opt_.profile.name;
  r.profile.description = opt_.profile.description;
  r.profile.source = opt_.profile.source;
  r.environment.cpscaleVersion = CPSCALE_VERSION;
  r.environment.host = hostName();
  r.environment.cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (!virtual_)
    for (const auto& [role, cpus] : opt_.placement.cpus)
      r.environment.placement[role] = controlplane::cpuListText(cpus);
  r.environment.startedAt = utcNowRfc3339();
  r.status = result::RunStatus::kFailed;
}

void RunSession::planLadder() {
  if (!stepped_) return;
  const auto& spec = *opt_.capacity;
  while (knobIndex_ < sc_.workloads.size() && sc_.workloads[knobIndex_]->name() != spec.workload) ++knobIndex_;
  if (knobIndex_ == sc_.workloads.size())
    throw ConfigError(spec.where, "capacity.knob", "no workload named '" + spec.workload + "'");
  if (virtual_)
    throw ConfigError(spec.where, "capacity", "a capacity search in virtual time is not supported; simulate each step");
  for (std::size_t k = 1; k < opt_.steps.size(); ++k) {
    // The scenario checked the field grows in place (readCapacity); growth() checks the values.
    auto g = sc_.workloads[knobIndex_]->growth(spec.field, opt_.steps[k - 1], opt_.steps[k]);
    if (!g) throw ConfigError(spec.where, "capacity.knob", "'" + spec.field + "' cannot grow in place");
    growth_.push_back(std::move(g));
  }
}

void RunSession::checkBeforeStart() {
  if (sharded_) {
    if (virtual_) throw ConfigError("command line", "--shard", "a model run is one process: it is not sharded");
    if (stepped_) throw ConfigError("command line", "--shard", "a capacity search is not sharded");
    result_.shard = result::ShardInfo{opt_.shard.index, opt_.shard.count};
  }
  // A scenario's faults act on the target's members.
  if (!sc_.faults.empty()) {
    MemberFaults* members = target_.faults();
    if (members == nullptr)
      throw ConfigError(sc_.faults.front().where, sc_.faults.front().path,
                        "faults act on the members of the local plane cpscale starts or of the model; a user's "
                        "cluster's are not the run's to kill");
    validateFaults(sc_.faults, members->members());
  }
}

// The target, and a preflight /version on a transport of its own.
void RunSession::openTarget() {
  target_.open(result_);
  result_.profile.applied = result_.target.kind != "cluster";
  setupClient_ = std::make_unique<kube::ApiClient>(target_.setupTransport(), target_.setupClock());
  kube::HttpRequest v;
  v.method = "GET";
  v.path = "/version";
  kube::HttpResponse resp = kube::roundTrip(target_.setupTransport(), v);
  if (!resp.ok() || resp.status != 200)
    throw UnavailableError("cannot reach " + result_.target.server + ": " +
                           (resp.ok() ? "HTTP " + std::to_string(resp.status) : resp.detail));
  try {
    std::string gv = nlohmann::json::parse(resp.body).value("gitVersion", "");
    if (result_.target.kubernetesVersion.empty()) result_.target.kubernetesVersion = gv;
    if (result_.target.kind == "cluster") result_.target.members.front().version = gv;
  } catch (const nlohmann::json::exception&) {
  }
  target_.discover(*setupClient_, result_);
}

// Preparation, synchronously: shard 0 (or an unsharded run) installs what the
// workloads need; the other shards wait for it.
void RunSession::prepare() {
  if (sharded_) meeting_ = std::make_unique<ShardMeeting>(*setupClient_, opt_.runId, opt_.shard);
  if (lead_) {
    for (auto& w : sc_.workloads) {
      if (cpscale::interrupted()) throw UnavailableError("interrupted while preparing workloads");
      created_ = true;
      w->prepare(*setupClient_, target_.setupClock(), opt_.runId);
    }
    for (auto& g : growth_) g->prepare(*setupClient_, target_.setupClock(), opt_.runId);
    if (meeting_) meeting_->announceSetup();
  } else {
    meeting_->awaitSetup(sc_.setupTimeout, [] { return cpscale::interrupted(); });
    created_ = true;
  }
}

// The load and the scrapes. Live: paced workers with one open-loop driver each, the
// scraper on a thread of its own, the supervisor on another. Virtual: the target's one
// engine runs the workloads, the scraper and the supervisor.
void RunSession::drive() {
  // Every apiserver with the run's credentials, every etcd and controller component of
  // a local plane or model (a user's are not reachable: their figures are unavailable).
  // A sharded run's servers are scraped once, by shard 0.
  std::vector<metrics::ScrapeTarget> scrapeTargets;
  if (lead_) scrapeTargets = target_.scrapeTargets(result_);
  origin_ = std::chrono::steady_clock::now();
  originUnixNanos_ = unixNowNanos();
  runClock_ = std::make_unique<engine::WallClock>(origin_);
  vsim_ = target_.simulator();
  if (virtual_ && !vsim_) throw std::logic_error("a virtual target without an engine");
  if (virtual_) {
    auto v = std::make_unique<VirtualScrapes>(*vsim_, scrapeTargets, sc_.scrapeInterval);
    vscrapes_ = v.get();
    scrapes_ = std::move(v);
  } else {
    scrapes_ = std::make_unique<ScrapeLoop>(scrapeTargets, sc_.scrapeInterval, origin_);
  }
  load::WorkerOptions wo;
  wo.workers = sc_.workers;
  wo.mode = target_.mode();
  wo.seed = sc_.seed;
  wo.driver = sc_.driver;
  wo.drain = sc_.drain;
  wo.wallOrigin = origin_;
  wo.simulator = vsim_;
  pool_ = std::make_unique<load::WorkerPool>(wo, [this](load::Worker& w) -> kube::TransportPtr {
    kube::TransportPtr t = target_.loadTransport(sc_);
    if (leaseTierOn())
      t = std::make_unique<load::LeaseTier>(std::move(t), w.simulator(), leaseTier_,
                                            load::LeaseTierOptions{opt_.profile.leaseTier->propagateEvery});
    return std::make_unique<CountingTransport>(std::move(t), w.simulator().clock(), counters_);
  });
  // Nothing counts as the measured window until every workload's setup is over.
  pool_->setSteadyStart(engine::TimePoint::max());
  phaseLog_ = std::make_unique<workloads::PhaseLog>(sc_.workers * sc_.workloads.size());
  counters_.phase = 0;
  perWorker_.resize(sc_.workers);
  // The scenario's faults, on the run's clock from the steady window's start: live on
  // threads of their own, in virtual time as events on the run's engine.
  if (!sc_.faults.empty())
    injector_ = virtual_ ? std::make_unique<FaultInjector>(*target_.faults(), sc_.faults, *vsim_)
                         : std::make_unique<FaultInjector>(*target_.faults(), sc_.faults, *runClock_);
  progress_ = std::make_unique<ProgressReporter>(counters_, sc_.duration, opt_.progress && !virtual_);

  SupervisorOptions so;
  so.setupTimeout = sc_.setupTimeout;
  so.warmup = sc_.warmup;
  so.duration = sc_.duration;
  // A capacity step waits for the controllers only so long: a controller-manager that
  // cannot keep up with the growth is part of what the step measures.
  so.settleLimit = stepped_ ? opt_.capacity->settle : kSettleLimit;
  so.earliestSteadyStart = opt_.earliestSteadyStart;
  so.instances = sc_.workers * sc_.workloads.size();
  supervisor_ = std::make_unique<Supervisor>(so, *this, stepped_ ? this : nullptr, meeting_ ? this : nullptr,
                                             injector_ ? this : nullptr);

  if (virtual_) {
    // The first round is the baseline every counter's increase starts from: it is
    // answered before the load starts.
    vscrapes_->start();
    for (const auto limit = vsim_->now() + 10s; !vscrapes_->idle() && vsim_->now() < limit;)
      vsim_->runUntil(vsim_->now() + 1ms);
    supervise_ = [this] {
      if (supervisor_->tick(vsim_->now())) vsim_->scheduleAfter(10ms, supervise_);
    };
  } else {
    monitor_ = std::thread([this] {
      while (!runDone_.load() && supervisor_->tick(runClock_->now())) std::this_thread::sleep_for(10ms);
    });
    auto& loop = static_cast<ScrapeLoop&>(*scrapes_);
    loop.start();
    loop.waitFirstRound();
  }
  progress_->start();
  const engine::TimePoint budget =
      stepped_ ? engine::TimePoint{(sc_.setupTimeout + opt_.capacity->settle + opt_.capacity->hold) *
                                       static_cast<long>(opt_.steps.size()) +
                                   sc_.warmup + 1min}
               : engine::TimePoint{sc_.setupTimeout + sc_.warmup + sc_.duration + 1min};
  pool_->run([this](load::Worker& w) { startWorker(w); }, budget);
  stopMonitor();
  supervisor_->loadOver(clock().now());
  stopThreads();
}

void RunSession::stopMonitor() {
  runDone_ = true;
  if (monitor_.joinable()) monitor_.join();
}

// The run's threads beside the workers': the monitor, the faults (what has not struck by
// now does not; a frozen member is resumed), the progress reporter and the scrape loop
// (after its last round). Each stops once, whichever path gets here first.
void RunSession::stopThreads() {
  stopMonitor();
  if (injector_) injector_->finish();
  if (progress_) progress_->stop();
  if (scrapes_) scrapes_->finish();
}

// On each worker's own thread (its engine): its API client and workload instances.
void RunSession::startWorker(load::Worker& w) {
  PerWorker& pw = perWorker_[w.index()];
  kube::ApiClientOptions ao;
  ao.seed = sc_.seed + opt_.shard.index * sc_.workers + w.index();
  pw.api = std::make_unique<kube::ApiClient>(*w.driver(), w.simulator().clock(), w.simulator(), ao);
  auto context = [this, &w, &pw] {
    workloads::WorkloadContext ctx{w.simulator(), *pw.api, opt_.runId, sc_.seed, &w};
    ctx.phases = phaseLog_.get();
    ctx.shard = opt_.shard.index;
    ctx.shards = opt_.shard.count;
    // Timestamps written into objects (renewTime) are Unix time: a live run's timeline
    // starts at its origin; a virtual run's engine is at a fixed instant now, so one
    // seed gives the same objects.
    ctx.epochUnixNanos = virtual_ ? kVirtualRunStartUnixNanos - w.simulator().clock().now().time_since_epoch().count()
                                  : originUnixNanos_;
    return ctx;
  };
  for (auto& wl : sc_.workloads) {
    auto ctx = context();
    pw.instances.push_back(wl->start(ctx));
  }
  if (stepped_) {
    // Each growth the supervisor asks for, started on this worker's own thread.
    pw.pollGrowth = [this, &w, &pw, context] {
      while (pw.grown.size() < grownTo_.load()) {
        auto ctx = context();
        pw.grown.push_back(growth_[pw.grown.size()]->start(ctx));
      }
      w.simulator().scheduleAfter(100ms, pw.pollGrowth);
    };
    w.simulator().scheduleAfter(100ms, pw.pollGrowth);
  }
  if (virtual_) supervise_();
}

void RunSession::windowStarts(engine::TimePoint now, std::size_t step) {
  counters_.phase = 1;
  scrapes_->scrapeAtBoundary();
  stepStartBoundary_ = ++boundariesAsked_;
  if (step == 0) pool_->setSteadyStart(now);
  if (step == 0 && !virtual_) selfAtSteady_ = metrics::sampleSelf();
  // Numbered windows: a capacity step's, or a virtual run's (whose end is marked too,
  // since its engine runs on while the last answers arrive).
  if (stepped_ || virtual_) pool_->beginWindow(2 * step, now);
}

// Live: the pool stops (and collects what is in flight). Virtual: the window is closed
// at `now`, and the engine runs on until its requests and the boundary round are
// answered (at most `drain`), as the live pool's drain would collect them.
void RunSession::stopLoad(engine::TimePoint now, bool boundaryRound) {
  if (boundaryRound) scrapes_->scrapeAtBoundary();
  if (!virtual_ && selfAtSteady_ && !selfAtEnd_) selfAtEnd_ = metrics::sampleSelf();
  if (!virtual_) return pool_->stop();
  pool_->beginWindow(1, now);
  drainUntil_ = now + sc_.drain;
  drainCheck_ = [this] {
    load::RequestStats w = pool_->windowStats(0);
    if ((w.completed() >= w.sent() && vscrapes_->idle()) || vsim_->now() >= drainUntil_) return pool_->stop();
    vsim_->scheduleAfter(10ms, drainCheck_);
  };
  drainCheck_();
}

// A capacity step's window ended (on the supervisor's thread): a boundary round, the
// answers to the window's requests (bounded by `drain`), then its figures and verdict.
LadderPolicy::Verdict RunSession::judge(std::size_t step, engine::TimePoint start, engine::TimePoint now) {
  const std::size_t window = 2 * step;
  pool_->beginWindow(window + 1, now);
  scrapes_->scrapeAtBoundary();
  ++boundariesAsked_;
  auto from = scrapes_->waitBoundary(stepStartBoundary_);
  auto to = scrapes_->waitBoundary(boundariesAsked_);
  for (auto until = clock().now() + sc_.drain; clock().now() < until && !cpscale::interrupted();) {
    load::RequestStats w = pool_->windowStats(window);
    if (w.completed() >= w.sent()) break;
    std::this_thread::sleep_for(20ms);
  }
  auto slice = scrapes_->slice(from.value_or(start), to.value_or(now) + 1ms);
  auto figures = windowFigures(slice, pool_->windowStats(window), now - start, sc_.driver);
  const double value = opt_.steps[step];
  judged_.push_back(judgeStep(value, secondsAt(start), secondsAt(now), std::move(figures), opt_.capacity->gates));
  const auto& j = judged_.back();
  if (opt_.progress)
    std::cerr << "cpscale capacity: " << opt_.capacity->knob << "=" << knobText(value) << " "
              << (j.held ? "held" : "did not hold: " + j.brokeBy) << "\n";
  return {j.held, j.brokeBy};
}

// Grow in place: every worker starts the next growth workload's instance.
void RunSession::grow(std::size_t toStep) {
  phaseLog_->expect(sc_.workers);
  counters_.phase = 0;
  grownTo_ = toStep;
}

std::optional<engine::TimePoint> RunSession::sharedStart(engine::TimePoint now) {
  const auto at = meeting_->steadyAt(originUnixNanos_ + now.time_since_epoch().count());
  if (!at) return std::nullopt;
  return engine::TimePoint{engine::Duration{*at - originUnixNanos_}};
}

void RunSession::recover(const std::string& member, const std::string& how) {
  if (opt_.progress) std::cerr << "\ncpscale run: " << member << " exited; starting it again\n";
  injector_->recover(member, how);
}

// Phases, then figures per phase: the steady window is the headline; setup is recorded
// beside it; scrape health covers the whole run.
void RunSession::collect() {
  const RunTimeline& tl = supervisor_->timeline();
  recordPhases(result_, tl, phaseLog_->spans(), sc_.duration, !stepped_, supervisor_->settleLimit());
  const auto& ladder = supervisor_->ladderPhases();
  result_.phases.insert(result_.phases.end(), ladder.begin(), ladder.end());
  result_.incidents = tl.incidents;
  planeBroken_ = target_.ownsMembers() && !tl.incidents.empty();
  if (injector_) {
    for (auto& i : injector_->incidents(*tl.end)) result_.incidents.push_back(std::move(i));
    std::stable_sort(result_.incidents.begin(), result_.incidents.end(),
                     [](const result::Incident& a, const result::Incident& b) { return a.atSeconds < b.atSeconds; });
    // A member still down: the run's objects go with the plane, not through its API.
    downAtEnd_ = injector_->downAtEnd();
  }
  result_.measuredSeconds = tl.steadyStart ? secondsAt(*tl.end) - secondsAt(*tl.steadyStart) : 0;
  for (std::size_t i = 0; i < sc_.workloads.size(); ++i) {
    nlohmann::json merged = nlohmann::json::object();
    for (auto& pw : perWorker_) {
      if (i >= pw.instances.size()) continue;
      pw.instances[i]->stop();
      mergeSummary(merged, pw.instances[i]->summary());
      if (i == knobIndex_)
        for (auto& g : pw.grown) {
          g->stop();
          mergeSummary(merged, g->summary());
        }
    }
    result_.workloads.push_back({sc_.workloads[i]->kind(), sc_.workloads[i]->name(), merged});
  }
  std::vector<metrics::Figure> figures = figuresOfTheRun();
  // A model's figures all come from the model, whichever member's /metrics served them.
  if (auto source = target_.figureSource())
    for (auto& f : figures) f.source = *source;
  result_.figures = std::move(figures);
}

std::vector<metrics::Figure> RunSession::figuresOfTheRun() {
  const RunTimeline& tl = supervisor_->timeline();
  std::vector<metrics::Figure> figures = workloadFigures(result_.workloads);
  const auto& all = scrapes_->targets();
  // Each phase's scrapes run from the round taken at its start boundary to the one
  // taken at its end boundary (a boundary round is recorded within microseconds of the
  // boundary time the scrape loop noted). Without a boundary round (the loop never saw
  // it), the supervisor's time with a scrape loop's pass of slack.
  const auto& bounds = scrapes_->boundaries();
  auto boundary = [&](std::size_t i, engine::TimePoint fallback) {
    return i < bounds.size() ? bounds[i] + 1ms : fallback + 60ms;
  };
  const engine::TimePoint setupEnd = tl.steadyStart ? *tl.steadyStart : *tl.end;
  auto setupSlice = metrics::sliceTargets(all, engine::TimePoint{}, boundary(0, setupEnd));
  auto add = [&](std::vector<metrics::Figure> fs, metrics::Window w) {
    for (auto& f : fs) {
      f.window = w;
      figures.push_back(std::move(f));
    }
  };
  auto headlineUnavailable = [&](const std::string& why) {
    for (const char* n : {"write_qps", "lease_write_share"})
      figures.push_back(metrics::Figure::unavailable(n, {}, n == std::string_view("write_qps") ? "1/s" : "ratio",
                                                     metrics::Source::kApiserver, why));
  };
  // A virtual run's window is closed at its end (its engine ran on for the answers).
  load::RequestStats stats = virtual_ ? pool_->windowStats(0) : pool_->requestStats();
  load::RequestStats setupStats = pool_->setupRequestStats();
  if (stepped_) {
    // The headline is the last step that held; every step's figures are in
    // result.capacity.
    const result::CapacityStep* last = nullptr;
    for (const auto& j : judged_)
      if (j.held) last = &j;
    if (last) {
      figures.insert(figures.end(), last->figures.begin(), last->figures.end());
      result_.measuredSeconds = last->endSeconds - last->startSeconds;
    } else {
      headlineUnavailable(judged_.empty() ? "no step of the capacity search was held to its end: " + tl.cut
                                          : "no step of the capacity search held: " + judged_.front().brokeBy);
      result_.measuredSeconds = 0;
    }
    result::CapacitySearch search;
    search.axis = opt_.capacity->axis;
    search.knob = opt_.capacity->knob;
    search.unit = opt_.capacity->unit;
    search.profile = opt_.profile.name;
    search.scenario = sc_.name;
    search.steps = judged_;
    result_.capacity = std::move(search);
  } else if (tl.steadyStart) {
    engine::TimePoint from = bounds.empty() ? *tl.steadyStart : bounds[0];
    auto steady = metrics::sliceTargets(all, from, boundary(1, *tl.end));
    auto fs = windowFigures(steady, stats, *tl.end - *tl.steadyStart, sc_.driver);
    figures.insert(figures.end(), fs.begin(), fs.end());
    if (!virtual_) {
      add(metrics::generatorResourceFigures(selfAtSteady_, selfAtEnd_, "the kernel did not give this process's usage"),
          metrics::Window::kSteady);
    }
    // A shard keeps its window's request statistics whole, for `cpscale merge`.
    if (sharded_) result_.clientStats = result::requestStatsJson(stats);
  } else {
    headlineUnavailable("the steady window never started: " + tl.cut);
  }
  add(metrics::writeFigures(setupSlice), metrics::Window::kSetup);
  add(metrics::leaseShareFigures(setupSlice), metrics::Window::kSetup);
  {
    // bytes_per_object over the population ramp, and per kind over each kind's ramp
    // (the workers' phases are on the scrapes' timeline: one origin).
    metrics::BytesPerObjectOptions bpo;
    std::vector<metrics::KindRamp> ramps;
    for (const auto& span : phaseLog_->spans()) {
      if (!span.ended()) continue;
      if (auto r = metrics::kindRampFromPhase(span.name, span.start, span.end)) {
        ramps.push_back(*r);
      } else if (span.name.starts_with("ramp/")) {
        bpo.from = bpo.from ? std::min(*bpo.from, span.start) : span.start;
        bpo.to = bpo.to ? std::max(*bpo.to, span.end) : span.end;
      }
    }
    add(metrics::bytesPerObjectFigures(setupSlice, bpo), metrics::Window::kSetup);
    add(metrics::bytesPerKindFigures(setupSlice, ramps), metrics::Window::kSetup);
  }
  add(metrics::scrapeHealthFigures(all), metrics::Window::kRun);
  if (injector_) add(injector_->figures(), metrics::Window::kRun);
  add(metrics::clientCountFigures(setupStats, setupEnd - engine::TimePoint{}), metrics::Window::kSetup);
  // Watch streams are not open-loop requests (no latency, no in-flight slot): their own
  // counts over the whole run.
  load::StreamStats ss = pool_->streamStats();
  const std::pair<const char*, double> streams[] = {{"client_watch_streams_opened", double(ss.opened)},
                                                    {"client_watch_streams_failed", double(ss.failed)},
                                                    {"client_watch_streams_peak_open", double(ss.peakOpen)},
                                                    {"client_watch_stream_bytes", double(ss.bytes)}};
  for (const auto& [name, v] : streams)
    add({metrics::Figure::measured(name, {}, v, "count", metrics::Source::kClient)}, metrics::Window::kRun);
  if (leaseTierOn()) {
    // What the profile's lease tier took and wrote through, over the whole run.
    auto count = [&](const char* name, metrics::Labels labels, const std::atomic<std::uint64_t>& v) {
      add({metrics::Figure::measured(name, std::move(labels), double(v.load()), "count", metrics::Source::kClient)},
          metrics::Window::kRun);
    };
    count("lease_tier_renewals_received", {}, leaseTier_.received);
    count("lease_tier_renewals_absorbed", {}, leaseTier_.absorbed);
    count("lease_tier_writes", {{"reason", "transition"}}, leaseTier_.transitions);
    count("lease_tier_writes", {{"reason", "periodic"}}, leaseTier_.periodic);
  }
  return figures;
}

// A shard above 0 judges only the gates on its own (client-side) figures: the servers'
// figures, and their gates, are shard 0's. A capacity search's gates are its caller's.
void RunSession::judgeGates() {
  if (stepped_) return;
  auto judgedHere = [&](const metrics::Gate& g) {
    return lead_ || std::any_of(result_.figures.begin(), result_.figures.end(), [&](const metrics::Figure& f) {
             return f.name == g.figure && f.source == metrics::Source::kClient;
           });
  };
  for (const auto& g : sc_.gates)
    if (judgedHere(g)) result_.gates.push_back(metrics::evaluateGate(g, result_.figures));
}

void RunSession::settleStatus() {
  const RunTimeline& tl = supervisor_->timeline();
  if (cpscale::interrupted()) {
    result_.status = result::RunStatus::kInterrupted;
    result_.statusDetail =
        "interrupted after " +
        formatDuration(std::chrono::duration_cast<std::chrono::seconds>(*tl.end - engine::TimePoint{}));
  } else if (!tl.cut.empty()) {
    // A member that died or a setup that never finished: what was measured is written,
    // but the run did not complete.
    result_.status = result::RunStatus::kFailed;
    result_.statusDetail = tl.cut;
    std::cerr << "cpscale run: " << tl.cut << "\n";
    for (const auto& i : result_.incidents) std::cerr << "cpscale run: " << i.detail << "\n";
  } else {
    result_.status = result::RunStatus::kCompleted;
  }
}

// The load's threads and objects go before cleanup, whatever happened: the monitor and
// the fault injector stop, the workers' clients before the pool's drivers.
void RunSession::releaseLoad() {
  stopThreads();
  perWorker_.clear();
  // The load's connections closed now, its watch streams with them: a kube-apiserver
  // told to stop waits for its open streams (up to its 60 s shutdown timeout), and the
  // local plane gives it 15 s before it kills it.
  pool_.reset();
  supervise_ = nullptr;
  drainCheck_ = nullptr;
}

// A sharded run: every shard says its load is over; shard 0 waits for them all (at most
// 2 minutes) before it deletes the run's objects, which the others leave to it.
void RunSession::meetAtEnd() {
  if (!meeting_) return;
  try {
    meeting_->announceDone();
    if (lead_) {
      auto left = meeting_->awaitDone(std::chrono::minutes(2), [] { return cpscale::interrupted(); });
      if (!left.empty())
        std::cerr << "cpscale run: " << left.size() << " shard(s) not done after 2 minutes; cleaning up anyway\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "cpscale run: meeting the other shards at the end: " << e.what() << "\n";
  }
}

// Cleanup of what the run created, on every path that may have created something.
void RunSession::cleanUp() {
  auto skipped = [&](const std::string& why) {
    result_.workloads.push_back({"cleanup", "cleanup", {{"skipped", why}}});
  };
  if (meeting_ && !lead_) return skipped("shard 0 deletes the run's objects once every shard is done");
  if (planeBroken_ && !opt_.keepPlane)
    return skipped("a member of the local plane exited; the plane is stopped and its data deleted with it");
  if (!downAtEnd_.empty() && !opt_.keepPlane)
    return skipped(downAtEnd_ +
                   " was down when the run ended (a fault); the plane is stopped and its data deleted with it");
  if (!opt_.cleanup || !created_ || !setupClient_ || !target_.needsCleanup()) return;
  // A local plane that is not kept goes with its etcd data, and everything the run
  // created in it: deleting it object by object first would only take time (20 s for
  // smoke; minutes for a large population). --keep keeps the plane and cleans it.
  if (target_.ownsMembers() && !opt_.keepPlane)
    return skipped(
        "the local plane is stopped and its data deleted with it (--keep keeps the plane and deletes "
        "what the run created)");
  // A Ctrl-C stops the load, not the cleanup; the next one abandons the cleanup and
  // exits at once (exit 3). What was measured goes to disk first, so that exit loses
  // nothing but the cleanup's own outcome.
  try {
    result::RunResult provisional = result_;
    provisional.workloads.push_back(
        {"cleanup", "cleanup", {{"abandoned", true}, {"retry", "cpscale cleanup --run " + opt_.runId}}});
    provisional.environment.endedAt = utcNowRfc3339();
    provisional.exitCode = static_cast<int>(ExitCode::kUnavailable);
    reports::writeRunOutputs(provisional, opt_.outDir);
  } catch (const std::exception& e) {
    std::cerr << "cpscale run: cannot write the result before cleaning up: " << e.what() << "\n";
  }
  CleanupPhase cleaning(opt_.runId);
  if (opt_.progress || cpscale::interrupted())
    std::cerr << "cpscale run: deleting what run " << opt_.runId << " created"
              << (cpscale::interrupted() ? " (Ctrl-C again to exit without cleaning up)" : "") << "\n";
  try {
    std::vector<kube::GroupVersionResource> resources;
    for (const auto& w : sc_.workloads)
      for (const auto& r : w->resources()) resources.push_back(r);
    auto cleaned = workloads::cleanupRun(*setupClient_, target_.setupClock(), opt_.runId, resources);
    if (meeting_) meeting_->remove();
    result_.workloads.push_back({"cleanup", "cleanup", cleanupJson(cleaned)});
    if (!cleaned.complete())
      std::cerr << "cpscale run: cleanup incomplete: " << cleanupJson(cleaned).dump()
                << " (retry with `cpscale cleanup --run " << opt_.runId << "`)\n";
  } catch (const std::exception& e) {
    result_.workloads.push_back({"cleanup", "cleanup", {{"error", e.what()}}});
    std::cerr << "cpscale run: cleanup failed: " << e.what() << " (retry with `cpscale cleanup --run " << opt_.runId
              << "`)\n";
  }
}

// The exit code, the target closed, and the result on disk.
result::RunResult RunSession::finish() {
  const int code = gatesExitCode(result_.gates, result_.status != result::RunStatus::kCompleted);
  target_.close();
  result_.environment.endedAt = utcNowRfc3339();
  result_.exitCode = code;
  reports::writeRunOutputs(result_, opt_.outDir);
  return result_;
}

}  // namespace

int gatesExitCode(std::span<const metrics::GateResult> gates, bool stopped) {
  if (stopped) return static_cast<int>(ExitCode::kUnavailable);
  for (const auto& g : gates)
    if (!g.passed) return static_cast<int>(ExitCode::kGateFailed);
  return 0;
}

nlohmann::json cleanupJson(const workloads::CleanupResult& c) {
  return {{"deleted", c.deleted}, {"remaining", c.remaining}, {"errors", c.errors}, {"complete", c.complete()}};
}

result::RunResult executeRun(scenario::Scenario& sc, const RunOptions& opt) {
  std::unique_ptr<Target> target;
  if (opt.cluster)
    target = clusterTarget(*opt.cluster, opt.profile);
  else
    target = localTarget({opt.profile, opt.outDir / "plane", opt.binDir, "run-" + opt.runId, opt.keepPlane,
                          opt.progress, opt.placement});
  return executeRun(sc, opt, *target);
}

result::RunResult executeRun(scenario::Scenario& sc, const RunOptions& opt, Target& target) {
  return RunSession(sc, opt, target).run();
}

}  // namespace cpscale::run
