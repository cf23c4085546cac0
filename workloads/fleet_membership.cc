// Who is in the fleet: nodes registering (Node, then Lease, status, start Events and
// pods), the setup they add up to, nodes the scenario fails and brings back, and
// those that join and leave through churn.
#include "workloads/fleet_instance.h"

#include <cstdio>
#include <cstring>

namespace cpscale::workloads::fleet {

namespace {

constexpr const char* kImagesMarker = "@@cpscale-images@@";
constexpr const char* kQuotedImagesMarker = "\"@@cpscale-images@@\"";
// How long a kubelet waits before registering again after a failure (its own
// registration backoff caps at 7 s).
constexpr Duration kRegistrationRetry = std::chrono::seconds(7);

}  // namespace

// status.images' entries as JSON text (no brackets), built on first use: nodeImages
// entries sized like real ones, a digest and a tag reference, ~250 bytes each.
const std::string& FleetInstance::imagesText() {
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

void FleetInstance::scheduleRegistration() {
  if (nextToRegister_ >= kubelets_.size() || stopped_) return;
  events_.at(regBucket_.reserve(ctx_.sim.now()), [this] {
    registerNode(*kubelets_[nextToRegister_++]);
    scheduleRegistration();
  });
}

void FleetInstance::registerNode(Kubelet& k) {
  if (k.state == NodeState::kGone) return;
  k.state = NodeState::kRegistering;
  startStreams(k);  // the kubelet's and kube-proxy's informers start before it registers
  const std::string name = nodeName(k.index);
  const std::string now = rfc3339(unixNow());
  const unsigned a = (k.index >> 16) & 0xff, b = (k.index >> 8) & 0xff, c = k.index & 0xff;
  char ip[32], cidr[32], id[40];
  std::snprintf(ip, sizeof ip, "10.%u.%u.%u", 64 + a % 64, b, c);
  // One /24 per node (podIP, fleet_services.cc), unique up to 32,768 nodes.
  std::snprintf(cidr, sizeof cidr, "10.%u.%u.0/24", 128 + ((k.index >> 8) % 128), c);
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

void FleetInstance::podAnswered(Kubelet& k) {
  if (k.podsAwaiting == 0) return;
  --k.podsAwaiting;
  setupStepDone(k);
}

// Counts a node as set up once its Lease and pods were all answered.
void FleetInstance::setupStepDone(Kubelet& k) {
  if (k.awaitingLease || k.podsAwaiting > 0 || k.watchesAwaiting > 0 || setupRemaining_ == 0) return;
  --setupRemaining_;
  maybeSetupDone();
}

// The start Events of the initial nodes and pods are part of the ramp too: a fleet
// that registered in a burst still has thousands queued behind its event bucket, and
// they would otherwise spill into the measured window.
bool FleetInstance::setupComplete() const {
  return setupRemaining_ == 0 && (!needsWatch_ || watchSynced()) && eventsQueued_ == 0 && eventsInFlight_ == 0;
}

// Once: every node set up, its start Events answered, and the node watch holds its
// first LIST.
void FleetInstance::maybeSetupDone() {
  if (setupReported_ || !setupComplete()) return;
  setupReported_ = true;
  ctx_.setupDone();
}

// A node that fails or leaves before its setup finished will never finish it.
void FleetInstance::abandonSetup(Kubelet& k) {
  if (!k.awaitingLease && k.podsAwaiting == 0 && k.watchesAwaiting == 0) return;
  k.awaitingLease = false;
  k.podsAwaiting = 0;
  k.watchesAwaiting = 0;
  setupStepDone(k);
}

void FleetInstance::failSome() {
  for (auto& k : kubelets_) {
    if (k->index >= static_cast<std::uint64_t>(p_.count) || !failsAt(k->index, p_.failures.fraction)) continue;
    if (k->state == NodeState::kGone) continue;
    if (k->state != NodeState::kRunning) abandonSetup(*k);
    k->state = NodeState::kFailed;
    if (k->tracked) lifecycle_.at(k->index).phase = Lifecycle::Phase::kFailed;
    k->leaseTimer.stop();
    k->statusTimer.stop();
    if (k->pods) k->pods->timer.stop();
    stopStreams(*k);
    ++c_.failed;
  }
}

void FleetInstance::returnSome() {
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
    startStreams(*k);  // a restarted kubelet and kube-proxy list everything again
    nodeStartEvents(*k);
    k->lastReport = TimePoint{} - p_.statusReportFrequency;
    k->statusGrid = ctx_.sim.now();
    k->statusTimer.start(k->statusGrid);
    if (k->pods && k->pods->created > 0) k->pods->timer.start(ctx_.sim.now());
    ++c_.returned;
  }
}

void FleetInstance::scheduleJoin() {
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

void FleetInstance::scheduleLeave() {
  events_.at(ctx_.sim.now() + rng_.interArrival(ctx_.share(p_.leavesPerMinute / 60.0)), [this] {
    if (Kubelet* k = pickLive()) k->fleet->leave(*k);
    scheduleLeave();
  });
}

// A running node, uniformly among the whole fleet on this worker: this instance's
// nodes and those of the group's other running instances (the fleet's growths).
Kubelet* FleetInstance::pickLive(bool withPods) {
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

void FleetInstance::leave(Kubelet& k) {
  abandonSetup(k);
  k.state = NodeState::kGone;
  k.leaseTimer.stop();
  k.statusTimer.stop();
  stopStreams(k);
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

}  // namespace cpscale::workloads::fleet
