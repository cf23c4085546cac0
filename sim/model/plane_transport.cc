// The model plane's transports (ModelTransport): what a client or a scrape of one
// member submits, cancels and polls, each request pending until the engine answers it.
#include "sim/model/plane_impl.h"

#include <algorithm>

#include "sim/engine/simulator.h"

namespace cpscale::model {

using engine::Duration;
using engine::TimePoint;

ModelTransport::~ModelTransport() {
  if (impl_ == nullptr) return;
  impl_->transports_.erase(this);
  for (auto& [id, p] : pending_) {
    if (p.event != 0) impl_->sched_.cancel(p.event);
    if (p.seat) impl_->releaseSeat(p.replica, p.seatMutating, weight_);
    if (p.watch) {
      --impl_->stats_.watchers;
      impl_->apis_[p.replica].watches -= p.watch->weight;
      impl_->bury(std::move(p.watch));
    }
  }
}

kube::RequestId ModelTransport::submit(kube::HttpRequest req, kube::ResponseHandler done) {
  const kube::RequestId id = ++next_;
  Pending& p = pending_[id];
  p.req = std::move(req);
  p.done = std::move(done);
  if (impl_ != nullptr) impl_->admit(*this, id);
  return id;
}

void ModelTransport::cancel(kube::RequestId id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  kube::HttpResponse aborted;
  aborted.outcome = kube::TransportOutcome::kAborted;
  aborted.detail = "cancelled";
  if (it->second.watch && impl_ != nullptr) {
    impl_->endWatch(*this, id, std::move(aborted), false);
    return;
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (impl_ != nullptr) {
    if (p.event != 0) impl_->sched_.cancel(p.event);
    if (!p.route.watch && !p.tooMany && kind_ != Kind::kEtcd)
      impl_->apis_[p.replica].metrics.inflight(p.mutating, -weight_);
    if (p.seat) impl_->releaseSeat(p.replica, p.seatMutating, weight_);
  }
  ++handled_;
  p.done(std::move(aborted));
}

std::size_t ModelTransport::poll(Duration maxWait) {
  const std::size_t before = handled_;
  if (impl_ == nullptr) {
    // The plane is gone: what was pending will never be answered.
    std::vector<kube::RequestId> ids;
    for (const auto& [id, p] : pending_) ids.push_back(id);
    for (kube::RequestId id : ids) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      Pending p = std::move(it->second);
      pending_.erase(it);
      kube::HttpResponse r;
      r.outcome = kube::TransportOutcome::kConnectFailed;
      r.detail = "the model plane is gone";
      ++handled_;
      p.done(std::move(r));
    }
    return handled_ - before;
  }
  // Responses are scheduled events: from outside the engine's loop (a synchronous
  // call during setup), waiting means running the engine up to the next answer.
  // From inside an event the loop is already running them; never re-enter it.
  auto* sim = dynamic_cast<engine::Simulator*>(&impl_->sched_);
  if (sim == nullptr || sim->running()) return 0;
  TimePoint target = sim->now() + std::max(Duration::zero(), maxWait);
  for (const auto& [id, p] : pending_) {
    if (!p.route.watch && p.due < target) target = std::max(p.due, sim->now());
  }
  sim->runUntil(target);
  return handled_ - before;
}

}  // namespace cpscale::model
