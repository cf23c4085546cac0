#include "sim/controlplane/local_plane.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/pki.h"
#include "sim/controlplane/readiness.h"
#include "sim/kube/base64.h"

namespace cpscale::controlplane {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string versionOf(const fs::path& binary, const std::string& prefix) {
  // `--version` output of the pinned binaries, e.g. "Kubernetes v1.36.3".
  std::string cmd = "'" + binary.string() + "' --version 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buf[256] = {0};
  std::string first = fgets(buf, sizeof buf, p) ? buf : "";
  ::pclose(p);
  while (!first.empty() && (first.back() == '\n' || first.back() == '\r')) first.pop_back();
  if (first.rfind(prefix, 0) == 0) first = first.substr(prefix.size());
  return first.empty() ? "unknown" : first;
}

json toJson(const Component& c) {
  json j = {{"role", c.role},        {"name", c.name},       {"url", c.url},
            {"log", c.log.string()}, {"pid", c.process.pid}, {"startTicks", c.process.startTicks}};
  if (!c.apiserver.empty()) {
    j["apiserver"] = c.apiserver;
    j["dedicatedApiserver"] = c.dedicatedApiserver;
  }
  return j;
}

bool isController(const std::string& role) { return role == "kube-controller-manager" || role == "kube-scheduler"; }

// A kubeconfig with one context per (name, server), all for one user whose
// credentials are embedded, and `current` as the current context. Owner-only, like the
// key it carries.
void writeKubeconfigFile(const fs::path& path, const std::vector<std::pair<std::string, std::string>>& servers,
                         const std::string& current, const std::string& user, const fs::path& caCert,
                         const fs::path& cert, const fs::path& key) {
  const std::string ca = kube::base64Encode(readFile(caCert));
  std::string clusters, contexts;
  for (const auto& [name, server] : servers) {
    clusters +=
        "- name: " + name + "\n  cluster:\n    server: " + server + "\n    certificate-authority-data: " + ca + "\n";
    contexts += "- name: " + name + "\n  context:\n    cluster: " + name + "\n    user: " + user + "\n";
  }
  std::string text = "apiVersion: v1\nkind: Config\nclusters:\n" + clusters + "contexts:\n" + contexts +
                     "current-context: " + current + "\nusers:\n- name: " + user +
                     "\n  user:\n    client-certificate-data: " + kube::base64Encode(readFile(cert)) +
                     "\n    client-key-data: " + kube::base64Encode(readFile(key)) + "\npreferences: {}\n";
  writeFile(path, text, fs::perms::owner_read | fs::perms::owner_write);
}

}  // namespace

std::vector<std::string> PlaneRecord::urls(const std::string& role) const {
  std::vector<std::string> out;
  for (const auto& c : components)
    if (c.role == role) out.push_back(c.url);
  return out;
}

bool PlaneRecord::has(const std::string& role) const {
  for (const auto& c : components)
    if (c.role == role) return true;
  return false;
}

std::vector<std::string> PlaneRecord::clientApiserverUrls() const {
  std::vector<std::string> out;
  for (const auto& c : components) {
    if (c.role != "kube-apiserver") continue;
    bool dedicated = false;
    for (const auto& d : components) dedicated = dedicated || (d.dedicatedApiserver && d.apiserver == c.name);
    if (!dedicated) out.push_back(c.url);
  }
  return out;
}

int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw UnavailableError("no free port on 127.0.0.1");
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

bool portInUse(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool inUse = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0;
  ::close(fd);
  return inUse;
}

fs::path defaultBinDir() {
  if (const char* d = std::getenv("CPSCALE_BIN_DIR"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache/cpscale/bin/current";
}

fs::path defaultStateDir(const std::string& name) {
  if (const char* d = std::getenv("CPSCALE_STATE_DIR"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".local/state/cpscale" / name;
}

fs::path recordPath(const fs::path& stateDir) { return stateDir / "plane.json"; }

std::optional<PlaneRecord> readRecord(const fs::path& stateDir) {
  fs::path path = recordPath(stateDir);
  if (!fs::exists(path)) return std::nullopt;
  try {
    json j = json::parse(readFile(path));
    PlaneRecord r;
    r.name = j.at("name");
    r.stateDir = j.at("stateDir").get<std::string>();
    r.profileName = j.value("profile", "");
    r.profileSource = j.value("profileSource", "");
    r.kubeconfig = j.at("kubeconfig").get<std::string>();
    r.kubernetesVersion = j.value("kubernetesVersion", "");
    r.etcdVersion = j.value("etcdVersion", "");
    r.startedAt = j.value("startedAt", "");
    for (const auto& c : j.at("components")) {
      Component comp;
      comp.role = c.at("role");
      comp.name = c.at("name");
      comp.url = c.at("url");
      comp.log = c.at("log").get<std::string>();
      comp.process.pid = c.at("pid");
      comp.process.startTicks = c.at("startTicks");
      comp.apiserver = c.value("apiserver", "");
      comp.dedicatedApiserver = c.value("dedicatedApiserver", false);
      r.components.push_back(comp);
    }
    return r;
  } catch (const json::exception& e) {
    throw ConfigError(path.string(), "", std::string("corrupt plane record: ") + e.what());
  }
}

bool anyRunning(const PlaneRecord& record) {
  for (const auto& c : record.components)
    if (isRunning(c.process)) return true;
  return false;
}

void removeStateKeepingLogs(const fs::path& stateDir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(stateDir, ec)) {
    if (entry.path().filename() == "logs") continue;
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    if (rm) std::cerr << "cpscale: cannot delete " << entry.path().string() << ": " << rm.message() << "\n";
  }
}

int stopRecorded(const PlaneRecord& record) {
  int stopped = 0;
  // Clients before servers: an apiserver whose etcd vanished (or a controller whose
  // apiserver did) logs errors for its last seconds and may exit non-zero, which would
  // look like a crash.
  for (const char* role : {"kube-controller-manager", "kube-scheduler", "kube-apiserver", "etcd"})
    for (const auto& c : record.components)
      if (c.role == role && terminate(c.process, std::chrono::seconds(15))) ++stopped;
  std::error_code ec;
  fs::remove(recordPath(record.stateDir), ec);
  return stopped;
}

LocalPlane::LocalPlane(PlaneOptions options) : options_(std::move(options)) {
  try {
    start();
  } catch (...) {
    stop();
    throw;
  }
}

LocalPlane::~LocalPlane() {
  if (!released_)
    stop();
  else
    stopSpawner();
}

ProcessIdentity LocalPlane::spawnOnPlaneThread(const SpawnOptions& options) {
  std::packaged_task<ProcessIdentity()> task([options] { return spawn(options); });
  auto result = task.get_future();
  {
    std::lock_guard lock(spawnMu_);
    spawns_.push_back(std::move(task));
    if (!spawner_.joinable())
      spawner_ = std::thread([this] {
        std::unique_lock l(spawnMu_);
        for (;;) {
          spawnCv_.wait(l, [this] { return spawnerDone_ || !spawns_.empty(); });
          if (spawns_.empty()) return;
          auto t = std::move(spawns_.front());
          spawns_.pop_front();
          l.unlock();
          t();
          l.lock();
        }
      });
  }
  spawnCv_.notify_all();
  return result.get();
}

void LocalPlane::stop() {
  {
    std::lock_guard lock(mu_);
    if (!stopped_) {
      stopped_ = true;
      // A frozen member would ignore SIGTERM until its grace ran out.
      for (const auto& c : record_.components)
        if (isRunning(c.process)) ::kill(c.process.pid, SIGCONT);
      stopRecorded(record_);
    }
  }
  // After the members stopped: those it spawned would get their parent-death signal.
  stopSpawner();
}

void LocalPlane::stopSpawner() {
  {
    std::lock_guard lock(spawnMu_);
    spawnerDone_ = true;
  }
  spawnCv_.notify_all();
  if (spawner_.joinable()) spawner_.join();
}

std::optional<std::string> LocalPlane::crashed() const {
  std::lock_guard lock(mu_);
  for (const auto& c : record_.components) {
    if (down_.contains(c.name)) continue;
    if (auto how = reapIfExited(c.process)) {
      return c.name + " " + *how + "; last lines of " + c.log.string() + ":\n" + tailFile(c.log, 15);
    }
  }
  return std::nullopt;
}

std::vector<std::string> memberNames(const Profile& profile) {
  std::vector<std::string> out;
  for (const auto& e : profile.etcds) out.push_back("etcd-" + e.name);
  for (int i = 0; i < profile.apiservers; ++i) out.push_back("kube-apiserver-" + std::to_string(i));
  if (profile.controllerManager.enabled) out.push_back("kube-controller-manager");
  if (profile.scheduler.enabled) out.push_back("kube-scheduler");
  return out;
}

Component& LocalPlane::member(const std::string& name) {
  for (auto& c : record_.components)
    if (c.name == name) return c;
  std::string known;
  for (const auto& c : record_.components) known += (known.empty() ? "" : ", ") + c.name;
  throw ConfigError("the local plane", "member", "no member named '" + name + "' (the plane has " + known + ")");
}

std::vector<std::string> LocalPlane::memberNames() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& c : record_.components) out.push_back(c.name);
  return out;
}

void LocalPlane::kill(const std::string& name) {
  std::lock_guard lock(mu_);
  Component& c = member(name);
  down_.insert(name);
  if (isRunning(c.process)) ::kill(c.process.pid, SIGKILL);
  for (int i = 0; i < 500 && isRunning(c.process); ++i) {
    reapIfExited(c.process);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reapIfExited(c.process);
}

void LocalPlane::markDown(const std::string& name) {
  std::lock_guard lock(mu_);
  member(name);
  down_.insert(name);
}

void LocalPlane::restart(const std::string& name, const std::function<bool()>& abandon) {
  Component copy;
  {
    std::lock_guard lock(mu_);
    Component& c = member(name);
    if (!down_.contains(name)) throw std::logic_error(name + " was not killed");
    // A member's port is free again once it died, unless something took it meanwhile.
    c.process = spawnOnPlaneThread({argv_.at(name), c.log, options_.detached, cpusOf(c.role)});
    writeRecord();
    copy = c;
  }
  // Ready as at start (etcd's /health, an apiserver's /readyz, a controller's leader
  // Lease); until then crashed() still looks away, and a member that exits at once is
  // reported here.
  waitReady(copy, std::chrono::steady_clock::now() + options_.readyTimeout, abandon);
  std::lock_guard lock(mu_);
  down_.erase(name);
}

void LocalPlane::pause(const std::string& name) {
  std::lock_guard lock(mu_);
  Component& c = member(name);
  if (isRunning(c.process)) ::kill(c.process.pid, SIGSTOP);
}

void LocalPlane::resume(const std::string& name) {
  std::lock_guard lock(mu_);
  Component& c = member(name);
  if (isRunning(c.process)) ::kill(c.process.pid, SIGCONT);
}

void LocalPlane::start() {
  const fs::path& dir = options_.stateDir;
  fs::path apiserverBin = options_.binDir / "kube-apiserver";
  fs::path etcdBin = options_.binDir / "etcd";
  std::vector<fs::path> binaries{apiserverBin, etcdBin};
  if (options_.profile.controllerManager.enabled) binaries.push_back(options_.binDir / "kube-controller-manager");
  if (options_.profile.scheduler.enabled) binaries.push_back(options_.binDir / "kube-scheduler");
  for (const auto& bin : binaries)
    if (::access(bin.c_str(), X_OK) != 0)
      throw UnavailableError("missing binary " + bin.string() +
                             " (build the pinned upstream binaries with `make control-plane`, or set CPSCALE_BIN_DIR)");
  if (options_.apiserverPort && portInUse(*options_.apiserverPort))
    throw UnavailableError("port 127.0.0.1:" + std::to_string(*options_.apiserverPort) + " is already in use");

  fs::create_directories(dir / "logs");
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  record_.name = options_.name;
  record_.stateDir = fs::absolute(dir);
  record_.profileName = options_.profile.name;
  record_.profileSource = options_.profile.source;
  record_.kubeconfig = record_.stateDir / "kubeconfig";
  record_.kubernetesVersion = versionOf(apiserverBin, "Kubernetes ");
  record_.etcdVersion = versionOf(etcdBin, "etcd Version: ");
  record_.startedAt = utcNowRfc3339();

  ensurePki(PkiPaths{dir / "pki"});

  auto deadline = std::chrono::steady_clock::now() + options_.readyTimeout;
  const auto& etcds = options_.profile.etcds;
  for (std::size_t i = 0; i < etcds.size(); ++i) startEtcd(etcds[i], static_cast<int>(i));
  // Record as soon as there is something to stop, so a `down` from another terminal
  // can clean up even if this process is killed while waiting.
  writeRecord();
  for (const auto& c : record_.components) waitReady(c, deadline);

  std::vector<std::string> etcdUrls = record_.urls("etcd");
  for (int i = 0; i < options_.profile.apiservers; ++i) {
    int port = (i == 0 && options_.apiserverPort) ? *options_.apiserverPort : freeLoopbackPort();
    startApiserver(i, port, etcdUrls);
  }
  writeRecord();
  writeKubeconfig();
  for (const auto& c : record_.components)
    if (c.role == "kube-apiserver") waitReady(c, deadline);

  // The controllers once their apiservers serve: they list and watch from the start.
  if (options_.profile.controllerManager.enabled)
    startController("kube-controller-manager", options_.profile.controllerManager);
  if (options_.profile.scheduler.enabled) startController("kube-scheduler", options_.profile.scheduler);
  writeRecord();
  for (const auto& c : record_.components)
    if (isController(c.role)) waitReady(c, deadline);
}

void LocalPlane::startEtcd(const EtcdSpec& spec, int index) {
  const fs::path& dir = options_.stateDir;
  std::string name = "etcd-" + spec.name;
  int clientPort = freeLoopbackPort();
  int peerPort = freeLoopbackPort();
  while (peerPort == clientPort) peerPort = freeLoopbackPort();
  std::string client = "http://127.0.0.1:" + std::to_string(clientPort);
  std::string peer = "http://127.0.0.1:" + std::to_string(peerPort);
  fs::path data = dir / name;
  fs::create_directories(data);
  fs::permissions(data, fs::perms::owner_all, fs::perm_options::replace);

  // Plain HTTP on loopback: etcd is reachable only from this machine, and the
  // apiserver <-> etcd hop carries no credentials. Its /metrics is on the client URL.
  std::vector<std::string> argv = {
      (options_.binDir / "etcd").string(),
      "--name=" + name,
      "--data-dir=" + data.string(),
      "--listen-client-urls=" + client,
      "--advertise-client-urls=" + client,
      "--listen-peer-urls=" + peer,
      "--initial-advertise-peer-urls=" + peer,
      "--initial-cluster=" + name + "=" + peer,
      "--initial-cluster-state=new",
      "--initial-cluster-token=cpscale-" + options_.name + "-" + std::to_string(index),
      "--log-level=warn",
  };
  for (const auto& a : spec.extraArgs) argv.push_back(a);
  Component c{"etcd", name, client, dir / "logs" / (name + ".log"), {}, "", false};
  c.process = spawn({argv, c.log, options_.detached, cpusOf(c.role)});
  argv_[c.name] = argv;
  record_.components.push_back(c);
}

void LocalPlane::startApiserver(int index, int port, const std::vector<std::string>& etcdUrls) {
  const fs::path& dir = options_.stateDir;
  const Profile& p = options_.profile;
  PkiPaths pki{record_.stateDir / "pki"};
  std::string name = "kube-apiserver-" + std::to_string(index);
  std::vector<std::string> argv = {
      (options_.binDir / "kube-apiserver").string(),
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      "--secure-port=" + std::to_string(port),
      "--etcd-servers=" + etcdUrls.at(0),
      "--etcd-prefix=/registry",
      "--tls-cert-file=" + pki.servingCert().string(),
      "--tls-private-key-file=" + pki.servingKey().string(),
      "--client-ca-file=" + pki.caCert().string(),
      // Published in extension-apiserver-authentication, which the controllers'
      // delegated authentication reads (they log errors without it). No certificate
      // with the one allowed name exists: nobody can assert identities by header.
      "--requestheader-client-ca-file=" + pki.caCert().string(),
      "--requestheader-allowed-names=cpscale-front-proxy",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--service-account-key-file=" + pki.serviceAccountPub().string(),
      "--service-account-signing-key-file=" + pki.serviceAccountKey().string(),
      "--service-cluster-ip-range=10.0.0.0/16",  // room for a fleet's Services (65,534 ClusterIPs)
      "--authorization-mode=RBAC",
      "--allow-privileged=true",
      "--watch-cache=" + std::string(p.watchCache ? "true" : "false"),
      "--enable-priority-and-fairness=" + std::string(p.priorityAndFairness ? "true" : "false"),
  };
  // Without a controller-manager nothing creates the "default" ServiceAccount that
  // this admission plugin insists on for every pod.
  if (!p.controllerManager.enabled) argv.push_back("--disable-admission-plugins=ServiceAccount");
  if (std::string o = p.etcdServersOverrides(etcdUrls); !o.empty()) argv.push_back("--etcd-servers-overrides=" + o);
  if (!p.watchCacheSizes.empty()) {
    std::string s;
    for (const auto& w : p.watchCacheSizes) s += (s.empty() ? "" : ",") + w;
    argv.push_back("--watch-cache-sizes=" + s);
  }
  if (p.maxRequestsInflight) argv.push_back("--max-requests-inflight=" + std::to_string(*p.maxRequestsInflight));
  if (p.maxMutatingRequestsInflight)
    argv.push_back("--max-mutating-requests-inflight=" + std::to_string(*p.maxMutatingRequestsInflight));
  if (!p.featureGates.empty()) {
    std::string s;
    for (const auto& [k, v] : p.featureGates) s += (s.empty() ? "" : ",") + k + "=" + (v ? "true" : "false");
    argv.push_back("--feature-gates=" + s);
  }
  for (const auto& a : p.apiserverArgs) argv.push_back(a);

  Component c{"kube-apiserver",
              name,
              "https://127.0.0.1:" + std::to_string(port),
              dir / "logs" / (name + ".log"),
              {},
              "",
              false};
  c.process = spawn({argv, c.log, options_.detached, cpusOf(c.role)});
  argv_[c.name] = argv;
  record_.components.push_back(c);
}

void LocalPlane::startController(const std::string& role, const ComponentSpec& spec) {
  const fs::path& dir = record_.stateDir;
  PkiPaths pki{dir / "pki"};
  const int replica = spec.apiserver.value_or(0);
  Component apiserver;
  for (const auto& c : record_.components)
    if (c.role == "kube-apiserver" && c.name == "kube-apiserver-" + std::to_string(replica)) apiserver = c;
  fs::path kubeconfig = dir / (role + ".kubeconfig");
  writeKubeconfigFile(kubeconfig, {{"cpscale", apiserver.url}}, "cpscale", "system:" + role, pki.caCert(),
                      pki.componentCert(role), pki.componentKey(role));
  const int port = freeLoopbackPort();
  // Its own identity (system:<component>, which upstream's default RBAC grants what it
  // needs), on loopback, with leader election as every real deployment runs it. The
  // plane's CA authenticates scrapes of /metrics with the admin certificate.
  std::vector<std::string> argv = {
      (options_.binDir / role).string(),
      "--kubeconfig=" + kubeconfig.string(),
      "--authentication-kubeconfig=" + kubeconfig.string(),
      "--authorization-kubeconfig=" + kubeconfig.string(),
      "--bind-address=127.0.0.1",
      "--secure-port=" + std::to_string(port),
      "--tls-cert-file=" + pki.componentCert(role).string(),
      "--tls-private-key-file=" + pki.componentKey(role).string(),
      "--client-ca-file=" + pki.caCert().string(),
      "--leader-elect=true",
  };
  if (role == "kube-controller-manager") {
    // Each controller with its own service account (as kubeadm runs it), tokens signed
    // with the key the apiservers verify.
    argv.push_back("--use-service-account-credentials=true");
    argv.push_back("--service-account-private-key-file=" + pki.serviceAccountKey().string());
    argv.push_back("--root-ca-file=" + pki.caCert().string());
    argv.push_back("--cluster-name=cpscale-" + options_.name);
  }
  for (const auto& a : spec.args) argv.push_back(a);
  Component c{role,
              role,
              "https://127.0.0.1:" + std::to_string(port),
              dir / "logs" / (role + ".log"),
              {},
              apiserver.name,
              spec.apiserver.has_value()};
  c.process = spawn({argv, c.log, options_.detached, cpusOf(c.role)});
  argv_[c.name] = argv;
  record_.components.push_back(c);
}

void LocalPlane::waitReady(const Component& c, std::chrono::steady_clock::time_point deadline,
                           const std::function<bool()>& abandon) {
  PkiPaths pki{record_.stateDir / "pki"};
  std::vector<std::string> urls;
  if (c.role == "etcd") {
    urls.push_back(c.url + "/health");
  } else if (!isController(c.role)) {
    urls.push_back(c.url + "/readyz");
  } else {
    // A controller component is ready once it serves (/healthz) and has taken its
    // leader Lease (read through the apiserver it talks to): only then do its
    // controllers start, and a run's steady window should not see them starting.
    urls.push_back(c.url + "/healthz");
    for (const auto& a : record_.components)
      if (a.name == c.apiserver)
        urls.push_back(a.url + "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + c.role);
  }
  for (const auto& url : urls) {
    ReadinessProbe probe(url, c.role == "etcd" ? std::nullopt : std::optional<PkiPaths>(pki));
    std::string last;
    for (;;) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw UnavailableError(c.name + " not ready after " + std::to_string(options_.readyTimeout.count()) +
                               " s (last probe of " + url + ": " + last + "); last lines of " + c.log.string() + ":\n" +
                               tailFile(c.log, 15));
      if (interrupted()) throw UnavailableError("interrupted while waiting for " + c.name);
      if (abandon && abandon())
        throw UnavailableError("no longer waited for: the run ended before " + c.name + " was ready");
      if (auto how = reapIfExited(c.process))
        throw UnavailableError(c.name + " " + *how + " before it became ready; last lines of " + c.log.string() +
                               ":\n" + tailFile(c.log, 15));
      auto result = probe.check();
      if (result.ready) break;
      last = result.detail;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

void LocalPlane::writeKubeconfig() {
  PkiPaths pki{record_.stateDir / "pki"};
  const std::string cluster = "cpscale-" + options_.name;
  // One cluster and context per apiserver replica, so each can be addressed with
  // kubectl --context; current is the first that serves clients (never one dedicated
  // to a controller component).
  std::vector<std::pair<std::string, std::string>> servers;
  auto apiservers = record_.urls("kube-apiserver");
  for (std::size_t i = 0; i < apiservers.size(); ++i)
    servers.emplace_back(i == 0 ? cluster : cluster + "-apiserver-" + std::to_string(i), apiservers[i]);
  const std::string current = servers.at(static_cast<std::size_t>(options_.profile.clientApiservers().front())).first;
  writeKubeconfigFile(record_.kubeconfig, servers, current, cluster + "-admin", pki.caCert(), pki.adminCert(),
                      pki.adminKey());
}

void LocalPlane::writeRecord() const {
  json comps = json::array();
  for (const auto& c : record_.components) comps.push_back(toJson(c));
  json j = {{"name", record_.name},
            {"stateDir", record_.stateDir.string()},
            {"profile", record_.profileName},
            {"profileSource", record_.profileSource},
            {"kubeconfig", record_.kubeconfig.string()},
            {"kubernetesVersion", record_.kubernetesVersion},
            {"etcdVersion", record_.etcdVersion},
            {"startedAt", record_.startedAt},
            {"components", comps}};
  writeFile(recordPath(record_.stateDir), j.dump(2) + "\n",
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

}  // namespace cpscale::controlplane
