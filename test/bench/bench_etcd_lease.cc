// The node-liveness seam's "make each renewal cheaper" fix, measured on the pinned etcd
// alone: a node's renewal as kube-apiserver writes it (a Put of the Lease object's
// key, one Raft proposal and one WAL fsync each) against etcd's own lease refresh
// (LeaseKeepAlive, served by the leader from memory). Starts etcd from
// $CPSCALE_BIN_DIR on 127.0.0.1 with a fresh data directory, then for each way renews
// --leases leases --rounds times through the JSON gateway (one client, one connection,
// one request at a time) and reports, per renewal: wall time (p50, p99), etcd CPU
// (utime + stime from /proc), Raft proposals committed, WAL fsyncs and database growth,
// from etcd's own /metrics before and after.
//
//   CPSCALE_BIN_DIR=~/.cache/cpscale/bin/current build/test/bench/cpscale_bench_etcd_lease
//       [--leases 1000] [--rounds 5] [--out FILE.json]
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
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

#include "sim/controlplane/local_plane.h"
#include "sim/controlplane/process.h"
#include "sim/kube/base64.h"
#include "sim/metrics/prometheus_text.h"
#include "test/support/loopback.h"

namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cpscale;

std::size_t collect(char* p, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

// One connection, reused: one request at a time, as a renewal loop of one client.
class Client {
 public:
  explicit Client(std::string base) : base_(std::move(base)), curl_(curl_easy_init()) {
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, 30L);
  }
  ~Client() { curl_easy_cleanup(curl_); }
  // POST (body non-empty) or GET; the body, or exit 3 naming the path.
  std::string call(const std::string& path, const std::string& body = "") {
    std::string out;
    curl_easy_setopt(curl_, CURLOPT_URL, (base_ + path).c_str());
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &out);
    if (body.empty()) {
      curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(curl_, CURLOPT_POST, 1L);
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.c_str());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    long status = 0;
    const CURLcode rc = curl_easy_perform(curl_);
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status != 200) {
      std::cerr << "etcd " << path << ": "
                << (rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP " + std::to_string(status)) << " "
                << out.substr(0, 200) << "\n";
      std::exit(3);
    }
    return out;
  }

 private:
  std::string base_;
  CURL* curl_;
};

// utime + stime of a process, in seconds.
double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(s.substr(s.rfind(')') + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);
    if (i == 15) break;
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct Counters {
  double proposals = 0, fsyncs = 0, dbBytes = 0, leaseRenewed = 0, cpu = 0;
};

Counters read(Client& c, pid_t pid) {
  Counters out;
  out.cpu = cpuSeconds(pid);
  const auto r = metrics::parsePrometheusText(c.call("/metrics"));
  auto sum = [&](const char* family, const char* sample) {
    auto it = r.families.find(family);
    double v = 0;
    if (it != r.families.end())
      for (const auto& s : it->second.samples)
        if (s.name == sample) v += s.value;
    return v;
  };
  out.proposals = sum("etcd_server_proposals_committed_total", "etcd_server_proposals_committed_total");
  out.fsyncs = sum("etcd_disk_wal_fsync_duration_seconds", "etcd_disk_wal_fsync_duration_seconds_count");
  out.dbBytes = sum("etcd_mvcc_db_total_size_in_bytes", "etcd_mvcc_db_total_size_in_bytes");
  out.leaseRenewed = sum("etcd_debugging_lease_renewed_total", "etcd_debugging_lease_renewed_total");
  return out;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

// Runs `renew(i)` for every lease, `rounds` times; the figures per renewal.
template <typename Renew>
json measure(const char* name, Client& c, pid_t pid, int leases, int rounds, Renew renew) {
  const Counters before = read(c, pid);
  std::vector<double> latency;
  latency.reserve(static_cast<std::size_t>(leases) * rounds);
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < leases; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      renew(i);
      latency.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Counters after = read(c, pid);
  const double n = static_cast<double>(latency.size());
  json j = {{"renewal", name},
            {"renewals", latency.size()},
            {"wallSeconds", wall},
            {"renewalsPerSecond", n / wall},
            {"latencyP50Seconds", quantile(latency, 0.5)},
            {"latencyP99Seconds", quantile(latency, 0.99)},
            {"etcdCpuSecondsPerRenewal", (after.cpu - before.cpu) / n},
            {"proposalsPerRenewal", (after.proposals - before.proposals) / n},
            {"walFsyncsPerRenewal", (after.fsyncs - before.fsyncs) / n},
            {"dbBytesPerRenewal", (after.dbBytes - before.dbBytes) / n},
            {"leasesRenewedPerRenewal", (after.leaseRenewed - before.leaseRenewed) / n}};
  std::printf(
      "%-10s %7.0f renewals  %7.0f/s  p50 %6.2f ms  p99 %6.2f ms  etcd CPU %6.1f us  proposals %.3f  "
      "fsyncs %.3f  db +%.0f B\n",
      name, n, n / wall, 1e3 * quantile(latency, 0.5), 1e3 * quantile(latency, 0.99),
      1e6 * (after.cpu - before.cpu) / n, (after.proposals - before.proposals) / n, (after.fsyncs - before.fsyncs) / n,
      (after.dbBytes - before.dbBytes) / n);
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  int leases = 1000, rounds = 5;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--leases" && i + 1 < argc)
      leases = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else {
      std::cerr << "usage: cpscale_bench_etcd_lease [--leases N] [--rounds R] [--out FILE.json]\n";
      return 2;
    }
  }
  if (leases < 1 || rounds < 1) {
    std::cerr << "--leases and --rounds must be at least 1\n";
    return 2;
  }
  const fs::path etcd = controlplane::defaultBinDir() / "etcd";
  if (!fs::exists(etcd)) {
    std::cerr << etcd << " is missing: make control-plane, or set CPSCALE_BIN_DIR\n";
    return 3;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const fs::path dir = fs::temp_directory_path() / ("cpscale-bench-etcd-" + std::to_string(::getpid()));
  fs::create_directories(dir / "data");
  fs::permissions(dir / "data", fs::perms::owner_all, fs::perm_options::replace);
  const std::string client = "http://127.0.0.1:" + std::to_string(kube::testing::freePort());
  const std::string peer = "http://127.0.0.1:" + std::to_string(kube::testing::freePort());
  const auto proc = controlplane::spawn(
      {{etcd.string(), "--name=bench", "--data-dir=" + (dir / "data").string(), "--listen-client-urls=" + client,
        "--advertise-client-urls=" + client, "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
        "--initial-cluster=bench=" + peer, "--initial-cluster-state=new", "--log-level=warn"},
       dir / "etcd.log",
       false,
       {}});
  Client c(client);
  bool healthy = false;
  for (int i = 0; i < 100 && !healthy; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CURL* h = curl_easy_init();
    std::string body;
    curl_easy_setopt(h, CURLOPT_URL, (client + "/health").c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    healthy = curl_easy_perform(h) == CURLE_OK && body.find("\"true\"") != std::string::npos;
    curl_easy_cleanup(h);
  }
  if (!healthy) {
    std::cerr << "etcd did not become healthy; its log: " << (dir / "etcd.log") << "\n";
    controlplane::terminate(proc, std::chrono::seconds(5));
    return 3;
  }
  const std::string version = json::parse(c.call("/version")).value("etcdserver", "unknown");

  // A node Lease as kube-apiserver stores it is ~870 bytes of protobuf; the value
  // written here is that size.
  const std::string value = kube::base64Encode(std::string(870, 'l'));
  auto key = [](int i) { return kube::base64Encode("/registry/leases/kube-node-lease/node-" + std::to_string(i)); };
  for (int i = 0; i < leases; ++i) c.call("/v3/kv/put", json{{"key", key(i)}, {"value", value}}.dump());
  std::vector<std::string> ids;
  for (int i = 0; i < leases; ++i)
    ids.push_back(json::parse(c.call("/v3/lease/grant", R"({"TTL":"40"})")).value("ID", ""));

  std::printf("etcd %s, %d leases x %d rounds, one client, one request at a time\n", version.c_str(), leases, rounds);
  json results = json::array();
  results.push_back(measure("put", c, proc.pid, leases, rounds, [&](int i) {
    c.call("/v3/kv/put", json{{"key", key(i)}, {"value", value}}.dump());
  }));
  results.push_back(measure("keepalive", c, proc.pid, leases, rounds, [&](int i) {
    c.call("/v3/lease/keepalive", json{{"ID", ids[i]}}.dump());
  }));
  const json doc = {{"benchmark", "etcd_lease_renewal"},
                    {"etcdVersion", version},
                    {"leases", leases},
                    {"rounds", rounds},
                    {"valueBytes", 870},
                    {"results", results}};
  if (!out.empty()) std::ofstream(out) << doc.dump(2) << "\n";
  controlplane::terminate(proc, std::chrono::seconds(5));
  fs::remove_all(dir);
  curl_global_cleanup();
  return 0;
}
