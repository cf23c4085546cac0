#include "workloads/cleanup.h"

#include <algorithm>
#include <set>

#include "workloads/params.h"

namespace cpscale::workloads {

namespace {

using kube::ApiResult;
using kube::GroupVersionResource;
using kube::ResourceRef;
using nlohmann::json;

std::string key(const GroupVersionResource& g) { return g.group.empty() ? g.resource : g.resource + "." + g.group; }

struct Object {
  std::string ns;
  std::string name;
};

// Every object of `g` with the label, across namespaces; nullopt when the resource is
// not served (e.g. its CRD is already gone).
std::optional<std::vector<Object>> listLabelled(kube::ApiClient& api, const GroupVersionResource& g,
                                                const std::string& selector, CleanupResult& out) {
  std::vector<Object> objs;
  kube::ListOptions o;
  o.labelSelector = selector;
  o.limit = 500;
  for (;;) {
    ApiResult r = api.list(ResourceRef(g), o);
    if (r.notFound()) return std::nullopt;
    if (!r.ok()) {
      out.errors.push_back(r.describe());
      return std::nullopt;
    }
    for (const auto& item : r.body.value("items", json::array())) {
      objs.push_back({item.value("/metadata/namespace"_json_pointer, std::string()),
                      item.value("/metadata/name"_json_pointer, std::string())});
    }
    o.continueToken = r.body.value("/metadata/continue"_json_pointer, std::string());
    if (o.continueToken.empty()) return objs;
  }
}

void deleteEach(kube::ApiClient& api, const GroupVersionResource& g, const std::vector<Object>& objs,
                const kube::DeleteOptions& d, CleanupResult& out) {
  for (const auto& o : objs) {
    ResourceRef ref = g.namespaced ? ResourceRef(g).in(o.ns).named(o.name) : ResourceRef(g).named(o.name);
    ApiResult r = api.remove(ref, d);
    if (!r.ok() && !r.notFound()) out.errors.push_back(r.describe());
  }
}

// deletecollection per namespace (one request each, where the server does the work),
// falling back to one DELETE per object where the resource does not support it.
void deleteLabelled(kube::ApiClient& api, const GroupVersionResource& g, const std::string& selector,
                    CleanupResult& out) {
  auto objs = listLabelled(api, g, selector, out);
  if (!objs || objs->empty()) return;
  kube::DeleteOptions d;
  // Pods are bound to synthetic nodes: no kubelet will confirm a graceful deletion.
  if (g == kube::gvr::kPods) d.gracePeriodSeconds = 0;
  kube::ListOptions sel;
  sel.labelSelector = selector;
  std::set<std::string> namespaces;
  for (const auto& o : *objs) namespaces.insert(o.ns);
  for (const auto& ns : namespaces) {
    ResourceRef coll = g.namespaced ? ResourceRef(g).in(ns) : ResourceRef(g);
    ApiResult r = api.deleteCollection(coll, sel, d);
    if (r.ok() || r.notFound()) continue;
    if (r.status == 405 || r.status == 403) {
      std::vector<Object> inNs;
      for (const auto& o : *objs) {
        if (o.ns == ns) inNs.push_back(o);
      }
      deleteEach(api, g, inNs, d, out);
    } else {
      out.errors.push_back(r.describe());
    }
  }
  out.deleted[key(g)] += static_cast<std::int64_t>(objs->size());
}

// A namespace stays Terminating until a namespace controller removes its "kubernetes"
// finalizer. Where none runs (a bare kube-apiserver), and the run's objects in it are
// gone, finalize it the way the controller would.
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

std::int64_t CleanupResult::totalDeleted() const {
  std::int64_t n = 0;
  for (const auto& [k, v] : deleted) n += v;
  return n;
}

std::vector<GroupVersionResource> builtinRunResources() {
  namespace g = kube::gvr;
  // Pods before nodes, bindings before roles: dependants first.
  return {g::kPods,   g::kLeases,         g::kNodes,        g::kEvents,       g::kConfigMaps,
          g::kSecrets, g::kRoleBindings,  g::kRoles,        g::kClusterRoleBindings, g::kClusterRoles,
          g::kServiceAccounts};
}

CleanupResult cleanupRun(kube::ApiClient& api, engine::Clock& clock, const std::string& runId,
                         const std::vector<GroupVersionResource>& resources, const CleanupOptions& options) {
  validateRunId(runId);
  CleanupResult out;
  const std::string selector = runSelector(runId);

  // The CRDs this run installed, and their custom resources.
  std::vector<GroupVersionResource> all = builtinRunResources();
  for (const auto& g : resources) {
    if (std::find(all.begin(), all.end(), g) == all.end()) all.push_back(g);
  }
  std::vector<std::string> crds;
  {
    kube::ListOptions o;
    o.labelSelector = selector;
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

  for (const auto& g : all) deleteLabelled(api, g, selector, out);

  std::vector<Object> namespaces;
  if (auto ns = listLabelled(api, kube::gvr::kNamespaces, selector, out)) namespaces = *ns;
  deleteEach(api, kube::gvr::kNamespaces, namespaces, {}, out);
  if (!namespaces.empty()) out.deleted["namespaces"] += static_cast<std::int64_t>(namespaces.size());
  for (const auto& name : crds) {
    ApiResult r = api.remove(ResourceRef(kube::gvr::kCustomResourceDefinitions).named(name));
    if (!r.ok() && !r.notFound()) out.errors.push_back(r.describe());
  }
  if (!crds.empty()) out.deleted["customresourcedefinitions"] += static_cast<std::int64_t>(crds.size());

  // Wait until nothing with the label is left.
  const engine::TimePoint started = clock.now();
  const engine::TimePoint deadline = started + options.timeout;
  bool finalized = false;
  for (;;) {
    CleanupResult probe;
    std::map<std::string, std::int64_t> remaining;
    for (const auto& g : all) {
      auto objs = listLabelled(api, g, selector, probe);
      if (objs && !objs->empty()) remaining[key(g)] = static_cast<std::int64_t>(objs->size());
    }
    auto ns = listLabelled(api, kube::gvr::kNamespaces, selector, probe);
    if (ns && !ns->empty()) remaining["namespaces"] = static_cast<std::int64_t>(ns->size());
    auto left = listLabelled(api, kube::gvr::kCustomResourceDefinitions, selector, probe);
    if (left && !left->empty()) remaining["customresourcedefinitions"] = static_cast<std::int64_t>(left->size());
    if (remaining.empty() || clock.now() >= deadline) {
      out.remaining = std::move(remaining);
      break;
    }
    // Only namespaces left, and no controller has touched them for a few seconds.
    if (!finalized && ns && remaining.size() == 1 && remaining.count("namespaces") &&
        clock.now() - started >= std::chrono::seconds(3)) {
      for (const auto& o : *ns) finalizeIfOrphaned(api, o.name);
      finalized = true;
    }
    clock.sleepFor(options.pollInterval);
  }
  return out;
}

}  // namespace cpscale::workloads
