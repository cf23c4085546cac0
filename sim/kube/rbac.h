// Kubernetes RBAC as the apiserver evaluates it, for the roles cpscale writes: a
// request's authorization attributes (k8s.io/apiserver's RequestInfo) and whether a
// set of PolicyRules allows them (rbac/v1 evaluation_helpers.go). Used to check that a
// role grants exactly what the workloads send.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
