// The model plane's parts (ModelPlane::Impl), shared by the files that hold them: the
// plane's construction and its public face (model_plane.cc), the transports
// (plane_transport.cc), routing (plane_routing.cc), answering (plane_api.cc),
// admission (plane_admission.cc), the cost model and the plane's own load
// (plane_costs.cc), watch fan-out (plane_watches.cc), the node lifecycle controller
// (plane_node_lifecycle.cc), the EndpointSlice controller (plane_endpoint_slices.cc),
// member faults (plane_faults.cc) and the members' /metrics
// (plane_metrics.cc). Private to sim/model: nothing outside it includes this.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/engine/random.h"
#include "sim/engine/scheduler.h"
#include "sim/kube/transport.h"
#include "sim/model/cpu_pool.h"
#include "sim/model/member_metrics.h"
#include "sim/model/model_plane.h"
#include "sim/model/object_store.h"
#include "sim/model/plane_route.h"

namespace cpscale::model {

inline double seconds(engine::Duration d) { return std::chrono::duration<double>(d).count(); }
inline engine::Duration fromSeconds(double s) {
  return std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(std::max(0.0, s)));
}

// An answer as kube-apiserver writes it, over HTTP/2.
kube::HttpResponse response(int status, std::string body, std::string contentType = "application/json");

// One line of a watch stream: {"type":..., "object":...}.
std::string watchLine(std::string_view type, std::string_view object);

class ModelTransport;

// An open watch: the store's filters plus where its events go.
struct ModelWatch : Watcher {
  ModelTransport* transport = nullptr;
  kube::RequestId id = 0;
  std::size_t replica = 0;
  Table* table = nullptr;
  std::function<bool(std::string_view)> onChunk;
  bool bookmarks = false;
  engine::EventId bookmarkTimer = 0;  // its next periodic bookmark (allowWatchBookmarks)
  engine::TimePoint opened{};
  // The value its field selector pins the table's trigger field to (pods' spec.nodeName,
  // nodes' metadata.name): the watch cache dispatches it only changes with that value.
  std::optional<std::string> trigger;
  // The watches it stands for: 1 for a workload's own (a shared or dormant watch is one
  // watch however the run is sampled); the client's weight for an actor's own
  // (HttpRequest::perActor: a sampled node's watches stand for its w nodes').
  double weight = 1;
  // The (watch, object) pairs one sampled event stands for, for an object of this
  // weight. A watch that selects everything sees each of the w objects a sampled one
  // stands for from each of its watches: weight x w. A pinned watch (a kubelet's of its
  // node's pods) sees only its own: the w objects go one to each of the watches.
  double pairs(double objectWeight) const;
};

struct Pending {
  kube::HttpRequest req;
  kube::ResponseHandler done;
  Route route;
  std::string labelsKey;
  std::size_t replica = 0;
  engine::TimePoint submitted{};
  engine::TimePoint due{};
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
  enum class Kind { kClient, kApiserver, kEtcd, kControllerManager };
  ModelTransport(ModelPlane::Impl* impl, Kind kind, std::size_t member, double weight, std::string server,
                 bool limited = false)
      : impl_(impl), kind_(kind), member_(member), weight_(weight), server_(std::move(server)), limited_(limited) {}
  ~ModelTransport() override;

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override;
  void cancel(kube::RequestId id) override;
  std::size_t poll(engine::Duration maxWait) override;
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
    double watches = 0;                           // the workloads' watches open on it (weighted)
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

  // ---- routing (plane_routing.cc) ----
  // The apiserver replica a request goes to: its member's, or the clients' next.
  std::size_t replicaFor(const ModelTransport& t);

  // ---- answering (plane_api.cc) ----
  void execute(ModelTransport& t, kube::RequestId id);
  kube::HttpResponse handle(ModelTransport& t, Pending& p, int& code);
  kube::HttpResponse handleResource(ModelTransport& t, Pending& p);
  kube::HttpResponse handleNonResource(ModelTransport& t, Pending& p);
  kube::HttpResponse handleEtcd(ModelTransport& t, const Pending& p);
  kube::HttpResponse discovery(const Route& r);

  // ---- watches (plane_watches.cc) ----
  void openWatch(ModelTransport& t, kube::RequestId id);
  std::string initialEventsEnd(const Table& table, const ModelWatch& w) const;
  // The watch cache's periodic bookmark (bookmarkFrequency, 1 min) to a watch that asked
  // for bookmarks, until 2 s before its deadline (the one endWatch sends then).
  void scheduleBookmark(ModelTransport& t, kube::RequestId id, ModelWatch& w, engine::TimePoint deadline);
  std::string bookmarkLine(ModelWatch& w) const;
  void endWatch(ModelTransport& t, kube::RequestId id, kube::HttpResponse resp, bool bookmark);
  void onChange(Table& table, const Change& c);
  double planeWatchersOf(const Table& table) const;
  void onRemoved(Table& table);
  // Sends one line; false when the consumer refused it (the watch is then closed).
  // Charges replica `replica` `cpu` core-seconds now.
  void chargeApiserver(std::size_t replica, double cpu);
  // `events`: the events it stands for (its watch's and its object's weights).
  bool send(ModelWatch& w, const std::string& line, double events);
  bool deliver(ModelWatch& w, const Change& c, std::string* lines, std::optional<nlohmann::json>* parsed = nullptr);
  void bury(std::unique_ptr<ModelWatch> w);
  void flushGraveyard();

  // ---- admission (plane_admission.cc) ----
  // From submit to a scheduled answer: refused while down, the max-in-flight filter,
  // the cost charged, the answer or the watch's opening scheduled at its latency.
  void admit(ModelTransport& t, kube::RequestId id);
  // An apiserver's admission of p: its labels, the filter, its cost. Its latency in
  // seconds; nullopt when the filter refused it (its 429 is on its way).
  std::optional<double> admitToApiserver(ModelTransport& t, kube::RequestId id, Pending& p);
  // The max-in-flight filter (ModelAdmission); false when it refused p.
  bool passesMaxInFlight(ModelTransport& t, kube::RequestId id, Pending& p, bool write);
  // The answer of p (or its watch's opening) at `latency` seconds, cut at the server's
  // and the client's timeouts.
  void scheduleAnswer(ModelTransport& t, kube::RequestId id, Pending& p, double latency);
  // Takes `w` seats of the kind on `replica`; false when its limit is reached.
  bool takeSeat(std::size_t replica, bool mutating, double w);
  void releaseSeat(std::size_t replica, bool mutating, double w);
  // What the filter answers: 429, Retry-After 1, its plain-text message.
  static kube::HttpResponse tooManyRequests();

  // ---- cost model (plane_costs.cc) ----
  enum class Class { kLeaseWrite, kWrite, kCustomWrite, kEventWrite, kRead };
  double cpuOf(Class c) const;
  // The class of a request with this route.
  Class classOf(const Route& r);
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

  // ---- background: the plane's own requests (plane_costs.cc) ----
  void startBackground();
  void background(std::size_t i);

  // ---- the node lifecycle controller (ModelNodeLifecycle; plane_node_lifecycle.cc) ----
  // Its tables and first pass, where the profile runs it.
  void startNodeLifecycle();
  struct NodeHealth {
    engine::TimePoint probe{};    // the pass that last saw the node heard from
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
  void setNodeTaints(const std::string& name, const nlohmann::json& taints, double weight);
  void recordControllerEvent(const nlohmann::json& involved, const std::string& ns, const char* component,
                             const char* type, const char* reason, const std::string& message, double weight);
  // One write of the plane's own controllers (the controller-manager's), sent to its
  // replica: charged as a write, committed when it is charged, counted in
  // apiserver_request_total. Returns its HTTP status; 0 when its replica or etcd was
  // down and it was not sent.
  int controllerWrite(Table& t, const std::string& verb, const std::string& ns, const std::string& name,
                      const std::string& sub, const std::string& body, double weight);
  // As controllerWrite, but the write lands when its modelled latency has passed, as a
  // controller's request is answered, and `answered` gets its status then (at once
  // with 0 when it was not sent, 429 when the filter refused it).
  void controllerWriteLater(Table& t, const std::string& verb, const std::string& ns, const std::string& name,
                            const std::string& body, double weight, std::function<void(int)> answered);
  // A controller write's admission (nullopt: not sent, `refused` 429 when the filter
  // refused it, else 0) and charge (its latency), then its commit and answer.
  std::optional<double> admitControllerWrite(Table& t, const std::string& key, double weight, int& refused);
  int commitControllerWrite(Table& t, const std::string& key, const std::string& verb, const std::string& ns,
                            const std::string& name, const std::string& sub, const std::string& body, double weight,
                            double latency);
  std::set<engine::EventId> controllerWrites_;  // controllerWriteLater's, in flight
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

  // ---- the EndpointSlice controller (ModelEndpointSlices; plane_endpoint_slices.cc) ----
  void startEndpointSlices();
  // A pod's endpoint as the controller reads it: where it is, what selects it.
  struct PodEndpoint {
    std::string ns, name, ip, node;
    std::shared_ptr<const LabelSet> labels;
    bool ready = false;        // serving and not terminating
    bool serving = false;      // its Ready condition
    bool terminating = false;  // it has a deletionTimestamp
    bool operator==(const PodEndpoint& o) const {
      return ns == o.ns && name == o.name && ip == o.ip && node == o.node && ready == o.ready && serving == o.serving &&
             terminating == o.terminating && (labels == o.labels || (labels && o.labels && *labels == *o.labels));
    }
  };
  struct EndpointSliceState {
    std::string name;
    std::map<std::string, PodEndpoint> endpoints;  // by pod name
    bool written = false;                          // created in the store
    bool dirty = false;                            // changed since the last write was sent
    bool inFlight = false;                         // a write sent, not yet answered
    // The body last sent and the one the store holds, hashed: a sync that finds the
    // object as it wants it writes nothing (the reconciler compares with its cache).
    std::size_t sentHash = 0, writtenHash = 0;
  };
  struct ServiceEndpoints {
    std::string ns, name, uid;
    std::vector<std::pair<std::string, std::string>> selector;  // spec.selector, every pair must match
    struct Port {
      std::string name, protocol;
      std::int64_t port = 0;  // the Service's targetPort (a number), else its port
    };
    std::vector<Port> ports;  // the slices' ports
    std::vector<EndpointSliceState> slices;
    std::map<std::string, std::size_t> sliceOfPod;  // pod name -> index in slices
    engine::EventId sync = 0;                       // its batch period, before it joins the slice queue
    engine::EventId endpointsSync = 0;              // and the endpoints controller's
    double weight = 1;
    // Its Endpoints object (the endpoints controller's, named as the Service): every
    // endpoint of every slice, as addresses and notReadyAddresses.
    EndpointSliceState endpoints;
    bool selects(const LabelSet& labels) const;
  };
  // The pod's endpoint, or nullopt for a pod that has none (no IP yet, or gone).
  static std::optional<PodEndpoint> endpointOf(const Change& c);
  static std::optional<PodEndpoint> endpointOf(const std::string& ns, const std::string& name,
                                               std::shared_ptr<const LabelSet> labels, const std::string& text);
  void serviceChanged(const Change& c, double weight);
  void podEndpointChanged(const Change& c);
  // Puts the pod's endpoint in (or takes it out of, with nullptr) the Service's slices.
  void placeEndpoint(ServiceEndpoints& svc, const std::string& pod, const PodEndpoint* ep);
  // A controller's workqueue, workers and client, as client-go's: a key is queued once;
  // one added while a worker has it is queued again when that worker is done; at most
  // `workers` keys are worked at once, each worker's requests one after the other, and
  // every request first waits for the client's token bucket (rate.Limiter's
  // reservation: the tokens may run below zero, and the wait is the time to earn them
  // back). A sampled request of weight w takes w tokens.
  struct ControllerQueue {
    std::deque<std::string> waiting;
    std::set<std::string> queued, active, again;
    std::size_t workers = 1;
    std::string name;  // workqueue_depth's label: upstream's name for the queue
    double adds = 0;   // workqueue_adds_total: adds not already waiting
    double qps = 0, burst = 0, tokens = 0;
    engine::TimePoint refilled{};
    bool pumping = false;
    std::function<void(const std::string&)> work;  // what a worker does with a key; calls workerDone
  };
  struct PendingWrite {
    Table* table = nullptr;
    std::string verb, ns, name, body;
    double weight = 1;
    std::function<void(int)> answered;  // its HTTP status, as controllerWriteLater gives it
  };
  static constexpr std::size_t kEndpointsObject = static_cast<std::size_t>(-1);
  // A controller's queue with its workers and a full bucket of the controller-manager's
  // client QPS and burst.
  void startQueue(ControllerQueue& q, std::string name, std::size_t workers,
                  std::function<void(const std::string&)> work);
  engine::Duration reserveToken(ControllerQueue& q, double n);
  void enqueue(ControllerQueue& q, const std::string& key);
  void workerDone(ControllerQueue& q, const std::string& key);
  void pump(ControllerQueue& q);  // hands keys waiting to free workers
  // Sends writes[next] once the client's bucket allows, and the rest after its answer;
  // the worker is done after the last.
  void sendQueued(ControllerQueue& q, const std::string& key, std::shared_ptr<std::vector<PendingWrite>> writes,
                  std::size_t next);
  ControllerQueue sliceQueue_, endpointsQueue_;

  void scheduleSliceSync(const std::string& serviceKey);
  // The Service into the slice (or, `endpoints`, the Endpoints) queue `after` from now,
  // unless it waits to already.
  void queueAfter(ServiceEndpoints& s, const std::string& serviceKey, bool endpoints, engine::Duration after);
  void syncSlices(const std::string& serviceKey);
  void syncEndpoints(const std::string& serviceKey);
  // True when the store holds `body` already (nothing to write); else the write is in
  // flight from here.
  static bool unchanged(EndpointSliceState& object, const std::string& body);
  // `slice` is the index of the slice written, or kEndpointsObject for the Endpoints.
  void sliceWritten(const std::string& serviceKey, std::size_t slice, int status);
  std::string endpointsBody(const ServiceEndpoints& svc) const;
  std::string sliceBody(const ServiceEndpoints& svc, const EndpointSliceState& slice) const;
  Table* services_ = nullptr;
  Table* endpointSlices_ = nullptr;
  Table* endpointPods_ = nullptr;
  Table* endpointsTable_ = nullptr;                           // the endpoints controller's, where the model has it
  std::map<std::string, ServiceEndpoints> serviceEndpoints_;  // by "ns/name"
  std::map<std::string, std::set<std::string>> servicesByNamespace_;  // ns -> "ns/name"
  std::map<std::string, PodEndpoint> podEndpoints_;                   // pods with an IP, by "ns/name"
  std::uint64_t slicesNamed_ = 0;

  // ---- exposition: the members' /metrics (plane_metrics.cc) ----
  double elapsed() const { return seconds(sched_.now() - start_); }
  // Replica i's heap: what every replica holds alike (the watch cache) and its own open
  // watches.
  double heapBytes(std::size_t i) const;
  double sharedHeapBytes() const;
  // sharedHeapBytes() at one instant: every replica's scrape of one round reads the same.
  mutable std::optional<std::pair<engine::TimePoint, std::uint64_t>> heapAt_;
  mutable double heap_ = 0;
  std::string apiserverText(std::size_t i) const;
  // The plane's own informers' bookmarks since the last scrape, counted in
  // apiserver_watch_events_total.
  void accruePlaneBookmarks();
  engine::TimePoint bookmarksAccrued_{};
  std::string etcdText(std::size_t i);
  // The controller-manager's /metrics: its workqueues (workqueue_depth,
  // workqueue_adds_total by name) and its leadership.
  std::string controllerManagerText() const;
  // A pod's DELETE of grace 0, once admitted: its deletionTimestamp is written then, the
  // deletion at the answer (ObjectStore::markDeleting).
  void markGracelessPodDelete(const Pending& p);
  kube::HttpResponse handleControllerManager(const Pending& p) const;

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
  engine::TimePoint start_{};
  ModelStats stats_;
  std::set<ModelTransport*> transports_;
  int fanout_ = 0;  // fan-outs on the stack: closed watches wait in the graveyard
  std::vector<std::unique_ptr<ModelWatch>> graveyard_;

  // ---- faults (ModelPlane::kill, restart, pause, resume; plane_faults.cc) ----
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

}  // namespace cpscale::model
