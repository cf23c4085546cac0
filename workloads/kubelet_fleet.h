// The node-bound population: N synthetic kubelets, each with a realistic Node object
// and a Lease in kube-node-lease, behaving as the kubelet does on the wire:
//  - Lease renewal every leaseDurationSeconds/4 + U[0, 4%) (wait.JitterUntil with 0.04)
//    by a PUT of the cached Lease with only renewTime changed, no GET first; after a 409
//    Conflict exactly one GET and a retried PUT (nodelease controller);
//  - node status computed every nodeStatusUpdateFrequency (10 s) and PATCHed to
//    nodes/<n>/status only when it changed or nodeStatusReportFrequency (5 m) passed;
//    the PATCH holds only heartbeats unless the node's Ready, as its informer shows it,
//    is not True (the node lifecycle controller marked it Unknown): then that is a change,
//    reported at the next tick with every condition in full (Ready True, KubeletReady,
//    lastTransitionTime now; the pressure conditions False). A node that returns from a
//    failure reports in full at once.
// Each node opens its kubelet's and kube-proxy's watches (`watches`, below). With
// `watches: {mode: shared}` one watch per fleet instance on the fleet's Nodes (label
// selector cpscale.io/run + cpscale.io/workload) stands in for every kubelet's node
// informer instead: one stream instead of N, outside the open-loop request budget,
// relisted on 410 Gone; a fleet that fails nodes keeps it beside the per-node streams.
// The first lists are part of the fleet's setup. Through the Node streams the fleet
// also times what the controller wrote (summary `nodeLifecycle`): per failed node, from its last answered
// Lease write to the first event showing Ready != True; per returned node, from its
// return to the first event showing Ready True again.
//  - pods bound to the node (podsPerNode): each created pod's status is PATCHed at once
//    (Running, Ready) and then in turn every podStatusInterval; with churn a pod is
//    replaced now and then: the kubelet's confirming DELETE (grace period 0), then the
//    replacement (the next generation's name) with the same start sequence;
//  - Events, with `events: true`, as the kubelet's recorder writes them (core v1, source
//    kubelet/<node>): Starting, NodeHasSufficientMemory, NodeHasNoDiskPressure,
//    NodeHasSufficientPID, NodeAllocatableEnforced, NodeReady in "default" when a node
//    registers or returns; Pulling, Pulled, Created, Started in the pod's namespace when a
//    pod starts. Fire-and-forget behind a fleet-wide token bucket (eventQps/eventBurst,
//    the kubelet's own is 50/100 per node); an event that finds 1000 waiting is dropped,
//    as the kubelet's broadcaster drops when its queue is full.
// Registration is the only throttled path (registrationQps/Burst) besides pods and
// events; heartbeats are not, as a real kubelet's are not throttled by anybody else's
// traffic. Nodes that join through churn are numbered from kMaxCount (10,000,000) up,
// whatever the count.
//
// Growing in place, growth("count", from, to) with count <= from < to: a fleet of the
// nodes [from, to), named as a fleet of `to` names them, with the same parameters:
// registration (its own bucket at registrationQps: the added nodes' ramp is its
// setup, reported once they are registered with their Leases, pods and start Events
// answered), pods, Events, and failures by the same failsAt(index, fraction) rule, so
// floor(to x fraction) fail across the two; its failures.at counts from its own start.
// Churn rates are fleet-wide, so they stay with the base: the growth joins nothing, and
// the base's leaves and pod replacements pick among all the fleet's nodes on the
// worker, grown ones included. It adds no node watch: the instances of a fleet and its
// growths on one worker share the first one's (the base's), whose events reach
// whichever instance owns the node. Summary keys are the base's (its watch counts
// appear once, from the instance holding the watch).
//
// Scenario entry (every field but `kind` and `count` is optional):
//   - kind: kubelets
//     name: fleet                     # object names cpscale-<run>-fleet-<i>; default "kubelets"
//     count: 200                      # nodes at start, >= 0
//     registrationQps: 20             # node registrations per second (ramp), > 0
//     registrationBurst: 20
//     leaseDurationSeconds: 40        # renewal period = duration / 4
//     nodeStatusUpdateFrequency: 10s  # how often status is computed
//     statusReportFrequency: 5m       # PATCH at least this often when nothing changed
//     statusChangeProbability: 0      # chance a computed status differs, per computation
//     renewalPhase: random            # first renewal/status tick at a uniformly random phase
//                                     # of the period (seeded), as kubelets started at
//                                     # different times are; `registration`: one period after
//                                     # the node registered (a fleet registered together
//                                     # then renews in bursts)
//     nodeImages: 40                  # status.images entries (~250 B each): node size
//     podsPerNode: 0                  # pods bound to each node, with a status stream
//     podStatusInterval: 60s          # per pod, between status updates
//     podQps: 20                      # pod creations per second (with podBurst)
//     events: false                   # the kubelet's Events (node start, pod start)
//     eventQps: 500                   # fleet-wide event rate limit; eventBurst default 2x
//     failures: {fraction: 0.1, at: 2m, returnAfter: 1m}   # stop renewing, then return
//     churn: {joinsPerMinute: 6, leavesPerMinute: 6,       # Poisson node joins/leaves
//             podReplacementsPerMinute: 30}                # and pod replacements
//     nodeTemplate: node.json         # templates, relative to workloads/templates
//     leaseTemplate: lease.json
//     podTemplate: pod.json
//     services: {count: 10,          # ClusterIP Services selecting the fleet's pods
//                readinessFlipsPerMinute: 30, notReadyFor: 30s}
//     watches: {mode: perNode,        # or shared: one node watch per worker (heartbeats only)
//               node: true, pods: true, services: true,   # the kubelet's watches
//               kubeProxy: true,      # kube-proxy's: Node, Services, EndpointSlices, ServiceCIDRs
//               nodesPerConnection: 1}
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workloads/params.h"
#include "workloads/templates.h"
#include "workloads/workload.h"

namespace cpscale::workloads {

struct KubeletFleetParams {
  std::string name = "kubelets";
  std::int64_t count = 0;
  RateLimit registration{20, 20};
  std::int64_t leaseDurationSeconds = 40;
  engine::Duration statusUpdateFrequency = std::chrono::seconds(10);
  engine::Duration statusReportFrequency = std::chrono::minutes(5);
  double statusChangeProbability = 0;
  enum class RenewalPhase { kRandom, kRegistration };
  RenewalPhase renewalPhase = RenewalPhase::kRandom;
  std::int64_t nodeImages = 40;
  std::int64_t podsPerNode = 0;
  engine::Duration podStatusInterval = std::chrono::seconds(60);
  RateLimit pods{20, 20};
  bool events = false;
  RateLimit eventRate{500, 1000};
  struct Failures {
    double fraction = 0;
    engine::Duration at{0};
    std::optional<engine::Duration> returnAfter;
  } failures;
  double joinsPerMinute = 0;
  double leavesPerMinute = 0;
  double podReplacementsPerMinute = 0;
  std::optional<ObjectTemplate> nodeTemplate;
  std::optional<ObjectTemplate> leaseTemplate;
  std::optional<ObjectTemplate> podTemplate;
  // What each node watches (the `watches` entry): by default what a 1.36 node opens,
  // each node its own streams (a streaming list, then the watch):
  //  - its kubelet: its Node (fieldSelector metadata.name=<node>), its pods
  //    (spec.nodeName=<node>), the Services it makes environment variables of
  //    (spec.clusterIP!=None, kubernetes#122394);
  //  - its kube-proxy: its Node, the Services (labelSelector
  //    !service.kubernetes.io/service-proxy-name, spec.clusterIP!=None), the
  //    EndpointSlices (!service.kubernetes.io/headless) and the ServiceCIDRs.
  // `shared` is the economy of one node watch per engine worker for the whole fleet
  // (label selector), which loads the plane with heartbeats only.
  struct Watches {
    bool perNode = true;
    bool node = true, pods = true, services = true;  // the kubelet's
    bool kubeProxy = true;
    // Nodes whose streams share one HTTP/2 connection to a replica, per component: a
    // real cluster has one per kubelet and one per kube-proxy (1).
    std::int64_t nodesPerConnection = 1;
    int kubeletStreams() const { return perNode ? node + pods + services : 0; }
    int kubeProxyStreams() const { return perNode && kubeProxy ? 4 : 0; }
    int streamsPerNode() const { return kubeletStreams() + kubeProxyStreams(); }
    // Watches per stream connection: a node's streams over its components'
    // connections, times the nodes that share one.
    long streamsPerConnection() const {
      const int conns = (kubeletStreams() > 0) + (kubeProxyStreams() > 0);
      if (conns == 0) return 0;
      return static_cast<long>((streamsPerNode() + conns - 1) / conns * nodesPerConnection);
    }
  } watches;
  // Services whose endpoints move (the `services` entry): `count` ClusterIP Services in
  // the pods' namespace, each selecting the pods whose slot falls to it (pod i of the
  // fleet, counting podsPerNode per node, goes to Service i mod count); the real
  // EndpointSlice controller writes their slices. Pods flip readiness at
  // readinessFlipsPerMinute (fleet-wide, Poisson): Ready False for notReadyFor, then
  // True again, each flip a status PATCH that the controller turns into an EndpointSlice
  // update for every kube-proxy.
  struct Services {
    std::int64_t count = 0;
    double readinessFlipsPerMinute = 0;
    engine::Duration notReadyFor = std::chrono::seconds(30);
  } services;
  // Not a scenario field: the fleet's nodes are indices [firstIndex, count). Only a
  // growth (KubeletFleet::growth) starts past 0.
  std::int64_t firstIndex = 0;

  // The renewal period and its jitter bound, as the kubelet derives them.
  engine::Duration renewPeriod() const { return std::chrono::seconds(leaseDurationSeconds) / 4; }
  engine::Duration renewJitter() const { return renewPeriod() * 4 / 100; }
  // The period of a node's status timer. A status computation can PATCH only when a
  // report is due, the kubelet came back, or the watch shows Ready not True, unless it
  // draws a random change (statusChangeProbability > 0, every computation). Without
  // that draw a node's timer is armed only for the computations that may PATCH: the
  // first one of its grid (every statusUpdateFrequency) at or after the report falls
  // due, so idle nodes wake the engine once per report rather than every 10 s.
  engine::Duration statusTimerPeriod() const {
    if (statusChangeProbability > 0) return statusUpdateFrequency;
    const auto ticks = (statusReportFrequency + statusUpdateFrequency - engine::Duration{1}) / statusUpdateFrequency;
    return statusUpdateFrequency * ticks;
  }

  // Throws ConfigError naming file, line and field.
  static KubeletFleetParams read(const YamlField& entry);
};

// Whether node `index` of a fleet of `count` is one of the `fraction` that fail: the
// same floor(count * fraction) nodes, spread evenly, whichever worker owns them.
bool failsAt(std::int64_t index, double fraction);

// The instances of one fleet and of its growths on one engine worker, so they share a
// node watch and the base's churn reaches the grown nodes (defined in fleet_instance.h).
struct FleetGroups;

class KubeletFleet final : public Workload {
 public:
  // The largest `count`; nodes that join through churn are numbered from here up, so
  // their names never depend on (or collide with) the count a fleet has or grows to.
  static constexpr std::int64_t kMaxCount = 10'000'000;

  explicit KubeletFleet(KubeletFleetParams params);
  std::string kind() const override { return "kubelets"; }
  std::string name() const override { return params_.name; }
  void prepare(kube::ApiClient& api, engine::Clock& clock, const std::string& runId) override;
  std::unique_ptr<WorkloadInstance> start(WorkloadContext& ctx) override;
  std::vector<kube::GroupVersionResource> resources() const override;
  // "count": nodes [from, to), see the top of this header.
  std::unique_ptr<Workload> growth(const std::string& field, double from, double to) const override;
  std::vector<std::string> growableFields() const override { return {"count"}; }
  bool loadsSteadyWindow() const override { return params_.count > 0; }
  long watchStreamsPerConnection() const override { return params_.watches.streamsPerConnection(); }
  std::string whyNotMeasured(const std::string& figure) const override;
  const KubeletFleetParams& params() const { return params_; }

  // Names, so tests and the CLI can find objects: "cpscale-<run>-<name>-<i>".
  static std::string nodeName(const std::string& runId, const std::string& workload, std::int64_t index);
  static std::string podNamespace(const std::string& runId, const std::string& workload);

 private:
  KubeletFleetParams params_;
  // Shared with the fleet's growths.
  std::shared_ptr<FleetGroups> groups_;
};

}  // namespace cpscale::workloads
