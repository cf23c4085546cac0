// Member faults in the model plane (ModelPlane::kill, restart, pause, resume): a down
// member's requests refused, a killed one's connections reset, a frozen one's answers
// and writes held until it resumes or their timeouts pass.
#include "sim/model/plane_impl.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace cpscale::model {

using engine::Duration;
using engine::TimePoint;

namespace {

// A refused connect on the host is answered within a round trip: at once, as far as any
// client's timing goes, but never from inside submit().
constexpr Duration kRefusedAfter = std::chrono::microseconds(100);

}  // namespace

ModelPlane::Impl::FaultedMember ModelPlane::Impl::faulted(const std::string& member) {
  if (apiHealth_.empty()) {
    apiHealth_.resize(apis_.size());
    etcdHealth_.resize(etcds_.size());
  }
  for (std::size_t i = 0; i < apis_.size(); ++i)
    if (apis_[i].name == member) return {&apiHealth_[i], false, i};
  for (std::size_t i = 0; i < etcds_.size(); ++i)
    if (etcds_[i].member == member) return {&etcdHealth_[i], true, i};
  throw std::invalid_argument("the model plane has no member '" + member + "'");
}

bool ModelPlane::Impl::refusedWhileDown(ModelTransport& t, kube::RequestId id, bool etcd, std::size_t member) {
  const auto& hs = etcd ? etcdHealth_ : apiHealth_;
  if (hs.empty() || (hs[member].health != Health::kDown && hs[member].health != Health::kStarting)) return false;
  Pending& p = t.pending_.at(id);
  // cancel() takes back what admission adds to the in-flight gauge: add it here too.
  const bool counted = !etcd && !p.route.watch;
  if (counted) apis_[member].metrics.inflight(false, t.weight_);
  p.due = sched_.now() + kRefusedAfter;
  ModelTransport* tp = &t;
  std::string detail = "connection refused (" + (etcd ? etcds_[member].member : apis_[member].name) + " is down)";
  p.event = sched_.scheduleAt(p.due, [tp, id, counted, detail = std::move(detail)] {
    if (tp->impl_ == nullptr) return;
    auto it = tp->pending_.find(id);
    if (it == tp->pending_.end()) return;
    Pending done = std::move(it->second);
    tp->pending_.erase(it);
    if (counted) tp->impl_->apis_[done.replica].metrics.inflight(false, -tp->weight_);
    kube::HttpResponse r;
    r.outcome = kube::TransportOutcome::kConnectFailed;
    r.detail = detail;
    ++tp->handled_;
    done.done(std::move(r));
  });
  return true;
}

bool ModelPlane::Impl::heldWhileFrozen(ModelTransport& t, kube::RequestId id, Pending& p) {
  if (apiHealth_.empty() || p.serverTimeout || p.clientTimeout) return false;
  if (t.kind_ == ModelTransport::Kind::kControllerManager) return false;
  MemberHealth* h = nullptr;
  bool apiserverAnswers = false;  // a running apiserver waiting on its etcd answers 504 at its timeout
  if (t.kind_ == ModelTransport::Kind::kEtcd) {
    if (etcdHealth_[t.member_].health == Health::kFrozen) h = &etcdHealth_[t.member_];
  } else if (apiHealth_[p.replica].health == Health::kFrozen) {
    h = &apiHealth_[p.replica];
  } else if (p.mutating && !p.route.watch && !p.route.has("dryRun")) {
    const std::size_t e = etcdFor(p.route.group + "/" + p.route.resourceName);
    if (etcdHealth_[e].health == Health::kFrozen) {
      h = &etcdHealth_[e];
      apiserverAnswers = true;
    }
  }
  if (h == nullptr) return false;
  h->held.emplace_back(&t, id);
  std::optional<TimePoint> deadline;
  bool serverSide = false;
  if (p.req.timeout > Duration::zero()) deadline = p.submitted + p.req.timeout;
  if (apiserverAnswers && (!deadline || p.submitted + options_.requestTimeout < *deadline)) {
    deadline = p.submitted + options_.requestTimeout;
    serverSide = true;
  }
  p.event = 0;
  p.due = TimePoint::max();
  if (deadline) {
    p.due = std::max(*deadline, sched_.now());
    ModelTransport* tp = &t;
    p.event = sched_.scheduleAt(p.due, [tp, id, serverSide] {
      if (tp->impl_) tp->impl_->timeOutHeld(*tp, id, serverSide);
    });
  }
  return true;
}

void ModelPlane::Impl::timeOutHeld(ModelTransport& t, kube::RequestId id, bool serverSide) {
  auto it = t.pending_.find(id);
  if (it == t.pending_.end()) return;
  it->second.event = 0;
  const std::pair<ModelTransport*, kube::RequestId> key{&t, id};
  for (auto* hs : {&apiHealth_, &etcdHealth_})
    for (MemberHealth& h : *hs) std::erase(h.held, key);
  if (serverSide) {
    it->second.serverTimeout = true;
    execute(t, id);
    return;
  }
  // The client gave up: nothing is answered, and in the model what it asked is not done.
  Pending done = std::move(it->second);
  t.pending_.erase(it);
  if (!done.route.watch && t.kind_ != ModelTransport::Kind::kEtcd)
    apis_[done.replica].metrics.inflight(done.mutating, -t.weight_);
  kube::HttpResponse r;
  r.outcome = kube::TransportOutcome::kTimeout;
  r.detail = "no answer within the request's timeout";
  ++t.handled_;
  done.done(std::move(r));
}

void ModelPlane::Impl::resetConnections(bool etcd, std::size_t member) {
  struct End {
    engine::EventId event;
    TimePoint submitted;
    kube::RequestId id;
    ModelTransport* t;
  };
  std::vector<End> ends;
  for (ModelTransport* t : transports_) {
    if ((t->kind_ == ModelTransport::Kind::kEtcd) != etcd) continue;
    for (const auto& [id, p] : t->pending_)
      if ((etcd ? t->member_ : p.replica) == member) ends.push_back({p.event, p.submitted, id, t});
  }
  // The transports are kept by address: their requests' events give the order, the
  // same in every run.
  std::sort(ends.begin(), ends.end(), [](const End& a, const End& b) {
    return std::tie(a.event, a.submitted, a.id) < std::tie(b.event, b.submitted, b.id);
  });
  const std::string name = etcd ? etcds_[member].member : apis_[member].name;
  for (const End& e : ends) {
    if (!transports_.contains(e.t)) continue;
    auto it = e.t->pending_.find(e.id);
    if (it == e.t->pending_.end()) continue;
    kube::HttpResponse reset;
    reset.outcome = kube::TransportOutcome::kProtocolError;
    reset.detail = "connection reset by peer (" + name + " was killed)";
    if (it->second.watch) {
      endWatch(*e.t, e.id, std::move(reset), false);
      continue;
    }
    Pending p = std::move(it->second);
    e.t->pending_.erase(it);
    if (p.event != 0) sched_.cancel(p.event);
    if (!p.route.watch && !etcd) apis_[p.replica].metrics.inflight(p.mutating, -e.t->weight_);
    ++e.t->handled_;
    p.done(std::move(reset));
  }
}

void ModelPlane::Impl::releaseHeld(std::vector<std::pair<ModelTransport*, kube::RequestId>> held) {
  for (auto [t, id] : held) {
    if (!transports_.contains(t)) continue;
    auto it = t->pending_.find(id);
    if (it == t->pending_.end()) continue;
    Pending& p = it->second;
    if (p.event != 0) sched_.cancel(p.event);
    p.due = sched_.now();
    const bool open = p.route.watch && t->kind_ != ModelTransport::Kind::kEtcd;
    p.event = sched_.scheduleAt(p.due, [t, id, open] {
      if (t->impl_ == nullptr) return;
      if (open)
        t->impl_->openWatch(*t, id);
      else
        t->impl_->execute(*t, id);
    });
  }
}

void ModelPlane::Impl::killMember(const std::string& member) {
  FaultedMember m = faulted(member);
  MemberHealth& h = *m.health;
  if (h.health == Health::kDown) return;
  if (h.ready != 0) sched_.cancel(std::exchange(h.ready, 0));
  h.health = Health::kDown;
  auto held = std::move(h.held);
  h.held.clear();
  resetConnections(m.etcd, m.index);
  // A killed etcd's held writes are refused by their apiservers now; a killed
  // apiserver's were reset with its connections.
  if (m.etcd) releaseHeld(std::move(held));
}

void ModelPlane::Impl::restartMember(const std::string& member, std::function<void()> ready) {
  FaultedMember m = faulted(member);
  MemberHealth* h = m.health;
  if (h->health != Health::kDown) throw std::logic_error(member + " was not killed");
  h->health = Health::kStarting;
  const Duration startup = m.etcd ? options_.etcdStartup : options_.apiserverStartup;
  h->ready = sched_.scheduleAfter(startup, [this, h, etcd = m.etcd, ready = std::move(ready)] {
    h->health = Health::kServing;
    h->ready = 0;
    if (!etcd) h->cacheFrom = store_.revision();
    if (ready) ready();
  });
}

void ModelPlane::Impl::pauseMember(const std::string& member) {
  MemberHealth& h = *faulted(member).health;
  if (h.health == Health::kServing) h.health = Health::kFrozen;
}

void ModelPlane::Impl::resumeMember(const std::string& member) {
  MemberHealth& h = *faulted(member).health;
  if (h.health != Health::kFrozen) return;
  h.health = Health::kServing;
  auto held = std::move(h.held);
  h.held.clear();
  releaseHeld(std::move(held));
}

void ModelPlane::Impl::cancelFaultEvents() {
  for (auto* hs : {&apiHealth_, &etcdHealth_})
    for (MemberHealth& h : *hs)
      if (h.ready != 0) sched_.cancel(std::exchange(h.ready, 0));
}

}  // namespace cpscale::model
