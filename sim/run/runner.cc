#include "sim/run/runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "reports/run_outputs.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/load/worker_pool.h"
#include "sim/metrics/axis_pressure.h"
#include "sim/metrics/bytes_per_object.h"
#include "sim/metrics/client_figures.h"
#include "sim/metrics/controller_figures.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/scraper.h"
#include "sim/result/client_stats.h"
#include "sim/run/capacity_search.h"
#include "sim/run/run_progress.h"
#include "sim/run/target.h"
#include "sim/run/target_check.h"
#include "sim/run/workload_figures.h"
#include "workloads/cleanup.h"
#include "workloads/phases.h"

namespace cpscale::cli {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {


// The run's scrapes as its supervisor sees them: a round at each phase boundary, the
// controllers' settling, and the history read while the run goes on.
class RunScrapes {
 public:
  virtual ~RunScrapes() = default;
  // Settling: from now on, counts the controller-manager's scrapes in a row whose
  // workqueues were all empty; settled once two were (five seconds or more of an idle
  // controller at the default interval), or at once when no controller-manager is scraped.
  virtual void startSettling() = 0;
  virtual bool controllersSettled() = 0;
  // A phase boundary: a round now, so counters have a value at the boundary itself,
  // and the schedule restarts from there.
  virtual void scrapeAtBoundary() = 0;
  // The time of the `n`th boundary round once it was answered (bounded wait), or none.
  virtual std::optional<engine::TimePoint> waitBoundary(std::size_t n, engine::Duration limit = 20s) = 0;
  // The scrapes between two times, while the run goes on.
  virtual std::vector<metrics::TargetScrapes> slice(engine::TimePoint from, engine::TimePoint to) = 0;
  // The run is over: no more rounds.
  virtual void finish() = 0;
  virtual const std::vector<metrics::TargetScrapes>& targets() const = 0;
  // When each boundary round was started, in order. Read after finish().
  virtual const std::vector<engine::TimePoint>& boundaries() const = 0;
};

// The scraper runs on its own paced engine and thread, so a slow /metrics never delays
// an actor, and the actors' engines never delay a scrape.
class ScrapeLoop final : public RunScrapes {
 public:
  ScrapeLoop(std::vector<metrics::ScrapeTarget> targets, engine::Duration interval,
             std::chrono::steady_clock::time_point origin)
      : clock_(origin), sim_(clock_), scraper_(sim_, std::move(targets), metrics::ScraperOptions{interval, {}, {}}) {
    for (const auto& t : scraper_.targets())
      if (t.info.role == metrics::TargetRole::kControllerManager) hasControllerManager_ = true;
    sim_.setIdleHook([this](engine::TimePoint deadline) {
      scraper_.pollTransports();
      auto wait = std::min<engine::Duration>(deadline - clock_.now(), 20ms);
      if (wait.count() > 0) std::this_thread::sleep_for(wait);
    });
  }
  ~ScrapeLoop() { finish(); }

  void start() {
    thread_ = std::thread([this] {
      scraper_.start();
      // The first round is the baseline every counter's increase starts from: it must
      // be in before the load starts, or the first requests are never counted.
      runWhile(10s, [this] {
        for (const auto& t : scraper_.targets())
          if (t.status.attempts == 0) return true;
        return scraper_.inFlight() > 0;
      });
      {
        std::lock_guard lock(mu_);
        firstRound_ = true;
      }
      cv_.notify_all();
      while (!stopping_.load()) {
        std::unique_lock data(dataMu_);
        if (restart_.exchange(false)) {
          // A round still in flight would make the boundary round an overrun: let it
          // finish first (bounded), so every target has a scrape at the boundary.
          runWhile(5s, [this] { return scraper_.inFlight() > 0; });
          boundaries_.push_back(sim_.now());  // the round below is recorded at or just after this
          scraper_.stop();
          scraper_.start();
          boundaryPending_ = true;
        }
        sim_.runUntil(clock_.now() + 50ms);
        watchControllerQueues();
        if (boundaryPending_ && scraper_.inFlight() == 0) {
          boundaryPending_ = false;
          boundariesAnswered_ = boundaries_.size();
        }
      }
    });
  }
  // Settling (any thread).
  void startSettling() override {
    idleScrapes_ = 0;
    settling_ = true;
  }
  bool controllersSettled() override { return !hasControllerManager_ || idleScrapes_.load() >= 2; }
  // On the scrape thread: after each new scrape of a controller-manager, whether its
  // workqueues (sum of workqueue_depth) were empty.
  void watchControllerQueues() {
    for (std::size_t i = 0; i < scraper_.targets().size(); ++i) {
      const auto& t = scraper_.targets()[i];
      if (t.info.role != metrics::TargetRole::kControllerManager) continue;
      const std::size_t n = t.history.scrapes();
      if (n == seenControllerScrapes_) continue;
      seenControllerScrapes_ = n;
      double depth = 0;
      for (auto id : t.history.seriesNamed("workqueue_depth")) depth += t.history.value(n - 1, id).value_or(0);
      if (!settling_.load()) continue;
      if (depth == 0)
        ++idleScrapes_;
      else
        idleScrapes_ = 0;
    }
  }
  // Runs the scrape engine while `busy` holds, for at most `limit` or until stopped.
  template <class Pred>
  void runWhile(engine::Duration limit, Pred busy) {
    const auto deadline = clock_.now() + limit;
    while (busy() && clock_.now() < deadline && !stopping_.load()) sim_.runUntil(clock_.now() + 5ms);
  }
  // Blocks until the first round was answered (or given up on).
  void waitFirstRound() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return firstRound_; });
  }
  // A phase boundary (any thread).
  void scrapeAtBoundary() override { restart_ = true; }
  // Waits (bounded) until the `n`th boundary round was answered; its time, or none.
  std::optional<engine::TimePoint> waitBoundary(std::size_t n, engine::Duration limit) override {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline && !stopping_.load()) {
      {
        std::lock_guard data(dataMu_);
        if (boundariesAnswered_ >= n) return boundaries_[n - 1];
      }
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard data(dataMu_);
    return boundaries_.size() >= n ? std::optional(boundaries_[n - 1]) : std::nullopt;
  }
  // The scrapes between two times, while the loop runs (any thread).
  std::vector<metrics::TargetScrapes> slice(engine::TimePoint from, engine::TimePoint to) override {
    std::lock_guard data(dataMu_);
    return metrics::sliceTargets(scraper_.targets(), from, to);
  }
  // One last round (the end of the measured window), waits for it, then stops.
  void finish() override {
    if (!thread_.joinable()) return;
    stopping_ = true;
    sim_.stop();
    thread_.join();
    scraper_.stop();
    scraper_.scrapeNow();
    auto deadline = clock_.now() + 15s;
    while (scraper_.inFlight() > 0 && clock_.now() < deadline) {
      scraper_.pollTransports();
      std::this_thread::sleep_for(10ms);
    }
  }
  const std::vector<metrics::TargetScrapes>& targets() const override { return scraper_.targets(); }
  const std::vector<engine::TimePoint>& boundaries() const override { return boundaries_; }

 private:
  engine::WallClock clock_;
  engine::PacedSimulator sim_;
  metrics::Scraper scraper_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> restart_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool firstRound_ = false;
  std::vector<engine::TimePoint> boundaries_;
  // Held by the scrape thread while it runs its engine; other threads take it to read
  // the scrapes mid-run.
  std::mutex dataMu_;
  bool boundaryPending_ = false;
  std::size_t boundariesAnswered_ = 0;
  std::atomic<bool> settling_{false};
  std::atomic<int> idleScrapes_{0};
  std::atomic<bool> hasControllerManager_{false};
  std::size_t seenControllerScrapes_ = 0;
};

// A virtual run's scrapes: the scraper runs on the run's one engine, beside the
// workloads and the target, in virtual time. Everything is on that engine's thread, so
// nothing waits: a boundary round is started at once and answered a few virtual
// milliseconds later, and the run's end waits for it (see the drain in executeRun).
class VirtualScrapes final : public RunScrapes {
 public:
  VirtualScrapes(engine::Simulator& sim, std::vector<metrics::ScrapeTarget> targets, engine::Duration interval)
      : sim_(sim), scraper_(sim, std::move(targets), metrics::ScraperOptions{interval, {}, {}}) {}
  void start() { scraper_.start(); }
  // Whether every target has been asked and no scrape is in flight.
  bool idle() const {
    for (const auto& t : scraper_.targets())
      if (t.status.attempts == 0) return false;
    return scraper_.inFlight() == 0;
  }
  void startSettling() override { settling_ = true; }
  // A modelled plane has no controller-manager to wait for.
  bool controllersSettled() override {
    for (const auto& t : scraper_.targets())
      if (t.info.role == metrics::TargetRole::kControllerManager) return false;
    return settling_;
  }
  void scrapeAtBoundary() override {
    boundaries_.push_back(sim_.now());
    scraper_.stop();
    scraper_.start();
  }
  std::optional<engine::TimePoint> waitBoundary(std::size_t n, engine::Duration) override {
    return n >= 1 && n <= boundaries_.size() ? std::optional(boundaries_[n - 1]) : std::nullopt;
  }
  std::vector<metrics::TargetScrapes> slice(engine::TimePoint from, engine::TimePoint to) override {
    return metrics::sliceTargets(scraper_.targets(), from, to);
  }
  void finish() override { scraper_.stop(); }
  const std::vector<metrics::TargetScrapes>& targets() const override { return scraper_.targets(); }
  const std::vector<engine::TimePoint>& boundaries() const override { return boundaries_; }

 private:
  engine::Simulator& sim_;
  metrics::Scraper scraper_;
  std::vector<engine::TimePoint> boundaries_;
  bool settling_ = false;
};

// Periodic progress: one rewritten line on a terminal, plain log lines otherwise.
class ProgressReporter {
 public:
  ProgressReporter(RunCounters& counters, engine::Duration total, bool enabled)
      : counters_(counters), total_(total), enabled_(enabled), tty_(::isatty(STDERR_FILENO)) {}
  ~ProgressReporter() { stop(); }
  void start() {
    if (!enabled_) return;
    thread_ = std::thread([this] { loop(); });
  }
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (tty_) std::cerr << "\n";
  }

 private:
  void loop() {
    auto start = std::chrono::steady_clock::now();
    std::uint64_t lastWrites = 0;
    auto last = start;
    auto period = tty_ ? 1s : 10s;
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return done_; })) {
      auto now = std::chrono::steady_clock::now();
      std::uint64_t writes = counters_.writes.load();
      double secs = std::chrono::duration<double>(now - last).count();
      double qps = secs > 0 ? static_cast<double>(writes - lastWrites) / secs : 0;
      lastWrites = writes;
      last = now;
      double lagMs = static_cast<double>(counters_.maxLagNs.exchange(0)) / 1e6;
      auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - start);
      char line[256];
      const bool steady = counters_.phase.load() == 1;
      if (steady && !steadySince_) steadySince_ = now;
      if (steady) elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - *steadySince_);
      std::snprintf(line, sizeof line, "[%s %s/%s] writes %.0f/s  requests %llu  errors %llu  lag max %.1f ms",
                    steady ? "steady" : "setup", formatDuration(elapsed).c_str(),
                    steady ? formatDuration(std::chrono::duration_cast<std::chrono::seconds>(total_)).c_str() : "?",
                    qps,
                    static_cast<unsigned long long>(counters_.completed.load()),
                    static_cast<unsigned long long>(counters_.errors.load()), lagMs);
      if (tty_)
        std::cerr << "\r\033[K" << line << std::flush;
      else
        std::cerr << "cpscale: " << line << "\n";
    }
  }

  RunCounters& counters_;
  std::optional<std::chrono::steady_clock::time_point> steadySince_;
  engine::Duration total_;
  bool enabled_;
  bool tty_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// What the run's supervisor saw: when setup was over, when the steady window started
// and when the load stopped, and why it stopped early if it did.
// How long the steady window waits for the controller-manager to catch up with what
// setup created (its queues still hold the registrations' node updates, the
// namespaces' service accounts, ...) before it starts anyway, saying so.
constexpr engine::Duration kSettleLimit = std::chrono::minutes(2);


struct RunTimeline {
  std::optional<engine::TimePoint> workloadsReady;  // every workload's setup was over
  std::optional<engine::TimePoint> ready;        // ... and the controllers had settled (or kSettleLimit passed)
  bool settledInTime = true;
  std::optional<engine::TimePoint> steadyStart;  // ready + warmup
  std::optional<engine::TimePoint> end;          // the load stopped
  std::string cut;                               // set when the run was cut short
  std::vector<reports::Incident> incidents;
};

double secondsAt(engine::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// `steady`: the run has one steady window (a capacity search has its steps instead).
void recordPhases(reports::RunResult& r, const RunTimeline& tl, const std::vector<workloads::PhaseLog::Span>& spans,
                  engine::Duration duration, bool steady, engine::Duration settleLimit) {
  const double end = secondsAt(*tl.end);
  reports::Phase setup{"setup", 0, tl.steadyStart ? secondsAt(*tl.steadyStart) : end, tl.ready.has_value(), ""};
  if (!tl.ready) setup.detail = tl.cut;
  else if (tl.steadyStart && *tl.steadyStart > *tl.ready)
    setup.detail = "includes " + formatDuration(std::chrono::duration_cast<std::chrono::seconds>(*tl.steadyStart - *tl.ready)) +
                   " of warmup";
  r.phases.push_back(setup);
  if (tl.workloadsReady && tl.ready && *tl.ready > *tl.workloadsReady) {
    // Setup's tail: the controllers working off what setup created.
    reports::Phase settle{"settle/controllers", secondsAt(*tl.workloadsReady), secondsAt(*tl.ready),
                          tl.settledInTime, ""};
    if (!tl.settledInTime)
      settle.detail = "the controller-manager's workqueues were still not empty after " +
                      formatDuration(settleLimit) + "; the steady window started anyway";
    r.phases.push_back(std::move(settle));
  }
  for (const auto& sp : spans) {
    reports::Phase p{sp.name, secondsAt(sp.start), sp.ended() ? secondsAt(sp.end) : end, sp.ended(), ""};
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
                                           const engine::RequestStats& stats, engine::Duration length,
                                           const engine::DriverOptions& driver) {
  std::vector<metrics::Figure> out;
  auto add = [&](std::vector<metrics::Figure> fs) {
    for (auto& f : fs) {
      f.window = metrics::Window::kSteady;
      out.push_back(std::move(f));
    }
  };
  add(metrics::writeFigures(slice));
  add(metrics::apiserverRequestFigures(slice));
  add(metrics::leaseShareFigures(slice));
  add(metrics::apiserverMemoryFigures(slice));
  add(metrics::cpuFigures(slice));
  add(metrics::etcdFigures(slice));
  add(metrics::controllerFigures(slice));
  add(metrics::serverLatencyFigures(slice));
  add(metrics::clientLatencyFigures(stats));
  add(metrics::clientCountFigures(stats, length));
  add(metrics::generatorHealthFigures(stats, metrics::GeneratorHealthOptions{driver.lagQuantile, driver.lagThreshold}));
  // Last: read from the figures above, in the units classify compares with.
  add(metrics::axisPressureFigures(out));
  return out;
}

}  // namespace

nlohmann::json cleanupJson(const workloads::CleanupResult& c) {
  return {{"deleted", c.deleted}, {"remaining", c.remaining}, {"errors", c.errors}, {"complete", c.complete()}};
}

reports::RunResult executeRun(scenario::Scenario& sc, const RunOptions& opt) {
  std::unique_ptr<Target> target;
  if (opt.cluster)
    target = clusterTarget(*opt.cluster, opt.profile);
  else
    target = localTarget(
        {opt.profile, opt.outDir / "plane", opt.binDir, "run-" + opt.runId, opt.keepPlane, opt.progress, opt.placement});
  return executeRun(sc, opt, *target);
}

reports::RunResult executeRun(scenario::Scenario& sc, const RunOptions& opt, Target& target) {
  // A virtual target runs everything on one engine: one worker.
  const bool virtualTime = target.mode() == engine::SimulatorMode::kVirtual;
  if (virtualTime) sc.workers = 1;
  reports::RunResult result;
  result.runId = opt.runId;
  result.scenario.name = sc.name;
  result.scenario.description = sc.description;
  result.scenario.sourceFile = sc.source;
  result.scenario.effectiveConfig = sc.effective;
  result.profile.name = opt.profile.name;
  result.profile.description = opt.profile.description;
  result.profile.source = opt.profile.source;
  result.environment.cpscaleVersion = CPSCALE_VERSION;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  result.environment.host = host;
  result.environment.cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (target.mode() != engine::SimulatorMode::kVirtual)
    for (const auto& [role, cpus] : opt.placement.cpus) result.environment.placement[role] = controlplane::cpuListText(cpus);
  result.environment.startedAt = utcNowRfc3339();
  result.status = reports::RunStatus::kFailed;

  // A capacity ladder: growth[k] takes the knob's workload from steps[k] to steps[k+1].
  const bool stepped = opt.capacity != nullptr && !opt.steps.empty();
  std::vector<workloads::WorkloadPtr> growth;
  std::size_t knobIndex = 0;
  if (stepped) {
    const auto& spec = *opt.capacity;
    while (knobIndex < sc.workloads.size() && sc.workloads[knobIndex]->name() != spec.workload) ++knobIndex;
    if (knobIndex == sc.workloads.size())
      throw ConfigError(spec.where, "capacity.knob", "no workload named '" + spec.workload + "'");
    if (virtualTime) throw ConfigError(spec.where, "capacity", "a capacity search in virtual time is not supported; simulate each step");
    for (std::size_t k = 1; k < opt.steps.size(); ++k) {
      // The scenario checked the field grows in place (readCapacity); growth() checks the values.
      auto g = sc.workloads[knobIndex]->growth(spec.field, opt.steps[k - 1], opt.steps[k]);
      if (!g) throw ConfigError(spec.where, "capacity.knob", "'" + spec.field + "' cannot grow in place");
      growth.push_back(std::move(g));
    }
  }

  // Synchronous setup and cleanup calls go through the target's setup transport.
  std::unique_ptr<kube::ApiClient> setupClient;
  bool created = false;  // the run may have created objects: clean up, whatever happens
  bool planeBroken = false;  // a member of the local plane exited: the plane goes, and its objects with it
  std::string downAtEnd;     // a member a fault left down (the plane goes too, with its objects)
  std::vector<metrics::ScrapeTarget> scrapeTargets;
  std::unique_ptr<ShardMeeting> meeting;  // a sharded run's
  RunCounters ownCounters;
  RunCounters& counters = opt.counters ? *opt.counters : ownCounters;
  auto finishResult = [&](int exitCode) {
    result.environment.endedAt = utcNowRfc3339();
    result.exitCode = exitCode;
    reports::writeRunOutputs(result, opt.outDir);
    return result;
  };

  const bool sharded = opt.shard.sharded();
  if (sharded) {
    if (virtualTime) throw ConfigError("command line", "--shard", "a model run is one process: it is not sharded");
    if (stepped) throw ConfigError("command line", "--shard", "a capacity search is not sharded");
    result.shard = reports::ShardInfo{opt.shard.index, opt.shard.count};
  }
  const bool leadShard = opt.shard.index == 0;

  // A scenario's faults act on the target's members: checked before anything starts.
  if (!sc.faults.empty()) {
    MemberFaults* members = target.faults();
    if (members == nullptr)
      throw ConfigError(sc.faults.front().where, sc.faults.front().path,
                        "faults act on the members of the local plane cpscale starts or of the model; a user's "
                        "cluster's are not the run's to kill");
    validateFaults(sc.faults, members->members());
  }

  try {
    // 1. The target.
    target.open(result);
    result.profile.applied = result.target.kind != "cluster";

    // 2. Preflight and preparation, synchronously, on a transport of their own.
    setupClient = std::make_unique<kube::ApiClient>(target.setupTransport(), target.setupClock());
    {
      kube::HttpRequest v;
      v.method = "GET";
      v.path = "/version";
      kube::HttpResponse resp = kube::roundTrip(target.setupTransport(), v);
      if (!resp.ok() || resp.status != 200)
        throw UnavailableError("cannot reach " + result.target.server + ": " +
                               (resp.ok() ? "HTTP " + std::to_string(resp.status) : resp.detail));
      try {
        std::string gv = nlohmann::json::parse(resp.body).value("gitVersion", "");
        if (result.target.kubernetesVersion.empty()) result.target.kubernetesVersion = gv;
        if (result.target.kind == "cluster") result.target.members.front().version = gv;
      } catch (const nlohmann::json::exception&) {
      }
    }
    target.discover(*setupClient, result);
    if (sharded) meeting = std::make_unique<ShardMeeting>(*setupClient, opt.runId, opt.shard);
    if (leadShard) {
      for (auto& w : sc.workloads) {
        if (interrupted()) throw UnavailableError("interrupted while preparing workloads");
        created = true;
        w->prepare(*setupClient, target.setupClock(), opt.runId);
      }
      for (auto& g : growth) g->prepare(*setupClient, target.setupClock(), opt.runId);
      if (meeting) meeting->announceSetup();
    } else {
      // The others' load starts once shard 0 has installed what it needs.
      meeting->awaitSetup(sc.setupTimeout, [] { return interrupted(); });
      created = true;
    }

    // 3. Scrape targets: every apiserver with the run's credentials, every etcd and
    //    controller component of a local plane or model (a user's are not reachable:
    //    their figures are unavailable).
    // A sharded run's servers are scraped once, by shard 0.
    if (leadShard) scrapeTargets = target.scrapeTargets(result);
    // 4. The load and the scrapes on one timeline, whose origin is the run's t = 0 in
    //    every series and phase. Live: paced workers with one open-loop driver each, the
    //    scraper on a thread of its own, the supervisor on another. Virtual: the
    //    target's one engine runs the workloads, the scraper and the supervisor.
    const auto origin = std::chrono::steady_clock::now();
    const std::int64_t originUnixNanos = unixNowNanos();  // the origin in Unix time
    engine::WallClock runClock(origin);
    std::shared_ptr<engine::Simulator> vsim = target.simulator();
    if (virtualTime && !vsim) throw std::logic_error("a virtual target without an engine");
    std::unique_ptr<RunScrapes> scrapesOwned;
    VirtualScrapes* vscrapes = nullptr;
    if (virtualTime) {
      auto v = std::make_unique<VirtualScrapes>(*vsim, scrapeTargets, sc.scrapeInterval);
      vscrapes = v.get();
      scrapesOwned = std::move(v);
    } else {
      scrapesOwned = std::make_unique<ScrapeLoop>(scrapeTargets, sc.scrapeInterval, origin);
    }
    RunScrapes& scrapes = *scrapesOwned;
    engine::WorkerOptions wo;
    wo.workers = sc.workers;
    wo.mode = target.mode();
    wo.seed = sc.seed;
    wo.driver = sc.driver;
    wo.drain = sc.drain;
    wo.wallOrigin = origin;
    wo.simulator = vsim;
    engine::WorkerPool pool(wo, [&](engine::Worker& w) -> kube::TransportPtr {
      return std::make_unique<CountingTransport>(target.loadTransport(sc), w.simulator().clock(), counters);
    });
    const engine::Clock& clock = virtualTime ? vsim->clock() : static_cast<const engine::Clock&>(runClock);
    // Nothing counts as the measured window until every workload's setup is over.
    pool.setSteadyStart(engine::TimePoint::max());
    workloads::PhaseLog phaseLog(sc.workers * sc.workloads.size());
    counters.phase = 0;
    struct PerWorker {
      std::unique_ptr<kube::ApiClient> api;
      std::vector<std::unique_ptr<workloads::WorkloadInstance>> instances;
      std::vector<std::unique_ptr<workloads::WorkloadInstance>> grown;  // capacity steps' growth
      std::function<void()> pollGrowth;
    };
    std::vector<PerWorker> perWorker(sc.workers);

    // The scenario's faults, on the run's clock from the steady window's start: live on
    // threads of their own, in virtual time as events on the run's engine.
    std::unique_ptr<FaultInjector> injector;
    if (!sc.faults.empty())
      injector = virtualTime ? std::make_unique<FaultInjector>(*target.faults(), sc.faults, *vsim)
                             : std::make_unique<FaultInjector>(*target.faults(), sc.faults, runClock);
    ProgressReporter progress(counters, sc.duration, opt.progress && !virtualTime);
    RunTimeline tl;
    std::atomic<bool> runDone{false};
    // The capacity ladder's progress (stepped runs): the step being set up or held, how
    // many growth workloads the workers are to have started, and the judged steps.
    std::size_t step = 0;
    std::atomic<std::size_t> grownTo{0};
    std::vector<reports::CapacityStep> judged;
    std::vector<reports::Phase> stepPhases;
    // The stage being set up: the scenario's (step 0) or a growth's, from growStart.
    std::optional<engine::TimePoint> stageWorkloadsReady, stageReady, stepStart;
    bool stageSettled = true;
    std::optional<engine::TimePoint> sharedStart;  // a sharded run's window start
    engine::TimePoint growStart{};
    std::size_t boundariesAsked = 0, stepStartBoundary = 0;
    // A capacity step waits for the controllers only so long: a controller-manager that
    // cannot keep up with the growth is part of what the step measures.
    const engine::Duration settleLimit = stepped ? opt.capacity->settle : kSettleLimit;
    const std::string controllersBehind = "the controller-manager's workqueues were not empty after " +
                                          formatDuration(settleLimit) + "; the window started anyway";
    // Ends the current step (on the supervisor's thread): a boundary round, the answers
    // to the window's requests (bounded by `drain`), then the window's figures and the
    // verdict. True when the ladder goes on.
    auto endStep = [&](engine::TimePoint now) {
      const std::size_t window = 2 * step;
      pool.beginWindow(window + 1, now);
      scrapes.scrapeAtBoundary();
      ++boundariesAsked;
      auto from = scrapes.waitBoundary(stepStartBoundary);
      auto to = scrapes.waitBoundary(boundariesAsked);
      for (auto until = clock.now() + sc.drain; clock.now() < until && !interrupted();) {
        engine::RequestStats w = pool.windowStats(window);
        if (w.completed() >= w.sent()) break;
        std::this_thread::sleep_for(20ms);
      }
      auto slice = scrapes.slice(from.value_or(*stepStart), to.value_or(now) + 1ms);
      auto figures = windowFigures(slice, pool.windowStats(window), now - *stepStart, sc.driver);
      const double value = opt.steps[step];
      judged.push_back(judgeStep(value, secondsAt(*stepStart), secondsAt(now), std::move(figures), opt.capacity->gates));
      const auto& j = judged.back();
      stepPhases.push_back({"step/" + knobText(value), secondsAt(*stepStart), secondsAt(now), true,
                            j.held ? "held" : "did not hold: " + j.brokeBy});
      if (opt.progress)
        std::cerr << "cpscale capacity: " << opt.capacity->knob << "=" << knobText(value) << " "
                  << (j.held ? "held" : "did not hold: " + j.brokeBy) << "\n";
      if (!j.held || step + 1 == opt.steps.size()) return false;
      // Grow in place: every worker starts the next growth workload's instance; the
      // next window waits for their setup, as the first waited for the scenario's.
      phaseLog.expect(sc.workers);
      ++step;
      growStart = now;
      stageWorkloadsReady.reset();
      stageReady.reset();
      stepStart.reset();
      counters.phase = 0;
      grownTo = step;
      return true;
    };
    // Ends the load at `now`. Live: the pool stops (and collects what is in flight).
    // Virtual: the window is closed at `now`, and the engine runs on until its requests
    // and the boundary round are answered (at most `drain`), as the live pool's drain
    // would collect them.
    engine::TimePoint drainUntil{};
    std::function<void()> drainCheck = [&] {
      engine::RequestStats w = pool.windowStats(0);
      if ((w.completed() >= w.sent() && vscrapes->idle()) || vsim->now() >= drainUntil) return pool.stop();
      vsim->scheduleAfter(10ms, drainCheck);
    };
    auto stopLoad = [&](engine::TimePoint now) {
      if (!virtualTime) return pool.stop();
      pool.beginWindow(1, now);
      drainUntil = now + sc.drain;
      drainCheck();
    };
    // The run's supervisor: starts the steady window once setup is over (and warmup has
    // passed), ends it after `duration`, and cuts the run short on Ctrl-C, a member of
    // the target exiting, or setup that never finishes. One pass per call; false once
    // the load is over.
    // Ends the load now; `why` is empty when the window simply ran its course.
    auto cut = [&](engine::TimePoint now, std::string why) {
      tl.end = now;
      tl.cut = std::move(why);
      scrapes.scrapeAtBoundary();
      stopLoad(now);
      return false;
    };
    auto tick = [&](const engine::TimePoint now) -> bool {
        if (interrupted()) return cut(now, "interrupted");
        if (auto how = target.crashed()) {
          std::string member = how->substr(0, how->find(' '));
          // Rehearsing faults, a member that exits in the steady window (a controller
          // that lost its leader Lease while its apiserver was down) is started again,
          // as its kubelet would, and the run goes on.
          if (injector && tl.steadyStart) {
            if (opt.progress) std::cerr << "\ncpscale run: " << member << " exited; starting it again\n";
            injector->recover(member, *how);
            return true;
          }
          tl.incidents.push_back({"member-exited", member, secondsAt(now), *how, std::nullopt});
          return cut(now, member + " exited during the run");
        }
        // The current stage (the scenario's setup, or a capacity step's growth): its
        // workloads' setup, the controllers settling (at most settleLimit), warmup,
        // then its window.
        if (!stageWorkloadsReady && phaseLog.setupComplete()) {
          stageWorkloadsReady = now;
          scrapes.startSettling();
        }
        if (stageWorkloadsReady && !stageReady &&
            (scrapes.controllersSettled() || now >= *stageWorkloadsReady + settleLimit)) {
          stageReady = now;
          stageSettled = scrapes.controllersSettled();
          if (step == 0) {
            tl.workloadsReady = stageWorkloadsReady;
            tl.ready = now;
            tl.settledInTime = stageSettled;
          }
        }
        // A sharded run's window starts at the instant shard 0 publishes once every
        // shard is ready; one that never comes ends the run like a setup that never
        // finishes.
        if (meeting && stageReady && !stepStart && now >= *stageReady + sc.warmup) {
          const auto at = meeting->steadyAt(originUnixNanos + now.time_since_epoch().count());
          if (at) {
            sharedStart = engine::TimePoint{engine::Duration{*at - originUnixNanos}};
          } else if (now >= *stageReady + sc.warmup + sc.setupTimeout) {
            std::string shards;
            for (std::size_t i : meeting->notReady()) shards += (shards.empty() ? "" : ", ") + std::to_string(i);
            return cut(now, "shard" + std::string(meeting->notReady().size() == 1 ? " " : "s ") + shards +
                                " did not become ready within " + formatDuration(sc.setupTimeout));
          }
        }
        if (stageReady && !stepStart && now >= *stageReady + sc.warmup &&
            (step > 0 || !opt.earliestSteadyStart || now >= *opt.earliestSteadyStart) &&
            (!meeting || (sharedStart && now >= *sharedStart))) {
          stepStart = now;
          counters.phase = 1;
          scrapes.scrapeAtBoundary();
          stepStartBoundary = ++boundariesAsked;
          if (step == 0) {
            tl.steadyStart = now;
            pool.setSteadyStart(now);
            if (injector) injector->start(now);
          } else {
            stepPhases.push_back({"grow/" + knobText(opt.steps[step]), secondsAt(growStart), secondsAt(now), true,
                                  stageSettled ? "" : controllersBehind});
          }
          // Numbered windows: a capacity step's, or a virtual run's (whose end is
          // marked too, since its engine runs on while the last answers arrive).
          if (stepped || virtualTime) pool.beginWindow(2 * step, now);
        }
        if (!stageWorkloadsReady && now >= growStart + sc.setupTimeout) {
          if (step == 0)
            return cut(now, "setup did not finish within " + formatDuration(sc.setupTimeout) + " (" +
                                std::to_string(phaseLog.setupPending()) + " of " +
                                std::to_string(sc.workers * sc.workloads.size()) +
                                " workload instances still setting up; see the workloads' summaries)");
          stepPhases.push_back({"grow/" + knobText(opt.steps[step]), secondsAt(growStart), secondsAt(now), false,
                                "setup did not finish"});
          return cut(now, "growing " + opt.capacity->knob + " to " + knobText(opt.steps[step]) +
                              " did not finish its setup within " + formatDuration(sc.setupTimeout));
        }
        if (stepStart && now >= *stepStart + (stepped ? opt.capacity->hold : sc.duration)) {
          if (!stepped) return cut(now, "");
          if (!endStep(now)) {
            tl.end = now;
            pool.stop();
            return false;
          }
        }
        return true;
    };
    std::thread monitor;
    std::function<void()> supervise;
    if (virtualTime) {
      // The first round is the baseline every counter's increase starts from: it is
      // answered before the load starts.
      vscrapes->start();
      for (const auto limit = vsim->now() + 10s; !vscrapes->idle() && vsim->now() < limit;)
        vsim->runUntil(vsim->now() + 1ms);
      supervise = [&] {
        if (tick(vsim->now())) vsim->scheduleAfter(10ms, supervise);
      };
    } else {
      monitor = std::thread([&] {
        while (!runDone.load() && tick(runClock.now())) std::this_thread::sleep_for(10ms);
      });
      auto& loop = static_cast<ScrapeLoop&>(scrapes);
      loop.start();
      loop.waitFirstRound();
    }
    progress.start();
    try {
      pool.run(
          [&](engine::Worker& w) {
            PerWorker& pw = perWorker[w.index()];
            kube::ApiClientOptions ao;
            ao.seed = sc.seed + opt.shard.index * sc.workers + w.index();
            pw.api = std::make_unique<kube::ApiClient>(*w.driver(), w.simulator().clock(), w.simulator(), ao);
            auto context = [&] {
              workloads::WorkloadContext ctx{w.simulator(), *pw.api, opt.runId, sc.seed, &w};
              ctx.phases = &phaseLog;
              ctx.shard = opt.shard.index;
              ctx.shards = opt.shard.count;
              // Timestamps written into objects (renewTime) are Unix time: a live run's
              // timeline starts at its origin; a virtual run's engine is at a fixed
              // instant now, so one seed gives the same objects.
              ctx.epochUnixNanos =
                  virtualTime ? kVirtualRunStartUnixNanos - w.simulator().clock().now().time_since_epoch().count()
                              : originUnixNanos;
              return ctx;
            };
            for (auto& wl : sc.workloads) {
              auto ctx = context();
              pw.instances.push_back(wl->start(ctx));
            }
            if (stepped) {
              // Each growth the supervisor asks for, started on this worker's own thread.
              pw.pollGrowth = [&, context] {
                while (pw.grown.size() < grownTo.load()) {
                  auto ctx = context();
                  pw.grown.push_back(growth[pw.grown.size()]->start(ctx));
                }
                w.simulator().scheduleAfter(100ms, pw.pollGrowth);
              };
              w.simulator().scheduleAfter(100ms, pw.pollGrowth);
            }
            if (virtualTime) supervise();
          },
          stepped ? engine::TimePoint{(sc.setupTimeout + opt.capacity->settle + opt.capacity->hold) *
                                          static_cast<long>(opt.steps.size()) + sc.warmup + 1min}
                  : engine::TimePoint{sc.setupTimeout + sc.warmup + sc.duration + 1min});
    } catch (...) {
      runDone = true;
      if (monitor.joinable()) monitor.join();
      if (injector) injector->finish();
      throw;
    }
    runDone = true;
    if (monitor.joinable()) monitor.join();
    if (!tl.end) tl.end = clock.now();
    // What has not struck by now does not; a frozen member is resumed.
    if (injector) injector->finish();
    progress.stop();
    scrapes.finish();

    // 5. Phases, then figures per phase: the steady window is the headline; setup is
    //    recorded beside it; scrape health covers the whole run.
    recordPhases(result, tl, phaseLog.spans(), sc.duration, !stepped, settleLimit);
    result.phases.insert(result.phases.end(), stepPhases.begin(), stepPhases.end());
    result.incidents = tl.incidents;
    planeBroken = target.ownsMembers() && !tl.incidents.empty();
    if (injector) {
      for (auto& i : injector->incidents(*tl.end)) result.incidents.push_back(std::move(i));
      std::stable_sort(result.incidents.begin(), result.incidents.end(),
                       [](const reports::Incident& a, const reports::Incident& b) { return a.atSeconds < b.atSeconds; });
      // A member still down: the run's objects go with the plane, not through its API.
      downAtEnd = injector->downAtEnd();
    }
    result.measuredSeconds = tl.steadyStart ? secondsAt(*tl.end) - secondsAt(*tl.steadyStart) : 0;
    for (std::size_t i = 0; i < sc.workloads.size(); ++i) {
      nlohmann::json merged = nlohmann::json::object();
      for (auto& pw : perWorker) {
        if (i >= pw.instances.size()) continue;
        pw.instances[i]->stop();
        mergeSummary(merged, pw.instances[i]->summary());
        if (i == knobIndex)
          for (auto& g : pw.grown) {
            g->stop();
            mergeSummary(merged, g->summary());
          }
      }
      result.workloads.push_back({sc.workloads[i]->kind(), sc.workloads[i]->name(), merged});
    }
    std::vector<metrics::Figure> figures = workloadFigures(result.workloads);
    const auto& all = scrapes.targets();
    // Each phase's scrapes run from the round taken at its start boundary to the one
    // taken at its end boundary (a boundary round is recorded within microseconds of
    // the boundary time the scrape loop noted). Without a boundary round (the loop
    // never saw it), the supervisor's time with a scrape loop's pass of slack.
    const auto& bounds = scrapes.boundaries();
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
    // A virtual run's window is closed at its end (its engine ran on for the answers).
    engine::RequestStats stats = virtualTime ? pool.windowStats(0) : pool.requestStats();
    engine::RequestStats setupStats = pool.setupRequestStats();
    if (stepped) {
      // The headline is the last step that held; every step's figures are in
      // result.capacity.
      const reports::CapacityStep* last = nullptr;
      for (const auto& j : judged)
        if (j.held) last = &j;
      if (last) {
        figures.insert(figures.end(), last->figures.begin(), last->figures.end());
        result.measuredSeconds = last->endSeconds - last->startSeconds;
      } else {
        std::string why = judged.empty() ? "no step of the capacity search was held to its end: " + tl.cut
                                         : "no step of the capacity search held: " + judged.front().brokeBy;
        for (const char* n : {"write_qps", "lease_write_share"})
          figures.push_back(metrics::Figure::unavailable(n, {}, n == std::string_view("write_qps") ? "1/s" : "ratio",
                                                         metrics::Source::kApiserver, why));
        result.measuredSeconds = 0;
      }
      reports::CapacitySearch search;
      search.axis = opt.capacity->axis;
      search.knob = opt.capacity->knob;
      search.unit = opt.capacity->unit;
      search.profile = opt.profile.name;
      search.scenario = sc.name;
      search.steps = judged;
      result.capacity = std::move(search);
    } else if (tl.steadyStart) {
      engine::TimePoint from = bounds.empty() ? *tl.steadyStart : bounds[0];
      auto steady = metrics::sliceTargets(all, from, boundary(1, *tl.end));
      auto fs = windowFigures(steady, stats, *tl.end - *tl.steadyStart, sc.driver);
      figures.insert(figures.end(), fs.begin(), fs.end());
      // A shard keeps its window's request statistics whole, for `cpscale merge`.
      if (sharded) result.clientStats = reports::requestStatsJson(stats);
    } else {
      std::string why = "the steady window never started: " + tl.cut;
      for (const char* n : {"write_qps", "lease_write_share"})
        figures.push_back(metrics::Figure::unavailable(n, {}, n == std::string_view("write_qps") ? "1/s" : "ratio",
                                                       metrics::Source::kApiserver, why));
    }
    add(metrics::writeFigures(setupSlice), metrics::Window::kSetup);
    add(metrics::leaseShareFigures(setupSlice), metrics::Window::kSetup);
    {
      // bytes_per_object over the population ramp, and per kind over each kind's ramp
      // (the workers' phases are on the scrapes' timeline: one origin).
      metrics::BytesPerObjectOptions bpo;
      std::vector<metrics::KindRamp> ramps;
      for (const auto& span : phaseLog.spans()) {
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
    if (injector) add(injector->figures(), metrics::Window::kRun);

    add(metrics::clientCountFigures(setupStats, setupEnd - engine::TimePoint{}), metrics::Window::kSetup);
    {
      // Watch streams are not open-loop requests (no latency, no in-flight slot): their
      // own counts over the whole run.
      engine::StreamStats ss = pool.streamStats();
      const std::pair<const char*, double> streams[] = {{"client_watch_streams_opened", double(ss.opened)},
                                                        {"client_watch_streams_failed", double(ss.failed)},
                                                        {"client_watch_streams_peak_open", double(ss.peakOpen)}};
      for (const auto& [name, v] : streams)
        add({metrics::Figure::measured(name, {}, v, "count", metrics::Source::kClient)}, metrics::Window::kRun);
    }
    // A model's figures all come from the model, whichever member's /metrics served them.
    if (auto source = target.figureSource())
      for (auto& f : figures) f.source = *source;
    result.figures = std::move(figures);
    // A shard above 0 judges only the gates on its own (client-side) figures: the
    // servers' figures, and their gates, are shard 0's.
    auto judgedHere = [&](const scenario::Gate& g) {
      return leadShard || std::any_of(result.figures.begin(), result.figures.end(), [&](const metrics::Figure& f) {
               return f.name == g.figure && f.source == metrics::Source::kClient;
             });
    };
    if (!stepped)
      for (const auto& g : sc.gates)
        if (judgedHere(g)) result.gates.push_back(scenario::evaluateGate(g, result.figures));

    perWorker.clear();  // before the pool's drivers go away
    if (interrupted()) {
      result.status = reports::RunStatus::kInterrupted;
      result.statusDetail = "interrupted after " + formatDuration(std::chrono::duration_cast<std::chrono::seconds>(
                                                       *tl.end - engine::TimePoint{}));
    } else if (!tl.cut.empty()) {
      // A member that died or a setup that never finished: what was measured is
      // written, but the run did not complete.
      result.status = reports::RunStatus::kFailed;
      result.statusDetail = tl.cut;
      std::cerr << "cpscale run: " << tl.cut << "\n";
      for (const auto& i : result.incidents) std::cerr << "cpscale run: " << i.detail << "\n";
    } else {
      result.status = reports::RunStatus::kCompleted;
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    result.statusDetail = e.what();
    if (interrupted()) result.status = reports::RunStatus::kInterrupted;
    std::cerr << "cpscale run: " << e.what() << "\n";
  }

  // A sharded run: every shard says its load is over; shard 0 waits for them all (at
  // most 2 minutes) before it deletes the run's objects, which the others leave to it.
  if (meeting) {
    try {
      meeting->announceDone();
      if (leadShard) {
        auto left = meeting->awaitDone(std::chrono::minutes(2), [] { return interrupted(); });
        if (!left.empty())
          std::cerr << "cpscale run: " << left.size() << " shard(s) not done after 2 minutes; cleaning up anyway\n";
      }
    } catch (const std::exception& e) {
      std::cerr << "cpscale run: meeting the other shards at the end: " << e.what() << "\n";
    }
  }

  // 6. Cleanup of what the run created, on every path that may have created something.
  if (meeting && !leadShard) {
    result.workloads.push_back(
        {"cleanup", "cleanup", {{"skipped", "shard 0 deletes the run's objects once every shard is done"}}});
  } else if (planeBroken && !opt.keepPlane) {
    result.workloads.push_back(
        {"cleanup", "cleanup", {{"skipped", "a member of the local plane exited; the plane is stopped and its data deleted with it"}}});
  } else if (!downAtEnd.empty() && !opt.keepPlane) {
    result.workloads.push_back(
        {"cleanup", "cleanup", {{"skipped", downAtEnd + " was down when the run ended (a fault); the plane is stopped and its data deleted with it"}}});
  } else if (opt.cleanup && created && setupClient && target.needsCleanup()) {
    // A Ctrl-C stops the load, not the cleanup; the next one abandons the cleanup and
    // exits at once (exit 3). What was measured goes to disk first, so that exit loses
    // nothing but the cleanup's own outcome.
    try {
      reports::RunResult provisional = result;
      provisional.workloads.push_back(
          {"cleanup", "cleanup", {{"abandoned", true}, {"retry", "cpscale cleanup --run " + opt.runId}}});
      provisional.environment.endedAt = utcNowRfc3339();
      provisional.exitCode = static_cast<int>(ExitCode::kUnavailable);
      reports::writeRunOutputs(provisional, opt.outDir);
    } catch (const std::exception& e) {
      std::cerr << "cpscale run: cannot write the result before cleaning up: " << e.what() << "\n";
    }
    CleanupPhase cleaning(opt.runId);
    if (opt.progress || interrupted())
      std::cerr << "cpscale run: deleting what run " << opt.runId << " created"
                << (interrupted() ? " (Ctrl-C again to exit without cleaning up)" : "") << "\n";
    try {
      std::vector<kube::GroupVersionResource> resources;
      for (const auto& w : sc.workloads)
        for (const auto& r : w->resources()) resources.push_back(r);
      auto cleaned = workloads::cleanupRun(*setupClient, target.setupClock(), opt.runId, resources);
      if (meeting) meeting->remove();
      result.workloads.push_back({"cleanup", "cleanup", cleanupJson(cleaned)});
      if (!cleaned.complete())
        std::cerr << "cpscale run: cleanup incomplete: " << cleanupJson(cleaned).dump()
                  << " (retry with `cpscale cleanup --run " << opt.runId << "`)\n";
    } catch (const std::exception& e) {
      result.workloads.push_back({"cleanup", "cleanup", {{"error", e.what()}}});
      std::cerr << "cpscale run: cleanup failed: " << e.what() << " (retry with `cpscale cleanup --run " << opt.runId
                << "`)\n";
    }
  }
  if (result.status == reports::RunStatus::kFailed) {
    target.close();
    return finishResult(static_cast<int>(ExitCode::kUnavailable));
  }

  bool gatesPass = true;
  for (const auto& g : result.gates) gatesPass = gatesPass && g.passed;
  int code = result.status != reports::RunStatus::kCompleted ? static_cast<int>(ExitCode::kUnavailable)
             : gatesPass                  ? 0
                                          : static_cast<int>(ExitCode::kGateFailed);
  target.close();
  return finishResult(code);
}

}  // namespace cpscale::cli
