// What a run talks to. One interface for the three kinds of target, so the run itself
// (runner.h) never knows which it has:
//   local    the embedded plane built from the pinned upstream binaries, started for the
//            run on 127.0.0.1 (and stopped after it)
//   cluster  the user's cluster named by a kubeconfig: load and scrapes go to its server only
//   model    the calibrated control-plane model (sim/model), in virtual time
// A target supplies the transports (setup, load, scrapes), the clock setup runs on and
// the engine mode; the same workload code, retries and 409 handling run against each.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/controlplane/placement.h"
#include "sim/controlplane/profile.h"
#include "sim/engine/clock.h"
#include "sim/engine/simulator.h"
#include "sim/kube/api_client.h"
#include "sim/kube/kubeconfig.h"
#include "sim/kube/transport.h"
#include "sim/metrics/scraper.h"
#include "sim/result/result.h"
#include "sim/run/faults.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

// Where a virtual run's clock starts in Unix time (2026-01-01T00:00:00Z), for the
// timestamps written into objects: one seed gives the same objects.
inline constexpr std::int64_t kVirtualRunStartUnixNanos = 1767225600LL * 1000000000LL;

class Target {
 public:
  virtual ~Target() = default;

  // kPaced: live, on the wall clock, one engine per worker thread. kVirtual: one engine
  // in virtual time (simulator()), shared by the workloads, the scraper and the run's
  // supervisor.
  virtual engine::SimulatorMode mode() const = 0;
  // Brings the target up (a local plane starts here) and describes it in result.target.
  // Throws UnavailableError when it cannot be reached or started.
  virtual void open(result::RunResult& result) = 0;
  // After the preflight /version answered: what the target's API tells about it (a
  // cluster's apiserver endpoints), recorded in result.target.
  virtual void discover(kube::ApiClient& /*setup*/, result::RunResult& /*result*/) {}
  // For synchronous setup and cleanup calls, on setupClock().
  virtual kube::Transport& setupTransport() = 0;
  virtual engine::Clock& setupClock() = 0;
  // One transport per engine worker for the load (its own connections).
  virtual kube::TransportPtr loadTransport(const scenario::Scenario& scenario) = 0;
  // The virtual engine (kVirtual only): the setup transport already runs on it, so the
  // pool's one worker must run it too.
  virtual std::shared_ptr<engine::Simulator> simulator() { return nullptr; }
  // Every member whose /metrics the run reads, from result.target.members.
  virtual std::vector<metrics::ScrapeTarget> scrapeTargets(const result::RunResult& result) = 0;
  // Whether a member of the target exited during the run ("etcd-main exited ...").
  virtual std::optional<std::string> crashed() { return std::nullopt; }
  // What a scenario's faults act on: a local plane's members or the model's (in virtual
  // time: MemberFaults::restartThen); nullptr for a user's cluster, whose members are not
  // the run's to kill.
  virtual MemberFaults* faults() { return nullptr; }
  // Whether what the run created must be deleted afterwards (a model's store goes
  // with it).
  virtual bool needsCleanup() const { return true; }
  // Whether a member's exit means the target goes away with its data (the local plane).
  virtual bool ownsMembers() const { return false; }
  // Where every figure comes from when not the scraped member itself (the model).
  virtual std::optional<metrics::Source> figureSource() const { return std::nullopt; }
  // Called once the run is over and written: a local plane stops here (unless kept).
  virtual void close() {}
};

struct LocalTargetOptions {
  controlplane::Profile profile;
  std::filesystem::path stateDir;  // the plane's state (certificates, data, logs)
  std::filesystem::path binDir;
  std::string name;                   // the plane's name
  bool keep = false;                  // leave it running, detached
  bool progress = true;               // say on stderr that it starts
  controlplane::Placement placement;  // CPUs per member role
};
std::unique_ptr<Target> localTarget(LocalTargetOptions options);
// The user's cluster. `profile` is only recorded.
std::unique_ptr<Target> clusterTarget(kube::RestConfig config, controlplane::Profile profile);

// What the scraper knows of a recorded member: its name, role and, for an etcd, its
// cluster and the resources the profile routes to it. None for a member that is only
// recorded (a cluster's endpoints).
std::optional<metrics::TargetInfo> scrapeInfo(const result::TargetMember& member, const controlplane::Profile& profile);

// `base` with another server (a replica of the same plane, same credentials).
kube::RestConfig withServer(const kube::RestConfig& base, const std::string& server);

}  // namespace cpscale::run
