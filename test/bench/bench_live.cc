// Live driver throughput against a local TLS HTTP/2 sink (nghttpd on loopback), side by
// side in one run with h2load and with a bare libcurl-multi loop over the same number
// of connections and streams, printed as ratios. libcurl's own cost is the ceiling:
// the target is driver >= 80% of the bare loop and >= 10k requests/s on one core.
// Also an open-loop run at a fixed rate through the paced engine: achieved rate,
// schedule lag and CPU per request.
//
//   cpscale_bench_live [--requests N] [--connections C] [--streams M] [--rate R]
//                      [--seconds S] [--out FILE.json]
#include <curl/curl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/engine/periodic_timer.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/curl_transport.h"
#include "sim/load/open_loop_driver.h"
#include "test/support/loopback.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace cpscale;

namespace {

double cpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool accepting(int port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(s);
  return ok;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Result {
  double seconds = 0, cpu = 0;
  long requests = 0, errors = 0;
  double rps() const { return seconds > 0 ? static_cast<double>(requests) / seconds : 0; }
  nlohmann::json json() const {
    return {{"requests", requests}, {"errors", errors},
            {"seconds", seconds},   {"requests_per_s", rps()},
            {"cpu_seconds", cpu},   {"cpu_us_per_request", requests ? cpu / static_cast<double>(requests) * 1e6 : 0}};
  }
};

Result runH2load(const std::string& url, long n, int c, int m) {
  const std::string cmd = "h2load -n " + std::to_string(n) + " -c " + std::to_string(c) + " -m " + std::to_string(m) +
                          " -t 1 " + url + " 2>&1";
  const double cpu0 = cpuSeconds(RUSAGE_CHILDREN);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  Result r;
  r.cpu = cpuSeconds(RUSAGE_CHILDREN) - cpu0;
  // "finished in 1.23s, 45678.90 req/s, ..." and "requests: N total, N started, N done, S succeeded, F failed"
  // The duration's unit varies: "finished in 431.03ms, ..." or "finished in 2.1s, ...".
  double secs = 0;
  if (auto pos = out.find("finished in "); pos != std::string::npos) {
    char unit[3] = {};
    std::sscanf(out.c_str() + pos, "finished in %lf%2[mus]", &secs, unit);
    const std::string u = unit;
    secs /= u == "ms" ? 1e3 : u == "us" ? 1e6 : 1.0;
  }
  long total = 0, started = 0, done = 0, ok = 0, failed = 0;
  if (auto pos = out.find("requests: "); pos != std::string::npos) {
    std::sscanf(out.c_str() + pos, "requests: %ld total, %ld started, %ld done, %ld succeeded, %ld failed", &total,
                &started, &done, &ok, &failed);
  }
  r.seconds = secs;
  r.requests = ok;
  r.errors = failed;
  if (ok == 0) std::cerr << out;
  return r;
}

size_t discard(char*, size_t size, size_t n, void*) { return size * n; }

// The ceiling: libcurl multi with HTTP/2, c connections of m streams, always full.
Result runBareCurl(const std::string& url, const std::string& caFile, long n, int c, int m) {
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(c));
  curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, static_cast<long>(m));
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  std::vector<CURL*> idle;
  auto start = [&] {
    CURL* e;
    if (!idle.empty()) {
      e = idle.back();
      idle.pop_back();
    } else {
      e = curl_easy_init();
      curl_easy_setopt(e, CURLOPT_URL, url.c_str());
      curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
      curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
      curl_easy_setopt(e, CURLOPT_CAINFO, caFile.c_str());
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    }
    curl_multi_add_handle(multi, e);
  };
  Result r;
  const double t0 = wallSeconds(), cpu0 = cpuSeconds(RUSAGE_SELF);
  long started = 0, done = 0;
  const long window = static_cast<long>(c) * m;
  for (; started < std::min(n, window); ++started) start();
  while (done < n) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      long code = 0;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      if (msg->data.result != CURLE_OK || code != 200) ++r.errors;
      curl_multi_remove_handle(multi, msg->easy_handle);
      idle.push_back(msg->easy_handle);
      ++done;
      if (started < n) {
        start();
        ++started;
      }
    }
    if (done < n) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  r.seconds = wallSeconds() - t0;
  r.cpu = cpuSeconds(RUSAGE_SELF) - cpu0;
  r.requests = n - r.errors;
  for (CURL* e : idle) curl_easy_cleanup(e);
  curl_multi_cleanup(multi);
  return r;
}

kube::HttpRequest leaseGet(engine::TimePoint intended) {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = "/lease";
  req.statsResource = "leases";
  req.statsVerb = "GET";
  req.intendedAt = intended;
  return req;
}

// The same saturation through OpenLoopDriver + CurlTransport: every request is due at
// once, the driver's bound (c * m) keeps the window full, as the bare loop does.
Result runDriverSaturated(const kube::RestConfig& cfg, long n, int c, int m) {
  kube::CurlTransport transport(cfg, {.maxHostConnections = c, .maxConcurrentStreams = m});
  engine::WallClock clock;
  load::OpenLoopDriver driver(transport, clock,
                              {.maxInFlight = static_cast<std::size_t>(c) * m,
                               .connections = static_cast<std::size_t>(c),
                               .maxInFlightPerConnection = static_cast<std::size_t>(m)});
  Result r;
  long done = 0;
  const double t0 = wallSeconds(), cpu0 = cpuSeconds(RUSAGE_SELF);
  const engine::TimePoint now = clock.now();
  for (long i = 0; i < n; ++i) {
    driver.submit(leaseGet(now), [&](kube::HttpResponse resp) {
      ++done;
      if (!resp.ok() || resp.status != 200) ++r.errors;
    });
  }
  while (done < n) driver.poll(100ms);
  r.seconds = wallSeconds() - t0;
  r.cpu = cpuSeconds(RUSAGE_SELF) - cpu0;
  r.requests = n - r.errors;
  return r;
}

// Open loop at a fixed rate through the paced engine: `actors` timers, each firing
// every actors/rate seconds, as a fleet of kubelets renewing leases would.
nlohmann::json runOpenLoop(const kube::RestConfig& cfg, double rate, double seconds, int c, int m) {
  kube::CurlTransport transport(cfg, {.maxHostConnections = c, .maxConcurrentStreams = m});
  engine::WallClock clock;
  engine::PacedSimulator sim(clock);
  load::OpenLoopDriver driver(transport, clock,
                              {.maxInFlight = static_cast<std::size_t>(c) * m,
                               .connections = static_cast<std::size_t>(c),
                               .maxInFlightPerConnection = static_cast<std::size_t>(m)});
  sim.setIdleHook([&](engine::TimePoint deadline) { driver.poll(deadline - clock.now()); });
  struct Actor {
    engine::Simulator* sim;
    load::OpenLoopDriver* driver;
    long* errors;
    void fire() {
      driver->submit(leaseGet(sim->now()), [e = errors](kube::HttpResponse r) {
        if (!r.ok() || r.status != 200) ++*e;
      });
    }
  };
  const int actors = 10000;
  const auto period = std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(actors / rate));
  long errors = 0;
  std::vector<std::unique_ptr<Actor>> fleet;
  std::vector<std::unique_ptr<engine::PeriodicTimer>> timers;
  engine::RandomStream rng(1);
  const engine::TimePoint begin = clock.now() + 200ms;
  for (int i = 0; i < actors; ++i) {
    fleet.push_back(std::make_unique<Actor>(Actor{&sim, &driver, &errors}));
    timers.push_back(std::make_unique<engine::PeriodicTimer>(
        sim, engine::PeriodicTimer::bind<&Actor::fire>(fleet.back().get()), period));
    timers.back()->start(begin + rng.uniformDuration(engine::Duration{0}, period));
  }
  const engine::TimePoint end =
      begin + std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(seconds));
  const double cpu0 = cpuSeconds(RUSAGE_SELF);
  sim.runUntil(end);
  for (auto& t : timers) t->stop();
  while (driver.inFlight() > 0) driver.poll(100ms);
  const double cpu = cpuSeconds(RUSAGE_SELF) - cpu0;
  const auto& s = driver.stats();
  const auto& l = s.latency();
  double p50 = 0, p99 = 0;
  if (auto it = l.find({"leases", "GET", load::OutcomeClass::kSuccess}); it != l.end()) {
    p50 = static_cast<double>(it->second.fromScheduled.quantile(0.5)) / 1e6;
    p99 = static_cast<double>(it->second.fromScheduled.quantile(0.99)) / 1e6;
  }
  const double sent = static_cast<double>(s.sent());
  return {{"target_rate", rate},
          {"seconds", seconds},
          {"sent", s.sent()},
          {"completed", s.completed()},
          {"errors", errors},
          {"achieved_rate", sent / seconds},
          {"cpu_seconds", cpu},
          {"cpu_us_per_request", sent > 0 ? cpu / sent * 1e6 : 0},
          {"core_fraction", cpu / seconds},
          {"latency_from_scheduled_ms", {{"p50", p50}, {"p99", p99}}},
          {"schedule_lag_ms",
           {{"p50", s.scheduleLag().quantile(0.5) / 1e6}, {"p99", s.scheduleLag().quantile(0.99) / 1e6}}},
          {"engine_lag_p99_ms", sim.stats().lag.quantile(0.99) / 1e6},
          {"generator_limit", std::string(load::toString(driver.limit()))}};
}

}  // namespace

int main(int argc, char** argv) {
  long n = 20000;
  int c = 4, m = 32;
  double rate = 10000, seconds = 3;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--requests")
      n = std::stol(v);
    else if (k == "--connections")
      c = std::stoi(v);
    else if (k == "--streams")
      m = std::stoi(v);
    else if (k == "--rate")
      rate = std::stod(v);
    else if (k == "--seconds")
      seconds = std::stod(v);
    else if (k == "--out")
      out = v;
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  if (n <= 0 || c <= 0 || m <= 0 || rate <= 0 || seconds <= 0) {
    std::cerr << "--requests, --connections, --streams, --rate and --seconds must be > 0\n";
    return 2;
  }

  // A throwaway CA-less self-signed certificate for 127.0.0.1, and a small body.
  char tmpl[] = "/tmp/cpscale-bench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  fs::create_directories(dir / "www");
  std::ofstream(dir / "www" / "lease") << std::string(256, 'x');
  const std::string gen =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
      (dir / "key.pem").string() + " -out " + (dir / "cert.pem").string() + " >/dev/null 2>&1";
  if (std::system(gen.c_str()) != 0) {
    std::cerr << "openssl failed\n";
    return 3;
  }
  const int port = kube::testing::freePort();
  const pid_t server = fork();
  if (server == 0) {
    const std::string doc = (dir / "www").string(), key = (dir / "key.pem").string(),
                      cert = (dir / "cert.pem").string(), p = std::to_string(port);
    execlp("nghttpd", "nghttpd", "-a", "127.0.0.1", "-d", doc.c_str(), p.c_str(), key.c_str(), cert.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 100 && !accepting(port); ++i) std::this_thread::sleep_for(50ms);
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/lease";

  curl_global_init(CURL_GLOBAL_DEFAULT);
  kube::RestConfig cfg;
  cfg.server = "https://127.0.0.1:" + std::to_string(port);
  cfg.caPem = readFile(dir / "cert.pem");

  nlohmann::json j;
  j["sink"] = "nghttpd (TLS, HTTP/2) on 127.0.0.1";
  j["connections"] = c;
  j["streams_per_connection"] = m;
  // Warm-up so that the first measured run does not pay for page faults and TLS setup.
  runBareCurl(url, (dir / "cert.pem").string(), 2000, c, m);
  const Result h2 = runH2load(url, n, c, m);
  const Result bare = runBareCurl(url, (dir / "cert.pem").string(), n, c, m);
  const Result drv = runDriverSaturated(cfg, n, c, m);
  j["h2load"] = h2.json();
  j["bare_libcurl_multi"] = bare.json();
  j["driver_curl_transport"] = drv.json();
  j["ratios"] = {
      {"driver_over_bare_curl", bare.rps() > 0 ? drv.rps() / bare.rps() : 0},
      {"bare_curl_over_h2load", h2.rps() > 0 ? bare.rps() / h2.rps() : 0},
      {"driver_over_h2load", h2.rps() > 0 ? drv.rps() / h2.rps() : 0},
      {"driver_cpu_per_request_over_bare_curl",
       bare.cpu > 0 ? (drv.cpu / static_cast<double>(drv.requests)) / (bare.cpu / static_cast<double>(bare.requests))
                    : 0}};
  j["open_loop"] = runOpenLoop(cfg, rate, seconds, c, m);

  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  fs::remove_all(dir);
  curl_global_cleanup();

  const std::string text = j.dump(2);
  std::cout << text << "\n";
  if (!out.empty()) std::ofstream(out) << text << "\n";
  return 0;
}
