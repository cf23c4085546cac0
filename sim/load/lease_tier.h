// The node-liveness seam as a what-if: a node-facing tier in front of the plane that
// takes the kubelets' Lease renewals and writes to the apiserver only what the node
// lifecycle controller needs. A Transport decorator on a worker's transport: every
// request passes through untouched but a renewal (PUT of a Lease in kube-node-lease),
// which is answered by the tier and written through only
//  - when it is a transition: the first renewal of a Lease the tier sees, the first
//    after a silence longer than 1.5 renewal periods (a node that came back; the
//    period is the Lease's leaseDurationSeconds / 4), or the retry after a write the
//    server refused (409, after which the kubelet re-reads its Lease);
//  - or when `propagateEvery` has passed since the last write through of that Lease
//    (from its first write, at the Lease's own phase of the period: spreadPhases).
// The apiserver therefore sees each live node's Lease renewed at least every
// `propagateEvery` plus one renewal period; a silent node's last write is at most that
// old, so the controller marks it Unknown between grace - propagateEvery and grace
// after its last renewal. Keep propagateEvery below node-monitor-grace-period.
//
// An absorbed renewal is answered 200 with the body it was sent (the kubelet keeps its
// resourceVersion), as an event on the worker's engine at once: in virtual time and on
// the wall clock alike. A write through is answered by the server.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "sim/engine/scheduler.h"
#include "sim/kube/transport.h"

namespace cpscale::load {

// Counts shared by every worker's tier of a run.
struct LeaseTierCounters {
  std::atomic<std::uint64_t> received{0};     // renewals the kubelets sent
  std::atomic<std::uint64_t> absorbed{0};     // answered by the tier alone
  std::atomic<std::uint64_t> transitions{0};  // written through as transitions
  std::atomic<std::uint64_t> periodic{0};     // written through after propagateEvery
};

struct LeaseTierOptions {
  Duration propagateEvery = std::chrono::seconds(30);
  std::string leaseNamespace = "kube-node-lease";
  // A Lease's periodic writes start at its own phase of propagateEvery (from a hash of
  // its name), as a tier that took the Leases over time would write them, not in one
  // burst every period after a fleet that registered at once. Off: the first periodic
  // write is propagateEvery after the first.
  bool spreadPhases = true;
};

class LeaseTier final : public kube::Transport {
 public:
  // `scheduler` and `counters` (which several tiers may share) must outlive the tier.
  LeaseTier(kube::TransportPtr inner, engine::Scheduler& scheduler, LeaseTierCounters& counters,
            LeaseTierOptions options);
  ~LeaseTier() override;

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override;
  void cancel(kube::RequestId id) override;
  std::size_t poll(Duration maxWait) override { return inner_->poll(maxWait); }
  std::size_t inFlight() const override { return inner_->inFlight() + local_.size(); }
  void wakeup() override { inner_->wakeup(); }
  const std::string& server() const override { return inner_->server(); }

 private:
  struct LeaseState {
    bool seen = false;
    bool forceNext = false;  // the server refused the last write through
    TimePoint lastReceived{};
    TimePoint lastWritten{};
  };
  struct Local {
    engine::EventId event = 0;
    kube::ResponseHandler done;
  };
  // The Lease's name when `req` renews a node Lease, else "".
  std::string renewedLease(const kube::HttpRequest& req) const;

  kube::TransportPtr inner_;
  engine::Scheduler& scheduler_;
  LeaseTierCounters& counters_;
  LeaseTierOptions options_;
  std::string prefix_;  // the node Leases' collection path, with its trailing '/'
  std::unordered_map<std::string, LeaseState> leases_;
  std::unordered_map<kube::RequestId, Local> local_;
  // Ids of the tier's own answers, apart from the inner transport's.
  kube::RequestId nextLocal_ = kube::RequestId{1} << 62;
};

}  // namespace cpscale::load
