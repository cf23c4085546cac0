#include "workloads/kubelet_fleet.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "sim/common/error.h"
#include "sim/engine/periodic_timer.h"
#include "workloads/call_tracker.h"
#include "workloads/lease_texts.h"
#include "workloads/reflector.h"
#include "workloads/setup.h"

namespace cpscale::workloads {

namespace {

using engine::Duration;
using engine::TimePoint;
using nlohmann::json;

constexpr const char* kRvMarker = "@@cpscale-rv@@";
constexpr const char* kImagesMarker = "@@cpscale-images@@";
constexpr const char* kQuotedImagesMarker = "\"@@cpscale-images@@\"";
constexpr const char* kRenewMarker = "@@cpscale-renew@@";
// How long a kubelet waits before registering again after a failure (its own
// registration backoff caps at 7 s).
constexpr Duration kRegistrationRetry = std::chrono::seconds(7);
// Events waiting for a token beyond this many are dropped, as the kubelet's event
// broadcaster drops when its queue (1000) is full.
constexpr std::size_t kEventQueue = 1000;

}  // namespace

// ---- parameters ------------------------------------------------------------------

KubeletFleetParams KubeletFleetParams::read(const YamlField& e) {
  e.expectMap({"kind",
               "name",
               "count",
               "registrationQps",
               "registrationBurst",
               "leaseDurationSeconds",
               "nodeStatusUpdateFrequency",
               "statusReportFrequency",
               "statusChangeProbability",
               "renewalPhase",
               "nodeImages",
               "podsPerNode",
               "podStatusInterval",
               "podQps",
               "podBurst",
               "events",
               "eventQps",
               "eventBurst",
               "failures",
               "churn",
               "nodeTemplate",
               "leaseTemplate",
               "podTemplate"});
  KubeletFleetParams p;
  if (auto f = e.get("name")) {
    p.name = f->asString();
    if (!isDnsLabel(p.name, 20)) throw f->error("must be 1-20 lower-case letters, digits or '-'");
  }
  YamlField count = e.require("count");
  p.count = count.asInt();
  if (p.count < 0) throw count.error("must not be negative, found " + std::to_string(p.count));
  if (p.count > KubeletFleet::kMaxCount) throw count.error("at most 10,000,000 nodes");
  p.registration = readRateLimit(e, "registrationQps", "registrationBurst", 20);
  if (auto f = e.get("leaseDurationSeconds")) p.leaseDurationSeconds = f->asInt(4, 3600);
  if (auto f = e.get("nodeStatusUpdateFrequency")) {
    p.statusUpdateFrequency = readDuration(*f, std::chrono::milliseconds(100), std::chrono::hours(1));
  }
  if (auto f = e.get("statusReportFrequency")) {
    p.statusReportFrequency = readDuration(*f, std::chrono::seconds(1), std::chrono::hours(24));
    if (p.statusReportFrequency < p.statusUpdateFrequency) {
      throw f->error("must not be shorter than nodeStatusUpdateFrequency (" + formatDuration(p.statusUpdateFrequency) +
                     ")");
    }
  }
  if (auto f = e.get("statusChangeProbability")) {
    p.statusChangeProbability = f->asDouble();
    if (!(p.statusChangeProbability >= 0 && p.statusChangeProbability <= 1)) throw f->error("must be in [0, 1]");
  }
  if (auto f = e.get("renewalPhase")) {
    std::string v = f->asString();
    if (v == "random")
      p.renewalPhase = RenewalPhase::kRandom;
    else if (v == "registration")
      p.renewalPhase = RenewalPhase::kRegistration;
    else
      throw f->error("must be random or registration, found '" + v + "'");
  }
  if (auto f = e.get("nodeImages")) p.nodeImages = f->asInt(0, 1000);
  if (auto f = e.get("podsPerNode")) p.podsPerNode = f->asInt(0, 250);
  if (auto f = e.get("podStatusInterval")) {
    p.podStatusInterval = readDuration(*f, std::chrono::milliseconds(100), std::chrono::hours(24));
  }
  p.pods = readRateLimit(e, "podQps", "podBurst", 20);
  if (auto f = e.get("events")) p.events = f->asBool();
  p.eventRate = readRateLimit(e, "eventQps", "eventBurst", 500);
  if (!e.get("eventBurst")) p.eventRate.burst = 2 * std::ceil(p.eventRate.qps);  // the kubelet's ratio
  if (auto f = e.get("failures")) {
    f->expectMap({"fraction", "at", "returnAfter"});
    YamlField frac = f->require("fraction");
    p.failures.fraction = frac.asDouble();
    if (!(p.failures.fraction >= 0 && p.failures.fraction <= 1)) throw frac.error("must be in [0, 1]");
    p.failures.at = readDuration(f->require("at"));
    if (auto r = f->get("returnAfter")) p.failures.returnAfter = readDuration(*r, std::chrono::milliseconds(1));
  }
  if (auto f = e.get("churn")) {
    f->expectMap({"joinsPerMinute", "leavesPerMinute", "podReplacementsPerMinute"});
    for (auto [key, out] : {std::pair{"joinsPerMinute", &p.joinsPerMinute},
                            {"leavesPerMinute", &p.leavesPerMinute},
                            {"podReplacementsPerMinute", &p.podReplacementsPerMinute}}) {
      if (auto r = f->get(key)) {
        *out = r->asDouble();
        if (!(*out >= 0 && *out <= 1e6)) throw r->error("must be a rate in [0, 1e6]");
      }
    }
    if (p.podReplacementsPerMinute > 0 && p.podsPerNode == 0) {
      throw f->get("podReplacementsPerMinute")->error("replaces pods, but podsPerNode is 0");
    }
    if (p.count == 0 && p.leavesPerMinute > 0 && p.joinsPerMinute == 0) {
      throw f->error("nodes cannot leave a fleet of 0 that nobody joins");
    }
  }
  p.nodeTemplate =
      e.get("nodeTemplate") ? ObjectTemplate::load(*e.get("nodeTemplate")) : ObjectTemplate::load("node.json");
  p.leaseTemplate =
      e.get("leaseTemplate") ? ObjectTemplate::load(*e.get("leaseTemplate")) : ObjectTemplate::load("lease.json");
  if (p.podsPerNode > 0) {
    p.podTemplate =
        e.get("podTemplate") ? ObjectTemplate::load(*e.get("podTemplate")) : ObjectTemplate::load("pod.json");
  }
  return p;
}

bool failsAt(std::int64_t index, double fraction) {
  // Node i fails when floor((i+1)f) > floor(i f): exactly floor(n f) of the first n.
  return std::floor(static_cast<double>(index + 1) * fraction) > std::floor(static_cast<double>(index) * fraction);
}

// ---- the fleet -------------------------------------------------------------------

namespace {
class FleetInstance;
}  // namespace

// A fleet grown in place runs as several instances per engine worker: the base's and
// one per growth. They act as one fleet: one node watch serves them all (its events go
// to the instance that owns the node), and the base's leaves and pod replacements pick
// among all their nodes. Grouped by the simulator they run on (one engine worker, one
// thread) and the run id.
struct FleetGroups {
  struct Group {
    std::vector<FleetInstance*> members;  // in start order
    FleetInstance* watcher = nullptr;     // the member whose node watch serves the group
  };

  // Only membership changes lock: a group's members all run on its simulator's thread.
  Group& join(const engine::Simulator& sim, const std::string& runId, FleetInstance* m) {
    std::lock_guard lock(mu_);
    Group& g = groups_[{&sim, runId}];
    g.members.push_back(m);
    return g;
  }
  void leave(const engine::Simulator& sim, const std::string& runId, FleetInstance* m) {
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
};

KubeletFleet::KubeletFleet(KubeletFleetParams params)
    : params_(std::move(params)), groups_(std::make_shared<FleetGroups>()) {
  if (!params_.nodeTemplate) params_.nodeTemplate = ObjectTemplate::load("node.json");
  if (!params_.leaseTemplate) params_.leaseTemplate = ObjectTemplate::load("lease.json");
  if (params_.podsPerNode > 0 && !params_.podTemplate) params_.podTemplate = ObjectTemplate::load("pod.json");
}

std::string KubeletFleet::nodeName(const std::string& runId, const std::string& workload, std::int64_t index) {
  return "cpscale-" + runId + "-" + workload + "-" + std::to_string(index);
}

std::string KubeletFleet::podNamespace(const std::string& runId, const std::string& workload) {
  return "cpscale-" + runId + "-" + workload + "-pods";
}

// Idempotent: the pods' namespace (and its default ServiceAccount) may exist already,
// as it does when a growth prepares after its base.
void KubeletFleet::prepare(kube::ApiClient& api, engine::Clock&, const std::string& runId) {
  validateRunId(runId);
  if (params_.podsPerNode > 0) ensureNamespace(api, podNamespace(runId, params_.name), runId, params_.name, true);
}

std::string KubeletFleet::whyNotMeasured(const std::string& figure) const {
  const bool notReady = figure == "node_not_ready_seconds_p50" || figure == "node_not_ready_seconds_max";
  const bool readyAgain = figure == "node_ready_again_seconds_p50" || figure == "node_ready_again_seconds_max";
  if (std::string why = notOwnFigure(kind(), figure); !why.empty()) return why;
  if ((notReady || readyAgain) &&
      static_cast<std::int64_t>(std::floor(static_cast<double>(params_.count) * params_.failures.fraction)) == 0)
    return "no node of fleet '" + params_.name + "' fails (failures.fraction x count is under one node)";
  if (readyAgain && !params_.failures.returnAfter)
    return "the failed nodes of fleet '" + params_.name + "' never return (no failures.returnAfter)";
  return "";
}

std::unique_ptr<Workload> KubeletFleet::growth(const std::string& field, double from, double to) const {
  if (field != "count") return nullptr;
  checkGrowth(*this, field, from, to, static_cast<double>(kMaxCount), true, static_cast<double>(params_.count),
              "nodes");
  KubeletFleetParams p = params_;
  p.firstIndex = static_cast<std::int64_t>(from);
  p.count = static_cast<std::int64_t>(to);
  // Churn rates are fleet-wide, not per node: they stay with the base, whose leaves and
  // pod replacements pick among the grown nodes too (FleetGroups).
  p.joinsPerMinute = p.leavesPerMinute = p.podReplacementsPerMinute = 0;
  auto g = std::make_unique<KubeletFleet>(std::move(p));
  g->groups_ = groups_;
  return g;
}

std::vector<kube::GroupVersionResource> KubeletFleet::resources() const {
  std::vector<kube::GroupVersionResource> r{kube::gvr::kNodes, kube::gvr::kLeases};
  if (params_.podsPerNode > 0) r.push_back(kube::gvr::kPods);
  if (params_.events) r.push_back(kube::gvr::kEvents);
  return r;
}

namespace {

class FleetInstance;

enum class NodeState : std::uint8_t { kNew, kRegistering, kRunning, kFailed, kGone };

// The node's Ready condition as the fleet's node watch last showed it.
enum class ReadySeen : std::uint8_t { kUnseen, kTrue, kNotTrue };

// The four conditions a kubelet reports, in the order it sets them, with what it
// writes when each holds (the reasons and messages of pkg/kubelet/nodestatus).
struct ConditionText {
  const char* type;
  const char* status;
  const char* reason;
  const char* message;
};
constexpr ConditionText kConditions[] = {
    {"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
    {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
    {"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
    {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
};

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

double roundedSeconds(Duration d) { return std::round(std::chrono::duration<double>(d).count() * 1000) / 1000; }

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

  engine::Simulator* fleet_sim();
};

class FleetInstance final : public WorkloadInstance {
 public:
  FleetInstance(const KubeletFleetParams& p, WorkloadContext& ctx, std::shared_ptr<FleetGroups> groups)
      : p_(p),
        ctx_(ctx),
        calls_(ctx.api),
        events_(ctx.sim),
        regBucket_(ctx.share(p.registration.qps), std::max(1.0, std::ceil(ctx.share(p.registration.burst))),
                   ctx.sim.now()),
        podBucket_(ctx.share(p.pods.qps), std::max(1.0, std::ceil(ctx.share(p.pods.burst))), ctx.sim.now()),
        eventBucket_(ctx.share(p.eventRate.qps), std::max(1.0, std::ceil(ctx.share(p.eventRate.burst))), ctx.sim.now()),
        rng_(ctx.seed, "kubelets/" + p.name + "/" + std::to_string(ctx.workerIndex())),
        watchRng_(ctx.seed, "kubelets/" + p.name + "/watch/" + std::to_string(ctx.workerIndex())),
        prefix_("cpscale-" + ctx.runId + "-" + p.name + "-"),
        leases_(kube::ResourceRef(kube::gvr::kLeases).in("kube-node-lease")),
        nodes_(kube::gvr::kNodes),
        pods_(kube::ResourceRef(kube::gvr::kPods).in(KubeletFleet::podNamespace(ctx.runId, p.name))),
        groups_(std::move(groups)) {
    validateRunId(ctx.runId);
    for (std::int64_t i = p.firstIndex; i < p.count; ++i) {
      if (!ctx.owns(actorKey(i))) continue;
      kubelets_.push_back(std::make_unique<Kubelet>(*this, i, seedFor(i)));
      kubelets_.back()->awaitingLease = true;
      kubelets_.back()->podsAwaiting = static_cast<std::uint8_t>(p.podsPerNode);
      if (p.failures.fraction > 0 && failsAt(i, p.failures.fraction)) {
        kubelets_.back()->tracked = true;
        lifecycle_.emplace(static_cast<std::uint32_t>(i), Lifecycle{});
      }
    }
    setupRemaining_ = kubelets_.size();
    group_ = &groups_->join(ctx.sim, ctx.runId, this);
    // One node watch per worker for the fleet and its growths: the first instance that
    // has nodes starts it, the others' nodes are seen through it.
    needsWatch_ = !kubelets_.empty() || p.joinsPerMinute > 0;
    if (needsWatch_ && group_->watcher == nullptr) {
      group_->watcher = this;
      startNodeWatch();
    }
    maybeSetupDone();
    scheduleRegistration();
    const TimePoint t0 = ctx.sim.now();
    if (p.failures.fraction > 0) {
      events_.at(t0 + p.failures.at, [this] { failSome(); });
      if (p.failures.returnAfter) events_.at(t0 + p.failures.at + *p.failures.returnAfter, [this] { returnSome(); });
    }
    if (p.joinsPerMinute > 0) scheduleJoin();
    if (p.leavesPerMinute > 0) scheduleLeave();
    if (p.podReplacementsPerMinute > 0) scheduleReplacement();
  }

  ~FleetInstance() override {
    stop();
    groups_->leave(ctx_.sim, ctx_.runId, this);
  }

  void stop() override {
    stopped_ = true;
    if (nodeWatch_) nodeWatch_->stop();
    events_.cancelAll();
    for (auto& k : kubelets_) {
      k->leaseTimer.stop();
      k->statusTimer.stop();
      if (k->pods) k->pods->timer.stop();
    }
    calls_.cancelAll();
  }

  json summary() const override {
    return {{"nodes", kubelets_.size()},
            {"nodesRegistered", c_.registered},
            {"nodesAwaitingSetup", setupRemaining_},
            {"setupComplete", setupReported_},
            {"registrationFailures", c_.regFailed},
            {"leasesCreated", c_.leasesCreated},
            {"leaseRenewals", c_.renewals},
            {"leaseRenewalFailures", c_.renewFailed},
            {"leaseConflicts", c_.conflicts},
            {"leaseRenewalsSkipped", c_.renewSkipped},
            {"statusPatches", c_.statusPatches},
            {"statusFailures", c_.statusFailed},
            {"nodesFailed", c_.failed},
            {"nodesReturned", c_.returned},
            {"nodesJoined", c_.joined},
            {"nodesLeft", c_.left},
            {"podsCreated", c_.podsCreated},
            {"podStatusUpdates", c_.podUpdates},
            {"podFailures", c_.podFailed},
            {"podsReplaced", c_.podsReplaced},
            {"podReplacementFailures", c_.replaceFailed},
            {"eventsCreated", c_.eventsCreated},
            {"eventFailures", c_.eventFailed},
            {"eventsDropped", c_.eventsDropped},
            {"actorBytes", actorBytes()},
            {"nodeLifecycle", lifecycleSummary()}};
  }

  // What the node watch saw the node lifecycle controller do. Samples are per node, in
  // seconds (to the ms); arrays concatenate when the workers' summaries merge.
  json lifecycleSummary() const {
    std::uint64_t notReadyAtEnd = 0;
    for (const auto& k : kubelets_) notReadyAtEnd += k->state != NodeState::kGone && k->ready == ReadySeen::kNotTrue;
    json s = {{"notReadyTransitions", c_.notReadyTransitions}, {"readyTransitions", c_.readyTransitions},
              {"notReadyUnexpected", c_.notReadyUnexpected},   {"notReadyAtEnd", notReadyAtEnd},
              {"notReadySeconds", notReadySeconds_},           {"readyAgainSeconds", readyAgainSeconds_}};
    if (nodeWatch_) {
      const ReflectorCounts& w = nodeWatch_->counts();
      s["watchLists"] = w.lists;
      s["watchRelists"] = w.relists;
      s["watchStreams"] = w.watches;
      s["watchEvents"] = w.events;
      s["watchErrors"] = w.errors;
      if (!nodeWatch_->lastError().empty()) s["watchLastError"] = nodeWatch_->lastError();
    }
    return s;
  }

  // What the actors themselves hold (not the engine's timer slots): for the memory
  // per synthetic node figure.
  std::size_t actorBytes() const {
    std::size_t n = kubelets_.capacity() * sizeof(void*);
    for (const auto& k : kubelets_) {
      n += sizeof(Kubelet) + k->lease.heapBytes();
      if (k->pods) n += sizeof(Kubelet::Pods) + k->pods->generation.capacity() * sizeof(std::uint16_t);
    }
    n += leaseTexts_.bytes();
    // The failing nodes' side records: entry, hash node and bucket, roughly.
    n += lifecycle_.size() * (sizeof(std::pair<const std::uint32_t, Lifecycle>) + 2 * sizeof(void*)) +
         lifecycle_.bucket_count() * sizeof(void*);
    return n;
  }

  engine::Simulator& sim() { return ctx_.sim; }
  const KubeletFleetParams& params() const { return p_; }
  std::string nodeName(std::int64_t i) const { return prefix_ + std::to_string(i); }

  // status.images' entries as JSON text (no brackets), built on first use: nodeImages
  // entries sized like real ones, a digest and a tag reference, ~250 bytes each.
  const std::string& imagesText() {
    if (!images_.empty() || p_.nodeImages == 0) return images_;
    json images = json::array();
    for (std::int64_t i = 0; i < p_.nodeImages; ++i) {
      std::string repo = "registry.cpscale.io/platform/service-" + std::to_string(i);
      images.push_back({{"names",
                         {repo + "@sha256:" + filler(64, static_cast<std::uint64_t>(i) * 2654435761u),
                          repo + ":v1." + std::to_string(i % 17) + "." + std::to_string(i % 5)}},
                        {"sizeBytes", 20'000'000 + i * 1'234'567}});
    }
    images_ = images.dump();
    images_ = images_.substr(1, images_.size() - 2);
    return images_;
  }
  // A node's actor: which worker owns it and its random stream. Its name holds the run
  // id; this does not, so that one seed gives the same schedule in every run.
  std::string actorKey(std::int64_t i) const { return "kubelets/" + p_.name + "/" + std::to_string(i); }
  std::uint64_t seedFor(std::int64_t i) const { return engine::streamSeed(ctx_.seed, actorKey(i)); }
  std::int64_t unixNow() const { return ctx_.epochUnixNanos + ctx_.sim.now().time_since_epoch().count(); }

  // ---- registration ----

  void scheduleRegistration() {
    if (nextToRegister_ >= kubelets_.size() || stopped_) return;
    events_.at(regBucket_.reserve(ctx_.sim.now()), [this] {
      registerNode(*kubelets_[nextToRegister_++]);
      scheduleRegistration();
    });
  }

  void registerNode(Kubelet& k) {
    if (k.state == NodeState::kGone) return;
    k.state = NodeState::kRegistering;
    const std::string name = nodeName(k.index);
    const std::string now = rfc3339(unixNow());
    const unsigned a = (k.index >> 16) & 0xff, b = (k.index >> 8) & 0xff, c = k.index & 0xff;
    char ip[32], cidr[32], id[40];
    std::snprintf(ip, sizeof ip, "10.%u.%u.%u", 64 + a % 64, b, c);
    std::snprintf(cidr, sizeof cidr, "10.%u.%u.0/24", 128 + a % 64, (c + b * 7) & 0xff);
    std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(seedFor(k.index)),
                  static_cast<unsigned long long>(k.rng.state()));
    json node = p_.nodeTemplate->fill({{"name", name},
                                       {"zone", "cpscale-zone-" + std::to_string(k.index % 3)},
                                       {"ip", ip},
                                       {"podCIDR", cidr},
                                       {"machineID", std::string(id, 32)},
                                       {"bootID", std::string(id + 4, 28) + "boot"},
                                       {"now", now}});
    node["metadata"]["labels"].update(ctx_.labels(p_.name));
    // The image list is the same for every node of the fleet: it is serialised once
    // and spliced into each body in place of a marker, instead of being built and
    // serialised again per node (two thirds of a Node's bytes).
    json& images = node["status"]["images"];
    if (!images.is_array()) images = json::array();
    if (p_.nodeImages > 0) images.push_back(kImagesMarker);
    auto req = kube::ApiRequest::create(nodes_, node);
    if (const auto at = req.body.find(kQuotedImagesMarker); at != std::string::npos)
      req.body.replace(at, std::strlen(kQuotedImagesMarker), imagesText());
    req.decode = kube::Decode::kMetadata;  // the uid is all it reads of the Node it gets back
    req.intendedAt = ctx_.sim.now();
    calls_.call(std::move(req), [this, &k](kube::ApiResult r) {
      if (k.state != NodeState::kRegistering) return;
      if (!r.ok() && !r.alreadyExists()) {
        ++c_.regFailed;
        events_.at(ctx_.sim.now() + kRegistrationRetry, [this, &k] { registerNode(k); });
        return;
      }
      ++c_.registered;
      std::string uid = r.ok() ? r.body.value("/metadata/uid"_json_pointer, std::string()) : std::string();
      createLease(k, uid);
      // The kubelet's status loop starts with registration, which itself reported; a
      // fleet registered in a burst reports from then on at the node's own phase of the
      // report period (see firstTick), as a fleet started over time does.
      k.state = NodeState::kRunning;
      k.lastReport = firstTick(k, p_.statusReportFrequency) - p_.statusReportFrequency;
      k.statusGrid = firstTick(k, p_.statusUpdateFrequency);
      k.statusTimer.start(statusEveryTick() ? k.statusGrid
                                            : statusTickAtOrAfter(k, k.lastReport + p_.statusReportFrequency));
      nodeStartEvents(k);
      if (p_.podsPerNode > 0) createPods(k);
    });
  }

  void createLease(Kubelet& k, const std::string& nodeUid) {
    const std::string name = nodeName(k.index);
    json lease = p_.leaseTemplate->fill(
        {{"name", name}, {"leaseDurationSeconds", p_.leaseDurationSeconds}, {"renewTime", microTime(unixNow())}});
    lease["metadata"]["labels"].update(ctx_.labels(p_.name));
    if (!nodeUid.empty()) {
      // As the kubelet does, so garbage collection removes the Lease with its Node.
      lease["metadata"]["ownerReferences"] =
          json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", name}, {"uid", nodeUid}}});
    }
    auto req = kube::ApiRequest::create(leases_, lease);
    req.intendedAt = ctx_.sim.now();
    k.renewing = true;
    calls_.call(std::move(req), [this, &k](kube::ApiResult r) {
      k.renewing = false;
      if (k.awaitingLease) {
        k.awaitingLease = false;
        setupStepDone(k);
      }
      if (r.ok()) {
        ++c_.leasesCreated;
        renewalAnswered(k);
        cacheLease(k, std::move(r.body));
      } else if (r.alreadyExists()) {
        // Left by an earlier run with this id: adopt it, as a restarted kubelet does.
        refetchLease(k, false);
      } else {
        ++c_.renewFailed;
      }
      if (k.state == NodeState::kRunning && !k.leaseTimer.armed()) k.leaseTimer.start(firstTick(k, p_.renewPeriod()));
    });
  }

  // Caches the server's copy of the Lease as the next PUT's body.
  void cacheLease(Kubelet& k, json obj) {
    if (!obj.is_object()) return;
    std::string rv = obj.value("/metadata/resourceVersion"_json_pointer, std::string());
    obj["metadata"]["resourceVersion"] = kRvMarker;
    obj["spec"]["renewTime"] = kRenewMarker;
    std::string s = obj.dump();
    std::size_t rvAt = s.find(kRvMarker);
    s.replace(rvAt, std::strlen(kRvMarker), rv);
    std::size_t renewAt = s.find(kRenewMarker);
    s.replace(renewAt, std::strlen(kRenewMarker), std::string(kMicroTimeLength, '0'));
    k.lease = leaseTexts_.store(s, rvAt, rv.size(), renewAt, kMicroTimeLength);
  }

  // ---- the heartbeat paths ----

  void renew(Kubelet& k) {
    if (k.lease.empty()) return;  // creation still in flight or failed: next period
    if (k.renewing) {
      // The previous renewal has not come back within a period; a kubelet's loop would
      // still be blocked in it, so this tick is not a request.
      ++c_.renewSkipped;
      return;
    }
    putLease(k, /*afterConflict=*/false);
  }

  void putLease(Kubelet& k, bool afterConflict) {
    kube::ApiRequest req;
    req.verb = kube::Verb::kUpdate;
    req.ref = leases_.named(nodeName(k.index));
    std::size_t renewAt = 0;
    leaseTexts_.build(k.lease, req.body, renewAt);
    formatMicroTime(unixNow(), req.body.data() + renewAt);
    req.decode = kube::Decode::kResourceVersion;  // all it keeps of the answer
    req.intendedAt = ctx_.sim.now();
    k.renewing = true;
    calls_.call(std::move(req), [this, &k, afterConflict](kube::ApiResult r) {
      k.renewing = false;
      if (r.ok()) {
        ++c_.renewals;
        renewalAnswered(k);
        if (!r.resourceVersion.empty()) k.lease.setResourceVersion(r.resourceVersion);
        return;
      }
      if (r.conflict() && !afterConflict) {
        // The only time the kubelet reads its Lease: fetch the latest and retry once.
        ++c_.conflicts;
        refetchLease(k, true);
        return;
      }
      if (r.notFound() && k.state == NodeState::kRunning) {
        // Someone deleted it; the kubelet creates a new one.
        ++c_.renewFailed;
        k.lease = {};
        createLease(k, "");
        return;
      }
      ++c_.renewFailed;
    });
  }

  void refetchLease(Kubelet& k, bool thenPut) {
    auto req = kube::ApiRequest::get(leases_.named(nodeName(k.index)));
    req.intendedAt = ctx_.sim.now();
    k.renewing = true;
    calls_.call(std::move(req), [this, &k, thenPut](kube::ApiResult r) {
      k.renewing = false;
      if (!r.ok()) {
        ++c_.renewFailed;
        return;
      }
      cacheLease(k, std::move(r.body));
      if (thenPut && k.state == NodeState::kRunning) putLease(k, /*afterConflict=*/true);
    });
  }

  void computeStatus(Kubelet& k) {
    const TimePoint now = ctx_.sim.now();
    k.statusGrid = now;
    // What the node watch shows is the kubelet's informer copy: a Ready that is not
    // True there (the node lifecycle controller marked it Unknown) differs from what the
    // kubelet computes, so it reports at once.
    const bool changed =
        (p_.statusChangeProbability > 0 && engine::toUnitInterval(k.rng.next()) < p_.statusChangeProbability) ||
        k.ready == ReadySeen::kNotTrue || k.fullStatus;
    // The kubelet compares against the last report time with its own tick: a tick that
    // lands on the frequency boundary reports.
    const bool due = now - k.lastReport >= p_.statusReportFrequency;
    if ((changed || due) && !k.reporting) patchStatus(k);
    if (statusEveryTick()) return;
    // The timer skips the computations that cannot PATCH (statusTimerPeriod): it is
    // already re-armed for a report's interval from now. Sooner while each computation
    // reports (Ready not True, a full status or a due report still to send); later
    // when the last report was sent between ticks.
    const bool reportsNext =
        k.ready == ReadySeen::kNotTrue || k.fullStatus || now - k.lastReport >= p_.statusReportFrequency;
    const TimePoint next =
        reportsNext ? now + p_.statusUpdateFrequency : statusTickAtOrAfter(k, k.lastReport + p_.statusReportFrequency);
    if (next != now + p_.statusTimerPeriod()) k.statusTimer.start(next);
  }

  // Whether the status timer wakes a node at every computation (see statusTimerPeriod).
  bool statusEveryTick() const { return p_.statusChangeProbability > 0; }

  // The first of the node's status computations at or after `t`.
  TimePoint statusTickAtOrAfter(const Kubelet& k, TimePoint t) const {
    if (t <= k.statusGrid) return k.statusGrid;
    const Duration f = p_.statusUpdateFrequency;
    return k.statusGrid + f * ((t - k.statusGrid + f - Duration{1}) / f);
  }

  // The kubelet's PATCH is the difference between its informer's copy and the status
  // it computed: only heartbeats while the copy agrees, every condition in full when it
  // does not (a Ready the controller set to Unknown) or the kubelet came back.
  void patchStatus(Kubelet& k) {
    const std::string t = rfc3339(unixNow());
    const bool full = k.fullStatus || k.ready == ReadySeen::kNotTrue;
    k.fullStatus = false;
    std::string body;
    body.reserve(full ? 1000 : 520);
    body += R"({"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},)"
            R"({"type":"PIDPressure"},{"type":"Ready"}],"conditions":[)";
    for (int i = 0; i < 4; ++i) {
      const ConditionText& c = kConditions[i];
      body += i ? "," : "";
      body += R"({"lastHeartbeatTime":")" + t + "\"";
      if (full) {
        body += R"(,"lastTransitionTime":")" + t + R"(","message":")" + c.message + R"(","reason":")" + c.reason +
                R"(","status":")" + c.status + "\"";
      }
      body += R"(,"type":")" + std::string(c.type) + "\"}";
    }
    body += "]}}";
    kube::ApiRequest req;
    req.verb = kube::Verb::kPatch;
    req.patchType = kube::PatchType::kStrategicMerge;
    req.ref = kube::ResourceRef(nodes_).named(nodeName(k.index)).sub("status");
    req.body = std::move(body);
    req.decode = kube::Decode::kNone;  // the Node it gets back is not read
    req.intendedAt = ctx_.sim.now();
    k.reporting = true;
    k.lastReport = ctx_.sim.now();
    calls_.call(std::move(req), [this, &k](kube::ApiResult r) {
      k.reporting = false;
      r.ok() ? ++c_.statusPatches : ++c_.statusFailed;
    });
  }

  // ---- setup ----

  // When the first renewal (or status tick) of a node that just registered falls due.
  // Kubelets of a real fleet started at different times, so their cycles have
  // independent phases: a uniformly random phase of the period (seeded per node) keeps
  // a fleet registered in a burst from renewing in the same burst every period.
  TimePoint firstTick(const Kubelet& k, Duration period) const {
    if (p_.renewalPhase == KubeletFleetParams::RenewalPhase::kRegistration) return ctx_.sim.now() + period;
    engine::SplitMix64 phase(seedFor(k.index) ^ static_cast<std::uint64_t>(period.count()));
    return ctx_.sim.now() + Duration{static_cast<Duration::rep>(engine::toUnitInterval(phase.next()) *
                                                                static_cast<double>(period.count()))};
  }

  void podAnswered(Kubelet& k) {
    if (k.podsAwaiting == 0) return;
    --k.podsAwaiting;
    setupStepDone(k);
  }

  // Counts a node as set up once its Lease and pods were all answered.
  void setupStepDone(Kubelet& k) {
    if (k.awaitingLease || k.podsAwaiting > 0 || setupRemaining_ == 0) return;
    --setupRemaining_;
    maybeSetupDone();
  }

  // The start Events of the initial nodes and pods are part of the ramp too: a fleet
  // that registered in a burst still has thousands queued behind its event bucket, and
  // they would otherwise spill into the measured window.
  bool setupComplete() const {
    return setupRemaining_ == 0 && (!needsWatch_ || watchSynced()) && eventsQueued_ == 0 && eventsInFlight_ == 0;
  }

  // Whether the node watch this instance's nodes are seen through holds its first LIST
  // (true once no member holds one any more: there is nothing left to wait for).
  bool watchSynced() const {
    const FleetInstance* w = group_->watcher;
    return w == nullptr || w->nodeWatch_->synced();
  }

  // Once: every node set up, its start Events answered, and the node watch holds its
  // first LIST.
  void maybeSetupDone() {
    if (setupReported_ || !setupComplete()) return;
    setupReported_ = true;
    ctx_.setupDone();
  }

  // ---- the node watch ----

  // Each kubelet keeps an informer on its own Node and computes its status PATCH
  // against that copy. The fleet stands in for them with one watch per worker on the
  // fleet's Nodes (label selector), one stream instead of one per node, held by the
  // group's watcher; each event is handed to the kubelet that owns the node, in
  // whichever instance of the group (the base or a growth) it is.
  void startNodeWatch() {
    ReflectorOptions o;
    o.collection = kube::ResourceRef(nodes_);
    o.selector.labelSelector = runSelector(ctx_.runId) + "," + kWorkloadLabel + "=" + p_.name;
    nodeWatch_ = std::make_unique<Reflector>(calls_, events_, ctx_.sim, watchRng_, std::move(o));
    nodeWatch_->onItem([this](const json& node) { observeNode(node); });
    nodeWatch_->onEvent([this](const kube::WatchEvent& ev) {
      if (ev.type == kube::WatchEventType::kAdded || ev.type == kube::WatchEventType::kModified) observeNode(ev.object);
    });
    nodeWatch_->onListed([this](bool first) {
      if (!first) return;
      for (FleetInstance* m : group_->members) m->maybeSetupDone();
    });
    nodeWatch_->start();
  }

  // The kubelet of `name` if an instance of this worker's group (this fleet's or a
  // growth's) owns it.
  Kubelet* kubeletNamed(std::string_view name) const {
    if (!name.starts_with(prefix_)) return nullptr;
    name.remove_prefix(prefix_.size());
    std::uint32_t index = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size()) return nullptr;
    for (const FleetInstance* m : group_->members) {
      if (m->stopped_) continue;
      if (Kubelet* k = m->kubeletAt(index)) return k;
    }
    return nullptr;
  }

  // This instance's kubelet of node `index`. kubelets_ is in index order (nodes at
  // start, then joins with growing indices).
  Kubelet* kubeletAt(std::uint32_t index) const {
    auto it = std::lower_bound(kubelets_.begin(), kubelets_.end(), index,
                               [](const std::unique_ptr<Kubelet>& k, std::uint32_t i) { return k->index < i; });
    return it != kubelets_.end() && (*it)->index == index ? it->get() : nullptr;
  }

  void observeNode(const json& node) {
    auto meta = node.find("metadata");
    if (meta == node.end() || !meta->is_object()) return;
    auto name = meta->find("name");
    if (name == meta->end() || !name->is_string()) return;
    Kubelet* k = kubeletNamed(name->get_ref<const std::string&>());
    if (k == nullptr) return;
    FleetInstance& owner = *k->fleet;
    // As the kubelet reads it (IsNodeReady): Ready is True, or it is not.
    bool readyTrue = false;
    const json* conditions = nullptr;
    if (auto st = node.find("status"); st != node.end() && st->is_object()) {
      if (auto c = st->find("conditions"); c != st->end() && c->is_array()) conditions = &*c;
    }
    if (conditions) {
      for (const auto& c : *conditions) {
        if (c.value("type", std::string()) == "Ready") readyTrue = c.value("status", std::string()) == "True";
      }
    }
    owner.readySeen(*k, readyTrue);
  }

  void readySeen(Kubelet& k, bool readyTrue) {
    const ReadySeen was = k.ready;
    k.ready = readyTrue ? ReadySeen::kTrue : ReadySeen::kNotTrue;
    if (k.ready == was) return;
    Lifecycle* rec = k.tracked ? &lifecycle_.at(k.index) : nullptr;
    const TimePoint now = ctx_.sim.now();
    if (!readyTrue) {
      ++c_.notReadyTransitions;
      // The next status computation reports: wake the node for it.
      if (!statusEveryTick() && k.state == NodeState::kRunning && k.statusTimer.armed())
        k.statusTimer.start(statusTickAtOrAfter(k, now + Duration{1}));
      if (rec && rec->phase == Lifecycle::Phase::kFailed) {
        if (!rec->notReadySeen && rec->renewed) notReadySeconds_.push_back(roundedSeconds(now - rec->lastRenewal));
        rec->notReadySeen = true;
      } else {
        ++c_.notReadyUnexpected;  // a node that kept renewing was declared dead
      }
      return;
    }
    if (was != ReadySeen::kNotTrue) return;  // the first sighting is no transition
    ++c_.readyTransitions;
    if (rec && rec->phase == Lifecycle::Phase::kReturned && !rec->readyAgainSeen) {
      rec->readyAgainSeen = true;
      readyAgainSeconds_.push_back(roundedSeconds(now - rec->returnedAt));
    }
  }

  // A Lease write was answered: the moment the server last heard from the node, which
  // is what the lifecycle controller's grace period counts from.
  void renewalAnswered(Kubelet& k) {
    if (!k.tracked) return;
    Lifecycle& rec = lifecycle_.at(k.index);
    rec.lastRenewal = ctx_.sim.now();
    rec.renewed = true;
  }

  // A node that fails or leaves before its setup finished will never finish it.
  void abandonSetup(Kubelet& k) {
    if (!k.awaitingLease && k.podsAwaiting == 0) return;
    k.awaitingLease = false;
    k.podsAwaiting = 0;
    setupStepDone(k);
  }

  // ---- pods ----

  void createPods(Kubelet& k) {
    if (!k.pods) {
      Duration gap = p_.podStatusInterval / p_.podsPerNode;
      k.pods = std::make_unique<Kubelet::Pods>(k, gap, seedFor(k.index) ^ 0x9e37);
    }
    for (std::int64_t i = 0; i < p_.podsPerNode; ++i) {
      events_.at(podBucket_.reserve(ctx_.sim.now()), [this, &k, i] {
        if (k.state != NodeState::kRunning && k.state != NodeState::kFailed) {
          podAnswered(k);
          return;
        }
        createPod(k, static_cast<std::uint32_t>(i), [this, &k](bool created) {
          podAnswered(k);
          if (!created) return;
          // The periodic updates start within one gap of the node's first pod, whose
          // own start was just reported: at the node's own phase of the gap, as its
          // renewals do, so a fleet registered in a burst does not report its pods in
          // one burst every gap.
          if (++k.pods->created == 1 && k.state == NodeState::kRunning) {
            k.pods->timer.start(firstTick(k, k.pods->timer.period()));
          }
        });
      });
    }
  }

  std::string podName(const Kubelet& k, std::uint32_t slot) const {
    std::string name = nodeName(k.index) + "-p" + std::to_string(slot);
    const auto& gen = k.pods->generation;
    if (slot < gen.size() && gen[slot] > 0) name += "-g" + std::to_string(gen[slot]);
    return name;
  }

  // Creates the pod in `slot` (under its current generation's name) and, once it
  // exists, runs the kubelet's start sequence: its events and its first status.
  // `done(created)` runs when the POST is answered.
  template <class Done>
  void createPod(Kubelet& k, std::uint32_t slot, Done done) {
    const std::string node = nodeName(k.index);
    json pod = p_.podTemplate->fill({{"name", podName(k, slot)}, {"namespace", pods_.ns}, {"node", node}});
    pod["metadata"]["labels"].update(ctx_.labels(p_.name));
    auto req = kube::ApiRequest::create(pods_, pod);
    req.decode = kube::Decode::kMetadata;
    req.intendedAt = ctx_.sim.now();
    auto answered = [this, &k, slot, pod = std::move(pod), done = std::move(done)](kube::ApiResult r) mutable {
      if (!r.ok() && !r.alreadyExists()) {
        ++c_.podFailed;
        done(false);
        return;
      }
      ++c_.podsCreated;
      if (r.ok()) pod["metadata"]["uid"] = r.body.value("/metadata/uid"_json_pointer, std::string());
      done(true);
      if (k.state == NodeState::kRunning) podStarted(k, slot, pod);
    };
    calls_.call(std::move(req), std::move(answered));
  }

  // What the kubelet does when it starts a pod bound to it: the image pull and
  // container events, then the status manager's first PATCH (Running and Ready).
  void podStarted(Kubelet& k, std::uint32_t slot, const json& pod) {
    if (p_.events) {
      const json& container = pod["spec"]["containers"][0];
      const std::string image = container.value("image", std::string());
      json ref = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"namespace", pods_.ns},
                  {"name", pod["metadata"]["name"]},
                  {"fieldPath", "spec.containers{" + container.value("name", std::string()) + "}"}};
      if (auto uid = pod["metadata"].value("uid", std::string()); !uid.empty()) ref["uid"] = uid;
      const std::string node = nodeName(k.index);
      const auto pullMs = std::to_string(300 + engine::streamSeed(k.index, ref["name"].get<std::string>()) % 600);
      recordEvent(ref, pods_.ns, node, "Pulling", "Pulling image \"" + image + "\"");
      recordEvent(ref, pods_.ns, node, "Pulled",
                  "Successfully pulled image \"" + image + "\" in " + pullMs + "ms (" + pullMs +
                      "ms including waiting). Image size: 321520 bytes.");
      recordEvent(ref, pods_.ns, node, "Created", "Container created");
      recordEvent(ref, pods_.ns, node, "Started", "Container started");
    }
    patchPodStatus(k, slot);
  }

  void podStatus(Kubelet& k) {
    Kubelet::Pods& pods = *k.pods;
    if (pods.created == 0) return;
    const std::uint32_t i = pods.next++ % pods.created;
    if (!replacing_.empty() && replacing_.contains(slotKey(k, i))) return;  // between its DELETE and POST
    patchPodStatus(k, i);
  }

  void patchPodStatus(Kubelet& k, std::uint32_t slot) {
    const std::string t = rfc3339(unixNow());
    // What the kubelet's status manager sends: a strategic merge of the pod's status.
    std::string body = R"({"status":{"phase":"Running","startTime":")" + t +
                       R"(","conditions":[{"type":"Ready","status":"True","lastProbeTime":")" + t +
                       R"(","lastTransitionTime":")" + t + R"("}],"podIP":"10.250.)" + std::to_string(k.index & 0xff) +
                       "." + std::to_string(slot) + "\"}}";
    kube::ApiRequest req;
    req.verb = kube::Verb::kPatch;
    req.patchType = kube::PatchType::kStrategicMerge;
    req.ref = pods_.named(podName(k, slot)).sub("status");
    req.body = std::move(body);
    req.decode = kube::Decode::kNone;
    req.intendedAt = ctx_.sim.now();
    calls_.call(std::move(req), [this](kube::ApiResult r) { r.ok() ? ++c_.podUpdates : ++c_.podFailed; });
  }

  // ---- events ----

  // The node's start: what a kubelet records when it starts (or restarts) and
  // registers, in that order.
  void nodeStartEvents(Kubelet& k) {
    if (!p_.events) return;
    const std::string node = nodeName(k.index);
    const json ref = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}};
    const std::string status = "Node " + node + " status is now: ";
    recordEvent(ref, "default", node, "Starting", "Starting kubelet.");
    for (const char* reason : {"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"}) {
      recordEvent(ref, "default", node, reason, status + reason);
    }
    recordEvent(ref, "default", node, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods");
    recordEvent(ref, "default", node, "NodeReady", status + "NodeReady");
  }

  // One Event as client-go's recorder makes it (name: object name and the time in hex
  // nanoseconds), sent when the fleet's event bucket has a token. Fire-and-forget.
  void recordEvent(const json& involved, const std::string& ns, const std::string& host, const char* reason,
                   std::string message) {
    if (eventsQueued_ >= kEventQueue) {
      ++c_.eventsDropped;
      return;
    }
    // The sequence keeps names of events recorded in the same instant apart.
    const std::int64_t nanos = unixNow() + static_cast<std::int64_t>(eventSeq_++);
    char hex[24];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(nanos));
    const std::string t = rfc3339(unixNow());
    json ev = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata",
                {{"name", involved["name"].get<std::string>() + "." + hex},
                 {"namespace", ns},
                 {"labels", ctx_.labels(p_.name)}}},
               {"involvedObject", involved},
               {"reason", reason},
               {"message", std::move(message)},
               {"source", {{"component", "kubelet"}, {"host", host}}},
               {"firstTimestamp", t},
               {"lastTimestamp", t},
               {"count", 1},
               {"type", "Normal"},
               {"eventTime", nullptr},
               {"reportingComponent", "kubelet"},
               {"reportingInstance", host}};
    ++eventsQueued_;
    events_.at(eventBucket_.reserve(ctx_.sim.now()), [this, ns, ev = std::move(ev)] {
      --eventsQueued_;
      auto req = kube::ApiRequest::create(kube::ResourceRef(kube::gvr::kEvents).in(ns), ev);
      req.decode = kube::Decode::kNone;
      req.intendedAt = ctx_.sim.now();
      ++eventsInFlight_;
      calls_.call(std::move(req), [this](kube::ApiResult r) {
        --eventsInFlight_;
        r.ok() ? ++c_.eventsCreated : ++c_.eventFailed;
        maybeSetupDone();
      });
    });
  }

  // ---- failures and churn ----

  void failSome() {
    for (auto& k : kubelets_) {
      if (k->index >= static_cast<std::uint64_t>(p_.count) || !failsAt(k->index, p_.failures.fraction)) continue;
      if (k->state == NodeState::kGone) continue;
      if (k->state != NodeState::kRunning) abandonSetup(*k);
      k->state = NodeState::kFailed;
      if (k->tracked) lifecycle_.at(k->index).phase = Lifecycle::Phase::kFailed;
      k->leaseTimer.stop();
      k->statusTimer.stop();
      if (k->pods) k->pods->timer.stop();
      ++c_.failed;
    }
  }

  void returnSome() {
    for (auto& k : kubelets_) {
      if (k->state != NodeState::kFailed) continue;
      // A restarted kubelet renews and reports at once, every condition in full, then
      // settles into its periods.
      k->state = NodeState::kRunning;
      k->fullStatus = true;
      if (k->tracked) {
        Lifecycle& rec = lifecycle_.at(k->index);
        rec.phase = Lifecycle::Phase::kReturned;
        rec.returnedAt = ctx_.sim.now();
      }
      k->leaseTimer.start(ctx_.sim.now());
      nodeStartEvents(*k);
      k->lastReport = TimePoint{} - p_.statusReportFrequency;
      k->statusGrid = ctx_.sim.now();
      k->statusTimer.start(k->statusGrid);
      if (k->pods && k->pods->created > 0) k->pods->timer.start(ctx_.sim.now());
      ++c_.returned;
    }
  }

  void scheduleJoin() {
    events_.at(ctx_.sim.now() + rng_.interArrival(ctx_.share(p_.joinsPerMinute / 60.0)), [this] {
      // Joined nodes take indices from kMaxCount up, past any count the fleet has or grows
      // to, interleaved by worker so they never clash.
      const std::int64_t idx =
          KubeletFleet::kMaxCount + static_cast<std::int64_t>(joined_++ * ctx_.workers() + ctx_.workerIndex());
      kubelets_.push_back(std::make_unique<Kubelet>(*this, idx, seedFor(idx)));
      Kubelet& k = *kubelets_.back();
      ++c_.joined;
      events_.at(regBucket_.reserve(ctx_.sim.now()), [this, &k] { registerNode(k); });
      scheduleJoin();
    });
  }

  void scheduleLeave() {
    events_.at(ctx_.sim.now() + rng_.interArrival(ctx_.share(p_.leavesPerMinute / 60.0)), [this] {
      if (Kubelet* k = pickLive()) k->fleet->leave(*k);
      scheduleLeave();
    });
  }

  // Pod replacement: somebody's controller deletes a pod and creates its successor.
  // The kubelet's part on the wire is the confirming DELETE (grace period 0) once the
  // containers are gone, then the new pod's start.
  void scheduleReplacement() {
    events_.at(ctx_.sim.now() + rng_.interArrival(ctx_.share(p_.podReplacementsPerMinute / 60.0)), [this] {
      if (Kubelet* k = pickLive(/*withPods=*/true)) {
        k->fleet->replacePod(*k, static_cast<std::uint32_t>(rng_.below(k->pods->created)));
      }
      scheduleReplacement();
    });
  }

  static std::uint64_t slotKey(const Kubelet& k, std::uint32_t slot) {
    return (static_cast<std::uint64_t>(k.index) << 8) | slot;
  }

  void replacePod(Kubelet& k, std::uint32_t slot) {
    if (!replacing_.insert(slotKey(k, slot)).second) return;  // this one is being replaced already
    kube::DeleteOptions confirm;
    confirm.gracePeriodSeconds = 0;
    auto req = kube::ApiRequest::remove(pods_.named(podName(k, slot)), confirm);
    req.intendedAt = ctx_.sim.now();
    calls_.call(std::move(req), [this, &k, slot](kube::ApiResult r) {
      if (!r.ok() && !r.notFound()) {
        ++c_.replaceFailed;
        replacing_.erase(slotKey(k, slot));
        return;
      }
      auto& gen = k.pods->generation;
      if (gen.empty()) gen.resize(static_cast<std::size_t>(p_.podsPerNode));
      ++gen[slot];
      events_.at(podBucket_.reserve(ctx_.sim.now()), [this, &k, slot] {
        if (k.state != NodeState::kRunning) {  // the node failed or left meanwhile: nobody starts it
          replacing_.erase(slotKey(k, slot));
          return;
        }
        createPod(k, slot, [this, &k, slot](bool created) {
          replacing_.erase(slotKey(k, slot));
          created ? ++c_.podsReplaced : ++c_.replaceFailed;
        });
      });
    });
  }

  // A running node, uniformly among the whole fleet on this worker: this instance's
  // nodes and those of the group's other running instances (the fleet's growths).
  Kubelet* pickLive(bool withPods = false) {
    std::vector<const FleetInstance*> members;
    for (const FleetInstance* m : group_->members)
      if (!m->stopped_) members.push_back(m);
    std::size_t total = 0;
    for (const FleetInstance* m : members) total += m->kubelets_.size();
    if (total == 0) return nullptr;
    auto fits = [withPods](const Kubelet& k) {
      return k.state == NodeState::kRunning && (!withPods || (k.pods && k.pods->created > 0));
    };
    auto at = [&members](std::size_t i) -> Kubelet& {
      for (const FleetInstance* m : members) {
        if (i < m->kubelets_.size()) return *m->kubelets_[i];
        i -= m->kubelets_.size();
      }
      return *members.back()->kubelets_.back();  // not reached: i < total
    };
    for (int attempt = 0; attempt < 64; ++attempt) {
      Kubelet& k = at(rng_.below(total));
      if (fits(k)) return &k;
    }
    for (const FleetInstance* m : members) {
      for (auto& k : m->kubelets_) {
        if (fits(*k)) return k.get();
      }
    }
    return nullptr;
  }

  void leave(Kubelet& k) {
    abandonSetup(k);
    k.state = NodeState::kGone;
    k.leaseTimer.stop();
    k.statusTimer.stop();
    const std::string name = nodeName(k.index);
    // A node scaled down: its Node is deleted (and with it, by owner, its Lease; the
    // plane may lack a garbage collector, so the Lease is deleted explicitly too).
    for (auto ref : {kube::ResourceRef(nodes_).named(name), leases_.named(name)}) {
      auto req = kube::ApiRequest::remove(ref);
      req.intendedAt = ctx_.sim.now();
      calls_.call(std::move(req), [](kube::ApiResult) {});
    }
    if (k.pods) {
      k.pods->timer.stop();
      kube::DeleteOptions force;
      force.gracePeriodSeconds = 0;  // no kubelet is left to confirm termination
      for (std::uint32_t i = 0; i < k.pods->created; ++i) {
        auto req = kube::ApiRequest::remove(pods_.named(podName(k, i)), force);
        req.intendedAt = ctx_.sim.now();
        calls_.call(std::move(req), [](kube::ApiResult) {});
      }
    }
    k.lease = {};
    ++c_.left;
  }

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
  std::unique_ptr<Reflector> nodeWatch_;  // the group's watcher's only
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
  Counts c_;
};

Kubelet::Kubelet(FleetInstance& f, std::int64_t idx, std::uint64_t seed)
    : fleet(&f),
      leaseTimer(f.sim(), engine::PeriodicTimer::bind<&Kubelet::onLeaseTimer>(this), f.params().renewPeriod(),
                 f.params().renewJitter(), seed),
      // The kubelet's status loop is wait.Until: a fixed period, no jitter.
      statusTimer(f.sim(), engine::PeriodicTimer::bind<&Kubelet::onStatusTimer>(this), f.params().statusTimerPeriod()),
      index(static_cast<std::uint32_t>(idx)),
      rng(seed ^ 0x5bd1e995) {}

engine::Simulator* Kubelet::fleet_sim() { return &fleet->sim(); }
void Kubelet::onLeaseTimer() { fleet->renew(*this); }
void Kubelet::onStatusTimer() { fleet->computeStatus(*this); }
void Kubelet::onPodTimer() { fleet->podStatus(*this); }

}  // namespace

std::unique_ptr<WorkloadInstance> KubeletFleet::start(WorkloadContext& ctx) {
  return std::make_unique<FleetInstance>(params_, ctx, groups_);
}

}  // namespace cpscale::workloads
