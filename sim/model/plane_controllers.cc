// kube-controller-manager's clients in the model plane: a controller's write, admitted,
// charged and committed on the replica the controller-manager talks to (at once, or once
// its modelled latency has passed), and the workqueue, workers and token bucket a
// controller's requests wait for.
#include "sim/model/plane_impl.h"

#include <algorithm>
#include <stdexcept>

namespace cpscale::model {

namespace {

std::string controllerRequestKey(const Table& t, const std::string& verb, const std::string& sub) {
  RequestLabels l;
  l.group = t.type.group;
  l.version = t.type.version;
  l.resource = t.type.resource;
  l.subresource = sub;
  l.verb = verb;
  l.scope = "resource";
  return l.key();
}

}  // namespace

std::optional<double> ModelPlane::Impl::admitControllerWrite(Table& t, const std::string& key, double weight,
                                                             int& refused) {
  const std::size_t replica = options_.nodeLifecycle.apiserver;
  refused = 0;
  if (!apiServing(replica) || !etcdServing(etcdFor(t))) return std::nullopt;
  ++stats_.requests;
  // Not system:masters: the max-in-flight filter applies to it as to the status write.
  if (!takeSeat(replica, true, weight)) {
    apis_[replica].metrics.dropped(key, 429, weight);
    ++stats_.tooManyRequests;
    refused = 429;
    return std::nullopt;
  }
  return charge(replica, writeClass(t.type), t.type.key(), weight);
}

int ModelPlane::Impl::commitControllerWrite(Table& t, const std::string& key, const std::string& verb,
                                            const std::string& ns, const std::string& name, const std::string& sub,
                                            const std::string& body, double weight, double latency) {
  const std::size_t replica = options_.nodeLifecycle.apiserver;
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  StoreResult res = verb == "POST"     ? store_.create(t, ns, body, weight)
                    : verb == "PATCH"  ? store_.patch(t, ns, name, sub, ObjectStore::PatchKind::kMerge, body, weight)
                    : verb == "DELETE" ? store_.remove(t, ns, name, body)
                                       : store_.update(t, ns, name, sub, body, weight);
  if (latency > seconds(options_.requestTimeout)) {
    ++stats_.timeouts;
    apis_[replica].metrics.request(key, 504, seconds(options_.requestTimeout), weight);
  } else {
    apis_[replica].metrics.request(key, res.status, latency, weight);
  }
  if (res.reason == "Conflict") ++stats_.conflicts;
  if (res.weightedWrites > 0) countWrite(etcdFor(t), res.weightedWrites, res.weightedPuts);
  return res.status;
}

int ModelPlane::Impl::controllerWrite(Table& t, const std::string& verb, const std::string& ns, const std::string& name,
                                      const std::string& sub, const std::string& body, double weight) {
  const std::string key = controllerRequestKey(t, verb, sub);
  int refused = 0;
  const std::optional<double> latency = admitControllerWrite(t, key, weight, refused);
  if (!latency) return refused;
  releaseSeat(options_.nodeLifecycle.apiserver, true, weight);
  return commitControllerWrite(t, key, verb, ns, name, sub, body, weight, *latency);
}

void ModelPlane::Impl::controllerWriteLater(Table& t, const std::string& verb, const std::string& ns,
                                            const std::string& name, const std::string& body, double weight,
                                            std::function<void(int)> answered) {
  const std::string key = controllerRequestKey(t, verb, "");
  int refused = 0;
  const std::optional<double> latency = admitControllerWrite(t, key, weight, refused);
  if (!latency) {
    answered(refused);
    return;
  }
  const std::size_t replica = options_.nodeLifecycle.apiserver;
  apis_[replica].metrics.inflight(true, weight);
  auto id = std::make_shared<engine::EventId>(0);
  *id = sched_.scheduleAfter(
      fromSeconds(std::min(*latency, seconds(options_.requestTimeout))),
      [this, id, &t, key, verb, ns, name, body, weight, lat = *latency, answered = std::move(answered)] {
        controllerWrites_.erase(*id);
        apis_[options_.nodeLifecycle.apiserver].metrics.inflight(true, -weight);
        releaseSeat(options_.nodeLifecycle.apiserver, true, weight);
        answered(commitControllerWrite(t, key, verb, ns, name, "", body, weight, lat));
      });
  controllerWrites_.insert(*id);
}

void ModelPlane::Impl::startQueue(ControllerQueue& q, std::string name, std::size_t workers,
                                  std::function<void(const std::string&)> work) {
  const ModelControllerManager& cm = options_.controllerManager;
  if (workers == 0) throw std::invalid_argument("a controller needs a worker at least");
  if (!(cm.clientQps > 0) || !(cm.clientBurst >= 1))
    throw std::invalid_argument("the controllers' client needs a positive QPS and a burst of one at least");
  q.workers = workers;
  q.name = std::move(name);
  q.qps = cm.clientQps;
  q.burst = cm.clientBurst;
  q.tokens = cm.clientBurst;  // a new client's bucket starts full
  q.refilled = sched_.now();
  q.work = std::move(work);
}

engine::Duration ModelPlane::Impl::reserveToken(ControllerQueue& q, double n) {
  const engine::TimePoint now = sched_.now();
  q.tokens = std::min(q.burst, q.tokens + seconds(now - q.refilled) * q.qps);
  q.refilled = now;
  q.tokens -= n;
  return q.tokens >= 0 ? engine::Duration::zero() : fromSeconds(-q.tokens / q.qps);
}

void ModelPlane::Impl::enqueue(ControllerQueue& q, const std::string& key) {
  // client-go's Add: counted unless it waits already (queued, or marked to go again).
  if (q.active.contains(key)) {
    if (q.again.insert(key).second) ++q.adds;
    return;
  }
  if (q.queued.insert(key).second) {
    q.waiting.push_back(key);
    ++q.adds;
  }
  pump(q);
}

void ModelPlane::Impl::workerDone(ControllerQueue& q, const std::string& key) {
  q.active.erase(key);
  // Added while it was worked: to the back of the queue again (workqueue's Done), already
  // counted.
  if (q.again.erase(key) > 0 && q.queued.insert(key).second) q.waiting.push_back(key);
  pump(q);
}

void ModelPlane::Impl::pump(ControllerQueue& q) {
  // A worker done at once (nothing to write) ends inside work(): this loop, not a
  // nested one, hands out the next key.
  if (q.pumping) return;
  q.pumping = true;
  while (q.active.size() < q.workers && !q.waiting.empty()) {
    std::string next = std::move(q.waiting.front());
    q.waiting.pop_front();
    q.queued.erase(next);
    q.active.insert(next);
    q.work(next);
  }
  q.pumping = false;
}

void ModelPlane::Impl::sendQueued(ControllerQueue& q, const std::string& key,
                                  std::shared_ptr<std::vector<PendingWrite>> writes, std::size_t next) {
  if (next == writes->size()) {
    workerDone(q, key);
    return;
  }
  const PendingWrite& w = (*writes)[next];
  const auto id = std::make_shared<engine::EventId>(0);
  *id = sched_.scheduleAfter(reserveToken(q, w.weight), [this, id, &q, key, writes, next] {
    controllerWrites_.erase(*id);
    const PendingWrite& pw = (*writes)[next];
    controllerWriteLater(*pw.table, pw.verb, pw.ns, pw.name, pw.body, pw.weight,
                         [this, &q, key, writes, next](int status) {
                           if ((*writes)[next].answered) (*writes)[next].answered(status);
                           sendQueued(q, key, writes, next + 1);
                         });
  });
  controllerWrites_.insert(*id);
}

}  // namespace cpscale::model
