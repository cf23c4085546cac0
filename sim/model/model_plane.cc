#include "sim/model/model_plane.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sim/engine/random.h"
#include "sim/engine/simulator.h"
#include "sim/model/cpu_pool.h"
#include "sim/model/member_metrics.h"
#include "sim/model/object_store.h"

namespace cpscale::model {

using engine::Duration;
using engine::TimePoint;
using nlohmann::json;

namespace {

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
Duration fromSeconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::max(0.0, s)));
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percentDecode(std::string_view s, bool plusIsSpace) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else if (s[i] == '+' && plusIsSpace) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// A request path taken apart as kube-apiserver's request-info resolver does.
struct Route {
  bool resource = false;  // an API resource path (else non-resource: /metrics, /readyz, ...)
  std::string path;       // without the query
  std::string group, version, resourceName, ns, name, sub;
  std::vector<std::pair<std::string, std::string>> query;
  std::string verb;  // as apiserver_request_total labels it
  bool watch = false;

  std::string param(std::string_view k) const {
    for (const auto& [key, v] : query)
      if (key == k) return v;
    return {};
  }
  bool has(std::string_view k) const {
    for (const auto& [key, v] : query)
      if (key == k) return true;
    return false;
  }
};

Route parseRoute(const kube::HttpRequest& req) {
  Route r;
  std::string_view full = req.path;
  std::size_t q = full.find('?');
  r.path = std::string(full.substr(0, q));
  if (q != std::string_view::npos) {
    std::string_view qs = full.substr(q + 1);
    std::size_t start = 0;
    for (std::size_t i = 0; i <= qs.size(); ++i) {
      if (i == qs.size() || qs[i] == '&') {
        std::string_view kv = qs.substr(start, i - start);
        start = i + 1;
        if (kv.empty()) continue;
        std::size_t eq = kv.find('=');
        r.query.emplace_back(percentDecode(kv.substr(0, eq), true),
                             eq == std::string_view::npos ? std::string() : percentDecode(kv.substr(eq + 1), true));
      }
    }
  }
  std::vector<std::string> segs;
  {
    std::string_view p = r.path;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= p.size(); ++i) {
      if (i == p.size() || p[i] == '/') {
        if (i > start) segs.push_back(percentDecode(p.substr(start, i - start), false));
        start = i + 1;
      }
    }
  }
  std::size_t rest = 0;
  if (segs.size() >= 3 && segs[0] == "api") {
    r.version = segs[1];
    rest = 2;
  } else if (segs.size() >= 4 && segs[0] == "apis") {
    r.group = segs[1];
    r.version = segs[2];
    rest = 3;
  } else {
    r.verb = req.method;
    return r;  // non-resource, or discovery
  }
  std::vector<std::string> parts(segs.begin() + static_cast<std::ptrdiff_t>(rest), segs.end());
  if (parts.size() >= 3 && parts[0] == "namespaces" &&
      !(parts.size() == 3 && (parts[2] == "status" || parts[2] == "finalize"))) {
    r.ns = parts[1];
    parts.erase(parts.begin(), parts.begin() + 2);
  }
  r.resource = true;
  r.resourceName = parts[0];
  if (parts.size() > 1) r.name = parts[1];
  if (parts.size() > 2) r.sub = parts[2];
  r.watch = r.param("watch") == "true" || r.param("watch") == "1";
  if (req.method == "GET") {
    r.verb = !r.name.empty() ? "GET" : r.watch ? "WATCH" : "LIST";
  } else if (req.method == "DELETE") {
    r.verb = r.name.empty() ? "DELETECOLLECTION" : "DELETE";
  } else {
    r.verb = req.method;
  }
  return r;
}

bool isWrite(std::string_view verb) {
  return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE" || verb == "DELETECOLLECTION";
}

std::optional<std::string> header(const kube::HttpRequest& req, std::string_view name) {
  for (const auto& h : req.headers) {
    if (h.name.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(h.name[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (same) return h.value;
  }
  return std::nullopt;
}

kube::HttpResponse response(int status, std::string body, std::string contentType = "application/json") {
  kube::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.httpVersion = "2";
  r.headers.push_back({"content-type", std::move(contentType)});
  return r;
}

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

}  // namespace

class ModelTransport;

// An open watch: the store's filters plus where its events go.
struct ModelWatch : Watcher {
  ModelTransport* transport = nullptr;
  kube::RequestId id = 0;
  std::size_t replica = 0;
  Table* table = nullptr;
  std::function<bool(std::string_view)> onChunk;
  bool bookmarks = false;
  TimePoint opened{};
};

struct Pending {
  kube::HttpRequest req;
  kube::ResponseHandler done;
  Route route;
  std::string labelsKey;
  std::size_t replica = 0;
  TimePoint submitted{};
  TimePoint due{};
  engine::EventId event = 0;
  bool mutating = false;
  bool seat = false;                  // holds a seat of the max-in-flight filter
  bool seatMutating = false;          // ... a mutating one
  bool tooMany = false;               // refused by it: answered 429 at once
  bool serverTimeout = false;         // answered 504 at requestTimeout
  bool clientTimeout = false;         // the client gives up at its timeout
  std::unique_ptr<ModelWatch> watch;  // set once a stream is open
};

class ModelTransport final : public kube::Transport {
 public:
  enum class Kind { kClient, kApiserver, kEtcd };
  ModelTransport(ModelPlane::Impl* impl, Kind kind, std::size_t member, double weight, std::string server,
                 bool limited = false)
      : impl_(impl), kind_(kind), member_(member), weight_(weight), server_(std::move(server)), limited_(limited) {}
  ~ModelTransport() override;

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override;
  void cancel(kube::RequestId id) override;
  std::size_t poll(Duration maxWait) override;
  std::size_t inFlight() const override { return pending_.size(); }
  void wakeup() override {}
  const std::string& server() const override { return server_; }

  ModelPlane::Impl* impl_;
  Kind kind_;
  std::size_t member_;
  double weight_;
  std::string server_;
  bool limited_;  // not system:masters: the max-in-flight filter applies
  std::map<kube::RequestId, Pending> pending_;
  kube::RequestId next_ = 0;
  std::size_t handled_ = 0;
};

class ModelPlane::Impl {
 public:
  struct Apiserver {
    std::string name;
    ApiserverMetrics metrics;
    CpuPool* pool = nullptr;
    double cpu = 0;                               // charged core-seconds (idle apart)
    double seatsReadOnly = 0, seatsMutating = 0;  // the max-in-flight filter's, taken
  };
  struct Etcd {
    ModelEtcd spec;
    std::string member;
    CpuPool* pool = nullptr;
    double cpu = 0;
    EtcdCounters counters;
    std::string serverId;
    // The db: writes at the last two compaction ticks, the file's size (it never
    // shrinks without a defragmentation) and the NOSPACE alarm.
    double writesAtTick = 0, writesAtCompaction = 0;
    double fileBytes = 0;
    bool noSpace = false;
    int writesSinceCheck = 0;
  };

  Impl(engine::Scheduler& sched, ModelOptions options);
  ~Impl();

  // ---- requests ----
  void admit(ModelTransport& t, kube::RequestId id);
  void execute(ModelTransport& t, kube::RequestId id);
  kube::HttpResponse handle(ModelTransport& t, Pending& p, int& code);
  kube::HttpResponse handleResource(ModelTransport& t, Pending& p);
  kube::HttpResponse handleNonResource(ModelTransport& t, Pending& p);
  kube::HttpResponse handleEtcd(ModelTransport& t, const Pending& p);
  kube::HttpResponse discovery(const Route& r);

  // ---- watches ----
  void openWatch(ModelTransport& t, kube::RequestId id);
  void endWatch(ModelTransport& t, kube::RequestId id, kube::HttpResponse resp, bool bookmark);
  void onChange(Table& table, const Change& c);
  double planeWatchersOf(const Table& table) const;
  void onRemoved(Table& table);
  // Sends one line; false when the consumer refused it (the watch is then closed).
  bool send(ModelWatch& w, const std::string& line);
  bool deliver(ModelWatch& w, const Change& c, std::string* lines);
  void bury(std::unique_ptr<ModelWatch> w);
  void flushGraveyard();

  // ---- admission (ModelAdmission) ----
  // Takes `w` seats of the kind on `replica`; false when its limit is reached.
  bool takeSeat(std::size_t replica, bool mutating, double w);
  void releaseSeat(std::size_t replica, bool mutating, double w);
  // What the filter answers: 429, Retry-After 1, its plain-text message.
  static kube::HttpResponse tooManyRequests();

  // ---- cost model ----
  enum class Class { kLeaseWrite, kWrite, kCustomWrite, kEventWrite, kRead };
  double cpuOf(Class c) const;
  // The class of a write to a resource other than a Lease renewal: a custom resource's,
  // an Event's (no watch cache), or a built-in object's.
  static Class writeClass(const ResourceType& type) {
    return type.custom ? Class::kCustomWrite : !type.watchCached() ? Class::kEventWrite : Class::kWrite;
  }
  // Charges one request standing for `w` to replica `replica` (and etcd for writes);
  // returns its modelled latency in seconds.
  double charge(std::size_t replica, Class cls, const std::string& tableKey, double w);
  std::size_t etcdFor(std::string_view key) const;
  std::size_t etcdFor(const Table& t);
  void countWrite(std::size_t etcd, double writes, double puts);

  // The db bytes in use of etcd i now, its file grown to them, and the alarm raised
  // once the file passes the quota.
  double etcdInUse(std::size_t i);
  void compactionTick();
  engine::EventId compactionEvent_ = 0;

  // ---- background ----
  void startBackground();
  void background(std::size_t i);

  // ---- the node lifecycle controller (ModelNodeLifecycle) ----
  struct NodeHealth {
    TimePoint probe{};            // the pass that last saw the node heard from
    bool probed = false;          // seen by a pass yet
    bool heard = false;           // its Lease or status written since the last pass
    std::uint64_t unknownRv = 0;  // the node's resourceVersion when its Ready was last seen Unknown
    engine::EventId write = 0;    // the controller's status write in flight
    bool tainted = false;         // carries the controller's unreachable taints
  };
  void nodeHeard(const std::string& name);
  void forgetNode(const std::string& name);
  void nodeLifecyclePass();
  void markNodeUnknown(const std::string& name, NodeHealth& h, const StoredObject& node);
  void writeNodeStatus(const std::string& name, const std::string& body, double weight, double latency);
  // What follows a node's Ready turning Unknown, and its return: the taints, the
  // events, the pods marked NotReady.
  void afterNodeUnknown(const std::string& name, NodeHealth& h, double weight);
  void afterNodeReachable(const std::string& name, NodeHealth& h, double weight);
  void setNodeTaints(const std::string& name, const json& taints, double weight);
  void recordControllerEvent(const json& involved, const std::string& ns, const char* component, const char* type,
                             const char* reason, const std::string& message, double weight);
  // One write of the plane's own controllers (the controller-manager's), sent to its
  // replica: charged as a write, committed when it is charged, counted in
  // apiserver_request_total. Returns its HTTP status; 0 when its replica or etcd was
  // down and it was not sent.
  int controllerWrite(Table& t, const std::string& verb, const std::string& ns, const std::string& name,
                      const std::string& sub, const std::string& body, double weight);
  // The pods bound to each node (the controller's spec.nodeName index), by "ns/name".
  std::map<std::string, std::set<std::string>, std::less<>> podsByNode_;
  std::map<std::string, std::string, std::less<>> nodeOfPod_;
  void indexPod(const Change& c);
  std::uint64_t controllerEvents_ = 0;  // names the controllers' events apart
  Table* nodes_ = nullptr;
  Table* leases_ = nullptr;
  Table* pods_ = nullptr;
  Table* events_ = nullptr;
  std::map<std::string, NodeHealth, std::less<>> nodeHealth_;  // by node name
  engine::EventId nodeLifecycleEvent_ = 0;
  std::string nodeStatusPutKey_;  // apiserver_request_total's labels of its writes

  // ---- exposition ----
  double elapsed() const { return seconds(sched_.now() - start_); }
  double heapBytes() const;
  // heapBytes() at one instant: every replica's scrape of one round reads the same.
  mutable std::optional<std::pair<TimePoint, std::uint64_t>> heapAt_;
  mutable double heap_ = 0;
  std::string apiserverText(std::size_t i) const;
  std::string etcdText(std::size_t i);

  engine::Scheduler& sched_;
  ModelOptions options_;
  const Calibration& cal_;
  ObjectStore store_;
  std::vector<std::unique_ptr<CpuPool>> pools_;
  CpuPool* generatorPool_ = nullptr;  // where the generator's CPU goes; null: off the plane
  std::vector<Apiserver> apis_;
  std::vector<Etcd> etcds_;
  std::size_t mainEtcd_ = 0;
  std::vector<std::size_t> etcdOfTable_;  // by table index
  engine::RandomStream rng_;
  std::size_t roundRobin_ = 0;
  std::size_t backgroundRoundRobin_ = 0;
  std::vector<engine::EventId> backgroundEvents_;
  TimePoint start_{};
  ModelStats stats_;
  std::set<ModelTransport*> transports_;
  int fanout_ = 0;  // fan-outs on the stack: closed watches wait in the graveyard
  std::vector<std::unique_ptr<ModelWatch>> graveyard_;

  // ---- faults (ModelPlane::kill, restart, pause, resume) ----
  enum class Health { kServing, kDown, kStarting, kFrozen };
  struct MemberHealth {
    Health health = Health::kServing;
    engine::EventId ready = 0;  // a restart's: when the member serves again
    // An apiserver's watch cache after a restart holds the changes since this revision.
    std::uint64_t cacheFrom = 0;
    // What waits for a frozen member: answers, watch opens, writes to its etcd.
    std::vector<std::pair<ModelTransport*, kube::RequestId>> held;
  };
  // Empty until the first fault: a plane never faulted checks nothing per request.
  std::vector<MemberHealth> apiHealth_, etcdHealth_;
  struct FaultedMember {
    MemberHealth* health;
    bool etcd;
    std::size_t index;  // in apis_ or etcds_
  };
  // Throws std::invalid_argument for a member the plane does not have.
  FaultedMember faulted(const std::string& member);
  bool apiServing(std::size_t i) const { return apiHealth_.empty() || apiHealth_[i].health == Health::kServing; }
  bool etcdServing(std::size_t i) const { return etcdHealth_.empty() || etcdHealth_[i].health == Health::kServing; }
  bool etcdUp(std::size_t i) const {
    return etcdHealth_.empty() ||
           (etcdHealth_[i].health != Health::kDown && etcdHealth_[i].health != Health::kStarting);
  }
  // A request to a member that is down: refused a moment later, as a connect is.
  bool refusedWhileDown(ModelTransport& t, kube::RequestId id, bool etcd, std::size_t member);
  // A request whose answer (or whose write) a frozen member holds: waits for resume().
  bool heldWhileFrozen(ModelTransport& t, kube::RequestId id, Pending& p);
  void timeOutHeld(ModelTransport& t, kube::RequestId id, bool serverSide);
  // What a killed member was answering: ended as a reset connection.
  void resetConnections(bool etcd, std::size_t member);
  // Held requests go on now: answered, opened or (a write to a killed etcd) refused.
  void releaseHeld(std::vector<std::pair<ModelTransport*, kube::RequestId>> held);
  void killMember(const std::string& member);
  void restartMember(const std::string& member, std::function<void()> ready);
  void pauseMember(const std::string& member);
  void resumeMember(const std::string& member);
  void cancelFaultEvents();
};

// ---- the transport -------------------------------------------------------------

ModelTransport::~ModelTransport() {
  if (impl_ == nullptr) return;
  impl_->transports_.erase(this);
  for (auto& [id, p] : pending_) {
    if (p.event != 0) impl_->sched_.cancel(p.event);
    if (p.seat) impl_->releaseSeat(p.replica, p.seatMutating, weight_);
    if (p.watch) {
      --impl_->stats_.watchers;
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

// ---- the plane -------------------------------------------------------------------

ModelPlane::Impl::Impl(engine::Scheduler& sched, ModelOptions options)
    : sched_(sched),
      options_(std::move(options)),
      cal_(options_.calibration),
      store_(StoreOptions{options_.watchHistoryMin, options_.watchHistory, StoreOptions{}.historyMax,
                          engine::streamSeed(options_.seed, "model/store")}),
      rng_(engine::streamSeed(options_.seed, "model/plane")),
      start_(sched.now()) {
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
  if (const ModelNodeLifecycle& nl = options_.nodeLifecycle; nl.enabled) {
    if (nl.apiserver >= options_.apiservers)
      throw std::invalid_argument("the node lifecycle controller's apiserver is not one the model plane has");
    if (nl.monitorPeriod <= Duration::zero() || nl.gracePeriod <= Duration::zero())
      throw std::invalid_argument("the node lifecycle controller's periods must be positive");
    nodes_ = store_.findByKey("", "nodes");
    leases_ = store_.findByKey("coordination.k8s.io", "leases");
    pods_ = store_.findByKey("", "pods");
    events_ = store_.findByKey("", "events");
    RequestLabels l;
    l.version = "v1";
    l.resource = "nodes";
    l.subresource = "status";
    l.verb = "PUT";
    l.scope = "resource";
    nodeStatusPutKey_ = l.key();
    nodeLifecycleEvent_ = sched_.scheduleAt(start_ + nl.monitorPeriod, [this] { nodeLifecyclePass(); });
  }
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

ModelPlane::Impl::~Impl() {
  cancelFaultEvents();
  for (engine::EventId e : backgroundEvents_) sched_.cancel(e);
  if (compactionEvent_ != 0) sched_.cancel(compactionEvent_);
  if (nodeLifecycleEvent_ != 0) sched_.cancel(nodeLifecycleEvent_);
  for (auto& [name, h] : nodeHealth_)
    if (h.write != 0) sched_.cancel(h.write);
  for (ModelTransport* t : transports_) {
    for (auto& [id, p] : t->pending_) {
      if (p.event != 0) sched_.cancel(p.event);
      p.event = 0;
    }
    t->impl_ = nullptr;
  }
  // Watches outlive the store in their transports: unlink them while the lists exist.
  for (const auto& table : store_.tables()) table->watchers.clear();
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

void ModelPlane::Impl::admit(ModelTransport& t, kube::RequestId id) {
  Pending& p = t.pending_.at(id);
  const TimePoint now = sched_.now();
  p.submitted = now;
  p.route = parseRoute(p.req);
  double latency;
  if (t.kind_ == ModelTransport::Kind::kEtcd) {
    if (refusedWhileDown(t, id, true, t.member_)) return;
    latency = cal_.latencyRead.value;
  } else {
    if (t.kind_ == ModelTransport::Kind::kApiserver) {
      p.replica = t.member_;
    } else {
      const auto& clients = options_.clientApiservers;
      p.replica = clients.empty() ? roundRobin_++ % apis_.size() : clients[roundRobin_++ % clients.size()];
    }
    // As the live transport's round-robin, a replica that is down is tried all the same.
    if (refusedWhileDown(t, id, false, p.replica)) return;
    const Route& r = p.route;
    RequestLabels l;
    if (r.resource) {
      l.group = r.group;
      l.version = r.version;
      l.resource = r.resourceName;
      l.subresource = r.sub;
      l.verb = r.verb;
      l.dryRun = r.has("dryRun");
      l.scope = !r.name.empty() || r.verb == "POST" ? "resource" : !r.ns.empty() ? "namespace" : "cluster";
    } else {
      l.component = "";
      l.subresource = r.path;
      l.verb = p.req.method;
    }
    p.labelsKey = l.key();
    const bool write = r.resource && isWrite(r.verb);
    p.mutating = write;
    Class cls =
        !write ? Class::kRead
        : (r.group == "coordination.k8s.io" && r.resourceName == "leases" && (r.verb == "PUT" || r.verb == "PATCH"))
            ? Class::kLeaseWrite
            : Class::kWrite;
    if (cls == Class::kWrite)
      if (const Table* t = store_.findByKey(r.group, r.resourceName); t != nullptr) cls = writeClass(t->type);
    // The max-in-flight filter, after authentication and before everything else. As
    // upstream's long-running check: watches and the streaming subresources take no seat;
    // get, list and watch are read-only, every other verb mutating.
    const bool longRunning = r.watch || (r.resource && (r.sub == "exec" || r.sub == "attach" || r.sub == "log" ||
                                                        r.sub == "portforward" || r.sub == "proxy"));
    if (t.limited_ && !longRunning) {
      const bool mutating = r.resource ? write : p.req.method != "GET";
      if (!takeSeat(p.replica, mutating, t.weight_)) {
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
        return;
      }
      p.seat = true;
      p.seatMutating = mutating;
    }
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
  }
  ModelTransport* tp = &t;
  if (p.route.watch && t.kind_ != ModelTransport::Kind::kEtcd) {
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

void ModelPlane::Impl::execute(ModelTransport& t, kube::RequestId id) {
  auto it = t.pending_.find(id);
  if (it == t.pending_.end()) return;
  if (heldWhileFrozen(t, id, it->second)) return;
  Pending p = std::move(it->second);
  t.pending_.erase(it);
  const TimePoint now = sched_.now();
  store_.setNow(now, options_.epochUnixNanos);
  int code = 0;
  kube::HttpResponse resp;
  if (t.kind_ == ModelTransport::Kind::kEtcd) {
    resp = handleEtcd(t, p);
  } else if (p.tooMany) {
    resp = tooManyRequests();  // counted when it was refused
  } else {
    if (p.seat) releaseSeat(p.replica, p.seatMutating, t.weight_);
    if (p.serverTimeout) {
      code = 504;
      ++stats_.timeouts;
      resp = response(504, statusBody(504, "Timeout", "request did not complete within the allowed duration"));
    } else {
      resp = handle(t, p, code);
    }
    Apiserver& a = apis_[p.replica];
    a.metrics.request(p.labelsKey, code, seconds(now - p.submitted), t.weight_);
    a.metrics.inflight(p.mutating, -t.weight_);
  }
  ++stats_.requests;
  if (p.clientTimeout) {
    resp = kube::HttpResponse{};
    resp.outcome = kube::TransportOutcome::kTimeout;
    resp.detail = "no answer within the request's timeout";
  }
  ++t.handled_;
  p.done(std::move(resp));
}

kube::HttpResponse ModelPlane::Impl::handle(ModelTransport& t, Pending& p, int& code) {
  kube::HttpResponse r = p.route.resource ? handleResource(t, p) : handleNonResource(t, p);
  code = r.status;
  return r;
}

kube::HttpResponse ModelPlane::Impl::handleResource(ModelTransport& t, Pending& p) {
  const Route& r = p.route;
  const double w = t.weight_;
  Table* table = store_.find(r.group, r.version, r.resourceName);
  if (table == nullptr) {
    return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
  }
  if ((!table->type.namespaced && !r.ns.empty()) ||
      (table->type.namespaced && r.ns.empty() && (!r.name.empty() || r.verb == "POST"))) {
    // A cluster-scoped resource under a namespace, or a namespaced object without one.
    return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
  }
  const bool dryRun = r.has("dryRun");
  StoreResult res;
  const std::string& verb = r.verb;
  if (isWrite(verb) && !dryRun && !etcdUp(etcdFor(*table))) {
    return response(500, statusBody(500, "InternalError",
                                    "etcdserver: " + etcds_[etcdFor(*table)].member + " is down: connection refused"));
  }
  if ((verb == "POST" || verb == "PUT" || verb == "PATCH") && !dryRun) {
    if (etcds_[etcdFor(*table)].noSpace) {
      ++stats_.noSpace;
      return response(500, statusBody(500, "InternalError", "etcdserver: mvcc: database space exceeded"));
    }
  }
  if (verb == "GET") {
    res = store_.get(*table, r.ns, r.name, r.sub);
  } else if (verb == "LIST" || verb == "DELETECOLLECTION") {
    ListQuery q;
    q.labelSelector = r.param("labelSelector");
    q.fieldSelector = r.param("fieldSelector");
    q.shardSelector = r.param("shardSelector");
    q.continueToken = r.param("continue");
    if (std::string l = r.param("limit"); !l.empty()) q.limit = std::strtoll(l.c_str(), nullptr, 10);
    if (verb == "LIST") {
      res = store_.list(*table, r.ns, q);
      // Encoding the items the LIST returns (its own cost is the read's, in admit()).
      const double cpu = cal_.apiserverCpuListObject.value * static_cast<double>(res.items) * w;
      apis_[p.replica].pool->charge(sched_.now(), cpu);
      apis_[p.replica].cpu += cpu;
    } else {
      res = store_.removeCollection(*table, r.ns, q, p.req.body);
      if (res.items > 1) {
        const double cpu = cpuOf(writeClass(table->type)) * static_cast<double>(res.items - 1) * w;
        apis_[p.replica].pool->charge(sched_.now(), cpu);
        apis_[p.replica].cpu += cpu;
        Etcd& e = etcds_[etcdFor(*table)];
        const double etcdCpu = cal_.etcdCpuPerProposal.value * static_cast<double>(res.items - 1) * w;
        e.pool->charge(sched_.now(), etcdCpu);
        e.cpu += etcdCpu;
      }
    }
  } else if (verb == "POST") {
    if (!r.name.empty()) {
      return response(
          405, statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
    }
    res = store_.create(*table, r.ns, p.req.body, w, dryRun);
    if (res.reason == "AlreadyExists") ++stats_.alreadyExists;
  } else if (verb == "PUT") {
    res = store_.update(*table, r.ns, r.name, r.sub, p.req.body, w, dryRun);
    if (res.reason == "Conflict") ++stats_.conflicts;
  } else if (verb == "PATCH") {
    std::string ct = header(p.req, "content-type").value_or("application/merge-patch+json");
    ObjectStore::PatchKind kind;
    if (ct.starts_with("application/merge-patch+json")) {
      kind = ObjectStore::PatchKind::kMerge;
    } else if (ct.starts_with("application/strategic-merge-patch+json")) {
      kind = ObjectStore::PatchKind::kStrategic;
    } else if (ct.starts_with("application/json-patch+json")) {
      kind = ObjectStore::PatchKind::kJson;
    } else {
      return response(
          415, statusBody(415, "UnsupportedMediaType", "the body of the request was in an unknown format: " + ct));
    }
    res = store_.patch(*table, r.ns, r.name, r.sub, kind, p.req.body, w, dryRun);
    if (res.reason == "Conflict") ++stats_.conflicts;
  } else if (verb == "DELETE") {
    res = store_.remove(*table, r.ns, r.name, p.req.body);
  } else {
    return response(
        405, statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }
  if (res.weightedWrites > 0) countWrite(etcdFor(*table), res.weightedWrites, res.weightedPuts);
  // A kubelet's status write that changed the node carries a new heartbeat.
  if (table == nodes_ && nodes_ != nullptr && r.sub == "status" && res.weightedWrites > 0) nodeHeard(r.name);
  return response(res.status, std::move(res.body));
}

kube::HttpResponse ModelPlane::Impl::discovery(const Route& r) {
  if (r.path == "/api") {
    return response(200, R"({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]})");
  }
  if (r.path == "/apis") {
    std::map<std::string, std::set<std::string>> groups;
    for (const auto& t : store_.tables()) {
      if (t->served && !t->type.group.empty())
        groups[t->type.group].insert(t->type.versions.begin(), t->type.versions.end());
    }
    json list = {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array()}};
    for (const auto& [g, vs] : groups) {
      json versions = json::array();
      for (const auto& v : vs) versions.push_back({{"groupVersion", g + "/" + v}, {"version", v}});
      list["groups"].push_back({{"name", g}, {"versions", versions}, {"preferredVersion", versions.front()}});
    }
    return response(200, list.dump());
  }
  // /api/v1, /apis/<group>/<version>
  std::string group, version;
  if (r.path.starts_with("/api/")) {
    version = r.path.substr(5);
  } else if (r.path.starts_with("/apis/")) {
    std::string gv = r.path.substr(6);
    std::size_t slash = gv.find('/');
    if (slash == std::string::npos)
      return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
    group = gv.substr(0, slash);
    version = gv.substr(slash + 1);
  }
  json resources = json::array();
  for (const auto& t : store_.tables()) {
    if (!t->served || t->type.group != group || !t->type.serves(version)) continue;
    resources.push_back(
        {{"name", t->type.resource},
         {"singularName", ""},
         {"namespaced", t->type.namespaced},
         {"kind", t->type.kind},
         {"verbs", {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}});
    if (t->type.statusSubresource) {
      resources.push_back({{"name", t->type.resource + "/status"},
                           {"singularName", ""},
                           {"namespaced", t->type.namespaced},
                           {"kind", t->type.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (resources.empty())
    return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
  json list = {{"kind", "APIResourceList"},
               {"apiVersion", "v1"},
               {"groupVersion", group.empty() ? version : group + "/" + version},
               {"resources", resources}};
  return response(200, list.dump());
}

kube::HttpResponse ModelPlane::Impl::handleNonResource(ModelTransport&, Pending& p) {
  const Route& r = p.route;
  if (p.req.method != "GET") {
    return response(
        405, statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }
  if (r.path == "/metrics") return response(200, apiserverText(p.replica), "text/plain; version=0.0.4; charset=utf-8");
  if (r.path == "/readyz" || r.path == "/healthz" || r.path == "/livez" || r.path.starts_with("/readyz/") ||
      r.path.starts_with("/healthz/") || r.path.starts_with("/livez/")) {
    return response(200, "ok", "text/plain; charset=utf-8");
  }
  if (r.path == "/version") {
    std::string v = options_.kubernetesVersion;
    std::string major = "1", minor = "0";
    if (v.size() > 1 && v[0] == 'v') {
      std::size_t dot = v.find('.', 1);
      major = v.substr(1, dot - 1);
      if (dot != std::string::npos) minor = v.substr(dot + 1, v.find('.', dot + 1) - dot - 1);
    }
    json j = {{"major", major},       {"minor", minor},          {"gitVersion", v + "-model"},
              {"gitCommit", "model"}, {"gitTreeState", "clean"}, {"buildDate", "1970-01-01T00:00:00Z"},
              {"goVersion", "model"}, {"compiler", "gc"},        {"platform", "linux/amd64"}};
    return response(200, j.dump());
  }
  if (r.path == "/debug/pprof/heap") {
    // The runtime.MemStats block a Go heap profile written with debug=1 ends with.
    char buf[128];
    std::snprintf(buf, sizeof buf,
                  "heap profile: 0: 0 [0: 0] @ heap/1048576\n\n# runtime.MemStats\n# HeapInuse = %.0f\n", heapBytes());
    return response(200, buf, "text/plain; charset=utf-8");
  }
  if (r.path == "/api" || r.path == "/apis" || r.path.starts_with("/api/") || r.path.starts_with("/apis/")) {
    return discovery(r);
  }
  return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
}

kube::HttpResponse ModelPlane::Impl::handleEtcd(ModelTransport& t, const Pending& p) {
  const Route& r = p.route;
  if (r.path == "/metrics") return response(200, etcdText(t.member_), "text/plain; version=0.0.4; charset=utf-8");
  if (r.path == "/health" || r.path == "/readyz" || r.path == "/livez") {
    return response(200, R"({"health":"true","reason":""})");
  }
  if (r.path == "/version") return response(200, R"({"etcdserver":"3.6.16-model","etcdcluster":"3.6.0"})");
  return response(404, "404 page not found\n", "text/plain; charset=utf-8");
}

// ---- watches ---------------------------------------------------------------------

void ModelPlane::Impl::bury(std::unique_ptr<ModelWatch> w) {
  if (!w) return;
  if (fanout_ > 0) {
    w->dead = true;
    graveyard_.push_back(std::move(w));
  }
  // Otherwise destroyed here, which unlinks it from its resource's list.
}

void ModelPlane::Impl::flushGraveyard() {
  if (fanout_ == 0) graveyard_.clear();
}

bool ModelPlane::Impl::send(ModelWatch& w, const std::string& line) {
  if (w.dead) return false;
  Apiserver& a = apis_[w.replica];
  const ResourceType& type = w.table->type;
  a.metrics.watchEvents(type.group, type.version, type.resource, 1);
  const double cpu = cal_.apiserverCpuWatchEvent.value;
  a.pool->charge(sched_.now(), cpu);
  a.cpu += cpu;
  ++stats_.watchEventsSent;
  if (!w.onChunk || w.onChunk(line)) return !w.dead;
  if (w.dead) return false;  // it cancelled itself from inside the consumer
  kube::HttpResponse aborted;
  aborted.outcome = kube::TransportOutcome::kAborted;
  aborted.detail = "aborted by the body consumer";
  endWatch(*w.transport, w.id, std::move(aborted), false);
  return false;
}

// lines: the three lines of this change (ADDED, MODIFIED, DELETED), built on first use.
bool ModelPlane::Impl::deliver(ModelWatch& w, const Change& c, std::string* lines) {
  if (w.dead || c.rv <= w.sentRv) return !w.dead;
  w.sentRv = c.rv;
  const bool now = w.selects(c.ns, c.name, *c.labels, c.uidHash, *c.object);
  const bool before = c.type == ChangeType::kModified && c.oldLabels != c.labels
                          ? w.selects(c.ns, c.name, *c.oldLabels, c.uidHash, *c.object)
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
  return send(w, line);
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
  // The plane's own informers (controller-manager, scheduler, the apiserver's own) get
  // every change of the resources they watch: fan-out CPU and events sent on the
  // replica they talk to (the first), whatever the workloads watch.
  if (const double plane = planeWatchersOf(table); plane > 0 && table.served) {
    const double events = plane * c.weight;
    Apiserver& a = apis_[0];
    a.metrics.watchEvents(table.type.group, table.type.version, table.type.resource, events);
    const double cpu = cal_.apiserverCpuWatchEvent.value * events;
    a.pool->charge(sched_.now(), cpu);
    a.cpu += cpu;
  }
  if (table.watchers.empty()) return;
  ++fanout_;
  std::string lines[3];
  for (Watcher& base : table.watchers) deliver(static_cast<ModelWatch&>(base), c, lines);
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
  w->table = table;
  w->onChunk = std::move(p.req.onBodyChunk);
  w->bookmarks = r.param("allowWatchBookmarks") == "true";
  w->opened = sched_.now();
  double timeout = 0;
  if (std::string ts = r.param("timeoutSeconds"); !ts.empty()) timeout = std::strtod(ts.c_str(), nullptr);
  // Without one, kube-apiserver ends a watch after a random [1, 2) x --min-request-timeout.
  if (timeout <= 0) timeout = 1800 * (1 + rng_.uniform());
  const std::string rvText = r.param("resourceVersion");
  ModelWatch& watch = *w;
  p.watch = std::move(w);
  table->watchers.push_back(watch);
  ++stats_.watchers;
  ModelTransport* tp = &t;
  p.event = sched_.scheduleAt(sched_.now() + fromSeconds(timeout), [tp, id] {
    if (tp->impl_) tp->impl_->endWatch(*tp, id, response(200, ""), true);
  });

  ++fanout_;
  if (rvText.empty() || rvText == "0") {
    // The current state first, as synthetic ADDED events.
    for (const StoredObject* o : store_.selected(*table, watch)) {
      if (!send(watch, watchLine("ADDED", *o->text))) break;
    }
    watch.sentRv = store_.revision();
  } else {
    const std::uint64_t from = std::strtoull(rvText.c_str(), nullptr, 10);
    auto changes = store_.changesSince(*table, from);
    // A restarted apiserver's watch cache holds nothing from before its restart.
    if (!apiHealth_.empty() && from < apiHealth_[p.replica].cacheFrom) changes.reset();
    if (!changes) {
      const std::string status = statusBody(
          410, "Expired", "too old resource version: " + rvText + " (" + std::to_string(table->compactedRv) + ")");
      if (send(watch, watchLine("ERROR", status))) endWatch(t, id, response(200, ""), false);
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

void ModelPlane::Impl::endWatch(ModelTransport& t, kube::RequestId id, kube::HttpResponse resp, bool bookmark) {
  auto it = t.pending_.find(id);
  if (it == t.pending_.end() || !it->second.watch) return;
  ModelWatch& w = *it->second.watch;
  if (bookmark && w.bookmarks && !w.dead) {
    // Before the timeout ends it, the apiserver tells the watcher how far it has come.
    const ResourceType& type = w.table->type;
    w.sentRv = std::max(w.sentRv, store_.revision());
    const std::string object = R"({"kind":")" + type.kind + R"(","apiVersion":")" + type.apiVersion() +
                               R"(","metadata":{"resourceVersion":")" + std::to_string(w.sentRv) + R"("}})";
    ++fanout_;
    const bool alive = send(w, watchLine("BOOKMARK", object));
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
  bury(std::move(p.watch));
  flushGraveyard();
  ++t.handled_;
  p.done(std::move(resp));
}

// ---- background ------------------------------------------------------------------

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

// ---- the node lifecycle controller -----------------------------------------------

void ModelPlane::Impl::nodeHeard(const std::string& name) {
  auto it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) it = nodeHealth_.emplace(name, NodeHealth{}).first;
  it->second.heard = true;
}

void ModelPlane::Impl::forgetNode(const std::string& name) {
  auto it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) return;
  // A write in flight is answered 404 when it lands; its entry stays until then (passes
  // skip it: the Node is gone), so the destructor still finds its event.
  if (it->second.write == 0) {
    nodeHealth_.erase(it);
  } else {
    it->second = NodeHealth{.write = it->second.write};
  }
}

void ModelPlane::Impl::nodeLifecyclePass() {
  const ModelNodeLifecycle& nl = options_.nodeLifecycle;
  const TimePoint now = sched_.now();
  std::string key;
  for (auto& [name, h] : nodeHealth_) {
    // A node's Lease can be written before its Node exists: it waits for the Node.
    key.assign("/").append(name);
    auto node = nodes_->objects.find(key);
    if (node == nodes_->objects.end()) continue;
    // As tryUpdateNodeHealth: a node first seen, or heard from since, is probed now.
    if (h.heard || !h.probed) {
      h.probe = now;
      h.probed = true;
      h.heard = false;
    }
    // A tainted node whose kubelet reported Ready again is reachable: its taints go,
    // and with them the pods' scheduled evictions.
    if (h.tainted && node->second.rv != h.unknownRv && h.write == 0) {
      json obj = json::parse(*node->second.text, nullptr, /*allow_exceptions=*/false);
      bool ready = false;
      if (obj.is_object())
        for (const auto& c : obj["status"].value("conditions", json::array()))
          if (c.is_object() && c.value("type", std::string()) == "Ready")
            ready = c.value("status", std::string()) == "True";
      if (ready) {
        afterNodeReachable(name, h, node->second.weight);
        continue;
      }
    }
    if (h.write != 0 || now - h.probe <= nl.gracePeriod) continue;
    if (node->second.rv == h.unknownRv) continue;  // Unknown already, and unchanged since
    markNodeUnknown(name, h, node->second);
  }
  nodeLifecycleEvent_ = sched_.scheduleAfter(nl.monitorPeriod, [this] { nodeLifecyclePass(); });
}

void ModelPlane::Impl::markNodeUnknown(const std::string& name, NodeHealth& h, const StoredObject& node) {
  json obj = json::parse(*node.text, nullptr, /*allow_exceptions=*/false);
  if (!obj.is_object()) return;
  json& status = obj["status"];
  if (!status.is_object()) status = json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const std::string now = store_.timestamp();
  std::string readyBefore;
  for (const char* type : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
    json* c = nullptr;
    for (auto& e : conditions)
      if (e.is_object() && e.value("type", std::string()) == type) c = &e;
    if (c == nullptr) {
      const json meta = obj.value("metadata", json::object());
      conditions.push_back({{"type", type},
                            {"status", "Unknown"},
                            {"reason", "NodeStatusNeverUpdated"},
                            {"message", "Kubelet never posted node status."},
                            {"lastHeartbeatTime", meta.value("creationTimestamp", now)},
                            {"lastTransitionTime", now}});
      continue;
    }
    if (std::string_view(type) == "Ready") readyBefore = c->value("status", std::string());
    if (c->value("status", std::string()) != "Unknown") {
      (*c)["status"] = "Unknown";
      (*c)["reason"] = "NodeStatusUnknown";
      (*c)["message"] = "Kubelet stopped posting node status.";
      (*c)["lastTransitionTime"] = now;
    }
  }
  // Only a Ready that changed is written (upstream compares the Ready condition alone).
  if (readyBefore == "Unknown") {
    h.unknownRv = node.rv;
    return;
  }
  // The PUT carries the resourceVersion it read: a kubelet that reports in between wins
  // (409), and the next pass looks again.
  const double w = node.weight;
  const std::size_t replica = options_.nodeLifecycle.apiserver;
  // Its identity is not system:masters: the max-in-flight filter applies, and a 429 is
  // retried at the next pass.
  if (!takeSeat(replica, true, w)) {
    apis_[replica].metrics.dropped(nodeStatusPutKey_, 429, w);
    ++stats_.tooManyRequests;
    ++stats_.requests;
    return;
  }
  const double latency = charge(replica, Class::kWrite, "/nodes", w);
  apis_[replica].metrics.inflight(true, w);
  const double answerAt = std::min(latency, seconds(options_.requestTimeout));
  h.write = sched_.scheduleAfter(
      fromSeconds(answerAt), [this, name, body = obj.dump(), w, latency] { writeNodeStatus(name, body, w, latency); });
}

void ModelPlane::Impl::writeNodeStatus(const std::string& name, const std::string& body, double weight,
                                       double latency) {
  auto it = nodeHealth_.find(name);
  if (it != nodeHealth_.end()) it->second.write = 0;
  Apiserver& a = apis_[options_.nodeLifecycle.apiserver];
  a.metrics.inflight(true, -weight);
  releaseSeat(options_.nodeLifecycle.apiserver, true, weight);
  ++stats_.requests;
  if (latency > seconds(options_.requestTimeout)) {
    ++stats_.timeouts;
    a.metrics.request(nodeStatusPutKey_, 504, seconds(options_.requestTimeout), weight);
    return;
  }
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  StoreResult res = store_.update(*nodes_, "", name, "status", body, weight);
  a.metrics.request(nodeStatusPutKey_, res.status, latency, weight);
  if (res.reason == "Conflict") ++stats_.conflicts;
  if (res.weightedWrites > 0) countWrite(etcdFor(*nodes_), res.weightedWrites, res.weightedPuts);
  if (res.status != 200) return;
  ++stats_.nodesMarkedUnknown;
  it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) return;
  afterNodeUnknown(name, it->second, weight);
  auto node = nodes_->objects.find("/" + name);
  if (node != nodes_->objects.end()) it->second.unknownRv = node->second.rv;
}

namespace {

// The taint the node lifecycle controller puts on a node it no longer hears from.
json unreachableTaint(const char* effect) { return {{"key", "node.kubernetes.io/unreachable"}, {"effect", effect}}; }

// A namespaced object's store key, "ns/name", as its namespace and name.
std::pair<std::string, std::string> splitKey(const std::string& key) {
  const auto slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

// The pod's node from its JSON (spec.nodeName; compact, as the store keeps it).
void ModelPlane::Impl::indexPod(const Change& c) {
  const std::string key = c.ns + "/" + c.name;
  std::string node;
  if (c.type != ChangeType::kDeleted && c.object) {
    static constexpr std::string_view kField = R"("nodeName":")";
    const std::string& text = *c.object;
    if (auto at = text.find(kField); at != std::string::npos) {
      const auto from = at + kField.size();
      if (auto end = text.find('"', from); end != std::string::npos) node = text.substr(from, end - from);
    }
  }
  auto was = nodeOfPod_.find(key);
  if (was != nodeOfPod_.end() && was->second == node) return;
  if (was != nodeOfPod_.end()) {
    auto set = podsByNode_.find(was->second);
    if (set != podsByNode_.end()) {
      set->second.erase(key);
      if (set->second.empty()) podsByNode_.erase(set);
    }
    nodeOfPod_.erase(was);
  }
  if (node.empty()) return;
  nodeOfPod_.emplace(key, node);
  podsByNode_[node].insert(key);
}

// As monitorNodeHealth does once a node's Ready left True (node_lifecycle_controller.go):
// processTaintBaseEviction swaps in the unreachable NoExecute taint, the NoSchedule
// tainting pass adds node.kubernetes.io/unreachable:NoSchedule (two PATCHes of the
// Node), RecordNodeStatusChange records NodeNotReady on the node, and MarkPodsNotReady
// PUTs each bound pod's status with Ready False and records NodeNotReady (Warning) on it.
// The pods' evictions are scheduled by the taint eviction controller for their
// tolerationSeconds (300 s, from DefaultTolerationSeconds); the model does not evict.
void ModelPlane::Impl::afterNodeUnknown(const std::string& name, NodeHealth& h, double weight) {
  setNodeTaints(name, json::array({unreachableTaint("NoExecute")}), weight);
  setNodeTaints(name, json::array({unreachableTaint("NoExecute"), unreachableTaint("NoSchedule")}), weight);
  h.tainted = true;
  const json nodeRef = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", name}};
  recordControllerEvent(nodeRef, "default", "node-controller", "Normal", "NodeNotReady",
                        "Node " + name + " status is now: NodeNotReady", weight);
  auto bound = podsByNode_.find(name);
  if (bound == podsByNode_.end() || pods_ == nullptr) return;
  const std::vector<std::string> keys(bound->second.begin(), bound->second.end());
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const std::string now = store_.timestamp();
  for (const std::string& key : keys) {
    auto pod = pods_->objects.find(key);
    if (pod == pods_->objects.end()) continue;
    json obj = json::parse(*pod->second.text, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object() || !obj["status"].is_object() || !obj["status"]["conditions"].is_array()) continue;
    bool changed = false;
    for (auto& c : obj["status"]["conditions"]) {
      if (!c.is_object() || c.value("type", std::string()) != "Ready") continue;
      if (c.value("status", std::string()) != "False") {
        c["status"] = "False";
        c["lastTransitionTime"] = now;
        changed = true;
      }
      break;
    }
    if (!changed) continue;
    const auto [ns, podName] = splitKey(key);
    // Deleted meanwhile: nothing left to do.
    if (controllerWrite(*pods_, "PUT", ns, podName, "status", obj.dump(), pod->second.weight) == 404) continue;
    const json podRef = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", podName}, {"namespace", ns}};
    recordControllerEvent(podRef, ns, "node-controller", "Warning", "NodeNotReady", "Node is not ready",
                          pod->second.weight);
  }
}

// A node Ready again (markNodeAsReachable and the NoSchedule pass): both taints come
// off (two PATCHes), and the taint eviction controller cancels each bound pod's
// scheduled eviction with a TaintManagerEviction event.
void ModelPlane::Impl::afterNodeReachable(const std::string& name, NodeHealth& h, double weight) {
  setNodeTaints(name, json::array({unreachableTaint("NoSchedule")}), weight);
  setNodeTaints(name, nullptr, weight);
  h.tainted = false;
  auto bound = podsByNode_.find(name);
  if (bound == podsByNode_.end()) return;
  const std::vector<std::string> keys(bound->second.begin(), bound->second.end());
  for (const std::string& key : keys) {
    const auto [ns, podName] = splitKey(key);
    const json podRef = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", podName}, {"namespace", ns}};
    recordControllerEvent(podRef, ns, "taint-eviction-controller", "Normal", "TaintManagerEviction",
                          "Cancelling deletion of Pod " + key, weight);
  }
}

void ModelPlane::Impl::setNodeTaints(const std::string& name, const json& taints, double weight) {
  if (nodes_ == nullptr) return;
  controllerWrite(*nodes_, "PATCH", "", name, "", json{{"spec", {{"taints", taints}}}}.dump(), weight);
}

// As client-go's event recorder posts it: named after the object and the time.
void ModelPlane::Impl::recordControllerEvent(const json& involved, const std::string& ns, const char* component,
                                             const char* type, const char* reason, const std::string& message,
                                             double weight) {
  if (events_ == nullptr) return;
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const std::string now = store_.timestamp();
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(++controllerEvents_));
  const json e = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"name", involved.value("name", std::string()) + suffix}, {"namespace", ns}}},
                  {"involvedObject", involved},
                  {"reason", reason},
                  {"message", message},
                  {"type", type},
                  {"source", {{"component", component}}},
                  {"firstTimestamp", now},
                  {"lastTimestamp", now},
                  {"count", 1}};
  controllerWrite(*events_, "POST", ns, "", "", e.dump(), weight);
}

int ModelPlane::Impl::controllerWrite(Table& t, const std::string& verb, const std::string& ns, const std::string& name,
                                      const std::string& sub, const std::string& body, double weight) {
  const std::size_t replica = options_.nodeLifecycle.apiserver;
  RequestLabels l;
  l.group = t.type.group;
  l.version = t.type.version;
  l.resource = t.type.resource;
  l.subresource = sub;
  l.verb = verb;
  l.scope = "resource";
  const std::string key = l.key();
  if (!apiServing(replica) || !etcdServing(etcdFor(t))) return 0;
  ++stats_.requests;
  // Not system:masters: the max-in-flight filter applies to it as to the status write.
  if (!takeSeat(replica, true, weight)) {
    apis_[replica].metrics.dropped(key, 429, weight);
    ++stats_.tooManyRequests;
    return 429;
  }
  const double latency = charge(replica, writeClass(t.type), t.type.key(), weight);
  releaseSeat(replica, true, weight);
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  StoreResult res = verb == "POST"    ? store_.create(t, ns, body, weight)
                    : verb == "PATCH" ? store_.patch(t, ns, name, sub, ObjectStore::PatchKind::kMerge, body, weight)
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

// ---- exposition ------------------------------------------------------------------

double ModelPlane::Impl::heapBytes() const {
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

std::string ModelPlane::Impl::apiserverText(std::size_t i) const {
  ApiserverMetrics::Process p;
  p.heapBytes = heapBytes();
  p.rssBytes = p.heapBytes * cal_.rssOverHeap;
  p.cpuSeconds = cal_.apiserverIdleCores.value * elapsed() + apis_[i].cpu;
  p.startTime = static_cast<double>(options_.epochUnixNanos) / 1e9 + seconds(start_.time_since_epoch());
  return apis_[i].metrics.exposition(p, store_);
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

// ---- ModelPlane ------------------------------------------------------------------

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
  throw std::invalid_argument("the model plane has no member '" + member + "'");
}

std::vector<ModelMember> ModelPlane::members() const {
  std::vector<ModelMember> out;
  for (const auto& a : impl_->apis_) out.push_back({a.name, "kube-apiserver", "model://" + a.name, "", {}});
  for (const auto& e : impl_->etcds_) {
    out.push_back({e.member, "etcd", "model://" + e.member, e.spec.name, e.spec.resources});
  }
  return out;
}

const ModelOptions& ModelPlane::options() const { return impl_->options_; }

ModelStats ModelPlane::stats() const {
  ModelStats s = impl_->stats_;
  s.objects = impl_->store_.objects();
  return s;
}

// ---- faults ------------------------------------------------------------------------

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
