// The model plane's cost model: the CPU each request costs its apiserver replica and,
// for a write, its etcd cluster, queued at their pools (cpu_pool.h) into latency; the
// etcd clusters' writes, db size, compaction and quota; and the plane's own background
// requests (calibration.background).
#include "sim/model/plane_impl.h"

#include <algorithm>

namespace cpscale::model {

using engine::TimePoint;

double ModelPlane::Impl::cpuOf(Class c) const {
  switch (c) {
    case Class::kLeaseWrite: return cal_.apiserverCpuLeaseWrite.value;
    case Class::kWrite: return cal_.apiserverCpuWrite.value;
    case Class::kCustomWrite: return cal_.apiserverCpuCustomWrite.value;
    case Class::kEventWrite: return cal_.apiserverCpuEventWrite.value;
    case Class::kRead: return cal_.apiserverCpuRead.value;
  }
  return 0;
}

ModelPlane::Impl::Class ModelPlane::Impl::classOf(const Route& r) {
  if (!r.resource || !isWrite(r.verb)) return Class::kRead;
  if (r.group == "coordination.k8s.io" && r.resourceName == "leases" && (r.verb == "PUT" || r.verb == "PATCH"))
    return Class::kLeaseWrite;
  if (const Table* t = store_.findByKey(r.group, r.resourceName); t != nullptr) return writeClass(t->type);
  return Class::kWrite;
}

double ModelPlane::Impl::charge(std::size_t replica, Class cls, const std::string& tableKey, double w) {
  const TimePoint now = sched_.now();
  Apiserver& a = apis_[replica];
  const double apiCpu = cpuOf(cls) * w;
  double wait = a.pool->arrive(now, apiCpu, w);
  a.cpu += apiCpu;
  const bool write = cls != Class::kRead;
  if (write) {
    Etcd& e = etcds_[etcdFor(tableKey)];
    const double etcdCpu = cal_.etcdCpuPerProposal.value * w;
    // On the apiserver's own cores its wait already covers this work's.
    if (e.pool == a.pool) {
      e.pool->charge(now, etcdCpu);
    } else {
      wait += e.pool->arrive(now, etcdCpu, w);
    }
    e.cpu += etcdCpu;
  }
  // The generator's own CPU, where it shares cores with the plane: what it takes, the
  // members it shares them with do not get.
  if (generatorPool_) generatorPool_->charge(now, cal_.generatorCpuPerRequest.value * w);
  // latencyWrite is the unloaded write as measured: etcd's round trip and fsync are in it.
  return (write ? cal_.latencyWrite.value : cal_.latencyRead.value) + wait;
}

void ModelPlane::Impl::countWrite(std::size_t etcd, double writes, double puts) {
  EtcdCounters& c = etcds_[etcd].counters;
  c.proposals += writes;
  c.writes += writes;
  c.puts += puts;
  // The quota is checked every so many writes (and at every scrape and compaction):
  // summing the keys of every resource on each write would cost more than the write.
  if (++etcds_[etcd].writesSinceCheck >= 256) {
    etcds_[etcd].writesSinceCheck = 0;
    etcdInUse(etcd);
  }
}

std::size_t ModelPlane::Impl::etcdFor(std::string_view key) const {
  for (std::size_t i = 0; i < etcds_.size(); ++i) {
    for (const auto& r : etcds_[i].spec.resources)
      if (r == key) return i;
  }
  return mainEtcd_;
}

std::size_t ModelPlane::Impl::etcdFor(const Table& t) {
  while (etcdOfTable_.size() <= t.index) {
    etcdOfTable_.push_back(etcdFor(store_.tables()[etcdOfTable_.size()]->type.key()));
  }
  return etcdOfTable_[t.index];
}

double ModelPlane::Impl::etcdInUse(std::size_t i) {
  Etcd& e = etcds_[i];
  double keys = 0;
  for (const auto& t : store_.tables())
    if (etcdFor(t->type.key()) == i) keys += t->weightedObjects;
  // Every revision since the compaction point, and each live key's latest older one
  // (at most all that was ever written).
  const double revisions = std::min(e.counters.writes, e.counters.writes - e.writesAtCompaction + keys);
  const double inUse = cal_.etcdDbBaseBytes.value + cal_.etcdDbBytesPerWrite.value * revisions;
  e.fileBytes = std::max(e.fileBytes, inUse);
  if (e.fileBytes > e.spec.quotaBytes) e.noSpace = true;
  return inUse;
}

void ModelPlane::Impl::compactionTick() {
  for (std::size_t i = 0; i < etcds_.size(); ++i) {
    Etcd& e = etcds_[i];
    etcdInUse(i);  // the file has grown to what was in use before the compaction frees it
    e.writesAtCompaction = e.writesAtTick;
    e.writesAtTick = e.counters.writes;
  }
  compactionEvent_ = sched_.scheduleAfter(options_.etcdCompactionInterval, [this] { compactionTick(); });
}

// The plane's own requests (calibration.background), each rate on its own timer.
void ModelPlane::Impl::startBackground() {
  backgroundEvents_.assign(cal_.background.size(), 0);
  for (std::size_t i = 0; i < cal_.background.size(); ++i) {
    const BackgroundRate& b = cal_.background[i];
    if (!(b.perSecond > 0)) continue;
    const double period = 1 / b.perSecond;
    // A fixed phase per rate, so the plane's own writes do not all land at once.
    backgroundEvents_[i] =
        sched_.scheduleAt(start_ + fromSeconds(period * rng_.uniform()), [this, i] { background(i); });
  }
}

void ModelPlane::Impl::background(std::size_t i) {
  const BackgroundRate& b = cal_.background[i];
  const std::size_t replica = backgroundRoundRobin_++ % apis_.size();
  std::string resource = b.resource, sub;
  if (auto slash = resource.find('/'); slash != std::string::npos) {
    sub = resource.substr(slash + 1);
    resource = resource.substr(0, slash);
  }
  const bool write = isWrite(b.verb);
  const Class cls = !write                                                                         ? Class::kRead
                    : b.group == "coordination.k8s.io" && resource == "leases" && b.verb != "POST" ? Class::kLeaseWrite
                                                                                                   : Class::kWrite;
  const std::string key = b.group + "/" + resource;
  if (!apiServing(replica) || (write && !etcdServing(etcdFor(key)))) {
    // The member (or its etcd) is down or frozen: this round of its own requests is lost.
    backgroundEvents_[i] = sched_.scheduleAfter(fromSeconds(1 / b.perSecond), [this, i] { background(i); });
    return;
  }
  const double latency = charge(replica, cls, key, 1);
  RequestLabels l;
  l.group = b.group;
  l.version = "v1";
  l.resource = resource;
  l.subresource = sub;
  l.verb = b.verb;
  l.scope = b.verb == "LIST" || b.verb == "WATCH" ? "namespace" : "resource";
  apis_[replica].metrics.request(l.key(), b.verb == "POST" ? 201 : 200, latency, 1);
  if (write) countWrite(etcdFor(key), 1, b.verb == "DELETE" ? 0 : 1);
  ++stats_.backgroundRequests;
  backgroundEvents_[i] = sched_.scheduleAfter(fromSeconds(1 / b.perSecond), [this, i] { background(i); });
}

}  // namespace cpscale::model
