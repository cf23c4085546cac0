// Kubernetes RBAC as the apiserver evaluates it, for the roles cpscale writes: a
// request's authorization attributes (k8s.io/apiserver's RequestInfo) and whether a
// set of PolicyRules allows them (rbac/v1 evaluation_helpers.go). Used to check that a
// role grants exactly what the workloads send.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/kube/resource.h"

namespace cpscale::kube {

// rbac.authorization.k8s.io/v1 PolicyRule. Either resource rules (apiGroups,
// resources, verbs, optional resourceNames) or nonResourceURLs with verbs.
struct PolicyRule {
  std::vector<std::string> apiGroups{};
  std::vector<std::string> resources{};  // "pods", "pods/status", "*"
  std::vector<std::string> verbs{};
  std::vector<std::string> resourceNames{};
  std::vector<std::string> nonResourceURLs{};  // "/metrics", "/debug/*"
};
nlohmann::json toJson(const PolicyRule& rule);
nlohmann::json toJson(const std::vector<PolicyRule>& rules);

// The RBAC API group (Roles, ClusterRoles and their bindings).
inline const std::string kRbacGroup = "rbac.authorization.k8s.io";

// Grants collected by (group, resource, resourceNames), then written as one rule per
// group, verb set and names: the role reads as a table. Each workload kind adds what
// its actors send (workloads/kind.h); a run adds its setup, cleanup and scrapes.
class RuleSet {
 public:
  void add(const std::string& group, const std::string& resource, std::initializer_list<const char*> verbs,
           std::vector<std::string> names = {});
  // `subresource` ("status") grants resource/subresource.
  void add(const GroupVersionResource& g, std::initializer_list<const char*> verbs,
           const std::string& subresource = "");
  // A name's grant leaves out the verbs the resource's unnamed grant already gives.
  std::vector<PolicyRule> rules() const;

 private:
  std::map<std::tuple<std::string, std::string, std::vector<std::string>>, std::set<std::string>> grants_;
};

// What the authorizer is asked about one request.
struct RequestAttributes {
  bool resourceRequest = false;
  // get list watch create update patch delete deletecollection; for a non-resource
  // request the lower-case HTTP method (get, post, ...).
  std::string verb;
  std::string apiGroup;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  std::string path;  // without the query
};
// From the method and the request path (with its query, which decides list vs watch),
// as kube-apiserver's RequestInfoFactory derives them for /api and /apis.
RequestAttributes requestAttributes(const std::string& method, const std::string& pathAndQuery);

// True when one of `rules` grants `a`.
bool allows(const std::vector<PolicyRule>& rules, const RequestAttributes& a);
// True when one of `rules` grants `verb` on `group`/`resource` (with `name`, when the
// rule names its objects): for verbs no request carries (escalate, bind).
bool allows(const std::vector<PolicyRule>& rules, const std::string& verb, const std::string& group,
            const std::string& resource, const std::string& name = "");

// "verb group/resource/subresource ns/name" for messages.
std::string describe(const RequestAttributes& a);

}  // namespace cpscale::kube
