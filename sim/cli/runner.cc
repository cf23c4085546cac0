#include "sim/cli/runner.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "sim/cli/run_progress.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/local_plane.h"
#include "sim/controlplane/pki.h"
#include "sim/engine/simulator_impl.h"
#include "sim/engine/worker_pool.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/metrics/client_figures.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/scraper.h"
#include "workloads/cleanup.h"

namespace cpscale::cli {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {


std::string hostOf(const std::string& url) {
  auto scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.rfind(':') == std::string::npos ? rest.size() : rest.rfind(':'));
}

// The scraper runs on its own paced engine and thread, so a slow /metrics never delays
// an actor, and the actors' engines never delay a scrape.
class ScrapeLoop {
 public:
  ScrapeLoop(std::vector<metrics::ScrapeTarget> targets, engine::Duration interval)
      : sim_(clock_), scraper_(sim_, std::move(targets), metrics::ScraperOptions{interval, {}, {}}) {
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
      while (!stopping_.load()) sim_.runUntil(clock_.now() + 200ms);
    });
  }
  // One last round (the end of the measured window), waits for it, then stops.
  void finish() {
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
  const std::vector<metrics::TargetScrapes>& targets() const { return scraper_.targets(); }

 private:
  engine::WallClock clock_;
  engine::PacedSimulator sim_;
  metrics::Scraper scraper_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
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
      std::snprintf(line, sizeof line, "[%s/%s] writes %.0f/s  requests %llu  errors %llu  lag max %.1f ms",
                    formatDuration(elapsed).c_str(),
                    formatDuration(std::chrono::duration_cast<std::chrono::seconds>(total_)).c_str(), qps,
                    static_cast<unsigned long long>(counters_.completed.load()),
                    static_cast<unsigned long long>(counters_.errors.load()), lagMs);
      if (tty_)
        std::cerr << "\r\033[K" << line << std::flush;
      else
        std::cerr << "cpscale: " << line << "\n";
    }
  }

  RunCounters& counters_;
  engine::Duration total_;
  bool enabled_;
  bool tty_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

kube::RestConfig withServer(const kube::RestConfig& base, const std::string& server) {
  kube::RestConfig c = base;
  c.server = server;
  return c;
}

}  // namespace

nlohmann::json cleanupJson(const workloads::CleanupResult& c) {
  return {{"deleted", c.deleted}, {"remaining", c.remaining}, {"errors", c.errors}, {"complete", c.complete()}};
}

bool isLoopbackServer(const std::string& serverUrl) {
  std::string host = hostOf(serverUrl);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

reports::RunResult executeRun(scenario::Scenario& sc, const RunOptions& opt) {
  reports::RunResult result;
  result.runId = opt.runId;
  result.scenario.name = sc.name;
  result.scenario.description = sc.description;
  result.scenario.sourceFile = sc.source;
  result.scenario.effectiveConfig = sc.effective;
  result.profile.name = opt.profile.name;
  result.profile.description = opt.profile.description;
  result.profile.source = opt.profile.source;
  result.profile.applied = !opt.cluster.has_value();
  result.environment.cpscaleVersion = CPSCALE_VERSION;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  result.environment.host = host;
  result.environment.cpus = static_cast<int>(std::thread::hardware_concurrency());
  result.environment.startedAt = utcNowRfc3339();
  result.status = reports::RunStatus::kFailed;

  std::unique_ptr<controlplane::LocalPlane> plane;
  kube::RestConfig config;
  engine::WallClock wall;
  // Synchronous setup and cleanup calls go through a transport of their own.
  std::unique_ptr<kube::CurlTransport> setupTransport;
  std::unique_ptr<kube::ApiClient> setupClient;
  bool created = false;  // the run may have created objects: clean up, whatever happens
  std::vector<metrics::ScrapeTarget> scrapeTargets;
  RunCounters ownCounters;
  RunCounters& counters = opt.counters ? *opt.counters : ownCounters;
  auto finishResult = [&](int exitCode) {
    result.environment.endedAt = utcNowRfc3339();
    result.exitCode = exitCode;
    reports::writeRunOutputs(result, opt.outDir);
    return result;
  };

  try {
    // 1. The target.
    if (opt.cluster) {
      config = *opt.cluster;
      result.target.kind = "cluster";
      result.target.server = config.server;
      result.target.context = config.contextName;
      result.target.members.push_back({"kube-apiserver", "kube-apiserver", config.server, ""});
      result.profile.spec = nlohmann::json::object();
    } else {
      controlplane::PlaneOptions po;
      po.stateDir = opt.outDir / "plane";
      po.binDir = opt.binDir;
      po.profile = opt.profile;
      po.name = "run-" + opt.runId;
      po.detached = opt.keepPlane;
      if (opt.progress)
        std::cerr << "cpscale run: starting the local plane (profile " << opt.profile.name << ") in "
                  << po.stateDir.string() << "\n";
      plane = std::make_unique<controlplane::LocalPlane>(po);
      if (opt.keepPlane) plane->release();
      kube::LoadOptions lo;
      lo.explicitPath = plane->kubeconfig().string();
      config = kube::loadKubeconfig(lo);
      const auto& rec = plane->record();
      result.target.kind = "local";
      result.target.server = config.server;
      result.target.context = config.contextName;
      result.target.kubernetesVersion = rec.kubernetesVersion;
      result.target.etcdVersion = rec.etcdVersion;
      for (const auto& c : rec.components)
        result.target.members.push_back(
            {c.name, c.role, c.url, c.role == "etcd" ? rec.etcdVersion : rec.kubernetesVersion});
    }

    // 2. Preflight and preparation, synchronously, on a transport of their own.
    setupTransport = std::make_unique<kube::CurlTransport>(config);
    setupClient = std::make_unique<kube::ApiClient>(*setupTransport, wall);
    {
      kube::HttpRequest v;
      v.method = "GET";
      v.path = "/version";
      kube::HttpResponse resp = kube::roundTrip(*setupTransport, v);
      if (!resp.ok() || resp.status != 200)
        throw UnavailableError("cannot reach " + config.server + ": " +
                               (resp.ok() ? "HTTP " + std::to_string(resp.status) : resp.detail));
      try {
        std::string gv = nlohmann::json::parse(resp.body).value("gitVersion", "");
        if (result.target.kubernetesVersion.empty()) result.target.kubernetesVersion = gv;
        if (opt.cluster) result.target.members.front().version = gv;
      } catch (const nlohmann::json::exception&) {
      }
    }
    if (opt.cluster) {
      // The cluster's real topology: the apiserver endpoints behind the `kubernetes`
      // Service. They are recorded; load and scrapes go only to the server named.
      kube::ApiResult ep =
          setupClient->get(kube::ResourceRef({"", "v1", "endpoints", true}).in("default").named("kubernetes"));
      if (ep.ok())
        for (const auto& subset : ep.body.value("subsets", nlohmann::json::array()))
          for (const auto& addr : subset.value("addresses", nlohmann::json::array()))
            for (const auto& port : subset.value("ports", nlohmann::json::array())) {
              std::string hostPort = addr.value("ip", "?") + ":" + std::to_string(port.value("port", 0));
              result.target.members.push_back(
                  {"endpoint " + hostPort, "kube-apiserver-endpoint", "https://" + hostPort, ""});
            }
    }
    for (auto& w : sc.workloads) {
      if (interrupted()) throw UnavailableError("interrupted while preparing workloads");
      created = true;
      w->prepare(*setupClient, wall, opt.runId);
    }

    // 3. Scrape targets: every apiserver with the run's credentials, every etcd of the
    //    local plane (a user's etcd is not reachable: its figures are unavailable).
    for (const auto& m : result.target.members) {
      metrics::ScrapeTarget t;
      t.info.name = m.name;
      if (m.role == "etcd") {
        t.info.role = metrics::TargetRole::kEtcd;
        t.info.etcdCluster = m.name;
        for (const auto& e : opt.profile.etcds)
          if ("etcd-" + e.name == m.name)
            for (const auto& r : e.resources) t.info.etcdResources.push_back(r.front() == '/' ? r.substr(1) : r);
        kube::RestConfig plain;
        plain.server = m.url;
        t.transport = std::make_shared<kube::CurlTransport>(plain);
      } else if (m.role == "kube-apiserver") {
        t.info.role = metrics::TargetRole::kApiserver;
        t.transport = std::make_shared<kube::CurlTransport>(withServer(config, m.url));
      } else {
        continue;  // recorded only
      }
      scrapeTargets.push_back(std::move(t));
    }
    ScrapeLoop scrapes(scrapeTargets, sc.scrapeInterval);

    // 4. The load: paced workers, one open-loop driver each.
    engine::WorkerOptions wo;
    wo.workers = sc.workers;
    wo.mode = engine::SimulatorMode::kPaced;
    wo.seed = sc.seed;
    wo.driver = sc.driver;
    wo.drain = sc.drain;
    kube::CurlTransportOptions cto;
    cto.maxHostConnections = static_cast<long>(sc.driver.connections);
    cto.maxConcurrentStreams = static_cast<long>(sc.driver.maxInFlightPerConnection);
    engine::WorkerPool pool(wo, [&](engine::Worker& w) -> kube::TransportPtr {
      // Every apiserver replica of the target, round-robin as a load balancer would.
      kube::CurlTransportOptions replicas = cto;
      for (const auto& m : result.target.members)
        if (m.role == "kube-apiserver") replicas.servers.push_back(m.url);
      return std::make_unique<CountingTransport>(std::make_unique<kube::CurlTransport>(config, replicas),
                                                 w.simulator().clock(), counters);
    });
    struct PerWorker {
      std::unique_ptr<kube::ApiClient> api;
      std::vector<std::unique_ptr<workloads::WorkloadInstance>> instances;
    };
    std::vector<PerWorker> perWorker(sc.workers);

    ProgressReporter progress(counters, sc.duration, opt.progress);
    std::atomic<bool> runDone{false};
    std::thread interruptWatch([&] {
      while (!runDone.load()) {
        if (interrupted()) {
          pool.stop();
          return;
        }
        std::this_thread::sleep_for(50ms);
      }
    });
    scrapes.start();
    progress.start();
    auto loadStart = std::chrono::steady_clock::now();
    try {
      pool.run(
          [&](engine::Worker& w) {
            PerWorker& pw = perWorker[w.index()];
            kube::ApiClientOptions ao;
            ao.seed = sc.seed + w.index();
            pw.api = std::make_unique<kube::ApiClient>(*w.driver(), w.simulator().clock(), w.simulator(), ao);
            for (auto& wl : sc.workloads) {
              workloads::WorkloadContext ctx{w.simulator(), *pw.api, opt.runId, sc.seed, &w};
              // Timestamps written into objects (renewTime) are Unix time.
              ctx.epochUnixNanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count() -
                                   w.simulator().clock().now().time_since_epoch().count();
              pw.instances.push_back(wl->start(ctx));
            }
          },
          engine::TimePoint{sc.duration});
    } catch (...) {
      runDone = true;
      interruptWatch.join();
      throw;
    }
    runDone = true;
    interruptWatch.join();
    auto measured = std::chrono::steady_clock::now() - loadStart;
    progress.stop();
    scrapes.finish();
    result.measuredSeconds = std::chrono::duration<double>(measured).count();

    // 5. Figures, from the server and from the generator.
    for (std::size_t i = 0; i < sc.workloads.size(); ++i) {
      nlohmann::json merged = nlohmann::json::object();
      for (auto& pw : perWorker) {
        if (i >= pw.instances.size()) continue;
        pw.instances[i]->stop();
        nlohmann::json part = pw.instances[i]->summary();
        for (auto& [k, v] : part.items()) {
          if (v.is_number() && merged.contains(k) && merged[k].is_number())
            merged[k] = merged[k].get<double>() + v.get<double>();
          else if (!merged.contains(k))
            merged[k] = v;
        }
      }
      result.workloads.push_back({sc.workloads[i]->kind(), sc.workloads[i]->name(), merged});
    }
    engine::RequestStats stats = pool.requestStats();
    result.figures = metrics::allFigures(scrapes.targets());
    for (auto& f : metrics::clientLatencyFigures(stats)) result.figures.push_back(std::move(f));
    for (auto& f : metrics::clientCountFigures(stats, std::chrono::duration_cast<engine::Duration>(measured)))
      result.figures.push_back(std::move(f));
    metrics::GeneratorHealthOptions gho{sc.driver.lagQuantile, sc.driver.lagThreshold};
    for (auto& f : metrics::generatorHealthFigures(stats, gho)) result.figures.push_back(std::move(f));
    for (const auto& g : sc.gates) result.gates.push_back(scenario::evaluateGate(g, result.figures));

    perWorker.clear();  // before the pool's drivers go away
    if (interrupted()) {
      result.status = reports::RunStatus::kInterrupted;
      result.statusDetail = "interrupted after " + formatDuration(std::chrono::duration_cast<std::chrono::seconds>(measured));
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

  // 6. Cleanup of what the run created, on every path that may have created something.
  if (opt.cleanup && created && setupClient) {
    bool wasInterrupted = interrupted();
    setInterrupted(false);  // a Ctrl-C stops the load, not the cleanup
    try {
      std::vector<kube::GroupVersionResource> resources;
      for (const auto& w : sc.workloads)
        for (const auto& r : w->resources()) resources.push_back(r);
      auto cleaned = workloads::cleanupRun(*setupClient, wall, opt.runId, resources);
      result.workloads.push_back({"cleanup", "cleanup", cleanupJson(cleaned)});
      if (!cleaned.complete())
        std::cerr << "cpscale run: cleanup incomplete: " << cleanupJson(cleaned).dump()
                  << " (retry with `cpscale cleanup --run " << opt.runId << "`)\n";
    } catch (const std::exception& e) {
      result.workloads.push_back({"cleanup", "cleanup", {{"error", e.what()}}});
      std::cerr << "cpscale run: cleanup failed: " << e.what() << " (retry with `cpscale cleanup --run " << opt.runId
                << "`)\n";
    }
    setInterrupted(wasInterrupted);
  }
  if (result.status == reports::RunStatus::kFailed) return finishResult(static_cast<int>(ExitCode::kUnavailable));

  bool gatesPass = true;
  for (const auto& g : result.gates) gatesPass = gatesPass && g.passed;
  int code = result.status != reports::RunStatus::kCompleted ? static_cast<int>(ExitCode::kUnavailable)
             : gatesPass                  ? 0
                                          : static_cast<int>(ExitCode::kGateFailed);
  plane.reset();
  return finishResult(code);
}

}  // namespace cpscale::cli
