// Naming any API object, built-in or custom, and turning the name plus options into
// the request path kube-apiserver expects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cpscale::kube {

// Which kind of object: the REST resource (plural, lower-case), not the Kind.
struct GroupVersionResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;
  bool namespaced = true;

  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
};

// The built-in resources cpscale's workloads touch; custom resources are built the
// same way: GroupVersionResource{"example.com", "v1", "widgets", true}.
namespace gvr {
inline const GroupVersionResource kNamespaces{"", "v1", "namespaces", false};
inline const GroupVersionResource kNodes{"", "v1", "nodes", false};
inline const GroupVersionResource kPods{"", "v1", "pods", true};
inline const GroupVersionResource kConfigMaps{"", "v1", "configmaps", true};
inline const GroupVersionResource kSecrets{"", "v1", "secrets", true};
inline const GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts", true};
inline const GroupVersionResource kEvents{"", "v1", "events", true};
inline const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const GroupVersionResource kServices{"", "v1", "services", true};
inline const GroupVersionResource kEndpointSlices{"discovery.k8s.io", "v1", "endpointslices", true};
inline const GroupVersionResource kServiceCIDRs{"networking.k8s.io", "v1", "servicecidrs", false};
inline const GroupVersionResource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                                             false};
inline const GroupVersionResource kRoles{"rbac.authorization.k8s.io", "v1", "roles", true};
inline const GroupVersionResource kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings", true};
inline const GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles", false};
inline const GroupVersionResource kClusterRoleBindings{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", false};
}  // namespace gvr

// One object (name set) or a collection (name empty), optionally a subresource of it.
// Built fluently: ResourceRef(gvr::kLeases).in("kube-node-lease").named("node-1").
struct ResourceRef {
  GroupVersionResource gvr;
  std::string ns;  // empty: all namespaces (collections) or a cluster-scoped object
  std::string name;
  std::string subresource;  // "status", "scale", ...

  ResourceRef() = default;
  explicit ResourceRef(GroupVersionResource g) : gvr(std::move(g)) {}
  ResourceRef in(std::string n) const& {
    ResourceRef r = *this;
    r.ns = std::move(n);
    return r;
  }
  ResourceRef named(std::string n) const& {
    ResourceRef r = *this;
    r.name = std::move(n);
    return r;
  }
  ResourceRef sub(std::string s) const& {
    ResourceRef r = *this;
    r.subresource = std::move(s);
    return r;
  }
  // The collection this object belongs to (what a create is POSTed to).
  ResourceRef collection() const& {
    ResourceRef r = *this;
    r.name.clear();
    r.subresource.clear();
    return r;
  }

  // For statistics: "leases", "nodes/status".
  std::string statsName() const { return subresource.empty() ? gvr.resource : gvr.resource + "/" + subresource; }
};

// Query parameters for reads, lists and watches. Unset fields are not sent.
struct ListOptions {
  std::string labelSelector{};
  std::string fieldSelector{};
  std::string resourceVersion{};
  std::string resourceVersionMatch{};  // "NotOlderThan", "Exact"
  std::int64_t limit = 0;
  std::string continueToken{};
  std::optional<std::int64_t> timeoutSeconds{};
  bool allowWatchBookmarks = false;
  // Anything else, sent as given (e.g. KEP-5866 "shardSelector").
  std::vector<std::pair<std::string, std::string>> extra{};
  // Not sent: a watch that is one actor's own (a node's), HttpRequest::perActor.
  bool perActor = false;
};

// Query parameters for writes.
struct WriteOptions {
  std::string fieldManager{};
  bool dryRun = false;  // sent as dryRun=All
};

using QueryParams = std::vector<std::pair<std::string, std::string>>;

QueryParams toQuery(const ListOptions& o, bool watch);
QueryParams toQuery(const WriteOptions& o);

// "/api/v1/namespaces/ns/pods/name/status", "/apis/coordination.k8s.io/v1/leases".
// Throws std::invalid_argument for a reference that names no valid path (empty
// version or resource, a namespaced object name without a namespace, a namespace on a
// cluster-scoped resource, a subresource without a name).
std::string resourcePath(const ResourceRef& ref);
// resourcePath plus "?k=v&..." with keys and values percent-encoded.
std::string requestPath(const ResourceRef& ref, const QueryParams& query);

// RFC 3986 percent-encoding. For a path segment, sub-delimiters that Go's
// url.PathEscape keeps (":@$&+=") stay; in a query component everything but the
// unreserved characters is encoded.
std::string percentEncodePathSegment(std::string_view s);
std::string percentEncodeQuery(std::string_view s);

}  // namespace cpscale::kube
