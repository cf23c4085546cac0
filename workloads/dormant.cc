#include "workloads/dormant.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>

#include "sim/common/error.h"
#include "workloads/call_tracker.h"
#include "workloads/reflector.h"
#include "workloads/setup.h"

namespace cpscale::workloads {

namespace {

using engine::Duration;
using nlohmann::json;

}  // namespace

DormantParams DormantParams::read(const YamlField& e) {
  e.expectMap({"kind", "name", "crdKinds", "objectsPerKind", "objectBytes", "namespaces", "roles", "roleBindings",
               "clusterRoles", "clusterRoleBindings", "serviceAccounts", "configMaps", "secrets", "createQps",
               "createBurst", "rampPerKind", "updatesPerSecond", "watchers", "crdTemplate"});
  DormantParams p;
  if (auto f = e.get("name")) {
    p.name = f->asString();
    if (!isDnsLabel(p.name, 20)) throw f->error("must be 1-20 lower-case letters, digits or '-'");
  }
  auto count = [&](const char* key, std::int64_t& out, std::int64_t max) {
    if (auto f = e.get(key)) {
      out = f->asInt();
      if (out < 0) throw f->error("must not be negative, found " + std::to_string(out));
      if (out > max) throw f->error("at most " + std::to_string(max));
    }
  };
  count("crdKinds", p.crdKinds, 1000);
  count("objectsPerKind", p.objectsPerKind, 10'000'000);
  count("roles", p.roles, 10'000'000);
  count("roleBindings", p.roleBindings, 10'000'000);
  count("clusterRoles", p.clusterRoles, 10'000'000);
  count("clusterRoleBindings", p.clusterRoleBindings, 10'000'000);
  count("serviceAccounts", p.serviceAccounts, 10'000'000);
  count("configMaps", p.configMaps, 10'000'000);
  count("secrets", p.secrets, 10'000'000);
  if (auto f = e.get("namespaces")) p.namespaces = f->asInt(1, 10'000);
  if (auto f = e.get("objectBytes")) p.objectBytes = Distribution::read(*f, false, 0, 1'000'000);
  if (auto q = e.get("createQps"); q && q->asDouble() == 0 && p.totalObjects() > 0) {
    throw q->error("a creation rate of 0 cannot create " + std::to_string(p.totalObjects()) + " objects");
  }
  p.create = readRateLimit(e, "createQps", "createBurst", 50);
  if (auto f = e.get("rampPerKind")) p.rampPerKind = f->asBool();
  if (auto f = e.get("updatesPerSecond")) {
    p.updatesPerSecond = f->asDouble();
    if (!(p.updatesPerSecond >= 0 && p.updatesPerSecond <= 1e6)) throw f->error("must be in [0, 1e6]");
  }
  if (auto w = e.get("watchers")) {
    w->expectMap({"perKind", "shards", "timeout", "pageSize", "relistEvery", "labelSelector"});
    if (auto f = w->get("perKind")) p.watchers.perKind = f->asInt(0, 10'000);
    if (auto f = w->get("shards")) p.watchers.shards = f->asInt(0, 1024);
    if (auto f = w->get("timeout"))
      p.watchers.timeout = readDuration(*f, std::chrono::seconds(1), std::chrono::hours(1));
    if (auto f = w->get("pageSize")) p.watchers.pageSize = f->asInt(1, 100'000);
    if (auto f = w->get("relistEvery"))
      p.watchers.relistEvery = readDuration(*f, std::chrono::seconds(0), std::chrono::hours(24));
    if (auto f = w->get("labelSelector")) {
      p.watchers.labelSelector = f->asString();
      if (p.watchers.labelSelector.empty()) throw f->error("must not be empty (leave it out to select every object)");
    }
    if (p.watchers.perKind > 0 && p.crdKinds == 0) throw w->error("watchers need at least one CRD kind (crdKinds)");
  }
  p.crdTemplate =
      e.get("crdTemplate") ? ObjectTemplate::load(*e.get("crdTemplate")) : ObjectTemplate::load("dormant-crd.yaml");
  return p;
}

std::int64_t DormantParams::totalObjects() const {
  return crdKinds * objectsPerKind + roles + roleBindings + clusterRoles + clusterRoleBindings + serviceAccounts +
         configMaps + secrets;
}

std::string kindRampPhaseName(const std::string& workload, const kube::GroupVersionResource& kind) {
  return "ramp/" + workload + "/" + (kind.group.empty() ? "" : kind.group + "/") + kind.resource;
}

std::string shardSelector(std::int64_t shard, std::int64_t shards) {
  const unsigned __int128 span = (static_cast<unsigned __int128>(1) << 64) / static_cast<unsigned __int128>(shards);
  const auto lo = static_cast<std::uint64_t>(span * static_cast<unsigned __int128>(shard));
  const auto hi = static_cast<std::uint64_t>(span * static_cast<unsigned __int128>(shard + 1));
  // KEP-5866's grammar: quoted, 0x-prefixed, 16 hex digits, [start, end); the last
  // range ends at 2^64, written with 17 digits.
  char buf[128];
  if (shard + 1 == shards)
    std::snprintf(buf, sizeof buf, "shardRange(object.metadata.uid, '0x%016" PRIx64 "', '0x10000000000000000')", lo);
  else
    std::snprintf(buf, sizeof buf, "shardRange(object.metadata.uid, '0x%016" PRIx64 "', '0x%016" PRIx64 "')", lo, hi);
  return buf;
}

DormantWorkload::DormantWorkload(DormantParams params) : params_(std::move(params)) {
  if (!params_.crdTemplate) params_.crdTemplate = ObjectTemplate::load("dormant-crd.yaml");
}

kube::GroupVersionResource DormantWorkload::crdResource(std::int64_t k) {
  return {"op" + std::to_string(k) + ".dormant.cpscale.io", "v1", "widgets", true};
}

std::string DormantWorkload::namespaceName(const std::string& runId, const std::string& workload, std::int64_t k) {
  return "cpscale-" + runId + "-" + workload + "-" + std::to_string(k);
}

// Idempotent: namespaces and CRDs that exist already (a growth's, made by its base) are
// fine.
void DormantWorkload::prepare(kube::ApiClient& api, engine::Clock& clock, const std::string& runId) {
  validateRunId(runId);
  for (std::int64_t k = 0; k < params_.namespaces; ++k) {
    ensureNamespace(api, namespaceName(runId, params_.name, k), runId, params_.name);
  }
  for (std::int64_t k = 0; k < params_.crdKinds; ++k) {
    auto g = crdResource(k);
    installCrd(api, clock,
               params_.crdTemplate->fill(
                   {{"group", g.group}, {"plural", g.resource}, {"singular", "widget"}, {"kind", "Widget"}}),
               runId, params_.name);
  }
}

std::string DormantWorkload::whyNotMeasured(const std::string& figure) const {
  if (std::string why = notOwnFigure(kind(), figure); !why.empty()) return why;
  if (figure.starts_with("dormant_watchers") && params_.watchers.perKind == 0)
    return "workload '" + params_.name + "' opens no watchers (watchers.perKind: 0)";
  return "";
}

std::unique_ptr<Workload> DormantWorkload::growth(const std::string& field, double from, double to) const {
  if (field != "objectsPerKind") return nullptr;
  checkGrowth(*this, field, from, to, 10'000'000, true, static_cast<double>(params_.objectsPerKind),
              "objects of each kind");
  DormantParams p = params_;
  p.firstObject = static_cast<std::int64_t>(from);
  p.objectsPerKind = static_cast<std::int64_t>(to);
  p.growth = true;
  p.roles = p.roleBindings = p.clusterRoles = p.clusterRoleBindings = p.serviceAccounts = p.configMaps = p.secrets = 0;
  p.watchers.perKind = 0;
  p.updatesPerSecond = 0;
  return std::make_unique<DormantWorkload>(std::move(p));
}

std::vector<kube::GroupVersionResource> DormantWorkload::resources() const {
  std::vector<kube::GroupVersionResource> r;
  for (std::int64_t k = 0; k < params_.crdKinds; ++k) r.push_back(crdResource(k));
  r.insert(r.end(),
           {kube::gvr::kRoles, kube::gvr::kRoleBindings, kube::gvr::kClusterRoles, kube::gvr::kClusterRoleBindings,
            kube::gvr::kServiceAccounts, kube::gvr::kConfigMaps, kube::gvr::kSecrets});
  return r;
}

namespace {

// The objects of a population, enumerated without storing them: item i is
// (segment, j) where segments are the CRD kinds, then each built-in kind.
struct Segment {
  enum class Type {
    kWidget,
    kRole,
    kRoleBinding,
    kClusterRole,
    kClusterRoleBinding,
    kServiceAccount,
    kConfigMap,
    kSecret
  };
  Type type;
  kube::GroupVersionResource gvr;
  std::int64_t count;
  std::int64_t first;       // index of its first item
  std::int64_t offset = 0;  // item first + j is object offset + j of its kind (a growth's start)
  // This instance's share, and how far its creation got.
  std::int64_t owned = 0, submitted = 0, answered = 0;
  std::int64_t cursor = 0;  // interleaved creation: the next item of this kind to consider
};

class DormantInstance;

class DormantInstance final : public WorkloadInstance {
 public:
  DormantInstance(const DormantParams& p, WorkloadContext ctx)
      : p_(p),
        ctx_(std::move(ctx)),
        calls_(ctx_.api),
        events_(ctx_.sim),
        bucket_(ctx_.share(p.create.qps), std::max(1.0, std::ceil(ctx_.share(p.create.burst))), ctx_.sim.now()),
        // A growth draws its own sizes, not a copy of the base's.
        rng_(ctx_.seed, "dormant/" + p.name + "/" + std::to_string(ctx_.workerIndex()) +
                            (p.growth ? "/grow/" + std::to_string(p.objectsPerKind) : "")),
        prefix_("cpscale-" + ctx_.runId + "-" + p.name + "-") {
    validateRunId(ctx_.runId);
    std::int64_t first = 0;
    auto add = [&](Segment::Type t, kube::GroupVersionResource g, std::int64_t n, std::int64_t offset = 0) {
      if (n > 0) segments_.push_back({t, std::move(g), n, first, offset});
      first += n;
    };
    // The built-in kinds first, so a ConfigMap's cost is measured on a heap not yet
    // holding the custom resources it is compared with.
    add(Segment::Type::kConfigMap, kube::gvr::kConfigMaps, p.configMaps);
    add(Segment::Type::kSecret, kube::gvr::kSecrets, p.secrets);
    add(Segment::Type::kServiceAccount, kube::gvr::kServiceAccounts, p.serviceAccounts);
    add(Segment::Type::kRole, kube::gvr::kRoles, p.roles);
    add(Segment::Type::kRoleBinding, kube::gvr::kRoleBindings, p.roleBindings);
    add(Segment::Type::kClusterRole, kube::gvr::kClusterRoles, p.clusterRoles);
    add(Segment::Type::kClusterRoleBinding, kube::gvr::kClusterRoleBindings, p.clusterRoleBindings);
    for (std::int64_t k = 0; k < p.crdKinds; ++k) {
      add(Segment::Type::kWidget, DormantWorkload::crdResource(k), p.objectsPerKind - p.firstObject, p.firstObject);
    }
    total_ = first;
    // This instance's share of each kind, counted up front so a kind's ramp can end at
    // the answer of its last create and the summary can say what "complete" means.
    for (auto& seg : segments_) {
      if (ctx_.worker == nullptr) {
        seg.owned = seg.count;
      } else {
        for (std::int64_t j = 0; j < seg.count; ++j) seg.owned += ctx_.owns(itemKey(seg.first + j));
      }
      owned_ += seg.owned;
    }
    if (!p.rampPerKind) {
      for (std::size_t k = 0; k < segments_.size(); ++k) mix_.push({0.5 / static_cast<double>(segments_[k].count), k});
    }
    if (owned_ > 0) ctx_.beginPhase(rampPhase());
    scheduleCreate();
    for (std::int64_t k = 0; k < p.crdKinds; ++k) {
      for (std::int64_t w = 0; w < p.watchers.perKind; ++w) {
        if (!ctx_.owns("watcher/" + p.name + "/" + std::to_string(k) + "/" + std::to_string(w))) continue;
        watchers_.push_back(makeWatcher(k, w));
        watchers_.back()->start();
        if (p.watchers.relistEvery > engine::Duration::zero()) scheduleRelist(watchers_.size() - 1, true);
      }
    }
    maybeSetupDone();
  }
  ~DormantInstance() override { stop(); }

  void stop() override {
    stopped_ = true;
    events_.cancelAll();
    calls_.cancelAll();
    for (auto& w : watchers_) w->stop();
  }

  json summary() const override {
    // `objects` is this instance's share, so the runner's sum over instances is the
    // population; `complete` must be and-ed across instances.
    json s = {{"objects", owned_},
              {"created", c_.created},
              {"createFailures", c_.createFailed},
              {"complete", static_cast<std::int64_t>(c_.created) == owned_},
              {"updates", c_.updates},
              {"updateFailures", c_.updateFailed},
              {"watchers", watchers_.size()},
              {"watchersSynced", synced_}};
    std::uint64_t lists = 0, relists = 0, watches = 0, events = 0, bookmarks = 0, expired = 0, errors = 0;
    for (const auto& w : watchers_) {
      const ReflectorCounts& c = w->counts();
      lists += c.lists, relists += c.relists, watches += c.watches, events += c.events;
      bookmarks += c.bookmarks, expired += c.expired, errors += c.errors;
    }
    s["watchLists"] = lists;
    s["watchRelists"] = relists;
    s["watchStreams"] = watches;
    s["watchEvents"] = events;
    s["watchBookmarks"] = bookmarks;
    s["watchExpired"] = expired;
    std::uint64_t listedObjects = 0;
    for (const auto& w : watchers_) listedObjects += w->counts().objectsListed;
    s["watchObjectsListed"] = listedObjects;
    s["watchErrors"] = errors;
    for (const auto& w : watchers_) {
      if (!w->lastError().empty()) s["watchLastError"] = w->lastError();
    }
    return s;
  }

  // ---- creation ----

  // Which worker owns item i, and its payload's seed. A growth's items are its own.
  std::string itemKey(std::int64_t i) const {
    return "dormant/" + p_.name + "/" + (p_.growth ? "grow/" + std::to_string(p_.objectsPerKind) + "/" : "") +
           std::to_string(i);
  }

  // The population's creation phase; a growth's is not a "ramp/" one (see the header).
  std::string rampPhase() const {
    return p_.growth ? "grow/" + p_.name + "/" + std::to_string(p_.objectsPerKind) : "ramp/" + p_.name;
  }
  std::string kindPhase(const kube::GroupVersionResource& kind) const {
    if (!p_.growth) return kindRampPhaseName(p_.name, kind);
    return rampPhase() + "/" + (kind.group.empty() ? "" : kind.group + "/") + kind.resource;
  }

  // The next item this instance owns in creation order, or -1 when none is left.
  std::int64_t nextOwned() {
    if (p_.rampPerKind) {
      while (next_ < total_ && !ctx_.owns(itemKey(next_))) ++next_;
      return next_ < total_ ? next_++ : -1;
    }
    // Interleaved: the kind whose next item sits earliest in its own sequence (item j
    // of n at (j + 0.5) / n), so every kind grows in proportion.
    while (!mix_.empty()) {
      const std::size_t k = mix_.top().second;
      mix_.pop();
      Segment& seg = segments_[k];
      const std::int64_t j = seg.cursor++;
      if (seg.cursor < seg.count)
        mix_.push({(static_cast<double>(seg.cursor) + 0.5) / static_cast<double>(seg.count), k});
      if (ctx_.owns(itemKey(seg.first + j))) return seg.first + j;
    }
    return -1;
  }

  void scheduleCreate() {
    const std::int64_t i = nextOwned();
    if (i < 0) {
      startUpdates();
      return;
    }
    events_.at(bucket_.reserve(ctx_.sim.now()), [this, i] {
      createItem(i);
      scheduleCreate();
    });
  }

  std::size_t segmentIndex(std::int64_t i) const {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), i,
                               [](std::int64_t v, const Segment& s) { return v < s.first; });
    return static_cast<std::size_t>(it - segments_.begin()) - 1;
  }
  const Segment& segmentOf(std::int64_t i) const { return segments_[segmentIndex(i)]; }

  // Once: every owned create answered and every watcher synced.
  void maybeSetupDone() {
    if (setupReported_ || answered_ < owned_ || synced_ < watchers_.size()) return;
    setupReported_ = true;
    ctx_.setupDone();
  }

  void answered(std::size_t k) {
    Segment& seg = segments_[k];
    ++seg.answered;
    ++answered_;
    if (p_.rampPerKind && seg.answered == seg.owned) ctx_.endPhase(kindPhase(seg.gvr));
    if (answered_ == owned_) ctx_.endPhase(rampPhase());
    maybeSetupDone();
  }

  std::string ns(std::int64_t j) const {
    return DormantWorkload::namespaceName(ctx_.runId, p_.name, j % p_.namespaces);
  }

  // (collection, name) of item i.
  std::pair<kube::ResourceRef, std::string> where(std::int64_t i) const {
    const Segment& s = segmentOf(i);
    const std::int64_t j = i - s.first + s.offset;
    kube::ResourceRef r(s.gvr);
    if (!s.gvr.namespaced) return {r, prefix_ + std::to_string(j)};
    static constexpr const char* kPrefix[] = {"widget-", "role-", "rolebinding-", "", "", "sa-", "cm-", "secret-"};
    return {r.in(ns(j)), kPrefix[static_cast<int>(s.type)] + std::to_string(j)};
  }

  void createItem(std::int64_t i) {
    const std::size_t k = segmentIndex(i);
    Segment& s = segments_[k];
    if (s.submitted++ == 0 && p_.rampPerKind) ctx_.beginPhase(kindPhase(s.gvr));
    const std::int64_t j = i - s.first + s.offset;
    auto [collection, name] = where(i);
    json meta = {{"name", name}, {"labels", ctx_.labels(p_.name)}};
    if (s.gvr.namespaced) meta["namespace"] = collection.ns;
    const std::string apiVersion = s.gvr.group.empty() ? s.gvr.version : s.gvr.group + "/" + s.gvr.version;
    json obj = {{"apiVersion", apiVersion}, {"metadata", meta}};
    auto payload = [&] {
      return filler(static_cast<std::size_t>(p_.objectBytes.sample(rng_)), engine::streamSeed(ctx_.seed, itemKey(i)));
    };
    const std::string sa = "sa-" + std::to_string(p_.serviceAccounts > 0 ? j % p_.serviceAccounts : 0);
    switch (s.type) {
      case Segment::Type::kWidget:
        obj["kind"] = "Widget";
        obj["spec"] = {{"replicas", j % 5}, {"tier", j % 2 ? "backend" : "frontend"}, {"config", payload()}};
        break;
      case Segment::Type::kServiceAccount: obj["kind"] = "ServiceAccount"; break;
      case Segment::Type::kRole:
        obj["kind"] = "Role";
        obj["rules"] = json::array(
            {{{"apiGroups", {""}}, {"resources", {"configmaps", "secrets"}}, {"verbs", {"get", "list", "watch"}}},
             {{"apiGroups", {"apps"}},
              {"resources", {"deployments"}},
              {"verbs", {"get", "list", "watch", "update", "patch"}}}});
        break;
      case Segment::Type::kRoleBinding:
        obj["kind"] = "RoleBinding";
        obj["roleRef"] = {{"apiGroup", "rbac.authorization.k8s.io"},
                          {"kind", "Role"},
                          {"name", "role-" + std::to_string(p_.roles > 0 ? j % p_.roles : 0)}};
        obj["subjects"] = json::array({{{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", collection.ns}}});
        break;
      case Segment::Type::kClusterRole:
        obj["kind"] = "ClusterRole";
        obj["rules"] = json::array(
            {{{"apiGroups", {"op" + std::to_string(p_.crdKinds > 0 ? j % p_.crdKinds : 0) + ".dormant.cpscale.io"}},
              {"resources", {"widgets", "widgets/status"}},
              {"verbs", {"get", "list", "watch", "create", "update", "patch", "delete"}}},
             {{"apiGroups", {""}}, {"resources", {"events"}}, {"verbs", {"create", "patch"}}}});
        break;
      case Segment::Type::kClusterRoleBinding:
        obj["kind"] = "ClusterRoleBinding";
        obj["roleRef"] = {{"apiGroup", "rbac.authorization.k8s.io"},
                          {"kind", "ClusterRole"},
                          {"name", prefix_ + std::to_string(p_.clusterRoles > 0 ? j % p_.clusterRoles : 0)}};
        obj["subjects"] = json::array({{{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", ns(j)}}});
        break;
      case Segment::Type::kConfigMap:
        obj["kind"] = "ConfigMap";
        obj["data"] = {{"config.yaml", payload()}};
        break;
      case Segment::Type::kSecret:
        obj["kind"] = "Secret";
        obj["type"] = "Opaque";
        obj["stringData"] = {{"token", payload()}};
        break;
    }
    auto req = kube::ApiRequest::create(collection, obj);
    req.decode = kube::Decode::kNone;  // the object it gets back is not read
    req.intendedAt = ctx_.sim.now();
    calls_.call(std::move(req), [this, i, k](kube::ApiResult r) {
      if (r.ok() || r.alreadyExists()) {
        ++c_.created;
        created_.push_back(static_cast<std::uint32_t>(i));
      } else {
        ++c_.createFailed;
      }
      answered(k);
    });
  }

  // ---- background updates ----

  void startUpdates() {
    if (p_.updatesPerSecond <= 0 || updating_) return;
    updating_ = true;
    scheduleUpdate();
  }

  void scheduleUpdate() {
    events_.at(ctx_.sim.now() + rng_.interArrival(ctx_.share(p_.updatesPerSecond)), [this] {
      if (!created_.empty()) {
        const std::int64_t i = created_[rng_.below(created_.size())];
        auto [collection, name] = where(i);
        auto req = kube::ApiRequest::patch(
            collection.named(name), kube::PatchType::kMerge,
            {{"metadata",
              {{"annotations",
                {{"cpscale.io/touched", rfc3339(ctx_.epochUnixNanos + ctx_.sim.now().time_since_epoch().count())}}}}}});
        req.decode = kube::Decode::kNone;  // the object it gets back is not read
        req.intendedAt = ctx_.sim.now();
        calls_.call(std::move(req), [this](kube::ApiResult r) { r.ok() ? ++c_.updates : ++c_.updateFailed; });
      }
      scheduleUpdate();
    });
  }

  // ---- watchers ----

  // Watcher i lists everything again every relistEvery, the first time at a uniformly
  // drawn phase so that the watchers' LISTs spread over the interval.
  void scheduleRelist(std::size_t i, bool first) {
    const double period = std::chrono::duration<double>(p_.watchers.relistEvery).count();
    const double after = first ? period * (1 + rng_.uniform()) : period;
    events_.at(ctx_.sim.now() + std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(after)),
               [this, i] {
                 if (stopped_) return;
                 watchers_[i]->relist();
                 scheduleRelist(i, false);
               });
  }

  // Watcher `index` of CRD kind `kind`: an operator's informer on that kind.
  std::unique_ptr<Reflector> makeWatcher(std::int64_t kind, std::int64_t index) {
    ReflectorOptions o;
    o.collection = kube::ResourceRef(DormantWorkload::crdResource(kind));
    o.pageSize = p_.watchers.pageSize;
    o.timeout = p_.watchers.timeout;
    o.selector.labelSelector = p_.watchers.labelSelector;
    if (p_.watchers.shards > 0) {
      o.selector.extra.emplace_back("shardSelector", shardSelector(index % p_.watchers.shards, p_.watchers.shards));
    }
    auto r = std::make_unique<Reflector>(calls_, events_, ctx_.sim, rng_, std::move(o));
    r->onListed([this](bool first) {
      if (!first) return;
      ++synced_;
      maybeSetupDone();
    });
    return r;
  }

 private:
  struct Counts {
    std::uint64_t created = 0, createFailed = 0, updates = 0, updateFailed = 0;
  };
  const DormantParams& p_;
  WorkloadContext ctx_;
  CallTracker calls_;
  EventTracker events_;
  TokenBucket bucket_;
  engine::RandomStream rng_;
  std::string prefix_;
  std::vector<Segment> segments_;
  std::int64_t total_ = 0;
  std::int64_t owned_ = 0;
  std::int64_t answered_ = 0;
  std::int64_t next_ = 0;
  // Interleaved creation (rampPerKind: false): (position of the kind's next item in
  // its own sequence, segment), smallest first.
  std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>, std::greater<>> mix_;
  std::size_t synced_ = 0;
  bool setupReported_ = false;
  std::vector<std::uint32_t> created_;
  bool updating_ = false;
  bool stopped_ = false;
  std::vector<std::unique_ptr<Reflector>> watchers_;
  Counts c_;
};

}  // namespace

std::unique_ptr<WorkloadInstance> DormantWorkload::start(WorkloadContext& ctx) {
  return std::make_unique<DormantInstance>(params_, ctx);
}

}  // namespace cpscale::workloads
