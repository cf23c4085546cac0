// The kubelet fleet's instance on one engine worker, shared by the files that hold its
// seams (private to workloads/): the instance's state and the kubelets, with each
// member function defined in the file of its seam:
//   fleet_instance.cc    start, stop, summary and the kubelets' timers
//   fleet_membership.cc  registration, setup, failures, joins and leaves
//   fleet_leases.cc      the Lease: creation, renewal, the re-read after a conflict
//   fleet_status.cc      node status: computed each tick, PATCHed when due or changed
//   fleet_pods.cc        pods bound to the nodes: creation, status, replacement
//   fleet_events.cc      the kubelet's Events
//   fleet_watch.cc       the node watch and what it shows of the node lifecycle
//   fleet_streams.cc     each node's own watches (its kubelet's and its kube-proxy's)
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sim/engine/periodic_timer.h"
#include "workloads/call_tracker.h"
#include "workloads/kubelet_fleet.h"
#include "workloads/lease_texts.h"
#include "workloads/reflector.h"
#include "workloads/setup.h"

namespace cpscale::workloads {

namespace fleet {
class FleetInstance;
}  // namespace fleet

// When each pod readiness change reached each kube-proxy: the change's PATCH answer, by
// the pod's IP, and every node whose EndpointSlice stream showed the pod in that state
// since. One per fleet, shared by its instances on every worker (the pod's and the
// proxy's may be on different workers: the workers' timelines share one origin).
struct DeliveryBook {
  struct Change {
    engine::TimePoint answered{};
    bool ready = true;
    std::unordered_set<std::uint32_t> seenBy;  // node indices
  };

  // The pod with `ip` was written ready or not, answered at `at`; a later change of the
  // same pod replaces it.
  void changed(const std::string& ip, bool ready, engine::TimePoint at) {
    std::lock_guard lock(mu_);
    pending_[ip] = Change{at, ready, {}};
    ++changes_;
    open_.store(pending_.size(), std::memory_order_relaxed);
  }
  // A kube-proxy on node `node` saw each endpoint (its pod's IP, ready or not) at `at`:
  // a change's first receipt there is a sample.
  struct Endpoint {
    std::string_view ip;
    bool ready = true;
  };
  void seen(std::span<const Endpoint> endpoints, std::uint32_t node, engine::TimePoint at) {
    std::lock_guard lock(mu_);
    for (const Endpoint& e : endpoints) {
      auto it = pending_.find(e.ip);
      if (it == pending_.end() || it->second.ready != e.ready || !it->second.seenBy.insert(node).second) continue;
      seconds_.push_back(std::chrono::duration<double>(at - it->second.answered).count());
    }
  }
  bool empty() const { return open_.load(std::memory_order_relaxed) == 0; }
  // {changes, receipts, seconds: per receipt, to the ms}.
  nlohmann::json summary() const;

 private:
  mutable std::mutex mu_;
  // By IP; looked up by string_view (transparent hash).
  struct IpHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Change, IpHash, std::equal_to<>> pending_;
  std::vector<double> seconds_;
  std::uint64_t changes_ = 0;
  std::atomic<std::size_t> open_{0};
};

// Every node stream's outages (Reflector::RecoveredHandler): from the failure of a
// stream that had synced to its watching again. A kube-apiserver restart under the
// fleet is one outage of every stream, all at once: a relist storm. One per fleet,
// shared by its instances on every worker.
struct OutageBook {
  void recovered(engine::TimePoint lost, engine::TimePoint restored) {
    std::lock_guard lock(mu_);
    spans_.emplace_back(lost, restored);
  }
  // {outages, seconds: each outage's length (to the ms), episodes: each time some
  // stream was out, from the first one lost to the last one watching again (outages
  // that overlap are one episode)}.
  nlohmann::json summary() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<engine::TimePoint, engine::TimePoint>> spans_;
};

// A fleet grown in place runs as several instances per engine worker: the base's and
// one per growth. They act as one fleet: one node watch serves them all (its events go
// to the instance that owns the node), and the base's leaves and pod replacements pick
// among all their nodes. Grouped by the simulator they run on (one engine worker, one
// thread) and the run id.
struct FleetGroups {
  struct Group {
    std::vector<fleet::FleetInstance*> members;  // in start order
    fleet::FleetInstance* watcher = nullptr;     // the member whose node watch serves the group
  };

  // Only membership changes lock: a group's members all run on its simulator's thread.
  Group& join(const engine::Simulator& sim, const std::string& runId, fleet::FleetInstance* m) {
    std::lock_guard lock(mu_);
    Group& g = groups_[{&sim, runId}];
    g.members.push_back(m);
    return g;
  }
  void leave(const engine::Simulator& sim, const std::string& runId, fleet::FleetInstance* m) {
    std::lock_guard lock(mu_);
    auto it = groups_.find({&sim, runId});
    if (it == groups_.end()) return;
    Group& g = it->second;
    std::erase(g.members, m);
    if (g.watcher == m) g.watcher = nullptr;
    if (g.members.empty()) groups_.erase(it);
  }

 private:
  std::mutex mu_;
  std::map<std::pair<const engine::Simulator*, std::string>, Group> groups_;

 public:
  DeliveryBook deliveries;  // the whole fleet's, on every worker
  OutageBook outages;       // the same
};

namespace fleet {

// The fleet's Services (services.count), created before the clock starts: ClusterIP,
// each selecting its share of the fleet's pods. AlreadyExists is fine (a growth's base
// made them); throws UnavailableError when the server refuses.
void createServices(kube::ApiClient& api, const std::string& runId, const KubeletFleetParams& p);
std::string serviceName(std::int64_t i);

using engine::Duration;
using engine::TimePoint;
using nlohmann::json;

enum class NodeState : std::uint8_t { kNew, kRegistering, kRunning, kFailed, kGone };

// The node's Ready condition as the fleet's node watch last showed it.
enum class ReadySeen : std::uint8_t { kUnseen, kTrue, kNotTrue };

// What the fleet remembers about a node that the scenario fails, to time what the
// node lifecycle controller does about it. Only those nodes have one.
struct Lifecycle {
  enum class Phase : std::uint8_t { kUp, kFailed, kReturned };
  TimePoint lastRenewal{};  // the last Lease write that was answered (creation included)
  TimePoint returnedAt{};
  Phase phase = Phase::kUp;
  bool renewed = false;         // lastRenewal is set
  bool notReadySeen = false;    // since it failed
  bool readyAgainSeen = false;  // since it returned
};

// A node's own watch streams (watches.mode perNode): its kubelet's and kube-proxy's
// informers, in the order of FleetInstance::streamSpecs().
struct NodeStreams {
  std::vector<std::unique_ptr<Reflector>> reflectors;
};

// One synthetic kubelet. Kept small: an idle one is its two timers, the cached Lease
// bytes and a few words; its name is rebuilt from the index when needed.
struct Kubelet {
  Kubelet(FleetInstance& f, std::int64_t idx, std::uint64_t seed);
  void onLeaseTimer();
  void onStatusTimer();
  void onPodTimer();

  FleetInstance* fleet;
  engine::PeriodicTimer leaseTimer;
  engine::PeriodicTimer statusTimer;
  // The cached Lease as it will be PUT: its JSON text (as a difference from the
  // fleet's reference text, see LeaseTexts), into which a renewal splices the
  // resourceVersion and renewTime instead of writing a document.
  LeaseText lease;
  std::uint32_t index;
  TimePoint lastReport{};
  TimePoint statusGrid{};  // one of its status computations: the others are this +/- multiples of the frequency
  engine::SplitMix64 rng;  // status-change draws
  NodeState state = NodeState::kNew;
  bool renewing = false;   // a renewal (PUT, or GET + PUT) is in flight
  bool reporting = false;  // a status PATCH is in flight
  ReadySeen ready = ReadySeen::kUnseen;
  // The resourceVersion of the Node that `ready` was read from: the node's own stream
  // and the fleet's shared watch both show it, each in order but not with each other.
  std::uint64_t readyVersion = 0;
  // The next status PATCH carries every condition in full (status, reason, message,
  // lastTransitionTime), not only heartbeats: a kubelet that came back.
  bool fullStatus = false;
  bool tracked = false;  // one the scenario fails: it has a Lifecycle
  // Setup: the first Lease creation and every pod creation not yet answered (nodes
  // present at start only; a node that joins later is load, not setup).
  bool awaitingLease = false;
  std::uint8_t podsAwaiting = 0;
  struct Pods {
    Pods(Kubelet& k, Duration gap, std::uint64_t seed)
        : timer(*k.fleet_sim(), engine::PeriodicTimer::bind<&Kubelet::onPodTimer>(&k), gap, gap / 25, seed) {}
    engine::PeriodicTimer timer;
    std::uint32_t next = 0;
    std::uint32_t created = 0;
    // Per pod slot, how often it was replaced: its name's generation suffix. Empty
    // until the first replacement on this node.
    std::vector<std::uint16_t> generation;
  };
  std::unique_ptr<Pods> pods;
  std::unique_ptr<NodeStreams> streams;
  // Setup: the node's own watches whose first list is not in (nodes present at start).
  std::uint8_t watchesAwaiting = 0;

  engine::Simulator* fleet_sim();
};

class FleetInstance final : public WorkloadInstance {
 public:
  FleetInstance(const KubeletFleetParams& p, WorkloadContext& ctx, std::shared_ptr<FleetGroups> groups);
  ~FleetInstance() override;
  void stop() override;
  json summary() const override;
  std::size_t actorBytes() const;
  TimePoint firstTick(const Kubelet& k, Duration period) const;

  engine::Simulator& sim() { return ctx_.sim; }
  const KubeletFleetParams& params() const { return p_; }
  std::string nodeName(std::int64_t i) const { return prefix_ + std::to_string(i); }
  // A node's actor: which worker owns it and its random stream. Its name holds the run
  // id; this does not, so that one seed gives the same schedule in every run.
  std::string actorKey(std::int64_t i) const { return "kubelets/" + p_.name + "/" + std::to_string(i); }
  std::uint64_t seedFor(std::int64_t i) const { return engine::streamSeed(ctx_.seed, actorKey(i)); }
  std::int64_t unixNow() const { return ctx_.epochUnixNanos + ctx_.sim.now().time_since_epoch().count(); }
  // Whether the status timer wakes a node at every computation (see statusTimerPeriod).
  bool statusEveryTick() const { return p_.statusChangeProbability > 0; }

  // The node watch and the lifecycle it shows (fleet_watch.cc).
  json lifecycleSummary() const;
  bool watchSynced() const;
  void startNodeWatch();
  Kubelet* kubeletNamed(std::string_view name) const;
  Kubelet* kubeletAt(std::uint32_t index) const;
  void observeNode(const json& node);
  void readySeen(Kubelet& k, bool readyTrue);
  void renewalAnswered(Kubelet& k);

  // Each node's own watches (fleet_streams.cc).
  struct StreamSpec {
    const char* component;  // "kubelet", "kube-proxy"
    kube::GroupVersionResource resource;
    const char* labelSelector;
    const char* fieldSelector;  // "{node}" stands for the node's name
    bool ownNode;               // the kubelet's own Node: drives what the fleet sees of Ready
  };
  static std::vector<StreamSpec> streamSpecsFor(const KubeletFleetParams::Watches& w);
  void startStreams(Kubelet& k);
  void stopStreams(Kubelet& k);
  void streamSynced(Kubelet& k);
  json streamsSummary() const;
  json streamCounts(std::size_t i) const;
  json ownNodeCounts() const;

  // Services, pod IPs and readiness flips, and when the flips reached each kube-proxy
  // (fleet_services.cc).
  std::string podIP(const Kubelet& k, std::uint32_t slot) const;
  std::string serviceOf(const Kubelet& k, std::uint32_t slot) const;
  void scheduleFlip();
  void flipPod(Kubelet& k, std::uint32_t slot);
  void flipAnswered(Kubelet& k, std::uint32_t slot, bool ready);
  void observeSlice(const Kubelet& k, const json& slice);
  json servicesSummary() const;

  // Registration, setup, failures, joins and leaves (fleet_membership.cc).
  const std::string& imagesText();
  void scheduleRegistration();
  void registerNode(Kubelet& k);
  void podAnswered(Kubelet& k);
  void setupStepDone(Kubelet& k);
  bool setupComplete() const;
  void maybeSetupDone();
  void abandonSetup(Kubelet& k);
  void failSome();
  void returnSome();
  void scheduleJoin();
  void scheduleLeave();
  Kubelet* pickLive(bool withPods = false);
  void leave(Kubelet& k);

  // The Lease (fleet_leases.cc).
  void createLease(Kubelet& k, const std::string& nodeUid);
  void cacheLease(Kubelet& k, json obj);
  void renew(Kubelet& k);
  void putLease(Kubelet& k, bool afterConflict);
  void refetchLease(Kubelet& k, bool thenPut);

  // Node status (fleet_status.cc).
  void computeStatus(Kubelet& k);
  TimePoint statusTickAtOrAfter(const Kubelet& k, TimePoint t) const;
  void patchStatus(Kubelet& k);

  // Pods (fleet_pods.cc).
  void createPods(Kubelet& k);
  std::string podName(const Kubelet& k, std::uint32_t slot) const;
  template <class Done>
  void createPod(Kubelet& k, std::uint32_t slot, Done done);
  void podStarted(Kubelet& k, std::uint32_t slot, const json& pod);
  void podStatus(Kubelet& k);
  // `flip`: a readiness change, whose answer the delivery book times from.
  void patchPodStatus(Kubelet& k, std::uint32_t slot, bool flip = false);
  void scheduleReplacement();
  static std::uint64_t slotKey(const Kubelet& k, std::uint32_t slot);
  void replacePod(Kubelet& k, std::uint32_t slot);

  // Events (fleet_events.cc).
  void nodeStartEvents(Kubelet& k);
  void recordEvent(const json& involved, const std::string& ns, const std::string& host, const char* reason,
                   std::string message);

 private:
  struct Counts {
    std::uint64_t registered = 0, regFailed = 0, leasesCreated = 0, renewals = 0, renewFailed = 0, conflicts = 0,
                  renewSkipped = 0, statusPatches = 0, statusFailed = 0, failed = 0, returned = 0, joined = 0, left = 0,
                  podsCreated = 0, podUpdates = 0, podFailed = 0, notReadyTransitions = 0, readyTransitions = 0,
                  notReadyUnexpected = 0, podsReplaced = 0, replaceFailed = 0, eventsCreated = 0, eventFailed = 0,
                  eventsDropped = 0;
  };

  const KubeletFleetParams& p_;
  WorkloadContext ctx_;  // a copy: the caller's may be a temporary
  CallTracker calls_;
  EventTracker events_;
  TokenBucket regBucket_;
  TokenBucket podBucket_;
  TokenBucket eventBucket_;
  engine::RandomStream rng_;
  engine::RandomStream watchRng_;  // the node watch's timeouts, apart from the churn draws
  std::string prefix_;
  std::string images_;     // imagesText()
  LeaseTexts leaseTexts_;  // the kubelets' cached Leases refer to its texts
  kube::ResourceRef leases_;
  kube::ResourceRef nodes_;
  kube::ResourceRef pods_;
  std::vector<std::unique_ptr<Kubelet>> kubelets_;
  std::size_t nextToRegister_ = 0;
  std::uint64_t joined_ = 0;
  std::size_t setupRemaining_ = 0;  // nodes present at start whose setup is unanswered
  bool setupReported_ = false;
  bool stopped_ = false;
  std::unique_ptr<Reflector> nodeWatch_;                      // the group's watcher's only
  std::vector<StreamSpec> streamSpecs_;                       // what each node watches (perNode)
  std::vector<std::unique_ptr<NodeStreams>> retiredStreams_;  // of nodes that failed or left
  std::shared_ptr<FleetGroups> groups_;
  FleetGroups::Group* group_ = nullptr;                     // this worker's instances of the fleet and its growths
  bool needsWatch_ = false;                                 // it has nodes (or joins): its setup waits for the watch
  std::unordered_map<std::uint32_t, Lifecycle> lifecycle_;  // by node index
  std::vector<double> notReadySeconds_;
  std::vector<double> readyAgainSeconds_;
  std::size_t eventsQueued_ = 0;  // recorded, waiting for a token
  std::size_t eventsInFlight_ = 0;
  std::uint64_t eventSeq_ = 0;
  std::unordered_set<std::uint64_t> replacing_;  // pod slots between DELETE and POST (slotKey)
  std::unordered_set<std::uint64_t> notReady_;   // pod slots flipped to not Ready (slotKey)
  std::uint64_t flips_ = 0, flipFailures_ = 0, flipsSkipped_ = 0;
  Counts c_;
};

}  // namespace fleet
}  // namespace cpscale::workloads
