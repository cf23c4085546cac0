// The model plane (model_plane.h): its construction (the CPU pools where each role's
// work queues, the members, the plane's own timers) and its public face. Its parts are
// in the plane_*.cc files, sharing ModelPlane::Impl (plane_impl.h).
#include "sim/model/model_plane.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "sim/engine/random.h"
#include "sim/model/plane_impl.h"

namespace cpscale::model {

ModelPlane::Impl::Impl(engine::Scheduler& sched, ModelOptions options)
    : sched_(sched),
      options_(std::move(options)),
      cal_(options_.calibration),
      store_(StoreOptions{options_.watchHistoryMin, options_.watchHistory, StoreOptions{}.historyMax,
                          engine::streamSeed(options_.seed, "model/store")}),
      rng_(engine::streamSeed(options_.seed, "model/plane")),
      start_(sched.now()) {
  bookmarksAccrued_ = start_;
  if (options_.apiservers == 0) throw std::invalid_argument("the model plane needs at least one apiserver");
  for (std::size_t c : options_.clientApiservers)
    if (c >= options_.apiservers) throw std::invalid_argument("a client apiserver the model plane does not have");
  if (options_.etcds.empty()) options_.etcds.push_back({"main", {}});
  auto pool = [&](const std::string& name, double cores, double idle) {
    CpuPoolOptions o;
    o.cores = std::max(cores, 1e-3);
    o.idleCores = idle;
    o.window = options_.loadWindow;
    o.seed = engine::streamSeed(options_.seed, "model/pool/" + name);
    pools_.push_back(std::make_unique<CpuPool>(o));
    return pools_.back().get();
  };
  // Where each role's work queues. A pinned calibration's placement: one pool per set
  // of CPUs, shared by every replica of the roles pinned there (as the pinned live plane
  // shares them). The shared host: one pool for everything. Otherwise (dedicated
  // cores): a pool per member and no generator.
  const double apiIdle = cal_.apiserverIdleCores.value * static_cast<double>(options_.apiservers);
  const double etcdIdle = cal_.etcdIdleCores.value * static_cast<double>(options_.etcds.size());
  CpuPool* shared = nullptr;
  CpuPool* apiserverSet = nullptr;
  CpuPool* etcdSet = nullptr;
  if (!cal_.placement.empty()) {
    for (const CpuSet& set : cal_.placement) {
      auto has = [&](std::string_view role) {
        return std::find(set.roles.begin(), set.roles.end(), role) != set.roles.end();
      };
      CpuPool* p =
          pool("cpus-" + set.cpus, set.cores, (has("kube-apiserver") ? apiIdle : 0) + (has("etcd") ? etcdIdle : 0));
      if (has("kube-apiserver")) apiserverSet = p;
      if (has("etcd")) etcdSet = p;
      if (has("generator")) generatorPool_ = p;
    }
    if (apiserverSet == nullptr || etcdSet == nullptr)
      throw std::invalid_argument("the calibration's placement must name kube-apiserver and etcd");
  } else if (cal_.sharedHost) {
    shared = pool("host", cal_.hostCores, apiIdle + etcdIdle);
    apiserverSet = etcdSet = generatorPool_ = shared;
  }
  for (std::size_t i = 0; i < options_.apiservers; ++i) {
    Apiserver a;
    a.name = "kube-apiserver-" + std::to_string(i);
    a.pool = apiserverSet ? apiserverSet : pool(a.name, cal_.apiserverCores, cal_.apiserverIdleCores.value);
    apis_.push_back(std::move(a));
  }
  bool haveMain = false;
  for (std::size_t i = 0; i < options_.etcds.size(); ++i) {
    Etcd e;
    e.spec = options_.etcds[i];
    e.member = "etcd-" + e.spec.name;
    e.pool = etcdSet ? etcdSet : pool(e.member, cal_.etcdCores, cal_.etcdIdleCores.value);
    char id[24];
    std::snprintf(id, sizeof id, "%016llx",
                  static_cast<unsigned long long>(engine::streamSeed(options_.seed, e.member)));
    e.serverId = id;
    if (e.spec.resources.empty() && !haveMain) {
      mainEtcd_ = i;
      haveMain = true;
    }
    etcds_.push_back(std::move(e));
  }
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  store_.bootstrap();
  store_.setChangeSink([this](Table& t, const Change& c) { onChange(t, c); });
  store_.setRemovedSink([this](Table& t) { onRemoved(t); });
  // The calibration's idle plane ran one kube-apiserver, whose identity Lease is in
  // its measured background; each further replica renews its own
  // (kube-system/apiserver-<id>) every 10 s (--identity-lease-renew-interval-seconds).
  if (options_.apiservers > 1 && !options_.calibration.background.empty())
    options_.calibration.background.push_back(
        {"leases", "coordination.k8s.io", "PUT", 0.1 * static_cast<double>(options_.apiservers - 1)});
  startBackground();
  compactionEvent_ = sched_.scheduleAt(start_ + options_.etcdCompactionInterval, [this] { compactionTick(); });
  startNodeLifecycle();
  startEndpointSlices();
}

ModelPlane::Impl::~Impl() {
  cancelFaultEvents();
  for (engine::EventId e : backgroundEvents_) sched_.cancel(e);
  if (compactionEvent_ != 0) sched_.cancel(compactionEvent_);
  if (nodeLifecycleEvent_ != 0) sched_.cancel(nodeLifecycleEvent_);
  for (auto& [key, svc] : serviceEndpoints_)
    for (engine::EventId e : {svc.sync, svc.endpointsSync})
      if (e != 0) sched_.cancel(e);
  for (engine::EventId e : controllerWrites_) sched_.cancel(e);
  for (auto& [name, h] : nodeHealth_)
    if (h.write != 0) sched_.cancel(h.write);
  for (ModelTransport* t : transports_) {
    for (auto& [id, p] : t->pending_) {
      if (p.event != 0) sched_.cancel(p.event);
      p.event = 0;
      if (p.watch && p.watch->bookmarkTimer != 0) sched_.cancel(p.watch->bookmarkTimer);
    }
    t->impl_ = nullptr;
  }
  // Watches outlive the store in their transports: unlink them while the lists exist.
  for (const auto& table : store_.tables()) table->watchers.clear();
}

ModelPlane::ModelPlane(engine::Scheduler& scheduler, ModelOptions options)
    : impl_(std::make_unique<Impl>(scheduler, std::move(options))) {}

ModelPlane::~ModelPlane() = default;

kube::TransportPtr ModelPlane::clientTransport(double weight, ClientIdentity identity) {
  if (!(weight > 0)) throw std::invalid_argument("a client's weight must be positive");
  std::string server;
  for (const auto& a : impl_->apis_) server += (server.empty() ? "" : ", ") + std::string("model://") + a.name;
  auto t = std::make_unique<ModelTransport>(impl_.get(), ModelTransport::Kind::kClient, 0, weight, server,
                                            identity == ClientIdentity::kLimited);
  impl_->transports_.insert(t.get());
  return t;
}

kube::TransportPtr ModelPlane::memberTransport(const std::string& member) {
  for (std::size_t i = 0; i < impl_->apis_.size(); ++i) {
    if (impl_->apis_[i].name == member) {
      auto t =
          std::make_unique<ModelTransport>(impl_.get(), ModelTransport::Kind::kApiserver, i, 1, "model://" + member);
      impl_->transports_.insert(t.get());
      return t;
    }
  }
  for (std::size_t i = 0; i < impl_->etcds_.size(); ++i) {
    if (impl_->etcds_[i].member == member) {
      auto t = std::make_unique<ModelTransport>(impl_.get(), ModelTransport::Kind::kEtcd, i, 1, "model://" + member);
      impl_->transports_.insert(t.get());
      return t;
    }
  }
  if (member == kControllerManagerMember && impl_->options_.nodeLifecycle.enabled) {
    auto t = std::make_unique<ModelTransport>(impl_.get(), ModelTransport::Kind::kControllerManager, 0, 1,
                                              "model://" + member);
    impl_->transports_.insert(t.get());
    return t;
  }
  throw std::invalid_argument("the model plane has no member '" + member + "'");
}

std::vector<ModelMember> ModelPlane::members() const {
  std::vector<ModelMember> out;
  for (const auto& a : impl_->apis_) out.push_back({a.name, "kube-apiserver", "model://" + a.name, "", {}});
  for (const auto& e : impl_->etcds_) {
    out.push_back({e.member, "etcd", "model://" + e.member, e.spec.name, e.spec.resources});
  }
  if (impl_->options_.nodeLifecycle.enabled)
    out.push_back({kControllerManagerMember,
                   kControllerManagerMember,
                   "model://" + std::string(kControllerManagerMember),
                   "",
                   {}});
  return out;
}

const ModelOptions& ModelPlane::options() const { return impl_->options_; }

ModelStats ModelPlane::stats() const {
  ModelStats s = impl_->stats_;
  s.objects = impl_->store_.objects();
  return s;
}

void ModelPlane::kill(const std::string& member) { impl_->killMember(member); }

void ModelPlane::restart(const std::string& member, std::function<void()> ready) {
  impl_->restartMember(member, std::move(ready));
}

void ModelPlane::pause(const std::string& member) { impl_->pauseMember(member); }

void ModelPlane::resume(const std::string& member) { impl_->resumeMember(member); }

bool ModelPlane::serving(const std::string& member) const {
  for (std::size_t i = 0; i < impl_->apis_.size(); ++i)
    if (impl_->apis_[i].name == member) return impl_->apiServing(i);
  for (std::size_t i = 0; i < impl_->etcds_.size(); ++i)
    if (impl_->etcds_[i].member == member) return impl_->etcdServing(i);
  throw std::invalid_argument("the model plane has no member '" + member + "'");
}

}  // namespace cpscale::model
