// Admission in the model plane: from a request's submit to its answer scheduled at its
// modelled latency. A member that is down refuses it (plane_faults.cc); kube-apiserver's
// max-in-flight filter (ModelAdmission) answers an excess 429 at once; the rest is
// charged to the cost model (plane_costs.cc).
#include "sim/model/plane_impl.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

namespace cpscale::model {

using engine::Duration;
using engine::TimePoint;

void ModelPlane::Impl::admit(ModelTransport& t, kube::RequestId id) {
  Pending& p = t.pending_.at(id);
  p.submitted = sched_.now();
  p.route = parseRoute(p.req);
  double latency;
  if (t.kind_ == ModelTransport::Kind::kEtcd) {
    if (refusedWhileDown(t, id, true, t.member_)) return;
    latency = cal_.latencyRead.value;
  } else if (t.kind_ == ModelTransport::Kind::kControllerManager) {
    latency = cal_.latencyRead.value;
  } else {
    p.replica = replicaFor(t);
    // As the live transport's round-robin, a replica that is down is tried all the same.
    if (refusedWhileDown(t, id, false, p.replica)) return;
    const std::optional<double> admitted = admitToApiserver(t, id, p);
    if (!admitted) return;
    latency = *admitted;
    markGracelessPodDelete(p);
  }
  scheduleAnswer(t, id, p, latency);
}

std::optional<double> ModelPlane::Impl::admitToApiserver(ModelTransport& t, kube::RequestId id, Pending& p) {
  const TimePoint now = sched_.now();
  const Route& r = p.route;
  p.labelsKey = requestLabels(r, p.req.method).key();
  const bool write = r.resource && isWrite(r.verb);
  p.mutating = write;
  const Class cls = classOf(r);
  if (!passesMaxInFlight(t, id, p, write)) return std::nullopt;
  double latency;
  if (t.kind_ == ModelTransport::Kind::kApiserver && !r.resource) {
    // A scrape or health check of one member (/metrics, /readyz, /version): a real
    // kube-apiserver serves these outside the request queues that load fills (the
    // scraper is exempt from priority and fairness, and Go schedules its goroutine
    // beside the backlog), so a saturated member still reports its figures. Its CPU
    // is charged; it waits for none.
    const double cpu = cpuOf(Class::kRead);
    apis_[p.replica].pool->charge(now, cpu);
    apis_[p.replica].cpu += cpu;
    latency = cal_.latencyRead.value;
  } else {
    latency = charge(p.replica, cls, r.group + "/" + r.resourceName, t.weight_);
  }
  if (!r.watch) apis_[p.replica].metrics.inflight(write, t.weight_);
  return latency;
}

bool ModelPlane::Impl::passesMaxInFlight(ModelTransport& t, kube::RequestId id, Pending& p, bool write) {
  // The max-in-flight filter, after authentication and before everything else. As
  // upstream's long-running check: watches and the streaming subresources take no seat;
  // get, list and watch are read-only, every other verb mutating.
  const Route& r = p.route;
  const bool longRunning = r.watch || (r.resource && (r.sub == "exec" || r.sub == "attach" || r.sub == "log" ||
                                                      r.sub == "portforward" || r.sub == "proxy"));
  if (!t.limited_ || longRunning) return true;
  const bool mutating = r.resource ? write : p.req.method != "GET";
  if (takeSeat(p.replica, mutating, t.weight_)) {
    p.seat = true;
    p.seatMutating = mutating;
    return true;
  }
  const TimePoint now = sched_.now();
  Apiserver& a = apis_[p.replica];
  const double cpu = cpuOf(Class::kRead) * t.weight_;
  a.pool->charge(now, cpu);
  a.cpu += cpu;
  if (generatorPool_) generatorPool_->charge(now, cal_.generatorCpuPerRequest.value * t.weight_);
  a.metrics.dropped(p.labelsKey, 429, t.weight_);
  ++stats_.tooManyRequests;
  p.tooMany = true;
  // Answered from an event, never from inside submit().
  p.due = now;
  ModelTransport* tp = &t;
  p.event = sched_.scheduleAt(now, [tp, id] {
    if (tp->impl_) tp->impl_->execute(*tp, id);
  });
  return false;
}

void ModelPlane::Impl::scheduleAnswer(ModelTransport& t, kube::RequestId id, Pending& p, double latency) {
  const TimePoint now = sched_.now();
  ModelTransport* tp = &t;
  if (p.route.watch && t.kind_ != ModelTransport::Kind::kEtcd && t.kind_ != ModelTransport::Kind::kControllerManager) {
    p.due = now + fromSeconds(latency);
    p.event = sched_.scheduleAt(p.due, [tp, id] {
      if (tp->impl_) tp->impl_->openWatch(*tp, id);
    });
    return;
  }
  double answerAt = latency;
  if (t.kind_ != ModelTransport::Kind::kEtcd && latency > seconds(options_.requestTimeout)) {
    answerAt = seconds(options_.requestTimeout);
    p.serverTimeout = true;
  }
  if (p.req.timeout > Duration::zero() && seconds(p.req.timeout) < answerAt) {
    answerAt = seconds(p.req.timeout);
    p.clientTimeout = true;
  }
  p.due = now + fromSeconds(answerAt);
  p.event = sched_.scheduleAt(p.due, [tp, id] {
    if (tp->impl_) tp->impl_->execute(*tp, id);
  });
}

bool ModelPlane::Impl::takeSeat(std::size_t replica, bool mutating, double w) {
  Apiserver& a = apis_[replica];
  const double limit = mutating ? options_.admission.maxMutating : options_.admission.maxReadOnly;
  double& taken = mutating ? a.seatsMutating : a.seatsReadOnly;
  // A request standing for w takes w seats. Where fewer than w are left, it is admitted
  // with the chance that the share of those w the real plane would admit: the sampled
  // plane then keeps as many seats taken, on average, as the real one (at w = 1 a seat
  // is free or not, and this is the filter itself).
  const bool admitted = limit <= 0 || taken + w <= limit || (taken < limit && rng_.uniform() < (limit - taken) / w);
  if (admitted) taken += w;
  return admitted;
}

void ModelPlane::Impl::releaseSeat(std::size_t replica, bool mutating, double w) {
  Apiserver& a = apis_[replica];
  double& taken = mutating ? a.seatsMutating : a.seatsReadOnly;
  taken = std::max(0.0, taken - w);
}

kube::HttpResponse ModelPlane::Impl::tooManyRequests() {
  // maxinflight.go's tooManyRequests: http.Error with the Retry-After it sets first.
  kube::HttpResponse r = response(429, "Too many requests, please try again later.\n", "text/plain; charset=utf-8");
  r.headers.push_back({"x-content-type-options", "nosniff"});
  r.headers.push_back({"retry-after", "1"});
  return r;
}

void ModelPlane::Impl::markGracelessPodDelete(const Pending& p) {
  const Route& r = p.route;
  if (r.verb != "DELETE" || !r.group.empty() || r.resourceName != "pods" || r.name.empty() || r.has("dryRun")) return;
  // Preconditions or a dry run: left to the store at the answer, which checks them first.
  const nlohmann::json opts = nlohmann::json::parse(p.req.body, nullptr, /*allow_exceptions=*/false);
  if (!opts.is_object() || opts.value("gracePeriodSeconds", std::int64_t{-1}) != 0 || opts.contains("preconditions") ||
      opts.contains("dryRun"))
    return;
  Table* table = store_.find(r.group, r.version, r.resourceName);
  if (table == nullptr || !etcdServing(etcdFor(*table)) || etcds_[etcdFor(*table)].noSpace) return;
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const StoreResult res = store_.markDeleting(*table, r.ns, r.name);
  if (res.weightedWrites > 0) countWrite(etcdFor(*table), res.weightedWrites, res.weightedPuts);
}

}  // namespace cpscale::model
