#include "sim/controlplane/profile.h"

#include <cctype>
#include <set>

#include "sim/common/yaml_reader.h"

namespace cpscale::controlplane {

namespace {

// "group/resource" -> the form --etcd-servers-overrides expects ("group/resource",
// with an empty group for the core API: "/events").
std::string normalizeResource(const YamlField& f) {
  std::string r = f.asString();
  if (r.find('/') == std::string::npos) r = "/" + r;
  auto slash = r.find('/');
  std::string resource = r.substr(slash + 1);
  if (resource.empty() || resource.find('/') != std::string::npos)
    throw f.error("expected \"group/resource\" (e.g. coordination.k8s.io/leases, /events), found '" +
                  f.asString() + "'");
  for (char c : r)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '.' || c == '-' || c == '/'))
      throw f.error("'" + f.asString() + "' is not a valid group/resource name");
  return r;
}

std::string flagOf(const YamlField& f) {
  std::string s = f.asString();
  if (s.rfind("--", 0) != 0 || s.size() < 3) throw f.error("expected a flag of the form --name=value, found '" + s + "'");
  return s;
}

}  // namespace

std::string Profile::etcdServersOverrides(const std::vector<std::string>& etcdUrls) const {
  std::string out;
  for (std::size_t i = 1; i < etcds.size() && i < etcdUrls.size(); ++i)
    for (const auto& r : etcds[i].resources) out += (out.empty() ? "" : ",") + r + "#" + etcdUrls[i];
  return out;
}

Profile loadProfile(const std::filesystem::path& path) {
  YamlField root = loadYamlFile(path);
  root.expectMap({"apiVersion", "kind", "name", "description", "apiservers", "etcds", "watchCache",
                  "watchCacheSizes", "maxRequestsInflight", "maxMutatingRequestsInflight",
                  "priorityAndFairness", "featureGates", "apiserverArgs"});
  Profile p;
  p.source = path.string();
  if (auto f = root.get("apiVersion"); f && f->asString() != "cpscale.io/v1alpha1")
    throw f->error("unsupported apiVersion '" + f->asString() + "' (expected cpscale.io/v1alpha1)");
  if (auto f = root.get("kind"); f && f->asString() != "Profile")
    throw f->error("expected kind Profile, found '" + f->asString() + "'");
  p.name = root.require("name").asString();
  if (auto f = root.get("description")) p.description = f->asString();
  if (auto f = root.get("apiservers")) p.apiservers = static_cast<int>(f->asInt(1, 16));
  if (auto f = root.get("etcds")) {
    p.etcds.clear();
    std::set<std::string> names, routed;
    for (const auto& e : f->items()) {
      e.expectMap({"name", "resources", "extraArgs"});
      EtcdSpec spec;
      spec.name = e.require("name").asString();
      if (!names.insert(spec.name).second) throw e.require("name").error("duplicate etcd name '" + spec.name + "'");
      if (auto r = e.get("resources")) {
        if (p.etcds.empty()) throw r->error("the first etcd is the main one and holds every resource not routed elsewhere; list resources on the others");
        for (const auto& item : r->items()) {
          std::string res = normalizeResource(item);
          if (!routed.insert(res).second) throw item.error("resource '" + res + "' is routed to two etcds");
          spec.resources.push_back(res);
        }
      } else if (!p.etcds.empty()) {
        throw e.error("an extra etcd needs 'resources' (which resources it holds)");
      }
      if (auto a = e.get("extraArgs"))
        for (const auto& item : a->items()) spec.extraArgs.push_back(flagOf(item));
      p.etcds.push_back(std::move(spec));
    }
    if (p.etcds.empty()) throw f->error("at least one etcd is required");
    if (p.etcds.size() > 8) throw f->error("at most 8 etcds are supported");
  }
  if (auto f = root.get("watchCache")) p.watchCache = f->asBool();
  if (auto f = root.get("watchCacheSizes")) p.watchCacheSizes = f->asStrings();
  if (auto f = root.get("maxRequestsInflight")) p.maxRequestsInflight = static_cast<int>(f->asInt(0, 1'000'000));
  if (auto f = root.get("maxMutatingRequestsInflight"))
    p.maxMutatingRequestsInflight = static_cast<int>(f->asInt(0, 1'000'000));
  if (auto f = root.get("priorityAndFairness")) p.priorityAndFairness = f->asBool();
  if (auto f = root.get("featureGates"))
    for (auto& [k, v] : f->entries()) p.featureGates[k] = v.asBool();
  p.apiserverArgs.clear();  // a profile file states its flags itself
  if (auto f = root.get("apiserverArgs"))
    for (const auto& item : f->items()) p.apiserverArgs.push_back(flagOf(item));
  return p;
}

}  // namespace cpscale::controlplane
