#include "workloads/cleanup.h"

#include <algorithm>
#include <set>

#include "sim/common/duration.h"
#include "workloads/params.h"

namespace cpscale::workloads {

namespace {

using kube::ApiResult;
using kube::GroupVersionResource;
using kube::ResourceRef;
using nlohmann::json;

// The result's key for a resource; CRDs are "customresourcedefinitions", as documented.
std::string key(const GroupVersionResource& g) {
  if (g == kube::gvr::kCustomResourceDefinitions || g.group.empty()) return g.resource;
  return g.resource + "." + g.group;
}

struct Object {
  std::string ns;
  std::string name;
};

// One listing of a resource's labelled objects.
struct Listing {
  bool failed = false;          // the list request failed (the error is recorded)
  std::vector<Object> objects;  // empty too when the resource is not served (its CRD is gone)
};

// The state of one cleanup: its deadline, and what it learnt about what is left.
struct Pass {
  kube::ApiClient& api;
  engine::Clock& clock;
  engine::TimePoint deadline;
  std::string selector;
  CleanupResult& out;
  // Listed objects not deleted (refused, failed, or no time left), by resource: what
  // remains if the deadline leaves no time to look again.
  std::map<std::string, std::int64_t> leftBehind;
  // Resources not even listed before the deadline.
  std::vector<std::string> notReached;

  bool expired() const { return clock.now() >= deadline; }
  void count(std::map<std::string, std::int64_t>& m, const std::string& k, std::int64_t n) {
    if (n > 0) m[k] += n;
  }
};

Listing listLabelled(Pass& p, const GroupVersionResource& g, std::vector<std::string>& errors) {
  Listing l;
  kube::ListOptions o;
  o.labelSelector = p.selector;
  o.limit = 500;
  for (;;) {
    ApiResult r = p.api.list(ResourceRef(g), o);
    if (r.notFound()) return {};
    if (!r.ok()) {
      errors.push_back(r.describe());
      l.failed = true;
      return l;
    }
    for (const auto& item : r.body.value("items", json::array())) {
      l.objects.push_back({item.value("/metadata/namespace"_json_pointer, std::string()),
                           item.value("/metadata/name"_json_pointer, std::string())});
    }
    o.continueToken = r.body.value("/metadata/continue"_json_pointer, std::string());
    if (o.continueToken.empty()) return l;
  }
}

// One DELETE per object, while there is time. Counts only what the server accepted;
// the rest is left behind (a 404 is gone already: neither).
void deleteEach(Pass& p, const GroupVersionResource& g, const std::vector<Object>& objs, const kube::DeleteOptions& d) {
  std::int64_t deleted = 0, gone = 0;
  for (const auto& o : objs) {
    if (p.expired()) break;
    ResourceRef ref = g.namespaced ? ResourceRef(g).in(o.ns).named(o.name) : ResourceRef(g).named(o.name);
    ApiResult r = p.api.remove(ref, d);
    if (r.ok())
      ++deleted;
    else if (r.notFound())
      ++gone;
    else
      p.out.errors.push_back(r.describe());
  }
  p.count(p.out.deleted, key(g), deleted);
  p.count(p.leftBehind, key(g), static_cast<std::int64_t>(objs.size()) - deleted - gone);
}

// deletecollection per namespace (one request each, where the server does the work),
// falling back to one DELETE per object where the resource does not support it.
void deleteLabelled(Pass& p, const GroupVersionResource& g) {
  if (p.expired()) {
    p.notReached.push_back(key(g));
    return;
  }
  Listing l = listLabelled(p, g, p.out.errors);
  if (l.failed || l.objects.empty()) return;
  kube::DeleteOptions d;
  // Pods are bound to synthetic nodes: no kubelet will confirm a graceful deletion.
  if (g == kube::gvr::kPods) d.gracePeriodSeconds = 0;
  kube::ListOptions sel;
  sel.labelSelector = p.selector;
  std::map<std::string, std::vector<Object>> byNamespace;
  for (const auto& o : l.objects) byNamespace[o.ns].push_back(o);
  for (const auto& [ns, inNs] : byNamespace) {
    const auto n = static_cast<std::int64_t>(inNs.size());
    if (p.expired()) {
      p.count(p.leftBehind, key(g), n);
      continue;
    }
    ResourceRef coll = g.namespaced ? ResourceRef(g).in(ns) : ResourceRef(g);
    ApiResult r = p.api.deleteCollection(coll, sel, d);
    if (r.ok()) {
      p.count(p.out.deleted, key(g), n);
    } else if (r.notFound()) {
      continue;  // the resource (or namespace) is gone, and its objects with it
    } else if (r.status == 405 || r.status == 403) {
      deleteEach(p, g, inNs, d);
    } else {
      p.out.errors.push_back(r.describe());
      p.count(p.leftBehind, key(g), n);
    }
  }
}

// A namespace stays Terminating until a namespace controller removes its "kubernetes"
// finalizer. Where none runs (a bare kube-apiserver), and the run's objects in it are
// gone, finalize it the way the controller would. Never where a controller-manager
// runs: the namespace controller is the one that deletes what else the namespace holds.
void finalizeIfOrphaned(kube::ApiClient& api, const std::string& name) {
  ApiResult g = api.get(ResourceRef(kube::gvr::kNamespaces).named(name));
  if (!g.ok()) return;
  // The controller records its progress as conditions: leave namespaces it handles.
  if (!g.body.value("/status/conditions"_json_pointer, json::array()).empty()) return;
  json ns = g.body;
  ns["spec"]["finalizers"] = json::array();
  api.update(ResourceRef(kube::gvr::kNamespaces).named(name).sub("finalize"), ns);
}

}  // namespace

bool controllerManagerRuns(kube::ApiClient& api) {
  // Its leader-election Lease, renewed within its duration (as a wall-clock
  // comparison: the Lease holds Unix time).
  ApiResult r = api.get(ResourceRef(kube::gvr::kLeases).in("kube-system").named("kube-controller-manager"));
  if (!r.ok()) return false;
  std::string renew = r.body.value("/spec/renewTime"_json_pointer, std::string());
  const auto duration = r.body.value("/spec/leaseDurationSeconds"_json_pointer, 0);
  auto renewed = parseRfc3339(renew);
  if (!renewed || duration <= 0) return false;
  const auto age = std::chrono::system_clock::now() - *renewed;
  return age < std::chrono::seconds(duration) * 2;
}

std::int64_t CleanupResult::totalDeleted() const {
  std::int64_t n = 0;
  for (const auto& [k, v] : deleted) n += v;
  return n;
}

std::vector<GroupVersionResource> builtinRunResources() {
  namespace g = kube::gvr;
  // Pods before nodes, bindings before roles: dependants first.
  return {g::kPods,         g::kLeases,         g::kNodes,
          g::kEvents,       g::kConfigMaps,     g::kSecrets,
          g::kRoleBindings, g::kRoles,          g::kClusterRoleBindings,
          g::kClusterRoles, g::kServiceAccounts};
}

CleanupResult cleanupRun(kube::ApiClient& api, engine::Clock& clock, const std::string& runId,
                         const std::vector<GroupVersionResource>& resources, const CleanupOptions& options) {
  validateRunId(runId);
  CleanupResult out;
  Pass p{api, clock, clock.now() + options.timeout, runSelector(runId), out, {}, {}};

  // The CRDs this run installed, and their custom resources.
  std::vector<GroupVersionResource> all = builtinRunResources();
  for (const auto& g : resources) {
    if (std::find(all.begin(), all.end(), g) == all.end()) all.push_back(g);
  }
  std::vector<std::string> crds;
  {
    kube::ListOptions o;
    o.labelSelector = p.selector;
    ApiResult r = api.list(ResourceRef(kube::gvr::kCustomResourceDefinitions), o);
    if (!r.ok()) out.errors.push_back(r.describe());
    for (const auto& crd : r.ok() ? r.body.value("items", json::array()) : json::array()) {
      crds.push_back(crd.value("/metadata/name"_json_pointer, std::string()));
      GroupVersionResource g;
      g.group = crd.value("/spec/group"_json_pointer, std::string());
      g.resource = crd.value("/spec/names/plural"_json_pointer, std::string());
      g.namespaced = crd.value("/spec/scope"_json_pointer, std::string()) == "Namespaced";
      for (const auto& v : crd.value("/spec/versions"_json_pointer, json::array())) {
        if (v.value("storage", false)) g.version = v.value("name", "");
      }
      if (!g.version.empty() && std::find(all.begin(), all.end(), g) == all.end()) all.push_back(g);
    }
  }

  for (const auto& g : all) deleteLabelled(p, g);

  if (p.expired()) {
    p.notReached.push_back("namespaces");
  } else {
    Listing ns = listLabelled(p, kube::gvr::kNamespaces, out.errors);
    deleteEach(p, kube::gvr::kNamespaces, ns.objects, {});
  }
  {
    std::vector<Object> crdObjects;
    for (const auto& name : crds) crdObjects.push_back({"", name});
    deleteEach(p, kube::gvr::kCustomResourceDefinitions, crdObjects, {});
  }

  if (p.expired()) {
    const std::string limit = formatDuration(std::chrono::duration_cast<std::chrono::seconds>(options.timeout));
    // No time left to look again: what was listed and not deleted remains, and what
    // was never listed is named.
    out.remaining = p.leftBehind;
    std::string unlisted;
    for (const auto& k : p.notReached) unlisted += (unlisted.empty() ? "" : ", ") + k;
    out.errors.push_back("cleanup deadline (" + limit + ") reached while deleting" +
                         (unlisted.empty() ? std::string() : "; not looked at: " + unlisted));
    return out;
  }

  // Wait until nothing with the label is left, or the deadline.
  const engine::TimePoint waitStarted = clock.now();
  bool finalized = false;
  for (;;) {
    // One round of lists; a failed one ends the wait: it tells nothing about what is
    // left, and the client has already retried what was worth retrying.
    std::vector<std::string> probeErrors;
    std::map<std::string, std::int64_t> remaining;
    std::vector<Object> namespacesLeft;
    auto probe = [&](const GroupVersionResource& g) {
      if (!probeErrors.empty()) return;
      Listing l = listLabelled(p, g, probeErrors);
      p.count(remaining, key(g), static_cast<std::int64_t>(l.objects.size()));
      if (g == kube::gvr::kNamespaces) namespacesLeft = l.objects;
    };
    for (const auto& g : all) probe(g);
    probe(kube::gvr::kNamespaces);
    probe(kube::gvr::kCustomResourceDefinitions);
    if (!probeErrors.empty()) {
      for (const auto& e : probeErrors) out.errors.push_back("checking what is left: " + e);
      out.remaining = std::move(remaining);
      break;
    }
    // Done when nothing is left, at the deadline, or when all that is left is what
    // the server refused to delete: waiting will not make that go away.
    bool onlyRefused = std::all_of(remaining.begin(), remaining.end(), [&](const auto& kv) {
      auto it = p.leftBehind.find(kv.first);
      return it != p.leftBehind.end() && kv.second <= it->second;
    });
    if (remaining.empty() || onlyRefused || p.expired()) {
      out.remaining = std::move(remaining);
      break;
    }
    // Only namespaces left, no controller has touched them for a few seconds, and no
    // controller-manager runs that would.
    if (!finalized && remaining.size() == 1 && remaining.count("namespaces") &&
        clock.now() - waitStarted >= std::chrono::seconds(3)) {
      finalized = true;
      if (!controllerManagerRuns(api))
        for (const auto& o : namespacesLeft) finalizeIfOrphaned(api, o.name);
    }
    // The last look is at the deadline itself.
    clock.sleepUntil(std::min(clock.now() + options.pollInterval, p.deadline));
  }
  return out;
}

}  // namespace cpscale::workloads
