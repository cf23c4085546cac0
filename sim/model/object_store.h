// The model's object store: what etcd and the apiservers' watch caches hold, with
// kube-apiserver's semantics for the verbs the workloads use.
//
// - Objects are keyed by (group/resource, namespace, name), cluster-scoped ones with an
//   empty namespace, and kept as compact JSON text (the form they are served in) plus
//   the metadata selectors need (labels, uid hash). One global revision counter is every
//   object's resourceVersion, as etcd's revision is.
// - create: 409 AlreadyExists, generateName, uid and creationTimestamp, 404 when the
//   namespace does not exist. update (PUT): 409 Conflict when metadata.resourceVersion
//   is set and stale, 404 when the object does not exist. patch: JSON merge patch
//   (RFC 7386), JSON patch (RFC 6902) and strategic merge patch, the last approximated
//   as a merge patch that merges the lists kube-apiserver merges by key (conditions and
//   addresses by type, containers and their statuses by name, ...) and ignores the
//   $setElementOrder/$retainKeys directives. The `status` subresource writes only the
//   status of resources that have one (CRDs with subresources.status, nodes, pods,
//   namespaces...), and the main resource then keeps its status. A write that changes
//   nothing is answered without a new resourceVersion, event or etcd write, as the real
//   apiserver does. delete: preconditions (uid, resourceVersion), immediate (no grace
//   periods or finalizers: no kubelet or controller would act on them). A namespace's
//   deletion removes what it holds; a CRD's, its custom resources.
// - list: label, field and shard selectors, limit/continue (pages of the current state,
//   keyed after the last key served, as the apiserver's continue tokens), lists sorted
//   by namespace/name.
// - CRDs: creating one makes its resource servable at once and sets its status to
//   NamesAccepted and Established (acceptedNames = spec.names).
// - Every change is reported to a sink (the watch fan-out) and kept in a bounded
//   per-resource history that watches replay from a resourceVersion; older ones are
//   Expired (410).
// - Each object carries a weight: how many real objects it stands for (the weight of
//   the client that last wrote it). Weighted counts and JSON bytes per resource feed
//   the heap and etcd figures.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/intrusive/list.hpp>
#include <nlohmann/json_fwd.hpp>

#include "sim/engine/clock.h"
#include "sim/engine/random.h"
#include "sim/model/selectors.h"

namespace cpscale::model {

// Whether kube-apiserver keeps a watch cache for a resource: every one but Events,
// whose cache DefaultWatchCacheSizes disables (events: 0).
inline bool hasWatchCache(std::string_view group, std::string_view resource) {
  return !(resource == "events" && (group.empty() || group == "events.k8s.io"));
}

// A kind of object the store serves.
struct ResourceType {
  std::string group;                  // "" for the core group
  std::string version;                // the storage version, what objects are served as
  std::vector<std::string> versions;  // every served version
  std::string resource;               // plural
  std::string kind;
  bool namespaced = true;
  bool statusSubresource = false;
  bool custom = false;  // served for a CustomResourceDefinition

  // "coordination.k8s.io/leases", "/nodes": how --etcd-servers-overrides names it.
  std::string key() const { return group + "/" + resource; }
  // "leases.coordination.k8s.io", "nodes": how messages and apiserver_storage_objects do.
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }
  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  bool serves(std::string_view v) const;
  // Whether kube-apiserver keeps a watch cache for it: every resource but Events, whose
  // cache DefaultWatchCacheSizes disables (events: 0). An uncached resource's objects
  // and history stay in etcd alone: no ring, no heap of its own.
  bool watchCached() const { return hasWatchCache(group, resource); }
  // The field of kube-apiserver's trigger index on it (the registry's TriggerFunc):
  // "spec.nodeName" for pods, "metadata.name" for nodes; empty for any other resource.
  // The watch cache dispatches a change only to the watchers whose selector pins that
  // field to the change's value, and to every watcher that pins nothing.
  std::string_view triggerField() const;
};

enum class ChangeType { kAdded, kModified, kDeleted };
std::string_view toString(ChangeType t);  // "ADDED", "MODIFIED", "DELETED"

// One change of one object, as watches see it.
struct Change {
  std::uint64_t rv = 0;
  ChangeType type = ChangeType::kAdded;
  std::shared_ptr<const std::string> object;  // the object's JSON at rv
  std::string ns;
  std::string name;
  std::uint64_t uidHash = 0;
  // Shared with the object (a write that keeps the labels keeps the same set).
  std::shared_ptr<const LabelSet> labels;
  std::shared_ptr<const LabelSet> oldLabels;  // kModified: before (a selector may stop or start matching)
  engine::TimePoint at{};
  double weight = 1;      // the writer's sampling weight
  double cumulative = 0;  // the table's recorded weight up to and including this change
};

// A change's value of its resource's trigger field (ResourceType::triggerField), nullopt
// for a resource without one. `parsed` as Watcher::selects takes it.
std::optional<std::string> triggerValue(const ResourceType& type, const Change& c,
                                        std::optional<nlohmann::json>* parsed);

// One open watch on a resource, as the store sees it: its filters and how far it has
// been sent. The plane derives its stream from it. Unlinks itself when destroyed.
struct Watcher : boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
  virtual ~Watcher() = default;
  std::string ns;  // empty: every namespace
  LabelSelector labels;
  FieldSelector fields;
  std::optional<ShardRange> shard;
  std::uint64_t sentRv = 0;  // the highest revision already sent
  bool dead = false;         // closed during a fan-out; skipped until it is freed

  // Whether an object with these attributes is one this watch selects. `object` is
  // only parsed for a field selector beyond metadata.name/namespace.
  // `parsed`, when given, holds the object parsed by an earlier call for the same object,
  // so that one change is parsed once for all its watchers, not once per watcher.
  bool selects(std::string_view objNs, std::string_view name, const LabelSet& objLabels, std::uint64_t uidHash,
               const std::string& object, std::optional<nlohmann::json>* parsed = nullptr) const;
};
using WatcherList = boost::intrusive::list<Watcher, boost::intrusive::constant_time_size<false>>;

struct StoredObject {
  std::shared_ptr<const std::string> text;  // compact JSON with the current resourceVersion
  std::uint32_t rvPos = 0;                  // where the resourceVersion's digits are in text
  std::uint32_t rvLen = 0;
  std::uint64_t rv = 0;
  std::string uid;
  std::uint64_t uidHash = 0;
  std::string creationTimestamp;
  std::shared_ptr<const LabelSet> labels;
  double weight = 1;
};

struct Table {
  ResourceType type;
  bool served = true;                           // false once its CRD is gone
  std::map<std::string, StoredObject> objects;  // by "namespace/name"
  std::deque<Change> history;
  std::uint64_t compactedRv = 0;  // changes up to here are no longer in history
  double historyCapacity = 0;     // the watch cache's ring, in real events (historyMin when added)
  double recordedWeight = 0;      // every change's weight, summed
  WatcherList watchers;
  double weightedObjects = 0;
  double weightedBytes = 0;  // sum of weight x JSON bytes
  std::size_t index = 0;     // position in the store's table list
};

// The outcome of one store operation.
struct StoreResult {
  int status = 200;
  std::string body;
  // Revisions written (etcd proposals), weighted by the objects' weights; puts are the
  // creates and updates among them (deletes are not puts).
  double weightedWrites = 0;
  double weightedPuts = 0;
  std::size_t items = 0;  // objects listed, deleted or returned: the request's size
  std::string reason;     // the Status reason of a failure ("Conflict", "AlreadyExists", ...)
};

struct ListQuery {
  std::string labelSelector;
  std::string fieldSelector;
  std::string shardSelector;
  std::int64_t limit = 0;
  std::string continueToken;
};

// A kube-apiserver Status body: kind Status, apiVersion v1, status Failure, reason,
// message, details and code, as ApiClient decodes them.
std::string statusBody(int code, std::string_view reason, std::string_view message, const ResourceType* type = nullptr,
                       std::string_view name = {});

// Strategic merge patch, approximated (see the top of this file); exposed for tests.
void strategicMergePatch(nlohmann::json& target, const nlohmann::json& patch);

struct StoreOptions {
  // Changes kept per resource for watches to replay, as kube-apiserver's watch cache
  // keeps them (watch_cache.go: updateCache, resizeCacheLocked): a ring whose capacity
  // starts at `historyMin` events, doubles when it is full and its oldest event is
  // younger than `historyWindow` (eventFreshDuration), and halves when it is full and
  // its newest quarter began longer ago, within [historyMin, historyMax]. A change of
  // weight w fills w slots.
  std::size_t historyMin = 100;                               // defaultLowerBoundCapacity
  engine::Duration historyWindow = std::chrono::seconds(75);  // eventFreshDuration
  std::size_t historyMax = 100 * 1024;                        // defaultUpperBoundCapacity
  std::uint64_t seed = 1;                                     // uids and generated names
};

class ObjectStore {
 public:
  using ChangeSink = std::function<void(Table&, const Change&)>;
  // A resource stopped being served (its CRD was deleted): its watches should end.
  using TableSink = std::function<void(Table&)>;

  explicit ObjectStore(StoreOptions options = {});
  // The built-in resources a vanilla kube-apiserver serves and the namespaces it
  // creates (default, kube-system, kube-public, kube-node-lease).
  void bootstrap();

  void setChangeSink(ChangeSink sink) { onChange_ = std::move(sink); }
  void setRemovedSink(TableSink sink) { onRemoved_ = std::move(sink); }
  // The time operations run at: creation timestamps are unixEpochNanos + now.
  void setNow(engine::TimePoint now, std::int64_t unixEpochNanos) {
    now_ = now;
    epoch_ = unixEpochNanos;
  }

  // The table serving group/version/resource, or null (unknown, or not that version).
  Table* find(std::string_view group, std::string_view version, std::string_view resource);
  Table* findByKey(std::string_view group, std::string_view resource);
  Table& addType(ResourceType type);
  const std::vector<std::unique_ptr<Table>>& tables() const { return tables_; }
  std::uint64_t revision() const { return revision_; }
  std::size_t objects() const;
  bool namespaceExists(std::string_view ns) const;

  StoreResult create(Table& t, const std::string& ns, std::string_view body, double weight, bool dryRun = false);
  StoreResult get(Table& t, const std::string& ns, const std::string& name, std::string_view subresource = {});
  StoreResult update(Table& t, const std::string& ns, const std::string& name, std::string_view subresource,
                     std::string_view body, double weight, bool dryRun = false);
  enum class PatchKind { kMerge, kStrategic, kJson };
  StoreResult patch(Table& t, const std::string& ns, const std::string& name, std::string_view subresource,
                    PatchKind kind, std::string_view body, double weight, bool dryRun = false);
  // `body` may hold DeleteOptions (preconditions, dryRun).
  // A pod's delete with gracePeriodSeconds 0 is a graceful deletion of period 0 upstream
  // (podStrategy.CheckGracefulDelete): a pod bound to a node and not yet terminal is
  // written with its deletionTimestamp first (watchers see it terminating, as the
  // EndpointSlice controller does), then deleted.
  StoreResult remove(Table& t, const std::string& ns, const std::string& name, std::string_view body);
  // That first write alone (200 with no writes when there is nothing to mark).
  StoreResult markDeleting(Table& t, const std::string& ns, const std::string& name);
  StoreResult list(Table& t, const std::string& ns, const ListQuery& q);
  StoreResult removeCollection(Table& t, const std::string& ns, const ListQuery& q, std::string_view body);
  // The time operations run at (setNow), as metadata timestamps write it: RFC 3339 to
  // the second.
  std::string timestamp() const;

  // For watches: the changes after `rv` in t's history (in order), or nullopt when
  // some of them are no longer kept (410 Expired).
  std::optional<std::vector<const Change*>> changesSince(const Table& t, std::uint64_t rv) const;
  // The body of a list item of each object of t in `ns` that `w` selects, for a watch's
  // initial ADDED events; in key order.
  std::vector<const StoredObject*> selected(const Table& t, const Watcher& w) const;

 private:
  // A new state of an object as text with the resourceVersion placeholder at rvPos.
  struct Prepared {
    std::string text;
    std::size_t rvPos = 0;
    std::string ns, name, uid, creationTimestamp;
    LabelSet labels;
  };
  StoreResult commit(Table& t, const std::string& key, nlohmann::json& obj, StoredObject* old, double weight,
                     bool dryRun);
  StoreResult commitText(Table& t, const std::string& key, Prepared next, StoredObject* old, double weight,
                         bool dryRun);
  // PUT without parsing the object: the body's metadata is rewritten in its text. Only
  // for the plain case (no status subresource, an existing object, a matching or no
  // resourceVersion); nullopt sends the request down the general path.
  // PATCH (merge or strategic) by splicing the merged parts into the object's text:
  // only the subtrees the patch touches are parsed. nullopt: the general path.
  std::optional<StoreResult> fastPatch(Table& t, const std::string& ns, const std::string& name,
                                       std::string_view subresource, bool strategic, const nlohmann::json& patch,
                                       double weight, bool dryRun);
  std::optional<StoreResult> fastUpdate(Table& t, const std::string& ns, const std::string& name, std::string_view body,
                                        double weight, bool dryRun);
  StoreResult erase(Table& t, std::map<std::string, StoredObject>::iterator it);
  StoreResult writeExisting(Table& t, const std::string& ns, const std::string& name, std::string_view subresource,
                            nlohmann::json next, bool unconditional, double weight, bool dryRun);
  void record(Table& t, Change c);
  void onCrdWritten(const nlohmann::json& crd);
  void onCrdDeleted(const std::string& name);
  void removeNamespaceContents(const std::string& ns);
  std::string newUid();

  StoreOptions options_;
  std::vector<std::unique_ptr<Table>> tables_;
  std::map<std::string, Table*, std::less<>> byKey_;  // "group/resource"
  std::uint64_t revision_ = 1;
  ChangeSink onChange_;
  TableSink onRemoved_;
  engine::RandomStream rng_;
  engine::TimePoint now_{};
  std::int64_t epoch_ = 0;
  Table* namespaces_ = nullptr;
  Table* crds_ = nullptr;
};

}  // namespace cpscale::model
