// up, down, status, version: the local control plane's life cycle.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <cxxopts.hpp>
#include <iomanip>
#include <iostream>
#include <random>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/local_plane.h"

namespace cpscale::cli {
namespace fs = std::filesystem;
using controlplane::PlaneRecord;

std::optional<cxxopts::ParseResult> parseArgs(cxxopts::Options& opts, const Args& args) {
  std::vector<const char*> argv{opts.program().c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  opts.allow_unrecognised_options();
  auto result = opts.parse(static_cast<int>(argv.size()), argv.data());
  if (!result.unmatched().empty()) throw ConfigError("command line", result.unmatched().front(), "unexpected argument");
  if (result.count("help")) {
    std::cout << opts.help() << "\n";
    return std::nullopt;
  }
  return result;
}

namespace {

void addPlaneOptions(cxxopts::Options& opts) {
  opts.add_options()("name", "name of the local plane", cxxopts::value<std::string>()->default_value("cpscale"))(
      "state-dir", "state directory (default: $CPSCALE_STATE_DIR or ~/.local/state/cpscale/<name>)",
      cxxopts::value<std::string>())("h,help", "show this help");
}

// How to name this plane again on the command line ("", "--name x", "--state-dir d").
std::string planeSelector(const cxxopts::ParseResult& r) {
  if (r.count("state-dir")) return " --state-dir " + fs::absolute(r["state-dir"].as<std::string>()).string();
  std::string name = r["name"].as<std::string>();
  return name == "cpscale" ? "" : " --name " + name;
}

fs::path stateDirOf(const cxxopts::ParseResult& r) {
  if (r.count("state-dir")) return fs::absolute(r["state-dir"].as<std::string>());
  return controlplane::defaultStateDir(r["name"].as<std::string>());
}

// Holds an exclusive lock on the state directory so two `up`s cannot race.
class StateLock {
 public:
  explicit StateLock(const fs::path& dir) {
    fs::create_directories(dir);
    fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      throw ConfigError(dir.string(), "", "another cpscale is starting or stopping this plane");
  }
  ~StateLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

void printPlane(std::ostream& os, const PlaneRecord& r, bool withLiveness) {
  for (const auto& c : r.components) {
    os << "  " << std::left << std::setw(24) << c.name << std::setw(26) << c.url;
    os << (c.role == "etcd" ? "etcd " + r.etcdVersion : "Kubernetes " + r.kubernetesVersion);
    if (withLiveness) os << (controlplane::isRunning(c.process) ? "   running" : "   NOT RUNNING");
    os << "   pid " << c.process.pid;
    if (!c.apiserver.empty()) os << "   -> " << c.apiserver << (c.dedicatedApiserver ? " (dedicated)" : "");
    os << "\n";
  }
}

}  // namespace

int up(const Args& args) {
  cxxopts::Options opts("cpscale up", "Start the local vanilla control plane (etcd + kube-apiserver on 127.0.0.1).");
  addPlaneOptions(opts);
  opts.add_options()("profile", "control-plane profile (YAML); default: one apiserver, one etcd",
                     cxxopts::value<std::string>())("port", "port of the first kube-apiserver (default: a free port)",
                                                    cxxopts::value<int>())(
      "bin-dir",
      "directory with the pinned kube-apiserver and etcd (default: $CPSCALE_BIN_DIR or ~/.cache/cpscale/bin/current)",
      cxxopts::value<std::string>())("timeout", "seconds to wait for readiness",
                                     cxxopts::value<int>()->default_value("180"));
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  controlplane::PlaneOptions po;
  po.name = r["name"].as<std::string>();
  po.stateDir = stateDirOf(r);
  if (r.count("profile")) po.profile = controlplane::loadProfile(r["profile"].as<std::string>());
  po.binDir = r.count("bin-dir") ? fs::path(r["bin-dir"].as<std::string>()) : controlplane::defaultBinDir();
  if (r.count("port")) {
    int port = r["port"].as<int>();
    if (port < 1 || port > 65535) throw ConfigError("command line", "--port", "must be between 1 and 65535");
    po.apiserverPort = port;
  }
  int timeout = r["timeout"].as<int>();
  if (timeout <= 0) throw ConfigError("command line", "--timeout", "must be a positive number of seconds");
  po.readyTimeout = std::chrono::seconds(timeout);
  po.detached = true;

  StateLock lock(po.stateDir);
  if (auto existing = controlplane::readRecord(po.stateDir)) {
    if (controlplane::anyRunning(*existing)) {
      std::cerr << "cpscale up: a plane is already running in " << po.stateDir.string() << " (started "
                << existing->startedAt << "):\n";
      printPlane(std::cerr, *existing, true);
      std::cerr << "Use it (KUBECONFIG=" << existing->kubeconfig.string() << "), or stop it first with `cpscale down"
                << planeSelector(r) << "`.\n";
      return static_cast<int>(ExitCode::kBadInput);
    }
    // A plane that died without `down` (machine restart, kill -9): its record is stale.
    controlplane::stopRecorded(*existing);
  }

  installInterruptHandlers();
  std::cerr << "cpscale up: starting " << po.profile.name << " (" << po.profile.apiservers << " kube-apiserver"
            << (po.profile.apiservers > 1 ? "s" : "") << ", " << po.profile.etcds.size() << " etcd"
            << (po.profile.etcds.size() > 1 ? "s" : "")
            << (po.profile.controllerManager.enabled ? ", kube-controller-manager" : "")
            << (po.profile.scheduler.enabled ? ", kube-scheduler" : "") << ") in " << po.stateDir.string() << "\n";
  controlplane::LocalPlane plane(po);
  plane.release();
  const PlaneRecord& rec = plane.record();
  std::cout << "Local control plane \"" << rec.name << "\" is ready (profile " << rec.profileName << "):\n";
  printPlane(std::cout, rec, false);
  std::cout << "\nUse it:\n  export KUBECONFIG=" << rec.kubeconfig.string() << "\n  kubectl get --raw /readyz\n"
            << "Logs: " << (rec.stateDir / "logs").string() << "\nStop it:\n  cpscale down" << planeSelector(r) << "\n";
  return 0;
}

int down(const Args& args) {
  cxxopts::Options opts("cpscale down", "Stop the local control plane started by `cpscale up`.");
  addPlaneOptions(opts);
  opts.add_options()("purge", "also remove the state directory (PKI, etcd data, logs)");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  fs::path dir = stateDirOf(r);
  auto record = controlplane::readRecord(dir);
  if (!record) {
    std::cout << "No local plane recorded in " << dir.string() << "; nothing to stop.\n";
  } else {
    StateLock lock(dir);
    int n = controlplane::stopRecorded(*record);
    std::cout << "Stopped " << n << " process" << (n == 1 ? "" : "es") << " of plane \"" << record->name << "\".\n";
  }
  if (r.count("purge") && fs::exists(dir)) {
    fs::remove_all(dir);
    std::cout << "Removed " << dir.string() << "\n";
  }
  return 0;
}

int status(const Args& args) {
  cxxopts::Options opts("cpscale status", "Show the local control plane and whether each member runs.");
  addPlaneOptions(opts);
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  fs::path dir = stateDirOf(r);
  auto record = controlplane::readRecord(dir);
  if (!record) {
    std::cout << "No local plane recorded in " << dir.string() << ".\n";
    return static_cast<int>(ExitCode::kUnavailable);
  }
  std::cout << "Plane \"" << record->name << "\" (profile " << record->profileName << "), started " << record->startedAt
            << "\n";
  printPlane(std::cout, *record, true);
  std::cout << "KUBECONFIG=" << record->kubeconfig.string() << "\n";
  for (const auto& c : record->components)
    if (!controlplane::isRunning(c.process)) return static_cast<int>(ExitCode::kUnavailable);
  return 0;
}

int version(const Args&) {
  std::cout << "cpscale " << CPSCALE_VERSION << "\n"
            << "pinned upstream: kube-apiserver, kube-controller-manager, kube-scheduler " << CPSCALE_KUBERNETES_VERSION
            << ", etcd " << CPSCALE_ETCD_VERSION << "\n";
  return 0;
}

// Short, DNS-label-safe and unique enough: it prefixes every name the run creates.
std::string newRunId() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> hex(0, 15);
  std::string id = "r";
  for (int i = 0; i < 7; ++i) id += "0123456789abcdef"[hex(rd)];
  return id;
}

void checkRunId(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 20 && std::isalnum(static_cast<unsigned char>(id.front())) &&
            std::isalnum(static_cast<unsigned char>(id.back()));
  for (char c : id)
    ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-');
  if (!ok)
    throw ConfigError("command line", "--run-id",
                      "'" + id + "' must be 1-20 lower-case letters, digits or '-', starting and ending alphanumeric");
}

bool assumeYes(const cxxopts::ParseResult& r) {
  if (r.count("yes")) return true;
  const char* env = std::getenv("CPSCALE_ASSUME_YES");
  return env && std::string(env) == "1";
}

}  // namespace cpscale::cli
