// A calibrated control-plane model that answers Kubernetes API requests in virtual
// time: the `cpscale simulate` target. It is not a mock: it keeps an object store with
// resourceVersions and conflicts, serves watches with fan-out to every watcher, and
// charges every request to a cost model of kube-apiserver replicas and etcd clusters
// (calibration.h) whose CPU is queued at the modelled cores, so latency rises and the
// plane saturates as the measured one did. Each member serves /metrics with the metric
// names the scraper reads from a real plane, so figures, gates and reports are the
// same code live and modelled.
//
//   ModelPlane plane(simulator, options);            // one engine, virtual time
//   auto load = plane.clientTransport(weight);      // what the workloads talk to
//   auto scrape = plane.memberTransport("etcd-main");  // serves that member's /metrics
//
// Sampling: a client transport with weight w stands for w identical clients. Each of
// its requests is counted w times in the members' counters, charges w times its cost
// and each object it creates counts w times in object counts, heap and etcd size. A
// scenario too large to simulate request by request is run with its extensive knobs
// divided by w (see simulate.h). A watch counts once (as the live generator's shared
// watches do); each event sent to it, and each change dispatched to it, counts its
// object's weight: an object of weight w stands for w changes, each sent to the watch.
//
// Admission: where the profile turns API Priority and Fairness off, kube-apiserver's
// max-in-flight filter (ModelAdmission) answers each replica's excess 429 at once.
//
// The plane's own controllers are in it only where a workload's figures depend on
// what they write: the node lifecycle controller (ModelNodeLifecycle).
//
// Everything runs on the engine's thread; the same seed gives the same answers, bit
// for bit.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/scheduler.h"
#include "sim/kube/transport.h"
#include "sim/model/calibration.h"

namespace cpscale::model {

// One etcd cluster of the modelled plane and the resources routed to it
// (--etcd-servers-overrides), as "group/resource" ("coordination.k8s.io/leases",
// "/events"); empty for the main cluster that holds everything else.
struct ModelEtcd {
  std::string name;  // "main", "leases", ...: member "etcd-<name>"
  std::vector<std::string> resources;
  // etcd's --quota-backend-bytes (its default, 2 GiB): once the db file passes it, etcd
  // raises its NOSPACE alarm and refuses every write (kube-apiserver answers 500
  // "etcdserver: mvcc: database space exceeded") until an operator defragments it.
  double quotaBytes = 2.0 * 1024 * 1024 * 1024;
};

// kube-controller-manager's node lifecycle controller (pkg/controller/nodelifecycle),
// the part of it a fleet of kubelets sees: every monitorPeriod it looks at each Node,
// and one it has not heard from for longer than gracePeriod has its Ready,
// MemoryPressure, DiskPressure and PIDPressure conditions set Unknown ("Kubelet stopped
// posting node status.") with a PUT of nodes/<name>/status, sent to the replica the
// controller-manager talks to and charged there and in etcd as any other write. Heard
// from: its Lease in kube-node-lease written, or its status written with a change (a
// heartbeat), counted from the first pass that saw it (the controller's informers see
// it there), so a node that falls silent is marked at the first pass more than
// gracePeriod after the pass that saw its last renewal: between gracePeriod and
// gracePeriod plus two monitor periods after that renewal. A node already Unknown is
// not written again; the kubelet that returns reports Ready itself. Its taints
// (node.kubernetes.io/unreachable) and evictions are not modelled.
struct ModelNodeLifecycle {
  bool enabled = false;                                      // the profile runs a controller-manager
  engine::Duration monitorPeriod = std::chrono::seconds(5);  // --node-monitor-period
  engine::Duration gracePeriod = std::chrono::seconds(50);   // --node-monitor-grace-period
  std::size_t apiserver = 0;                                 // the replica the controller-manager talks to
};

// kube-controller-manager's EndpointSlice controller, where the profile runs a
// controller-manager: for each Service with a selector, the pods of its namespace that
// the selector matches and that have an IP are its endpoints (address, ready, serving,
// nodeName, targetRef), packed into EndpointSlices of at most maxEndpointsPerSlice
// (--max-endpoints-per-slice), labelled kubernetes.io/service-name and managed-by the
// controller. A pod that gains or loses an IP, changes readiness or its labels, or goes,
// dirties the slice that holds (or will hold) it; batchPeriod after the first change
// (--endpointslice-updates-batch-period) the Service joins the controller's workqueue,
// and a worker writes each dirty slice of it once, a POST for a new one and a PUT after,
// one at a time, as writes of the controller-manager's own (on the node lifecycle
// controller's replica). The endpoints controller keeps, from the same changes and
// through its own workqueue (endpointsBatchPeriod, endpointsWorkers), the Service's
// Endpoints object (ready addresses and notReadyAddresses). Each controller's client
// waits for its own token bucket before every request (rest.Config's QPS and Burst, from
// --kube-api-qps and --kube-api-burst): a Service waiting in the queue takes in every
// change that comes meanwhile, so under a burst of pod starts the writes are held to the
// client's rate, as the real controller's are. A Service's deletion deletes its slices
// (the garbage collector's work, through their owner reference). Not modelled: slices
// rebalanced when they run sparse, topology hints, dual-stack and headless Services'
// differences, EndpointSlice mirroring.
struct ModelEndpointSlices {
  bool enabled = false;
  engine::Duration batchPeriod{0};           // --endpointslice-updates-batch-period
  engine::Duration endpointsBatchPeriod{0};  // --endpoint-updates-batch-period
  std::size_t maxEndpointsPerSlice = 100;    // --max-endpoints-per-slice
  std::size_t sliceWorkers = 5;              // --concurrent-service-endpoint-syncs
  std::size_t endpointsWorkers = 5;          // --concurrent-endpoint-syncs
};

// What every controller of the controller-manager's has, where the profile runs one: its
// own client, whose requests wait for a token bucket of --kube-api-qps and
// --kube-api-burst (rest.Config's QPS and Burst). The EndpointSlice and endpoints
// controllers' writes wait for it; the node lifecycle controller's writes for a node
// that falls silent or returns are sent at once (fewer than its bucket holds but for
// mass failures).
struct ModelControllerManager {
  double clientQps = 20;    // --kube-api-qps
  double clientBurst = 30;  // --kube-api-burst
};

// kube-apiserver's max-in-flight filter (WithMaxInFlightLimit), what admits requests
// when API Priority and Fairness is off: each replica serves at most maxReadOnly
// read-only (GET, LIST) and maxMutating mutating requests at once, counted from
// admission to answer; long-running ones (WATCH) take no seat. A request that finds its
// kind's seats taken is answered at once with 429, Retry-After: 1 and the plain-text
// body the filter writes, counted in apiserver_request_total (code 429) but not in the
// latency histogram, and charged a read's CPU for the chain in front of the filter
// (authentication, audit): an upper bound. system:masters is exempt
// (ClientIdentity::kMasters): its requests neither take nor wait for a seat. A sampled
// request (weight w) takes w seats; where fewer than w are left it is admitted with
// the chance (seats left) / w, so the seats taken average what the real plane's do.
// At w = 1 that is the filter itself.
struct ModelAdmission {
  double maxReadOnly = 0;  // --max-requests-inflight; 0: no limit
  double maxMutating = 0;  // --max-mutating-requests-inflight; 0: no limit
};

// Whom a client's requests authenticate as, for admission.
enum class ClientIdentity {
  kMasters,  // group system:masters (an admin kubeconfig): exempt from the limits
  kLimited,  // anybody else (the controllers, a user bound to cluster-admin)
};

struct ModelOptions {
  Calibration calibration;
  std::size_t apiservers = 1;  // members kube-apiserver-0 ... kube-apiserver-(n-1)
  // The replicas the clients' load is spread over (a role split dedicates the others to
  // the scheduler and the controller-manager); empty: every replica.
  std::vector<std::size_t> clientApiservers;
  std::vector<ModelEtcd> etcds{{"main", {}}};
  std::uint64_t seed = 1;
  std::string kubernetesVersion = "v1.36.3";  // what /version answers ("-model" appended)
  // Unix time (ns) of the scheduler's TimePoint 0: creationTimestamps and
  // process_start_time_seconds are this plus virtual time.
  std::int64_t epochUnixNanos = 0;
  // What each resource's watch history keeps for watches resuming from a
  // resourceVersion (older ones are answered 410 Expired), and the heap holds: the
  // watch cache's ring (StoreOptions), sized to hold `watchHistory` of events, at
  // least `watchHistoryMin` of them.
  engine::Duration watchHistory = std::chrono::seconds(75);
  std::size_t watchHistoryMin = 100;
  // kube-apiserver's --request-timeout: a request that would wait longer is answered
  // 504 Timeout at this age.
  engine::Duration requestTimeout = std::chrono::seconds(60);
  // The sliding window over which the cost model measures each pool's load.
  engine::Duration loadWindow = std::chrono::seconds(2);
  // kube-apiserver's --etcd-compaction-interval: each tick compacts etcd to the revision
  // of the tick before, so the db keeps every revision written since then (between one
  // and two intervals of history) beside each live key's latest.
  engine::Duration etcdCompactionInterval = std::chrono::minutes(5);
  ModelNodeLifecycle nodeLifecycle;
  ModelEndpointSlices endpointSlices;
  ModelControllerManager controllerManager;  // with nodeLifecycle.enabled
  // Off by default (no limits): APF on, or an exempt identity, queues at the cores.
  // The node lifecycle controller's writes are limited (it is not system:masters).
  ModelAdmission admission;
  // How long a restarted member takes to serve again (ModelPlane::restart): the model's
  // assumption, from the local plane's fault rehearsals (README, Rehearse faults):
  // kube-apiserver-0 killed for 8 s served again 10.5 s after it went down, etcd-main
  // killed for 5 s, 5.9 s after.
  engine::Duration apiserverStartup = std::chrono::milliseconds(2500);
  engine::Duration etcdStartup = std::chrono::milliseconds(900);
};

// The modelled controller-manager, a member where the profile runs one: it serves its
// /metrics (workqueues, leadership) and nothing else, and cannot be faulted.
inline constexpr const char* kControllerManagerMember = "kube-controller-manager";

struct ModelMember {
  std::string name;  // "kube-apiserver-0", "etcd-main", "kube-controller-manager"
  std::string role;  // "kube-apiserver", "etcd" or "kube-controller-manager"
  std::string url;   // "model://kube-apiserver-0"
  // etcd only, as metrics::TargetInfo wants them: the cluster ("main") and the
  // resources routed to it (empty for the main cluster).
  std::string etcdCluster;
  std::vector<std::string> etcdResources;
};

// What the model did over the run, for tests and the report.
struct ModelStats {
  std::uint64_t requests = 0;            // simulated requests answered (unweighted)
  std::uint64_t conflicts = 0;           // 409 Conflict on update/patch
  std::uint64_t alreadyExists = 0;       // 409 AlreadyExists on create
  std::uint64_t watchEventsSent = 0;     // events delivered to simulated watchers
  std::size_t objects = 0;               // objects in the store (unweighted)
  std::size_t watchers = 0;              // open watches
  std::uint64_t timeouts = 0;            // answered 504: queued beyond requestTimeout
  std::uint64_t backgroundRequests = 0;  // the plane's own (calibration.background)
  std::uint64_t noSpace = 0;             // writes refused: their etcd's db passed its quota
  std::uint64_t nodesMarkedUnknown = 0;  // status writes of the node lifecycle controller that did
  std::uint64_t tooManyRequests = 0;     // answered 429 by the max-in-flight filter
};

class ModelPlane {
 public:
  // The scheduler's clock is the model's time: responses are delivered as its events.
  ModelPlane(engine::Scheduler& scheduler, ModelOptions options);
  ~ModelPlane();
  ModelPlane(const ModelPlane&) = delete;
  ModelPlane& operator=(const ModelPlane&) = delete;

  // A transport for a client of the plane, spread over every apiserver replica
  // round-robin (as a load balancer would). Its requests count `weight` times and are
  // admitted as `identity`'s.
  kube::TransportPtr clientTransport(double weight = 1, ClientIdentity identity = ClientIdentity::kMasters);
  // A transport bound to one member, for its /metrics (and, on an apiserver, the API),
  // as system:masters (the scraper's admin certificate).
  kube::TransportPtr memberTransport(const std::string& member);
  std::vector<ModelMember> members() const;
  const ModelOptions& options() const;
  ModelStats stats() const;

  // Faults (a scenario's `faults:`), at the engine's time. A killed member answers
  // nothing: a request to it fails as a refused connection does, what it was answering
  // and its watches end as a reset connection does. The apiservers' writes to a killed
  // etcd are answered 500. Throws std::invalid_argument for a member it does not have.
  void kill(const std::string& member);
  // Starts a killed member again (std::logic_error if it was not killed): it serves once
  // its startup (ModelOptions::apiserverStartup, etcdStartup) has passed, then `ready`
  // runs on the engine. A restarted apiserver's watch cache starts at the store's
  // revision then: a watch resuming from before it is answered 410 Expired.
  void restart(const std::string& member, std::function<void()> ready = {});
  // Frozen as a SIGSTOPped process is: what reaches it waits until resume (an
  // apiserver's answers and watch opens, an etcd's writes and scrapes), failing only on
  // a client's own timeout or, for writes to a frozen etcd, the apiserver's. A frozen
  // apiserver's open watches still get their events (the model does not hold streams).
  // Nothing for a member that is down.
  void pause(const std::string& member);
  void resume(const std::string& member);
  // Whether the member serves now: neither killed, starting nor frozen.
  bool serving(const std::string& member) const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cpscale::model
