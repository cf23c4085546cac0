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
// divided by w (see simulate.h); watchers always count once (as the live generator's
// shared watches do).
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
  // How long a restarted member takes to serve again (ModelPlane::restart): the model's
  // assumption, from the local plane's fault rehearsals (README, Rehearse faults):
  // kube-apiserver-0 killed for 8 s served again 10.5 s after it went down, etcd-main
  // killed for 5 s, 5.9 s after.
  engine::Duration apiserverStartup = std::chrono::milliseconds(2500);
  engine::Duration etcdStartup = std::chrono::milliseconds(900);
};

struct ModelMember {
  std::string name;  // "kube-apiserver-0", "etcd-main"
  std::string role;  // "kube-apiserver" or "etcd"
  std::string url;   // "model://kube-apiserver-0"
  // etcd only, as metrics::TargetInfo wants them: the cluster ("main") and the
  // resources routed to it (empty for the main cluster).
  std::string etcdCluster;
  std::vector<std::string> etcdResources;
};

// What the model did over the run, for tests and the report.
struct ModelStats {
  std::uint64_t requests = 0;          // simulated requests answered (unweighted)
  std::uint64_t conflicts = 0;         // 409 Conflict on update/patch
  std::uint64_t alreadyExists = 0;     // 409 AlreadyExists on create
  std::uint64_t watchEventsSent = 0;   // events delivered to simulated watchers
  std::size_t objects = 0;             // objects in the store (unweighted)
  std::size_t watchers = 0;            // open watches
  std::uint64_t timeouts = 0;          // answered 504: queued beyond requestTimeout
  std::uint64_t backgroundRequests = 0;  // the plane's own (calibration.background)
  std::uint64_t noSpace = 0;             // writes refused: their etcd's db passed its quota
};

class ModelPlane {
 public:
  // The scheduler's clock is the model's time: responses are delivered as its events.
  ModelPlane(engine::Scheduler& scheduler, ModelOptions options);
  ~ModelPlane();
  ModelPlane(const ModelPlane&) = delete;
  ModelPlane& operator=(const ModelPlane&) = delete;

  // A transport for a client of the plane, spread over every apiserver replica
  // round-robin (as a load balancer would). Its requests count `weight` times.
  kube::TransportPtr clientTransport(double weight = 1);
  // A transport bound to one member, for its /metrics (and, on an apiserver, the API).
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
