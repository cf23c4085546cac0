// The fleet instance's frame: it starts the kubelets it owns on this worker, its
// registration, failures and churn, stops them, sums up what they did, and binds each
// kubelet's timers to the seams that act on them.
#include "workloads/fleet_instance.h"

#include <algorithm>
#include <cmath>

namespace cpscale::workloads::fleet {

FleetInstance::FleetInstance(const KubeletFleetParams& p, WorkloadContext& ctx, std::shared_ptr<FleetGroups> groups)
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
      streamSpecs_(streamSpecsFor(p.watches)),
      groups_(std::move(groups)) {
  validateRunId(ctx.runId);
  for (std::int64_t i = p.firstIndex; i < p.count; ++i) {
    if (!ctx.owns(actorKey(i))) continue;
    kubelets_.push_back(std::make_unique<Kubelet>(*this, i, seedFor(i)));
    kubelets_.back()->awaitingLease = true;
    kubelets_.back()->podsAwaiting = static_cast<std::uint8_t>(p.podsPerNode);
    kubelets_.back()->watchesAwaiting = static_cast<std::uint8_t>(streamSpecs_.size());
    if (p.failures.fraction > 0 && failsAt(i, p.failures.fraction)) {
      kubelets_.back()->tracked = true;
      lifecycle_.emplace(static_cast<std::uint32_t>(i), Lifecycle{});
    }
  }
  setupRemaining_ = kubelets_.size();
  group_ = &groups_->join(ctx.sim, ctx.runId, this);
  // Shared watches: one node watch per worker for the fleet and its growths: the first
  // instance that has nodes starts it, the others' nodes are seen through it. Per-node
  // watches: each node its own (fleet_streams.cc).
  // A failed kubelet drops its own watches, so a fleet that fails nodes keeps the shared
  // watch as well, as an observer of what the node lifecycle controller does to them.
  needsWatch_ = (!p.watches.perNode || p.failures.fraction > 0) && (!kubelets_.empty() || p.joinsPerMinute > 0);
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
  if (p.services.readinessFlipsPerMinute > 0 && p.firstIndex == 0) scheduleFlip();
}

FleetInstance::~FleetInstance() {
  stop();
  groups_->leave(ctx_.sim, ctx_.runId, this);
}

void FleetInstance::stop() {
  stopped_ = true;
  if (nodeWatch_) nodeWatch_->stop();
  events_.cancelAll();
  for (auto& k : kubelets_) {
    k->leaseTimer.stop();
    k->statusTimer.stop();
    if (k->pods) k->pods->timer.stop();
    if (k->streams)
      for (auto& r : k->streams->reflectors) r->stop();
  }
  calls_.cancelAll();
}

json FleetInstance::summary() const {
  json s = {{"nodes", kubelets_.size()},
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
            {"nodeLifecycle", lifecycleSummary()},
            {"nodeWatches", streamsSummary()},
            {"serviceEndpoints", servicesSummary()}};
  // The fleet's delivery book once: from the base's instance on the first worker
  // (summaries add up across workers).
  if (p_.services.count > 0 && p_.firstIndex == 0 && ctx_.workerIndex() == 0)
    s["endpointDelivery"] = groups_->deliveries.summary();
  if (p_.watches.perNode && p_.firstIndex == 0 && ctx_.workerIndex() == 0)
    s["nodeWatchOutages"] = groups_->outages.summary();
  return s;
}

// What the actors themselves hold (not the engine's timer slots): for the memory
// per synthetic node figure.
std::size_t FleetInstance::actorBytes() const {
  std::size_t n = kubelets_.capacity() * sizeof(void*);
  for (const auto& k : kubelets_) {
    n += sizeof(Kubelet) + k->lease.heapBytes();
    if (k->pods) n += sizeof(Kubelet::Pods) + k->pods->generation.capacity() * sizeof(std::uint16_t);
    if (k->streams) n += sizeof(NodeStreams) + k->streams->reflectors.size() * (sizeof(void*) + sizeof(Reflector));
  }
  n += leaseTexts_.bytes();
  // The failing nodes' side records: entry, hash node and bucket, roughly.
  n += lifecycle_.size() * (sizeof(std::pair<const std::uint32_t, Lifecycle>) + 2 * sizeof(void*)) +
       lifecycle_.bucket_count() * sizeof(void*);
  return n;
}

// When the first renewal (or status tick) of a node that just registered falls due.
// Kubelets of a real fleet started at different times, so their cycles have
// independent phases: a uniformly random phase of the period (seeded per node) keeps
// a fleet registered in a burst from renewing in the same burst every period.
TimePoint FleetInstance::firstTick(const Kubelet& k, Duration period) const {
  if (p_.renewalPhase == KubeletFleetParams::RenewalPhase::kRegistration) return ctx_.sim.now() + period;
  engine::SplitMix64 phase(seedFor(k.index) ^ static_cast<std::uint64_t>(period.count()));
  return ctx_.sim.now() + Duration{static_cast<Duration::rep>(engine::toUnitInterval(phase.next()) *
                                                              static_cast<double>(period.count()))};
}

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

}  // namespace cpscale::workloads::fleet
