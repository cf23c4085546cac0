// The model plane's members' /metrics: each apiserver's exposition with its heap (the
// watch cache's objects and ring, as calibrated) and CPU, each etcd's with its db.
#include "sim/model/plane_impl.h"

#include <string>

namespace cpscale::model {

double ModelPlane::Impl::heapBytes(std::size_t i) const {
  // The plane's own informers' watches are in heapBaseBytes (the idle plane had them).
  return sharedHeapBytes() + apis_[i].watches * cal_.heapPerWatch.value;
}

double ModelPlane::Impl::sharedHeapBytes() const {
  if (heapAt_ && heapAt_->first == sched_.now() && heapAt_->second == store_.revision()) return heap_;
  double heap = cal_.heapBaseBytes.value;
  const auto& byResource = cal_.heapBytesPerObjectByResource;
  // Every cached object, and every change still in the watch cache's ring whose object is
  // not an object's current version (superseded or deleted): the ring keeps it. A
  // current version is the object itself, held once. In a custom resource's ring each
  // event costs its own bookkeeping too, and the resource its fixed share.
  for (const auto& t : store_.tables()) {
    // Events have no watch cache (DefaultWatchCacheSizes): what a write costs passes,
    // and nothing of them stays in the heap.
    if (!t->type.watchCached()) continue;
    const double perEvent = t->type.custom ? cal_.heapPerCustomResourceEvent.value : 0;
    if (t->type.custom && t->served) heap += cal_.heapPerCustomResource.value;
    double objects = t->weightedObjects, bytes = t->weightedBytes;
    std::string key;
    for (const Change& c : t->history) {
      heap += c.weight * perEvent;
      key.assign(c.ns).append("/").append(c.name);
      auto live = t->objects.find(key);
      if (c.type != ChangeType::kDeleted && live != t->objects.end() && live->second.rv == c.rv) continue;
      objects += c.weight;
      bytes += c.weight * static_cast<double>(c.object ? c.object->size() : 0);
    }
    if (objects == 0 && bytes == 0) continue;
    auto it = byResource.find(t->type.qualified());
    if (it == byResource.end()) it = byResource.find(t->type.resource);
    if (it != byResource.end()) {
      heap += objects * it->second;
    } else {
      heap += objects * cal_.heapPerObject.value + bytes * cal_.heapPerObjectByte.value;
    }
  }
  heapAt_ = {sched_.now(), store_.revision()};
  heap_ = heap;
  return heap;
}

void ModelPlane::Impl::accruePlaneBookmarks() {
  // The plane's own informers ask for bookmarks, one a minute each (the cacher's
  // defaultBookmarkFrequency), sent on the replica they talk to (the first). Their CPU is
  // in the idle cores the calibration measured with them.
  const double minutes = seconds(sched_.now() - bookmarksAccrued_) / 60;
  bookmarksAccrued_ = sched_.now();
  if (minutes <= 0 || !apiServing(0)) return;
  for (const auto& t : store_.tables()) {
    if (!t->served || !t->type.watchCached()) continue;
    if (const double plane = planeWatchersOf(*t); plane > 0)
      apis_[0].metrics.watchEvents(t->type.group, t->type.version, t->type.resource, plane * minutes);
  }
}

std::string ModelPlane::Impl::apiserverText(std::size_t i) const {
  ApiserverMetrics::Process p;
  p.heapBytes = heapBytes(i);
  p.rssBytes = p.heapBytes * cal_.rssOverHeap;
  p.cpuSeconds = cal_.apiserverIdleCores.value * elapsed() + apis_[i].cpu;
  p.startTime = static_cast<double>(options_.epochUnixNanos) / 1e9 + seconds(start_.time_since_epoch());
  return apis_[i].metrics.exposition(p, store_);
}

std::string ModelPlane::Impl::controllerManagerText() const {
  std::vector<WorkqueueState> queues;
  for (const ControllerQueue* q : {&sliceQueue_, &endpointsQueue_})
    if (!q->name.empty())
      queues.push_back({q->name, static_cast<double>(q->waiting.size() + q->again.size()), q->adds});
  return controllerManagerExposition(queues);
}

std::string ModelPlane::Impl::etcdText(std::size_t i) {
  const Etcd& e = etcds_[i];
  EtcdExposition x;
  for (const auto& t : store_.tables()) {
    if (etcdFor(t->type.key()) == i) x.keys += t->weightedObjects;
  }
  x.dbInUseBytes = etcdInUse(i);
  x.dbBytes = e.fileBytes;
  x.quotaBytes = e.spec.quotaBytes;
  x.cpuSeconds = cal_.etcdIdleCores.value * elapsed() + e.cpu;
  x.startTime = static_cast<double>(options_.epochUnixNanos) / 1e9 + seconds(start_.time_since_epoch());
  x.serverId = e.serverId;
  return etcdExposition(e.counters, x);
}

}  // namespace cpscale::model
