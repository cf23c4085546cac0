#include "sim/kube/rbac.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <nlohmann/json.hpp>

namespace cpscale::kube {
namespace {

bool has(const std::vector<std::string>& list, const std::string& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    if (end > at) parts.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

// The value of `key` in a query string, if it is there (the keys and values this
// reads need no percent-decoding).
std::optional<std::string> queryValue(const std::string& query, const std::string& key) {
  std::size_t at = 0;
  while (at < query.size()) {
    std::size_t end = query.find('&', at);
    if (end == std::string::npos) end = query.size();
    const std::string pair = query.substr(at, end - at);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) return eq == std::string::npos ? "" : pair.substr(eq + 1);
    at = end + 1;
  }
  return std::nullopt;
}

bool resourceMatches(const PolicyRule& rule, const std::string& combined, const std::string& subresource) {
  for (const auto& r : rule.resources) {
    if (r == "*" || r == combined) return true;
    if (!subresource.empty() && r == "*/" + subresource) return true;
  }
  return false;
}

bool ruleAllows(const PolicyRule& rule, const std::string& verb, const std::string& group, const std::string& resource,
                const std::string& subresource, const std::string& name) {
  if (!rule.nonResourceURLs.empty() && rule.resources.empty()) return false;
  if (!has(rule.verbs, "*") && !has(rule.verbs, verb)) return false;
  if (!has(rule.apiGroups, "*") && !has(rule.apiGroups, group)) return false;
  const std::string combined = subresource.empty() ? resource : resource + "/" + subresource;
  if (!resourceMatches(rule, combined, subresource)) return false;
  return rule.resourceNames.empty() || has(rule.resourceNames, name);
}

bool urlAllows(const PolicyRule& rule, const std::string& verb, const std::string& path) {
  if (!has(rule.verbs, "*") && !has(rule.verbs, verb)) return false;
  for (const auto& u : rule.nonResourceURLs) {
    if (u == "*" || u == path) return true;
    if (!u.empty() && u.back() == '*' && path.starts_with(u.substr(0, u.size() - 1))) return true;
  }
  return false;
}

}  // namespace

nlohmann::json toJson(const PolicyRule& rule) {
  nlohmann::json j = nlohmann::json::object();
  if (!rule.nonResourceURLs.empty()) {
    j["nonResourceURLs"] = rule.nonResourceURLs;
  } else {
    j["apiGroups"] = rule.apiGroups;
    j["resources"] = rule.resources;
    if (!rule.resourceNames.empty()) j["resourceNames"] = rule.resourceNames;
  }
  j["verbs"] = rule.verbs;
  return j;
}

nlohmann::json toJson(const std::vector<PolicyRule>& rules) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rules) j.push_back(toJson(r));
  return j;
}

RequestAttributes requestAttributes(const std::string& method, const std::string& pathAndQuery) {
  RequestAttributes a;
  const std::size_t q = pathAndQuery.find('?');
  a.path = pathAndQuery.substr(0, q);
  const std::string query = q == std::string::npos ? "" : pathAndQuery.substr(q + 1);
  a.verb = method;
  std::transform(a.verb.begin(), a.verb.end(), a.verb.begin(), [](unsigned char c) { return std::tolower(c); });
  std::vector<std::string> parts = split(a.path);
  // /api/v1/... and /apis/<group>/<version>/...; anything else is a non-resource URL.
  if (parts.size() < 3 || (parts[0] != "api" && parts[0] != "apis")) return a;
  std::size_t at = 1;
  if (parts[0] == "apis") {
    if (parts.size() < 4) return a;
    a.apiGroup = parts[at++];
  }
  a.resourceRequest = true;
  ++at;  // the version
  bool watchInPath = false;
  if (parts[at] == "watch") {  // the deprecated /watch/ prefix
    watchInPath = true;
    ++at;
  }
  if (method == "POST")
    a.verb = "create";
  else if (method == "GET" || method == "HEAD")
    a.verb = "get";
  else if (method == "PUT")
    a.verb = "update";
  else if (method == "PATCH")
    a.verb = "patch";
  else if (method == "DELETE")
    a.verb = "delete";
  else
    a.verb = "";
  std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
  if (!rest.empty() && rest[0] == "namespaces" && rest.size() > 1) {
    a.ns = rest[1];
    // namespaces/<name>/status and /finalize are the namespace's own subresources.
    if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize") rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (!rest.empty()) a.resource = rest[0];
  if (rest.size() >= 2) a.name = rest[1];
  if (rest.size() >= 3) a.subresource = rest[2];
  if (watchInPath) {
    a.verb = "watch";
  } else if (a.name.empty() && a.verb == "get") {
    // As the apiserver decodes ?watch: present and not false or 0.
    const auto w = queryValue(query, "watch");
    a.verb = w && *w != "false" && *w != "0" ? "watch" : "list";
  }
  if (a.name.empty() && a.verb == "delete") a.verb = "deletecollection";
  return a;
}

bool allows(const std::vector<PolicyRule>& rules, const RequestAttributes& a) {
  for (const auto& rule : rules) {
    if (a.resourceRequest ? ruleAllows(rule, a.verb, a.apiGroup, a.resource, a.subresource, a.name)
                          : urlAllows(rule, a.verb, a.path))
      return true;
  }
  return false;
}

bool allows(const std::vector<PolicyRule>& rules, const std::string& verb, const std::string& group,
            const std::string& resource, const std::string& name) {
  for (const auto& rule : rules)
    if (ruleAllows(rule, verb, group, resource, "", name)) return true;
  return false;
}

std::string describe(const RequestAttributes& a) {
  if (!a.resourceRequest) return a.verb + " " + a.path;
  std::string s = a.verb + " " + (a.apiGroup.empty() ? "" : a.apiGroup + "/") + a.resource;
  if (!a.subresource.empty()) s += "/" + a.subresource;
  if (!a.ns.empty() || !a.name.empty()) s += " " + (a.ns.empty() ? "" : a.ns + "/") + a.name;
  return s;
}

void RuleSet::add(const std::string& group, const std::string& resource, std::initializer_list<const char*> verbs,
                  std::vector<std::string> names) {
  auto& v = grants_[{group, resource, std::move(names)}];
  for (const char* verb : verbs) v.insert(verb);
}

void RuleSet::add(const GroupVersionResource& g, std::initializer_list<const char*> verbs,
                  const std::string& subresource) {
  add(g.group, subresource.empty() ? g.resource : g.resource + "/" + subresource, verbs);
}

std::vector<PolicyRule> RuleSet::rules() const {
  std::map<std::tuple<std::string, std::set<std::string>, std::vector<std::string>>, std::vector<std::string>> byVerbs;
  for (const auto& [key, verbs] : grants_) {
    const auto& [group, resource, names] = key;
    std::set<std::string> left = verbs;
    if (!names.empty()) {
      if (auto all = grants_.find({group, resource, {}}); all != grants_.end())
        for (const auto& v : all->second) left.erase(v);
      if (left.empty()) continue;
    }
    byVerbs[{group, left, names}].push_back(resource);
  }
  std::vector<PolicyRule> out;
  for (const auto& [key, resources] : byVerbs) {
    const auto& [group, verbs, names] = key;
    out.push_back({{group}, resources, {verbs.begin(), verbs.end()}, names, {}});
  }
  return out;
}

}  // namespace cpscale::kube
