// Node-bound capacity of one generator core: the largest synthetic kubelet fleet
// (workloads/kubelet_fleet.h) that one paced engine worker keeps on schedule against the
// local plane, and what each 1,000 nodes cost the generator in CPU and memory.
//
// One process, one engine worker (the calling thread, as `cpscale run` with workers: 1),
// one local plane (kube-apiserver + etcd on loopback, started once, stopped at exit).
// The fleet grows in place along a ladder (--start-nodes, doubling, up to --max-nodes):
// each rung adds the new nodes, registered evenly over one renewal period so that the
// whole fleet's renewals stay uniform at about nodes/10 per second (registering them in
// a burst would make them renew in the same burst every period), waits until their
// Leases exist, then measures a steady window of --step-seconds.
//
// A rung is on schedule when the p99 of the renewal schedule lag is under 100 ms and
// at most 1% of renewal ticks were skipped (the previous PUT still unanswered) or
// failed. Renewal schedule lag is the open-loop driver's schedule lag for PUT leases:
// the moment the request reached the connection minus the renewal's scheduled time, so
// it covers both the engine running the timer late and the in-flight bound holding the
// request back. The ladder stops at the first rung off schedule and names the limit:
// "generator" when the engine handed renewals to the driver late (its submit lag makes
// up most of the schedule lag), "server" when requests waited for in-flight slots, or
// answers were so slow or failed that renewals were skipped or lost.
//
// All of it shares the machine's cores: the generator's figures are its own thread's
// CPU time, the server's are the apiserver's and etcd's, both reported per window.
//
// --sink: cpscale_h2_sink (next to this binary) answers instead of the plane, so the
// ladder goes past what the machine's plane can serve (12,500 to 100,000 nodes by
// default); against the same sink, before the ladder and again after it, the driver
// alone at each rung's size (see driverAlone): the fleet's CPU per request above their
// mean is the fleet's own cost.
//
//   cpscale_bench_fleet [--sink] [--max-nodes N] [--start-nodes N] [--step-seconds S]
//                       [--registration-qps Q] [--time-limit S] [--baseline-seconds S]
//                       [--out FILE.json]
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/common/yaml_reader.h"
#include "sim/controlplane/local_plane.h"
#include "sim/engine/hdr_histogram.h"
#include "sim/engine/periodic_timer.h"
#include "sim/engine/random.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/kubeconfig.h"
#include "sim/load/open_loop_driver.h"
#include "sim/load/worker_pool.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/phases.h"
#include "workloads/workload.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace cpscale;
using engine::Duration;
using engine::TimePoint;
using nlohmann::json;

namespace {

constexpr Duration kLagLimit = 100ms;               // renewal lag p99 must stay under this
constexpr double kMissLimit = 0.01;                 // at most this share of ticks skipped or failed
constexpr Duration kPollEvery = 250ms;              // registration progress checks
constexpr Duration kSettle = 1s;                    // after the last Lease exists, before the window
constexpr Duration kDrainLimit = 5s;                // window requests still unanswered at its end
constexpr std::int64_t kLeaseDurationSeconds = 40;  // the kubelet default: renew every 10 s

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

double cpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Resident set of this process, from /proc/self/statm (second field, in pages).
std::int64_t rssBytes() {
  std::ifstream in("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Heap in use (allocated blocks, mmapped ones included), not what glibc keeps free.
std::int64_t heapBytes() {
  struct mallinfo2 m = mallinfo2();
  return static_cast<std::int64_t>(m.uordblks + m.hblkhd);
}

// CPU seconds a child process (the apiserver, etcd) has used, from /proc/<pid>/stat.
double processCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Busy CPU seconds of the whole machine (every core), from /proc/stat.
double machineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown";
}

// What one measuring window saw, recorded by the two probes around the driver. A
// request is counted in the window it was sent in; `gen` tells a late answer to a
// request of an earlier window from one of this window.
struct Window {
  bool on = false;
  std::uint64_t gen = 0;
  engine::HdrHistogram submitLag;         // PUT leases: handed to the driver - scheduled
  engine::HdrHistogram scheduleLag;       // PUT leases: handed to the connection - scheduled
  engine::HdrHistogram putLatency;        // PUT leases: answer - actual send
  engine::HdrHistogram putFromScheduled;  // PUT leases: answer - scheduled
  std::uint64_t requests = 0;
  std::uint64_t putLeases = 0;
  std::uint64_t retries = 0;  // ApiClient re-sends (429, 5xx, connection failures)
  std::uint64_t outstanding = 0;
  std::map<std::string, std::uint64_t> errors;  // "PUT leases 409", "POST nodes timeout"

  void open() {
    ++gen;
    submitLag = scheduleLag = putLatency = putFromScheduled = engine::HdrHistogram();
    requests = putLeases = retries = outstanding = 0;
    errors.clear();
    on = true;
  }
};

bool isRenewal(const kube::HttpRequest& r) { return r.statsVerb == "PUT" && r.statsResource == "leases"; }

// A pass-through Transport that records into the current Window. On the submit side
// (ApiClient -> probe -> driver) it sees when the engine handed a request over; on the
// send side (driver -> probe -> connection) when the driver let it go, and the answer.
class Probe final : public kube::Transport {
 public:
  enum class Side { kSubmit, kSend };
  Probe(kube::Transport& inner, engine::Clock& clock, Window& window, Side side)
      : inner_(inner), clock_(clock), w_(window), side_(side) {}
  Probe(kube::TransportPtr owned, engine::Clock& clock, Window& window, Side side)
      : owned_(std::move(owned)), inner_(*owned_), clock_(clock), w_(window), side_(side) {}

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override {
    if (!w_.on) return inner_.submit(std::move(req), std::move(done));
    const TimePoint now = clock_.now();
    const bool renewal = isRenewal(req);
    if (side_ == Side::kSubmit) {
      if (!req.intendedAt)
        ++w_.retries;
      else if (renewal)
        w_.submitLag.addValue(lagNs(now, *req.intendedAt));
      return inner_.submit(std::move(req), std::move(done));
    }
    ++w_.requests;
    ++w_.outstanding;
    TimePoint intended = req.intendedAt.value_or(now);
    if (renewal) {
      ++w_.putLeases;
      w_.scheduleLag.addValue(lagNs(now, intended));
    }
    std::string what = req.method + " " + req.statsResource;
    return inner_.submit(std::move(req), [this, gen = w_.gen, now, intended, renewal, what = std::move(what),
                                          done = std::move(done)](kube::HttpResponse resp) {
      if (gen == w_.gen) {
        --w_.outstanding;
        const TimePoint end = clock_.now();
        if (!resp.ok())
          ++w_.errors[what + " " + std::string(kube::toString(resp.outcome))];
        else if (resp.status >= 300)
          ++w_.errors[what + " " + std::to_string(resp.status)];
        else if (renewal) {
          w_.putLatency.addValue(lagNs(end, now));
          w_.putFromScheduled.addValue(lagNs(end, intended));
        }
      }
      done(std::move(resp));
    });
  }
  void cancel(kube::RequestId id) override { inner_.cancel(id); }
  std::size_t poll(Duration maxWait) override { return inner_.poll(maxWait); }
  std::size_t inFlight() const override { return inner_.inFlight(); }
  void wakeup() override { inner_.wakeup(); }
  const std::string& server() const override { return inner_.server(); }

 private:
  static std::uint64_t lagNs(TimePoint later, TimePoint earlier) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, (later - earlier).count()));
  }
  kube::TransportPtr owned_;
  kube::Transport& inner_;
  engine::Clock& clock_;
  Window& w_;
  Side side_;
};

struct Options {
  bool sink = false;            // against cpscale_h2_sink instead of the local plane
  std::int64_t startNodes = 0;  // default: 500 (plane), 12,500 (sink)
  std::int64_t maxNodes = 0;    // default: 16,000 (plane), 100,000 (sink)
  double stepSeconds = 30;
  double registrationQps = 0;  // 0: the rung's new nodes over one renewal period
  double timeLimitSeconds = 420;
  double baselineSeconds = 30;  // sink mode: the driver alone at each rung's rate, as long as a rung's window
  std::string out;
};

// What answers the fleet: its processes (for their CPU) and whether it died.
struct Server {
  std::string what;
  std::vector<pid_t> pids;
  std::function<std::optional<std::string>()> crashed;
};

// One rung of the ladder: the fleet grows to `nodes` by a workload of `added` nodes.
struct Rung {
  std::int64_t nodes = 0;
  std::int64_t added = 0;
  double registrationQps = 0;
  workloads::WorkloadPtr fleet;
};

// Counters the fleet instances keep, summed over the rungs started so far.
struct FleetCounts {
  double registered = 0, leasesCreated = 0, renewals = 0, skipped = 0, renewFailed = 0, conflicts = 0,
         statusPatches = 0, actorBytes = 0;
};

struct Sample {
  TimePoint at{};
  double threadCpu = 0, processCpu = 0, serverCpu = 0, machineBusy = 0;
  std::int64_t rss = 0, heap = 0;
  std::size_t engineBytes = 0;
  FleetCounts fleet;
};

// Grows the fleet rung by rung and measures each, all on the engine worker's thread:
// every step is an event, so nothing here runs concurrently with the actors.
class Ladder {
 public:
  Ladder(const Options& opt, std::vector<Rung>& rungs, Window& window, Server server, std::string runId)
      : opt_(opt), rungs_(rungs), w_(window), server_(std::move(server)), runId_(std::move(runId)) {}

  // On the worker's thread, from the pool's setup.
  void begin(load::Worker& worker, kube::ApiClient& api) {
    worker_ = &worker;
    api_ = &api;
    sim().scheduleAfter(Duration{0}, [this] {
      deadline_ =
          sim().now() + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(opt_.timeLimitSeconds));
      baseline_ = sample();
      previous_ = baseline_;
      startRung(0);
    });
    sim().scheduleAfter(200ms, [this] { watch(); });
  }
  void stopInstances() {
    for (auto& i : instances_) i->stop();
  }
  void destroyInstances() { instances_.clear(); }

  const std::vector<json>& steps() const { return steps_; }
  std::int64_t largestOnSchedule() const { return largest_; }
  const std::string& boundBy() const { return boundBy_; }

 private:
  engine::Simulator& sim() { return worker_->simulator(); }

  FleetCounts counts() const {
    FleetCounts c;
    for (const auto& inst : instances_) {
      json s = inst->summary();
      c.registered += s.value("nodesRegistered", 0.0);
      c.leasesCreated += s.value("leasesCreated", 0.0);
      c.renewals += s.value("leaseRenewals", 0.0);
      c.skipped += s.value("leaseRenewalsSkipped", 0.0);
      c.renewFailed += s.value("leaseRenewalFailures", 0.0);
      c.conflicts += s.value("leaseConflicts", 0.0);
      c.statusPatches += s.value("statusPatches", 0.0);
      c.actorBytes += s.value("actorBytes", 0.0);
    }
    return c;
  }

  Sample sample() {
    Sample s;
    s.at = sim().clock().now();
    s.threadCpu = cpuSeconds(RUSAGE_THREAD);
    s.processCpu = cpuSeconds(RUSAGE_SELF);
    for (pid_t p : server_.pids) s.serverCpu += processCpuSeconds(p);
    s.machineBusy = machineBusySeconds();
    s.rss = rssBytes();
    s.heap = heapBytes();
    s.engineBytes = sim().memoryBytes();
    s.fleet = counts();
    return s;
  }

  // Ctrl-C or SIGTERM: stop at the next check; the plane is stopped on the way out.
  void watch() {
    if (interrupted()) return finish("interrupted");
    sim().scheduleAfter(200ms, [this] { watch(); });
  }

  void finish(const std::string& bound) {
    boundBy_ = bound;
    sim().stop();
  }

  void startRung(std::size_t k) {
    if (interrupted()) return finish("interrupted");
    Rung& r = rungs_[k];
    const Duration regExpected = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(static_cast<double>(r.added) / r.registrationQps));
    const Duration window = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(opt_.stepSeconds));
    if (sim().now() + regExpected + kSettle + window + 2s > deadline_) return finish("time-limit");
    k_ = k;
    regTimeout_ = std::max<Duration>(30s, regExpected * 3);
    regStart_ = sim().clock().now();
    std::cerr << "fleet: " << r.nodes << " nodes: registering " << r.added << " at " << r.registrationQps << "/s\n";
    workloads::WorkloadContext ctx{sim(), *api_, runId_, 1, worker_};
    // As the runner does: the rung's setup completing gives the setup's freed memory
    // back (PhaseLog's default hook), so RSS is the fleet's, not the registration's.
    phases_.expect(1);
    ctx.phases = &phases_;
    // Timestamps written into objects (renewTime) are Unix time.
    ctx.epochUnixNanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count() -
        sim().clock().now().time_since_epoch().count();
    instances_.push_back(r.fleet->start(ctx));
    sim().scheduleAfter(kPollEvery, [this] { pollRegistration(); });
  }

  void pollRegistration() {
    if (interrupted()) return finish("interrupted");
    json s = instances_.back()->summary();
    const double added = static_cast<double>(rungs_[k_].added);
    const TimePoint now = sim().clock().now();
    if (s.value("nodesRegistered", 0.0) >= added && s.value("leasesCreated", 0.0) >= added) {
      registration_ = now - regStart_;
      sim().scheduleAfter(kSettle, [this] { openWindow(); });
      return;
    }
    if (now - regStart_ > regTimeout_) {
      registration_ = now - regStart_;
      registrationIncomplete_ = s;
      std::cerr << "fleet: registration incomplete after " << seconds(registration_) << " s: " << s.dump() << "\n";
      openWindow();  // measure anyway: the window says why
      return;
    }
    sim().scheduleAfter(kPollEvery, [this] { pollRegistration(); });
  }

  void openWindow() {
    start_ = sample();
    w_.open();
    sim().scheduleAfter(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(opt_.stepSeconds)),
                        [this] { closeWindow(); });
  }

  void closeWindow() {
    end_ = sample();
    w_.on = false;
    drainStart_ = sim().clock().now();
    drain();
  }

  // Waits (bounded) for the answers to the window's requests, so slow ones count.
  void drain() {
    if (w_.outstanding > 0 && sim().clock().now() - drainStart_ < kDrainLimit) {
      sim().scheduleAfter(50ms, [this] { drain(); });
      return;
    }
    evaluate();
  }

  void evaluate() {
    const Rung& r = rungs_[k_];
    const double secs = seconds(end_.at - start_.at);
    const double n = static_cast<double>(r.nodes);
    const double thousands = n / 1000.0;
    const double threadCpu = end_.threadCpu - start_.threadCpu;
    const FleetCounts& a = start_.fleet;
    const FleetCounts& b = end_.fleet;
    const double ticks = (b.renewals - a.renewals) + (b.skipped - a.skipped) + (b.renewFailed - a.renewFailed);
    const double missed = (b.skipped - a.skipped) + (b.renewFailed - a.renewFailed);
    const double missShare = ticks > 0 ? missed / ticks : 1.0;
    const std::uint64_t lagP99 = w_.scheduleLag.quantile(0.99);
    const std::uint64_t submitP99 = w_.submitLag.quantile(0.99);
    const bool registered = registrationIncomplete_.is_null();
    const bool lagOk = w_.scheduleLag.count() > 0 && lagP99 < static_cast<std::uint64_t>(kLagLimit.count());
    const bool onSchedule = registered && lagOk && missShare <= kMissLimit;
    std::string limit = "none";
    if (!onSchedule) {
      // The engine handing renewals over late is the generator's doing; requests held
      // for in-flight slots, slow or failed answers are the server's.
      limit = !lagOk && static_cast<double>(submitP99) >= 0.5 * static_cast<double>(lagP99) ? "generator" : "server";
    }
    std::uint64_t errors = 0;
    for (const auto& [k, v] : w_.errors) errors += v;

    json step = {
        {"nodes", r.nodes},
        {"added", r.added},
        {"registration_qps", r.registrationQps},
        {"registration_seconds", seconds(registration_)},
        {"window_seconds", secs},
        {"renewals_per_second", static_cast<double>(w_.putLeases) / secs},
        {"expected_renewals_per_second", n / (kLeaseDurationSeconds / 4.0 * 1.02)},
        {"lag_p99_ms", ms(lagP99)},
        {"lag_p50_ms", ms(w_.scheduleLag.quantile(0.5))},
        {"lag_max_ms", ms(w_.scheduleLag.max())},
        {"submit_lag_p99_ms", ms(submitP99)},
        {"put_latency_p99_ms", ms(w_.putLatency.quantile(0.99))},
        {"put_latency_p50_ms", ms(w_.putLatency.quantile(0.5))},
        {"put_latency_from_scheduled_p99_ms", ms(w_.putFromScheduled.quantile(0.99))},
        {"requests_per_second", static_cast<double>(w_.requests) / secs},
        {"renewals_skipped", b.skipped - a.skipped},
        {"renewal_failures", b.renewFailed - a.renewFailed},
        {"lease_conflicts", b.conflicts - a.conflicts},
        {"status_patches", b.statusPatches - a.statusPatches},
        {"retries", w_.retries},
        {"errors", errors},
        {"errors_by_request", w_.errors},
        {"unanswered_at_drain", w_.outstanding},
        {"cpu_cores_used", threadCpu / secs},
        {"cpu_seconds_per_1000_nodes_per_minute", threadCpu / secs * 60.0 / thousands},
        {"cpu_us_per_request", w_.requests ? threadCpu / static_cast<double>(w_.requests) * 1e6 : 0.0},
        {"process_cpu_cores", (end_.processCpu - start_.processCpu) / secs},
        {"server_cpu_cores", (end_.serverCpu - start_.serverCpu) / secs},
        {"machine_busy_cores", (end_.machineBusy - start_.machineBusy) / secs},
        {"rss_bytes", end_.rss},
        {"rss_bytes_per_1000_nodes", static_cast<double>(end_.rss - baseline_.rss) / thousands},
        {"rss_bytes_per_1000_added_nodes",
         static_cast<double>(end_.rss - previous_.rss) / (static_cast<double>(r.added) / 1000.0)},
        {"heap_bytes_per_1000_nodes", static_cast<double>(end_.heap - baseline_.heap) / thousands},
        {"actor_and_engine_bytes_per_1000_nodes", (b.actorBytes + static_cast<double>(end_.engineBytes)) / thousands},
        {"on_schedule", onSchedule},
        {"limit", limit},
    };
    if (!registered) step["registration_incomplete"] = registrationIncomplete_;
    if (limit == "generator") {
      // Late with most of a core to itself is the generator's own cost; late while it
      // used little CPU and every core was busy is waiting for a CPU (a shared machine).
      const double busy = step["machine_busy_cores"].get<double>();
      step["generator_cause"] = threadCpu / secs >= 0.8 ? "own CPU"
                                : busy >= 0.9 * std::thread::hardware_concurrency()
                                    ? "waiting for a CPU: every core busy"
                                    : "engine loop";
    }
    steps_.push_back(step);
    previous_ = end_;
    char line[256];
    std::snprintf(line, sizeof line,
                  "fleet: %lld nodes: renewals %.0f/s, lag p99 %.1f ms, PUT p99 %.1f ms, generator %.3f cores, "
                  "server %.2f cores, %s\n",
                  static_cast<long long>(r.nodes), step["renewals_per_second"].get<double>(), ms(lagP99),
                  step["put_latency_p99_ms"].get<double>(), threadCpu / secs, step["server_cpu_cores"].get<double>(),
                  onSchedule ? "on schedule" : ("off schedule, limit: " + limit).c_str());
    std::cerr << line;

    if (auto crash = server_.crashed()) {
      std::cerr << "fleet: the " << server_.what << " stopped: " << *crash << "\n";
      return finish("server");
    }
    if (!onSchedule) return finish(limit);
    largest_ = r.nodes;
    if (k_ + 1 >= rungs_.size()) return finish("max-nodes");
    startRung(k_ + 1);
  }

  const Options& opt_;
  std::vector<Rung>& rungs_;
  Window& w_;
  Server server_;
  std::string runId_;
  load::Worker* worker_ = nullptr;
  kube::ApiClient* api_ = nullptr;
  workloads::PhaseLog phases_;
  std::vector<std::unique_ptr<workloads::WorkloadInstance>> instances_;
  std::vector<json> steps_;
  std::size_t k_ = 0;
  TimePoint deadline_{};
  TimePoint regStart_{};
  Duration regTimeout_{};
  Duration registration_{};
  TimePoint drainStart_{};
  json registrationIncomplete_;
  Sample baseline_, previous_, start_, end_;
  std::int64_t largest_ = 0;
  std::string boundBy_ = "time-limit";  // unless the ladder ends otherwise
};

std::string formatBytes(double b) {
  char s[32];
  if (b >= 1 << 20)
    std::snprintf(s, sizeof s, "%.2f MiB", b / (1 << 20));
  else
    std::snprintf(s, sizeof s, "%.0f KiB", b / 1024);
  return s;
}

void printTable(const json& j) {
  std::printf("\n%7s %9s %9s %9s %9s %11s %11s %9s %7s  %s\n", "nodes", "renew/s", "lag p99", "PUT p99", "gen core",
              "cpu s/1k/m", "RSS/1k", "srv core", "busy", "limit");
  for (const auto& s : j["steps"]) {
    std::printf("%7lld %9.0f %6.1f ms %6.1f ms %9.3f %11.3f %11s %9.2f %7.2f  %s\n",
                static_cast<long long>(s["nodes"].get<std::int64_t>()), s["renewals_per_second"].get<double>(),
                s["lag_p99_ms"].get<double>(), s["put_latency_p99_ms"].get<double>(), s["cpu_cores_used"].get<double>(),
                s["cpu_seconds_per_1000_nodes_per_minute"].get<double>(),
                formatBytes(s["rss_bytes_per_1000_nodes"].get<double>()).c_str(), s["server_cpu_cores"].get<double>(),
                s["machine_busy_cores"].get<double>(), s["limit"].get<std::string>().c_str());
  }
  if (!j["steps"].empty() && j["steps"][0].contains("cpu_us_per_request_above_driver_alone")) {
    std::printf("\n%7s %11s %13s %13s %9s\n", "nodes", "fleet us/req", "alone before", "alone after", "above");
    for (const auto& s : j["steps"]) {
      if (!s.contains("sink_driver_alone")) continue;
      std::printf("%7lld %11.1f %13.1f %13.1f %+9.1f\n", static_cast<long long>(s["nodes"].get<std::int64_t>()),
                  s["cpu_us_per_request"].get<double>(),
                  s["sink_driver_alone"]["before"]["cpu_us_per_request"].get<double>(),
                  s["sink_driver_alone"]["after"]["cpu_us_per_request"].get<double>(),
                  s["cpu_us_per_request_above_driver_alone"].get<double>());
    }
  }
  std::printf("\nlargest fleet on schedule: %lld nodes (bound by %s); %s\n",
              static_cast<long long>(j["largest_on_schedule"].get<std::int64_t>()),
              j["bound_by"].get<std::string>().c_str(), j["machine"].get<std::string>().c_str());
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--sink") {
      o.sink = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "option " << k << " needs a value\n";
      return false;
    }
    const std::string v = argv[++i];
    try {
      if (k == "--max-nodes")
        o.maxNodes = std::stoll(v);
      else if (k == "--start-nodes")
        o.startNodes = std::stoll(v);
      else if (k == "--step-seconds")
        o.stepSeconds = std::stod(v);
      else if (k == "--registration-qps")
        o.registrationQps = std::stod(v);
      else if (k == "--time-limit")
        o.timeLimitSeconds = std::stod(v);
      else if (k == "--baseline-seconds")
        o.baselineSeconds = std::stod(v);
      else if (k == "--out")
        o.out = v;
      else {
        std::cerr << "unknown option " << k << "\n";
        return false;
      }
    } catch (const std::exception&) {
      std::cerr << "bad value for " << k << ": " << v << "\n";
      return false;
    }
  }
  if (o.startNodes == 0) o.startNodes = o.sink ? 12500 : 500;
  if (o.maxNodes == 0) o.maxNodes = std::max(o.startNodes, o.sink ? std::int64_t{100000} : std::int64_t{16000});
  if (o.startNodes <= 0 || o.maxNodes < o.startNodes || o.stepSeconds <= 0 || o.registrationQps < 0 ||
      o.timeLimitSeconds <= 0 || o.baselineSeconds <= 0) {
    std::cerr << "need 0 < --start-nodes <= --max-nodes, --step-seconds > 0, --registration-qps >= 0, "
                 "--time-limit > 0, --baseline-seconds > 0\n";
    return false;
  }
  return true;
}

// cpscale_h2_sink (next to this binary) on a loopback port with a throwaway
// self-signed certificate; stopped when this goes.
class SinkProcess {
 public:
  explicit SinkProcess(const fs::path& dir) {
    const std::string gen =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
        (dir / "key.pem").string() + " -out " + (dir / "cert.pem").string() + " >/dev/null 2>&1";
    if (std::system(gen.c_str()) != 0) throw UnavailableError("openssl could not make the sink's certificate");
    const fs::path exe = fs::read_symlink("/proc/self/exe").parent_path() / "cpscale_h2_sink";
    int out[2];
    if (::pipe(out) != 0) throw UnavailableError("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
      ::execl(exe.c_str(), exe.c_str(), "--cert", cert.c_str(), "--key", key.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    FILE* f = ::fdopen(out[0], "r");
    int port = 0;
    if (std::fscanf(f, "listening on %d", &port) != 1 || port <= 0) {
      std::fclose(f);
      throw UnavailableError("cpscale_h2_sink did not start (" + exe.string() + ")");
    }
    std::fclose(f);
    config_.server = "https://127.0.0.1:" + std::to_string(port);
    std::ifstream ca(dir / "cert.pem");
    config_.caPem.assign(std::istreambuf_iterator<char>(ca), std::istreambuf_iterator<char>());
    config_.contextName = "sink";
  }
  ~SinkProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  SinkProcess(const SinkProcess&) = delete;
  SinkProcess& operator=(const SinkProcess&) = delete;

  const kube::RestConfig& config() const { return config_; }
  pid_t pid() const { return pid_; }
  // Reaps the sink once if it exited, so that the pid is never signalled after it may
  // have been reused.
  std::optional<std::string> crashed() const {
    int status = 0;
    if (!exited_ && ::waitpid(pid_, &status, WNOHANG) == pid_)
      exited_ = "cpscale_h2_sink exited (status " + std::to_string(status) + ")";
    return exited_;
  }

 private:
  pid_t pid_ = -1;
  mutable std::optional<std::string> exited_;
  kube::RestConfig config_;
};

// The sink figure: the same paced engine, open-loop driver, CurlTransport and probes
// as the fleet's, with `nodes` bare timers at the kubelet's cadence each PUTting the
// same Lease body to its own path, and nothing else: no ApiClient, no workload, no
// answer read. What the fleet costs above this per renewal is the fleet's own overhead.
json driverAlone(const kube::RestConfig& config, const load::WorkerOptions& wo, std::int64_t nodes, double seconds,
                 const std::string& leaseBody) {
  engine::WallClock clock;
  engine::PacedSimulator sim(clock);
  // The same probes on both sides of the driver as the fleet's, so that what they cost
  // is on both sides of the comparison.
  Window window;
  Probe send(std::make_unique<kube::CurlTransport>(
                 config, kube::CurlTransportOptions{.maxHostConnections = static_cast<long>(wo.driver.connections),
                                                    .maxConcurrentStreams =
                                                        static_cast<long>(wo.driver.maxInFlightPerConnection)}),
             clock, window, Probe::Side::kSend);
  load::OpenLoopDriver driver(send, clock, wo.driver);
  Probe submit(driver, clock, window, Probe::Side::kSubmit);
  sim.setIdleHook([&](TimePoint deadline) { driver.poll(deadline - clock.now()); });
  struct Actor {
    engine::Simulator* sim;
    kube::Transport* out;
    const std::string* body;
    std::string path;
    std::uint64_t* errors;
    void fire() {
      kube::HttpRequest req;
      req.method = "PUT";
      req.path = path;
      req.body = *body;
      req.headers.push_back({"Content-Type", "application/json"});
      req.statsResource = "leases";
      req.statsVerb = "PUT";
      req.intendedAt = sim->now();
      out->submit(std::move(req), [e = errors](kube::HttpResponse r) {
        if (!r.ok() || r.status != 200) ++*e;
      });
    }
  };
  const Duration period = std::chrono::seconds(kLeaseDurationSeconds) / 4;
  std::uint64_t errors = 0;
  std::vector<Actor> actors(static_cast<std::size_t>(nodes));
  std::vector<std::unique_ptr<engine::PeriodicTimer>> timers;
  timers.reserve(actors.size());
  engine::RandomStream rng(7);
  const TimePoint begin = clock.now() + 200ms;
  for (std::size_t i = 0; i < actors.size(); ++i) {
    actors[i] =
        Actor{&sim, &submit, &leaseBody,
              "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/baseline-" + std::to_string(i), &errors};
    timers.push_back(std::make_unique<engine::PeriodicTimer>(sim, engine::PeriodicTimer::bind<&Actor::fire>(&actors[i]),
                                                             period, period * 4 / 100, rng.next()));
    timers.back()->start(begin + rng.uniformDuration(Duration{0}, period));
  }
  // One period to bring every timer into its cadence, then the window.
  sim.runUntil(begin + period);
  window.open();
  const double cpu0 = cpuSeconds(RUSAGE_THREAD);
  const TimePoint t0 = clock.now();
  sim.runUntil(t0 + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
  const double cpu = cpuSeconds(RUSAGE_THREAD) - cpu0;
  const double secs = std::chrono::duration<double>(clock.now() - t0).count();
  window.on = false;
  const double sent = static_cast<double>(window.requests);
  for (auto& t : timers) t->stop();
  while (driver.inFlight() > 0) driver.poll(100ms);
  return {{"nodes", nodes},
          {"window_seconds", secs},
          {"requests_per_second", sent / secs},
          {"errors", errors},
          {"cpu_cores_used", cpu / secs},
          {"cpu_us_per_request", sent > 0 ? cpu / sent * 1e6 : 0.0},
          {"schedule_lag_p99_ms", ms(window.scheduleLag.quantile(0.99))},
          {"generator_limit", std::string(load::toString(driver.limit()))}};
}

// driverAlone in a child process, so that what it allocates (a timer and a path per
// node, libcurl's pools) neither inflates nor pre-warms the fleet's memory figures when
// it runs before the fleet. The child is forked while the process has one thread; its
// figures come back as JSON on a pipe.
json driverAloneApart(const kube::RestConfig& config, const load::WorkerOptions& wo, std::int64_t nodes, double seconds,
                      const std::string& leaseBody) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string text;
    try {
      text = driverAlone(config, wo, nodes, seconds, leaseBody).dump();
    } catch (const std::exception& e) {
      text = json{{"error", e.what()}}.dump();
    }
    for (std::size_t off = 0; off < text.size();) {
      const ssize_t n = ::write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) ::_exit(1);
      off += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  json b = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!b.is_object() || b.contains("error") || !b.contains("cpu_us_per_request")) {
    throw std::runtime_error("the driver alone at " + std::to_string(nodes) + " nodes failed" +
                             (b.is_object() && b.contains("error") ? ": " + b["error"].get<std::string>() : ""));
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;
  installInterruptHandlers();

  const unsigned cpus = std::thread::hardware_concurrency();
  const std::string machine = std::to_string(cpus) + " CPUs (" + cpuModel() + "), shared by the generator thread and " +
                              (opt.sink ? "the sink" : "kube-apiserver and etcd");
  const std::string runId = "bf-" + std::to_string(::getpid());

  // The ladder, each rung a kubelets workload of the nodes it adds.
  std::vector<Rung> rungs;
  const double period = kLeaseDurationSeconds / 4.0;
  for (std::int64_t n = opt.startNodes, prev = 0; prev < opt.maxNodes; prev = n, n = std::min(n * 2, opt.maxNodes)) {
    Rung r;
    r.nodes = n;
    r.added = n - prev;
    // At most 2,500/s: the rung's registrations share the generator with the renewals
    // of every node already there (at 100,000 nodes a 5,000/s ramp outran both).
    r.registrationQps =
        opt.registrationQps > 0 ? opt.registrationQps : std::clamp(static_cast<double>(r.added) / period, 10.0, 2500.0);
    const double burst = std::max(1.0, std::ceil(r.registrationQps / 10));
    std::ostringstream yaml;
    yaml << "kind: kubelets\nname: r" << rungs.size() << "\ncount: " << r.added
         << "\nregistrationQps: " << r.registrationQps << "\nregistrationBurst: " << burst
         << "\nleaseDurationSeconds: " << kLeaseDurationSeconds << "\n";
    r.fleet = workloads::makeWorkload(loadYamlString(yaml.str(), "bench_fleet.yaml"));
    rungs.push_back(std::move(r));
  }

  char tmpl[] = "/tmp/cpscale-bench-fleet-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 3;
  }
  const fs::path stateDir = tmpl;
  json j;
  int code = 0;
  std::unique_ptr<controlplane::LocalPlane> plane;
  std::unique_ptr<SinkProcess> sink;
  try {
    kube::RestConfig config;
    Server server;
    if (opt.sink) {
      sink = std::make_unique<SinkProcess>(stateDir);
      config = sink->config();
      server = {"sink", {sink->pid()}, [&sink] { return sink->crashed(); }};
      std::cerr << "fleet: against cpscale_h2_sink at " << config.server << "\n";
    } else {
      controlplane::PlaneOptions po;
      po.stateDir = stateDir / "plane";
      po.binDir = controlplane::defaultBinDir();
      po.name = "bench-fleet";
      std::cerr << "fleet: starting the local plane from " << po.binDir.string() << "\n";
      plane = std::make_unique<controlplane::LocalPlane>(po);
      kube::LoadOptions lo;
      lo.explicitPath = plane->kubeconfig().string();
      config = kube::loadKubeconfig(lo);
      server.what = "plane";
      for (const auto& c : plane->record().components) server.pids.push_back(c.process.pid);
      server.crashed = [&plane] { return plane->crashed(); };
    }

    engine::WallClock wall;
    kube::CurlTransport setupTransport(config);
    kube::ApiClient setupClient(setupTransport, wall);
    for (auto& r : rungs) r.fleet->prepare(setupClient, wall, runId);

    // As `cpscale run` with its defaults and workers: 1.
    load::WorkerOptions wo;
    wo.workers = 1;
    wo.mode = engine::SimulatorMode::kPaced;
    wo.seed = 1;
    wo.drain = kDrainLimit;

    // Side by side, same sink, same run: the driver alone at each rung's rate, measured
    // before the fleet and again after it. The machine drifts over a run (a shared VM);
    // the fleet is compared with the mean of the two, and their spread is reported.
    // The Lease body is what the sink answers a kubelet's Lease creation with.
    std::string leaseBody;
    std::map<std::int64_t, json> aloneBefore;  // by nodes
    if (sink) {
      kube::HttpRequest create;
      create.method = "POST";
      create.path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
      create.headers.push_back({"Content-Type", "application/json"});
      create.body = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"baseline",)"
                    R"("namespace":"kube-node-lease","labels":{"cpscale.io/run":")" +
                    runId +
                    R"(","cpscale.io/workload":"r0"},"ownerReferences":[{"apiVersion":"v1","kind":"Node",)"
                    R"("name":"baseline","uid":"00000000-0000-4000-8000-000000000000"}]},"spec":{"holderIdentity":)"
                    R"("baseline","leaseDurationSeconds":40,"renewTime":"2026-01-01T00:00:00.000000Z"}})";
      leaseBody = kube::roundTrip(setupTransport, create).body;
      for (const auto& r : rungs) {
        if (interrupted()) break;
        std::cerr << "fleet: the driver alone at " << r.nodes << " nodes' cadence (before the fleet)\n";
        aloneBefore[r.nodes] = driverAloneApart(config, wo, r.nodes, opt.baselineSeconds, leaseBody);
      }
    }

    // As `cpscale run`: a paced worker, the open-loop driver around the worker's
    // CurlTransport, an ApiClient over the driver; here with a probe on each side of the
    // driver.
    Window window;
    kube::CurlTransportOptions cto;
    cto.maxHostConnections = static_cast<long>(wo.driver.connections);
    cto.maxConcurrentStreams = static_cast<long>(wo.driver.maxInFlightPerConnection);
    std::unique_ptr<Probe> submitProbe;
    std::unique_ptr<kube::ApiClient> api;
    Ladder ladder(opt, rungs, window, server, runId);
    {
      load::WorkerPool pool(wo, [&](load::Worker& w) -> kube::TransportPtr {
        return std::make_unique<Probe>(std::make_unique<kube::CurlTransport>(config, cto), w.simulator().clock(),
                                       window, Probe::Side::kSend);
      });
      try {
        pool.run(
            [&](load::Worker& w) {
              submitProbe = std::make_unique<Probe>(*w.driver(), w.simulator().clock(), window, Probe::Side::kSubmit);
              kube::ApiClientOptions ao;
              ao.seed = 1;
              api = std::make_unique<kube::ApiClient>(*submitProbe, w.simulator().clock(), w.simulator(), ao);
              ladder.begin(w, *api);
            },
            engine::TimePoint{
                std::chrono::duration_cast<Duration>(std::chrono::duration<double>(opt.timeLimitSeconds)) + 60s});
      } catch (...) {
        ladder.destroyInstances();
        throw;
      }
      ladder.stopInstances();
      ladder.destroyInstances();  // before their ApiClient
      api.reset();
    }

    j["benchmark"] =
        std::string("kubelet fleet on one generator core against ") +
        (opt.sink ? "cpscale_h2_sink (TLS HTTP/2, answers as kube-apiserver would, at line rate)" : "the local plane");
    j["machine"] = machine;
    j["cpus"] = cpus;
    if (plane) {
      j["kubernetes_version"] = plane->record().kubernetesVersion;
      j["etcd_version"] = plane->record().etcdVersion;
    }
    j["criterion"] = "renewal schedule lag p99 < 100 ms and <= 1% of renewal ticks skipped or failed";
    j["lag"] =
        "open-loop driver schedule lag of PUT leases: sent to the connection minus the renewal's scheduled time "
        "(engine lag plus in-flight queueing); submit_lag is the engine's part alone";
    j["cpu"] = "generator thread CPU (getrusage RUSAGE_THREAD) over the window";
    j["memory"] = "process RSS (/proc/self/statm) at the window's end minus before the first node, per 1,000 nodes";
    j["lease_duration_seconds"] = kLeaseDurationSeconds;
    j["step_seconds"] = opt.stepSeconds;
    j["max_nodes"] = opt.maxNodes;
    j["steps"] = ladder.steps();
    j["largest_on_schedule"] = ladder.largestOnSchedule();
    j["bound_by"] = ladder.boundBy();
    if (!ladder.steps().empty()) {
      // What the largest rung on schedule cost: one core would carry this many nodes if
      // the server kept up and cost stayed linear (an extrapolation, not a measurement).
      for (auto it = ladder.steps().rbegin(); it != ladder.steps().rend(); ++it) {
        if (!(*it)["on_schedule"].get<bool>()) continue;
        const double perThousand = (*it)["cpu_cores_used"].get<double>() / ((*it)["nodes"].get<double>() / 1000.0);
        j["cpu_cores_per_1000_nodes"] = perThousand;
        j["cpu_seconds_per_1000_nodes_per_minute"] = (*it)["cpu_seconds_per_1000_nodes_per_minute"];
        j["rss_bytes_per_1000_nodes"] = (*it)["rss_bytes_per_1000_nodes"];
        if (perThousand > 0) j["extrapolated_nodes_per_core"] = 1000.0 / perThousand;
        break;
      }
    }
    if (sink && ladder.boundBy() != "interrupted") {
      for (auto& step : j["steps"]) {
        const auto nodes = step["nodes"].get<std::int64_t>();
        const auto before = aloneBefore.find(nodes);
        if (interrupted() || before == aloneBefore.end()) break;
        std::cerr << "fleet: the driver alone at " << nodes << " nodes' cadence (after the fleet)\n";
        json after = driverAloneApart(config, wo, nodes, opt.baselineSeconds, leaseBody);
        const double b = before->second["cpu_us_per_request"].get<double>();
        const double a = after["cpu_us_per_request"].get<double>();
        const double mean = (b + a) / 2;
        step["sink_driver_alone"] = {{"before", before->second}, {"after", after}};
        step["driver_alone_cpu_us_per_request"] = mean;
        step["driver_alone_spread_us"] = std::abs(b - a);
        step["cpu_us_per_request_above_driver_alone"] = step["cpu_us_per_request"].get<double>() - mean;
      }
      j["lease_body_bytes"] = leaseBody.size();
      j["driver_alone"] =
          "the same paced engine, open-loop driver, CurlTransport and probes, with one bare timer per "
          "node PUTting the Lease body at the kubelet's cadence: no ApiClient, no workload, answers "
          "unread; measured before the fleet's ladder and after it, the fleet compared with the mean";
    }
    if (ladder.boundBy() == "interrupted") code = 130;
  } catch (const std::exception& e) {
    std::cerr << "cpscale_bench_fleet: " << e.what() << "\n";
    j["error"] = e.what();
    code = 3;
  }
  sink.reset();
  if (plane) plane->stop();
  plane.reset();
  std::error_code ec;
  fs::remove_all(stateDir, ec);

  const std::string text = j.dump(2);
  if (!opt.out.empty())
    std::ofstream(opt.out) << text << "\n";
  else
    std::cout << text << "\n";
  if (j.contains("steps")) printTable(j);
  return code;
}
