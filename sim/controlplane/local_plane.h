// The embedded local control plane: vanilla etcd(s), kube-apiserver(s),
// kube-controller-manager and kube-scheduler started as child processes on 127.0.0.1,
// with generated PKI and a kubeconfig that stock kubectl accepts. Its state directory records what was started
// (plane.json) so that `cpscale down` stops exactly those processes and nothing else.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sim/controlplane/placement.h"
#include "sim/controlplane/process.h"
#include "sim/controlplane/profile.h"

namespace cpscale::controlplane {

struct Component {
  // "etcd", "kube-apiserver", "kube-controller-manager" or "kube-scheduler".
  std::string role;
  std::string name;  // etcd-main, kube-apiserver-0, kube-controller-manager, ...
  // Client URL (etcd), or the https URL of the secure port (the others: /metrics and
  // /healthz of a controller component are there).
  std::string url;
  std::filesystem::path log;
  ProcessIdentity process;
  // A controller component: the apiserver replica it talks to, and whether that replica
  // is dedicated to it (the workloads' clients do not reach it).
  std::string apiserver;
  bool dedicatedApiserver = false;
};

// What plane.json holds: enough to find, use and stop a running plane.
struct PlaneRecord {
  std::string name;
  std::filesystem::path stateDir;
  std::string profileName;
  std::string profileSource;
  std::filesystem::path kubeconfig;
  std::string kubernetesVersion;
  std::string etcdVersion;
  std::string startedAt;  // RFC 3339, UTC
  std::vector<Component> components;

  std::vector<std::string> urls(const std::string& role) const;
  bool has(const std::string& role) const;
  // The https URLs of the apiservers the workloads' clients reach: all but those
  // dedicated to a controller component.
  std::vector<std::string> clientApiserverUrls() const;
};

struct PlaneOptions {
  std::filesystem::path stateDir;
  // Holds kube-apiserver and etcd, and kube-controller-manager and kube-scheduler when
  // the profile runs them.
  std::filesystem::path binDir;
  Profile profile;
  std::string name = "cpscale";
  // Detached planes outlive this process (cpscale up); attached ones die with it.
  bool detached = false;
  // Port of the first kube-apiserver; free ports are chosen when unset.
  std::optional<int> apiserverPort;
  std::chrono::seconds readyTimeout{180};
  // CPUs per member role (placement.h); a role it does not name runs anywhere.
  Placement placement;
};

class LocalPlane {
 public:
  // Starts the plane and waits until every member is ready. On any failure it stops
  // what it had started and throws: UnavailableError (missing binary, port in use, a
  // child that crashed: with the tail of its log) or ConfigError (bad options).
  explicit LocalPlane(PlaneOptions options);
  ~LocalPlane();
  LocalPlane(const LocalPlane&) = delete;
  LocalPlane& operator=(const LocalPlane&) = delete;

  const PlaneRecord& record() const { return record_; }
  const std::filesystem::path& kubeconfig() const { return record_.kubeconfig; }

  // A description of the first member that is no longer running, with its log tail
  // (a member killed by kill() is down on purpose: not reported until it is restarted).
  std::optional<std::string> crashed() const;

  // Faults (a scenario's `faults:`), by member name as the record has it (etcd-main,
  // kube-apiserver-0, kube-controller-manager, ...); ConfigError for an unknown name.
  // kill: SIGKILL, reaped at once. restart: starts a killed member again with its own
  // command line (data directory, port, certificates) and returns once it is ready;
  // UnavailableError if it does not come up. pause/resume: SIGSTOP/SIGCONT.
  void kill(const std::string& member);
  void restart(const std::string& member, const std::function<bool()>& abandon = {});
  // A member that exited on its own (crashed() reported it): down, so restart() may follow.
  void markDown(const std::string& member);
  void pause(const std::string& member);
  void resume(const std::string& member);
  std::vector<std::string> memberNames() const;
  // Stops every member (apiservers first) and removes plane.json. Idempotent.
  void stop();
  // Leaves the plane running after this object is destroyed (cpscale up).
  void release() { released_ = true; }

 private:
  void start();
  void startEtcd(const EtcdSpec& spec, int index);
  void startApiserver(int index, int port, const std::vector<std::string>& etcdUrls);
  void startController(const std::string& role, const ComponentSpec& spec);
  void waitReady(const Component& c, std::chrono::steady_clock::time_point deadline,
                 const std::function<bool()>& abandon = {});
  void writeKubeconfig();
  void writeRecord() const;

  Component& member(const std::string& name);
  std::vector<int> cpusOf(const std::string& role) const {
    const auto* c = options_.placement.of(role);
    return c ? *c : std::vector<int>{};
  }
  // Spawns on the plane's own thread: a child's parent-death signal fires when the
  // thread that spawned it exits, and a fault's restart runs on a short-lived one.
  ProcessIdentity spawnOnPlaneThread(const SpawnOptions& options);
  void stopSpawner();

  PlaneOptions options_;
  PlaneRecord record_;
  // Each member's command line, to start it again after a kill.
  std::map<std::string, std::vector<std::string>> argv_;
  // Guards the members' processes and `down_` (faults act on another thread than the
  // supervisor's crashed()).
  mutable std::mutex mu_;
  std::set<std::string> down_;  // killed on purpose, not yet restarted
  std::mutex spawnMu_;
  std::condition_variable spawnCv_;
  std::deque<std::packaged_task<ProcessIdentity()>> spawns_;
  bool spawnerDone_ = false;
  std::thread spawner_;
  bool released_ = false;
  bool stopped_ = false;
};

// The names a plane of this profile gives its members, in start order (etcd-<name>...,
// kube-apiserver-<i>..., then the controller components it runs).
std::vector<std::string> memberNames(const Profile& profile);

std::filesystem::path recordPath(const std::filesystem::path& stateDir);
// Reads plane.json; nullopt when there is none. Throws ConfigError if it is corrupt.
std::optional<PlaneRecord> readRecord(const std::filesystem::path& stateDir);
// True if any recorded member of the plane is still running.
bool anyRunning(const PlaneRecord& record);
// Stops the recorded members that are still running (verified by pid and start time,
// never anything else): controller components first, then apiservers, then etcd.
// Removes plane.json. Returns how many were stopped.
int stopRecorded(const PlaneRecord& record);
// Deletes a stopped plane's state (etcd data, certificates and keys, kubeconfigs,
// plane.json) but its logs/. Best effort: what cannot be deleted is left and named on
// stderr.
void removeStateKeepingLogs(const std::filesystem::path& stateDir);

// A free TCP port on 127.0.0.1 (bound and released; the kernel does not hand it out
// again immediately).
int freeLoopbackPort();
// True if something listens on 127.0.0.1:port.
bool portInUse(int port);

// Where the pinned binaries are: $CPSCALE_BIN_DIR, else ~/.cache/cpscale/bin/current.
std::filesystem::path defaultBinDir();
// Default state directory for a named plane: $CPSCALE_STATE_DIR, else
// ~/.local/state/cpscale/<name>.
std::filesystem::path defaultStateDir(const std::string& name);

}  // namespace cpscale::controlplane
