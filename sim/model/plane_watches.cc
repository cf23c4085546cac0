// Watch fan-out in the model plane: a watch opened from the current state or resumed
// from a resourceVersion (410 Expired past the watch cache's ring), every change
// dispatched to every watcher the trigger index leaves it (Calibration's
// apiserverCpuWatchDispatch) and sent to each that selects it (apiserverCpuWatchEvent),
// charged to the replica serving it, the plane's own informers' share, bookmarks and
// the watch's end.
#include "sim/model/plane_impl.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include <nlohmann/json.hpp>

namespace cpscale::model {

using nlohmann::json;

std::string watchLine(std::string_view type, std::string_view object) {
  std::string line;
  line.reserve(object.size() + 32);
  line += R"({"type":")";
  line += type;
  line += R"(","object":)";
  line += object;
  line += "}\n";
  return line;
}

void ModelPlane::Impl::bury(std::unique_ptr<ModelWatch> w) {
  if (!w) return;
  if (w->bookmarkTimer != 0) sched_.cancel(w->bookmarkTimer);
  w->bookmarkTimer = 0;
  if (fanout_ > 0) {
    w->dead = true;
    graveyard_.push_back(std::move(w));
  }
  // Otherwise destroyed here, which unlinks it from its resource's list.
}

void ModelPlane::Impl::flushGraveyard() {
  if (fanout_ == 0) graveyard_.clear();
}

void ModelPlane::Impl::chargeApiserver(std::size_t replica, double cpu) {
  Apiserver& a = apis_[replica];
  a.pool->charge(sched_.now(), cpu);
  a.cpu += cpu;
}

double ModelWatch::pairs(double objectWeight) const {
  return trigger ? std::max(weight, objectWeight) : weight * objectWeight;
}

bool ModelPlane::Impl::send(ModelWatch& w, const std::string& line, double events) {
  if (w.dead) return false;
  const ResourceType& type = w.table->type;
  apis_[w.replica].metrics.watchEvents(type.group, type.version, type.resource, events);
  chargeApiserver(w.replica, cal_.apiserverCpuWatchEvent.value * events);
  ++stats_.watchEventsSent;
  if (!w.onChunk || w.onChunk(line)) return !w.dead;
  if (w.dead) return false;  // it cancelled itself from inside the consumer
  kube::HttpResponse aborted;
  aborted.outcome = kube::TransportOutcome::kAborted;
  aborted.detail = "aborted by the body consumer";
  endWatch(*w.transport, w.id, std::move(aborted), false);
  return false;
}

// lines: the three lines of this change (ADDED, MODIFIED, DELETED), built on first use;
// parsed: the object, parsed on first use by a field selector.
bool ModelPlane::Impl::deliver(ModelWatch& w, const Change& c, std::string* lines, std::optional<json>* parsed) {
  if (w.dead || c.rv <= w.sentRv) return !w.dead;
  w.sentRv = c.rv;
  // Dispatched to it: its goroutine woken and the event filtered, whatever the outcome.
  const double pairs = w.pairs(c.weight);
  chargeApiserver(w.replica, cal_.apiserverCpuWatchDispatch.value * pairs);
  const bool now = w.selects(c.ns, c.name, *c.labels, c.uidHash, *c.object, parsed);
  const bool before = c.type == ChangeType::kModified && c.oldLabels != c.labels
                          ? w.selects(c.ns, c.name, *c.oldLabels, c.uidHash, *c.object, parsed)
                          : now;
  ChangeType type;
  if (c.type == ChangeType::kModified) {
    if (!now && !before) return true;
    type = now && before ? ChangeType::kModified : now ? ChangeType::kAdded : ChangeType::kDeleted;
  } else {
    if (!now) return true;
    type = c.type;
  }
  std::string& line = lines[static_cast<int>(type)];
  if (line.empty()) line = watchLine(toString(type), *c.object);
  return send(w, line, pairs);
}

double ModelPlane::Impl::planeWatchersOf(const Table& table) const {
  const auto& w = cal_.planeWatchers;
  auto it = w.find(table.type.qualified());
  if (it == w.end()) it = w.find(table.type.resource);
  if (it != w.end()) return it->second;
  return table.type.custom ? cal_.planeWatchersPerCustomResource : 0;
}

void ModelPlane::Impl::onChange(Table& table, const Change& c) {
  if (nodes_ != nullptr) {
    // What the node lifecycle controller's informers see: a Node registered or gone, a
    // node's Lease renewed. (A status heartbeat is noticed in handleResource, where the
    // subresource is known.)
    if (&table == nodes_ && c.type == ChangeType::kAdded) nodeHeard(c.name);
    if (&table == nodes_ && c.type == ChangeType::kDeleted) forgetNode(c.name);
    if (&table == leases_ && c.type != ChangeType::kDeleted && c.ns == "kube-node-lease") nodeHeard(c.name);
    if (&table == pods_) indexPod(c);
  }
  if (services_ != nullptr) {
    if (&table == services_) serviceChanged(c, c.weight);
    if (&table == endpointPods_) podEndpointChanged(c);
  }
  // The plane's own informers (controller-manager, scheduler, the apiserver's own) get
  // every change of the resources they watch, dispatched and sent, on the replica they
  // talk to (the first), whatever the workloads watch.
  if (const double plane = planeWatchersOf(table); plane > 0 && table.served) {
    const double events = plane * c.weight;
    apis_[0].metrics.watchEvents(table.type.group, table.type.version, table.type.resource, events);
    chargeApiserver(0, (cal_.apiserverCpuWatchDispatch.value + cal_.apiserverCpuWatchEvent.value) * events);
  }
  if (table.watchers.empty()) return;
  ++fanout_;
  std::string lines[3];
  std::optional<json> parsed;
  // The trigger index: a watcher pinned to another value is not dispatched the change.
  std::optional<std::optional<std::string>> trigger;
  for (Watcher& base : table.watchers) {
    auto& w = static_cast<ModelWatch&>(base);
    if (w.trigger) {
      if (!trigger) trigger = triggerValue(table.type, c, &parsed);
      if (*trigger && **trigger != *w.trigger) continue;
    }
    deliver(w, c, lines, &parsed);
  }
  --fanout_;
  flushGraveyard();
}

void ModelPlane::Impl::onRemoved(Table& table) {
  // The resource is gone (its CRD was deleted): its watches end as the server ends them.
  std::vector<std::pair<ModelTransport*, kube::RequestId>> ends;
  for (Watcher& base : table.watchers) {
    auto& w = static_cast<ModelWatch&>(base);
    if (!w.dead) ends.emplace_back(w.transport, w.id);
  }
  for (auto [t, id] : ends) endWatch(*t, id, response(200, ""), false);
}

void ModelPlane::Impl::openWatch(ModelTransport& t, kube::RequestId id) {
  auto it = t.pending_.find(id);
  if (it == t.pending_.end()) return;
  if (heldWhileFrozen(t, id, it->second)) return;
  Pending& p = it->second;
  p.event = 0;
  const Route& r = p.route;
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  auto refuse = [&](kube::HttpResponse resp) {
    Pending done = std::move(it->second);
    t.pending_.erase(it);
    apis_[done.replica].metrics.request(done.labelsKey, resp.status, seconds(sched_.now() - done.submitted), t.weight_);
    ++stats_.requests;
    ++t.handled_;
    done.done(std::move(resp));
  };
  Table* table = p.route.resource ? store_.find(r.group, r.version, r.resourceName) : nullptr;
  if (table == nullptr) {
    refuse(response(404, statusBody(404, "NotFound", "the server could not find the requested resource")));
    return;
  }
  if (r.param("sendInitialEvents") == "true" &&
      (r.param("allowWatchBookmarks") != "true" || r.param("resourceVersionMatch") != "NotOlderThan")) {
    refuse(response(422, statusBody(422, "Invalid",
                                    "sendInitialEvents requires allowWatchBookmarks=true and "
                                    "resourceVersionMatch=NotOlderThan")));
    return;
  }
  auto w = std::make_unique<ModelWatch>();
  std::string error;
  auto labels = LabelSelector::parse(r.param("labelSelector"), &error);
  auto fields = labels ? FieldSelector::parse(r.param("fieldSelector"), &error) : std::nullopt;
  std::optional<ShardRange> shard;
  if (fields && r.has("shardSelector")) {
    shard = ShardRange::parse(r.param("shardSelector"), &error);
    if (!shard) fields.reset();
  }
  if (!labels || !fields) {
    refuse(response(400, statusBody(400, "BadRequest", "unable to parse requirement: " + error)));
    return;
  }
  w->ns = table->type.namespaced ? r.ns : "";
  w->labels = std::move(*labels);
  w->fields = std::move(*fields);
  w->shard = shard;
  w->transport = &t;
  w->id = id;
  w->replica = p.replica;
  w->weight = p.req.perActor ? t.weight_ : 1;
  w->table = table;
  w->onChunk = std::move(p.req.onBodyChunk);
  w->bookmarks = r.param("allowWatchBookmarks") == "true";
  w->opened = sched_.now();
  if (const std::string_view field = table->type.triggerField(); !field.empty()) w->trigger = w->fields.pinned(field);
  double timeout = 0;
  if (std::string ts = r.param("timeoutSeconds"); !ts.empty()) timeout = std::strtod(ts.c_str(), nullptr);
  // Without one, kube-apiserver ends a watch after a random [1, 2) x --min-request-timeout.
  if (timeout <= 0) timeout = 1800 * (1 + rng_.uniform());
  const std::string rvText = r.param("resourceVersion");
  ModelWatch& watch = *w;
  p.watch = std::move(w);
  table->watchers.push_back(watch);
  ++stats_.watchers;
  apis_[p.replica].watches += watch.weight;
  ModelTransport* tp = &t;
  const engine::TimePoint deadline = sched_.now() + fromSeconds(timeout);
  p.event = sched_.scheduleAt(deadline, [tp, id] {
    if (tp->impl_) tp->impl_->endWatch(*tp, id, response(200, ""), true);
  });
  if (watch.bookmarks) scheduleBookmark(t, id, watch, deadline);

  ++fanout_;
  // A streaming list (sendInitialEvents=true, resourceVersionMatch=NotOlderThan): the
  // state at least as new as the resourceVersion, then the bookmark that ends it.
  const bool streamingList = r.param("sendInitialEvents") == "true";
  if (rvText.empty() || rvText == "0" || streamingList) {
    // The current state first, as synthetic ADDED events.
    bool alive = true;
    for (const StoredObject* o : store_.selected(*table, watch)) {
      if (!(alive = send(watch, watchLine("ADDED", *o->text), watch.pairs(o->weight)))) break;
    }
    watch.sentRv = store_.revision();
    if (alive && streamingList && watch.bookmarks)
      send(watch, watchLine("BOOKMARK", initialEventsEnd(*table, watch)), watch.weight);
  } else {
    const std::uint64_t from = std::strtoull(rvText.c_str(), nullptr, 10);
    auto changes = store_.changesSince(*table, from);
    // A restarted apiserver's watch cache holds nothing from before its restart.
    if (!apiHealth_.empty() && from < apiHealth_[p.replica].cacheFrom) changes.reset();
    if (!changes) {
      const std::string status = statusBody(
          410, "Expired", "too old resource version: " + rvText + " (" + std::to_string(table->compactedRv) + ")");
      if (send(watch, watchLine("ERROR", status), watch.weight)) endWatch(t, id, response(200, ""), false);
    } else {
      watch.sentRv = from;
      for (const Change* c : *changes) {
        std::string lines[3];
        if (!deliver(watch, *c, lines)) break;
      }
      if (!watch.dead) watch.sentRv = std::max(watch.sentRv, store_.revision());
    }
  }
  --fanout_;
  flushGraveyard();
}

void ModelPlane::Impl::scheduleBookmark(ModelTransport& t, kube::RequestId id, ModelWatch& w,
                                        engine::TimePoint deadline) {
  // As the cacher's nextBookmarkTime: a minute from now, unless the deadline's
  // bookmark (2 s before it) comes first, which endWatch sends.
  const engine::TimePoint next = sched_.now() + std::chrono::minutes(1);
  if (next >= deadline - std::chrono::seconds(2)) return;
  ModelTransport* tp = &t;
  w.bookmarkTimer = sched_.scheduleAt(next, [this, tp, id, deadline] {
    auto it = tp->pending_.find(id);
    if (it == tp->pending_.end() || !it->second.watch) return;
    ModelWatch& watch = *it->second.watch;
    watch.bookmarkTimer = 0;
    if (watch.dead) return;
    ++fanout_;
    const bool alive = send(watch, bookmarkLine(watch), watch.weight);
    --fanout_;
    if (alive) scheduleBookmark(*tp, id, watch, deadline);
    flushGraveyard();
  });
}

std::string ModelPlane::Impl::bookmarkLine(ModelWatch& w) const {
  const ResourceType& type = w.table->type;
  w.sentRv = std::max(w.sentRv, store_.revision());
  return watchLine("BOOKMARK", R"({"kind":")" + type.kind + R"(","apiVersion":")" + type.apiVersion() +
                                   R"(","metadata":{"resourceVersion":")" + std::to_string(w.sentRv) + R"("}})");
}

// The bookmark that ends a streaming list's initial events.
std::string ModelPlane::Impl::initialEventsEnd(const Table& table, const ModelWatch& w) const {
  const ResourceType& type = table.type;
  return R"({"kind":")" + type.kind + R"(","apiVersion":")" + type.apiVersion() +
         R"(","metadata":{"resourceVersion":")" + std::to_string(w.sentRv) +
         R"(","annotations":{"k8s.io/initial-events-end":"true"}}})";
}

void ModelPlane::Impl::endWatch(ModelTransport& t, kube::RequestId id, kube::HttpResponse resp, bool bookmark) {
  auto it = t.pending_.find(id);
  if (it == t.pending_.end() || !it->second.watch) return;
  ModelWatch& w = *it->second.watch;
  if (bookmark && w.bookmarks && !w.dead) {
    // Before the timeout ends it, the apiserver tells the watcher how far it has come.
    ++fanout_;
    const bool alive = send(w, bookmarkLine(w), w.weight);
    --fanout_;
    if (!alive) {
      flushGraveyard();
      return;  // the consumer refused it and the stream ended with that
    }
    it = t.pending_.find(id);
    if (it == t.pending_.end()) return;
  }
  Pending p = std::move(it->second);
  t.pending_.erase(it);
  if (p.event != 0) sched_.cancel(p.event);
  const double open = seconds(sched_.now() - p.submitted);
  const int code = resp.ok() ? resp.status : 200;
  apis_[p.replica].metrics.request(p.labelsKey, code == 0 ? 200 : code, open, t.weight_);
  ++stats_.requests;
  --stats_.watchers;
  apis_[p.replica].watches -= p.watch->weight;
  bury(std::move(p.watch));
  flushGraveyard();
  ++t.handled_;
  p.done(std::move(resp));
}

}  // namespace cpscale::model
