#include "sim/capture/shape.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string_view>

#include "sim/common/error.h"
#include "sim/metrics/prometheus_text.h"

namespace cpscale::capture {
namespace {

using nlohmann::json;

constexpr std::string_view kRequests = "apiserver_request_total";
constexpr std::string_view kObjects = "apiserver_resource_objects";
constexpr std::string_view kStorageObjects = "apiserver_storage_objects";  // before 1.34: resource="plural.group"
constexpr std::string_view kSize = "apiserver_resource_size_estimate_bytes";
constexpr std::string_view kLongRunning = "apiserver_longrunning_requests";

metrics::FamilyMap parse(const std::string& body, const std::string& what) {
  const auto r = metrics::parsePrometheusText(body, [](std::string_view f) {
    return f == kRequests || f == kObjects || f == kStorageObjects || f == kSize || f == kLongRunning;
  });
  if (!r.ok()) throw ConfigError("/metrics at the window's " + what, "", r.error->describe());
  return r.families;
}

const metrics::MetricFamily* family(const metrics::FamilyMap& m, std::string_view name) {
  auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second;
}

std::string windowText(double seconds) { return significant(seconds, 4) + " s"; }

struct WriteKey {
  ResourceKey key;
  std::string subresource;
  std::string verb;
  auto operator<=>(const WriteKey&) const = default;
};

// apiserver_request_total summed by resource, subresource and verb (codes, scopes and
// components together; dry runs left out: they write nothing).
std::map<WriteKey, double> requestCounts(const metrics::FamilyMap& m) {
  std::map<WriteKey, double> out;
  const metrics::MetricFamily* f = family(m, kRequests);
  if (f == nullptr) return out;
  for (const auto& s : f->samples) {
    if (!metrics::labelValue(s.labels, "dry_run").empty()) continue;
    WriteKey k{
        {std::string(metrics::labelValue(s.labels, "group")), std::string(metrics::labelValue(s.labels, "resource"))},
        std::string(metrics::labelValue(s.labels, "subresource")),
        std::string(metrics::labelValue(s.labels, "verb"))};
    if (k.key.resource.empty() || !isWriteVerb(k.verb)) continue;
    out[k] += s.value;
  }
  return out;
}

// Objects per resource: apiserver_resource_objects{group,resource}, or the older
// apiserver_storage_objects{resource="plural.group"}.
std::map<ResourceKey, double> objectCounts(const metrics::FamilyMap& m) {
  std::map<ResourceKey, double> out;
  if (const auto* f = family(m, kObjects)) {
    for (const auto& s : f->samples)
      if (s.value >= 0)
        out[{std::string(metrics::labelValue(s.labels, "group")),
             std::string(metrics::labelValue(s.labels, "resource"))}] = s.value;
    return out;
  }
  if (const auto* f = family(m, kStorageObjects)) {
    for (const auto& s : f->samples) {
      if (s.value < 0) continue;
      std::string r(metrics::labelValue(s.labels, "resource"));
      const auto dot = r.find('.');
      ResourceKey k = dot == std::string::npos ? ResourceKey{"", r} : ResourceKey{r.substr(dot + 1), r.substr(0, dot)};
      out[k] = s.value;
    }
  }
  return out;
}

std::map<ResourceKey, double> byResource(const metrics::FamilyMap& m, std::string_view name, bool watchesOnly) {
  std::map<ResourceKey, double> out;
  const auto* f = family(m, name);
  if (f == nullptr) return out;
  for (const auto& s : f->samples) {
    if (watchesOnly && metrics::labelValue(s.labels, "verb") != "WATCH") continue;
    if (!watchesOnly && s.value <= 0) continue;  // -1: not estimated yet; 0: nothing stored
    out[{std::string(metrics::labelValue(s.labels, "group")),
         std::string(metrics::labelValue(s.labels, "resource"))}] += s.value;
  }
  return out;
}

double at(const std::map<ResourceKey, double>& m, const ResourceKey& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

bool isPlaneNamespace(std::string_view ns) {
  return ns == "kube-system" || ns == "kube-public" || ns == "kube-node-lease";
}

// An object the plane makes for itself, which a replay's plane makes again: anything
// in its own namespaces, RBAC's bootstrap policy, and what every namespace gets (the
// root CA ConfigMap, the default ServiceAccount).
bool isPlaneObject(const std::string& resource, const json& meta) {
  if (isPlaneNamespace(meta.value("namespace", ""))) return true;
  if (meta.contains("labels") && meta["labels"].is_object() &&
      meta["labels"].value("kubernetes.io/bootstrapping", "") == "rbac-defaults")
    return true;
  const std::string name = meta.value("name", "");
  if (resource == "configmaps" && name == "kube-root-ca.crt") return true;
  if (resource == "serviceaccounts" && name == "default") return true;
  return false;
}

const json& itemsOf(const json& list) {
  static const json kEmpty = json::array();
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return kEmpty;
  return list["items"];
}

const json& metadataOf(const json& item) {
  static const json kEmpty = json::object();
  return item.contains("metadata") && item["metadata"].is_object() ? item["metadata"] : kEmpty;
}

struct Crd {
  std::string kind;
  json object;  // the CRD as listed
};

std::map<ResourceKey, Crd> customResources(const json& crds) {
  std::map<ResourceKey, Crd> out;
  for (const json& c : itemsOf(crds)) {
    if (!c.contains("spec") || !c["spec"].is_object()) continue;
    const json& spec = c["spec"];
    const json names = spec.value("names", json::object());
    out[{spec.value("group", ""), names.value("plural", "")}] = {names.value("kind", ""), c};
  }
  return out;
}

}  // namespace

std::string significant(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string ResourceKey::describe() const { return group.empty() ? resource : resource + "." + group; }

const std::vector<ResourceKey>& dormantBuiltins() {
  static const std::vector<ResourceKey> kinds = {
      {"", "configmaps"},
      {"", "secrets"},
      {"", "serviceaccounts"},
      {"rbac.authorization.k8s.io", "roles"},
      {"rbac.authorization.k8s.io", "rolebindings"},
      {"rbac.authorization.k8s.io", "clusterroles"},
      {"rbac.authorization.k8s.io", "clusterrolebindings"},
  };
  return kinds;
}

bool isWriteVerb(const std::string& verb) {
  return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE" || verb == "DELETECOLLECTION" ||
         verb == "APPLY";
}

namespace {

// The window between the two scrapes: the write rates, objects, sizes and watches per
// resource, each with its source, and the writes a workload of the scenario makes.
class Window {
 public:
  Window(const metrics::FamilyMap& before, const metrics::FamilyMap& after, double seconds)
      : over_(" over the " + windowText(seconds) + " window"),
        objects0_(objectCounts(before)),
        objects1_(objectCounts(after)),
        sizes_(byResource(after, kSize, false)),
        watches0_(byResource(before, kLongRunning, true)),
        watches1_(byResource(after, kLongRunning, true)),
        objectsMetric_(family(after, kObjects) ? std::string(kObjects) : std::string(kStorageObjects)) {
    // Counter increase over the window, per second.
    const auto c0 = requestCounts(before);
    for (const auto& [k, v1] : requestCounts(after)) {
      auto it = c0.find(k);
      const double v0 = it == c0.end() ? 0 : it->second;
      const double inc = v1 >= v0 ? v1 - v0 : v1;  // a reset: the counter restarted from 0
      if (inc > 0) rate_[k] = inc / seconds;
    }
  }

  const std::map<WriteKey, double>& rates() const { return rate_; }

  // The writes of these verbs to the resource (or its subresource), summed.
  Measured writeRate(const ResourceKey& key, const std::string& sub, std::initializer_list<const char*> verbs) const {
    Measured m;
    std::string verbList;
    for (const char* v : verbs) {
      auto it = rate_.find({key, sub, v});
      if (it != rate_.end()) m.value += it->second;
      verbList += (verbList.empty() ? "" : "|") + std::string(v);
    }
    m.source = "apiserver_request_total{resource=" + key.resource + (sub.empty() ? "" : ",subresource=" + sub) +
               ",verb=" + verbList + "}" + over_;
    return m;
  }

  // Marks these writes as made by a workload of the scenario.
  void explain(const ResourceKey& key, const std::string& sub, std::initializer_list<const char*> verbs) {
    for (const char* v : verbs) explained_.insert({key, sub, v});
  }
  bool explained(const WriteKey& k) const { return explained_.count(k) > 0; }

  // The resource's objects, mean of the two scrapes.
  Measured meanObjects(const ResourceKey& k) const {
    return {(at(objects0_, k) + at(objects1_, k)) / 2,
            objectsMetric_ + "{resource=" + k.describe() + "}, mean of the two scrapes"};
  }

  std::optional<Measured> bytesPerObject(const ResourceKey& k) const {
    const double bytes = at(sizes_, k), n = at(objects1_, k);
    if (bytes <= 0 || n <= 0) return std::nullopt;
    return Measured{bytes / n,
                    std::string(kSize) + "{resource=" + k.resource + "} / " + objectsMetric_ + " at the end"};
  }

  Measured meanWatches(const ResourceKey& k) const {
    return Measured{(at(watches0_, k) + at(watches1_, k)) / 2,
                    std::string(kLongRunning) + "{verb=WATCH,resource=" + k.resource + "}, mean of the two scrapes"};
  }

 private:
  std::string over_;
  std::map<WriteKey, double> rate_;
  std::set<WriteKey> explained_;  // writes a workload of the scenario makes
  std::map<ResourceKey, double> objects0_, objects1_, sizes_, watches0_, watches1_;
  std::string objectsMetric_;
};

// The node axis: nodes and their Leases from lists, their and their pods' writes.
NodeShape measureNodes(const Reading& r, Window& w) {
  NodeShape n;
  n.nodes = {static_cast<double>(itemsOf(r.nodes).size()), "GET /api/v1/nodes"};
  std::map<long long, std::size_t> durations;
  for (const json& l : itemsOf(r.nodeLeases))
    if (l.contains("spec") && l["spec"].contains("leaseDurationSeconds") &&
        l["spec"]["leaseDurationSeconds"].is_number_integer())
      ++durations[l["spec"]["leaseDurationSeconds"].get<long long>()];
  if (!durations.empty()) {
    auto most = std::max_element(durations.begin(), durations.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    n.leaseDurationSeconds = Measured{static_cast<double>(most->first),
                                      "spec.leaseDurationSeconds of " + std::to_string(most->second) + " of " +
                                          std::to_string(itemsOf(r.nodeLeases).size()) + " Leases in kube-node-lease"};
  }
  const ResourceKey leases{"coordination.k8s.io", "leases"}, nodes{"", "nodes"}, pods{"", "pods"}, events{"", "events"};
  n.leaseWrites = w.writeRate(leases, "", {"PUT"});
  n.statusPatches = w.writeRate(nodes, "status", {"PATCH", "PUT"});
  n.pods = w.meanObjects(pods);
  n.podStatusPatches = w.writeRate(pods, "status", {"PATCH", "PUT"});
  n.podCreates = w.writeRate(pods, "", {"POST"});
  n.podDeletes = w.writeRate(pods, "", {"DELETE"});
  n.eventCreates = w.writeRate(events, "", {"POST"});
  // Every plane renews leases of its own (controllers' leader election, apiserver
  // identity): a replay's plane does too; the kubelets' share is the fleet's.
  w.explain(leases, "", {"PUT"});
  if (n.nodes.value > 0) {
    w.explain(nodes, "status", {"PATCH", "PUT"});
    w.explain(pods, "", {"POST", "DELETE"});
    w.explain(pods, "status", {"PATCH", "PUT"});
    w.explain(pods, "binding", {"POST"});
    w.explain(events, "", {"POST"});
  }
  return n;
}

// A custom resource created in the window: its creates, deletes, writes, live objects
// and the namespaces they live in.
ChurnedKind churnedKind(const ResourceKey& key, const Crd& crd, Measured creates, const Reading& r, Window& w) {
  ChurnedKind c;
  c.key = key;
  c.kind = crd.kind;
  c.crd = crd.object;
  c.creates = std::move(creates);
  c.deletes = w.writeRate(key, "", {"DELETE"});
  c.specPatches = w.writeRate(key, "", {"PATCH", "PUT", "APPLY"});
  c.statusPatches = w.writeRate(key, "status", {"PATCH", "PUT", "APPLY"});
  c.liveObjects = w.meanObjects(key);
  c.bytesPerObject = w.bytesPerObject(key);
  std::set<std::string> ns;
  if (auto it = r.customLists.find(key); it != r.customLists.end())
    for (const json& item : itemsOf(it->second)) ns.insert(metadataOf(item).value("namespace", ""));
  c.namespaces = {static_cast<double>(ns.size()),
                  "distinct namespaces of GET " + key.describe() + "'s " +
                      std::to_string(r.customLists.count(key) ? itemsOf(r.customLists.at(key)).size() : 0) +
                      " objects"};
  w.explain(key, "", {"POST", "DELETE", "PATCH", "PUT", "APPLY"});
  w.explain(key, "status", {"PATCH", "PUT", "APPLY"});
  return c;
}

// A kind at rest with these objects: their size, the watches on it and the writes to it.
DormantKind atRest(const ResourceKey& key, bool custom, Measured objects, Window& w) {
  DormantKind d;
  d.key = key;
  d.custom = custom;
  d.objects = std::move(objects);
  d.bytesPerObject = w.bytesPerObject(key);
  d.watches = w.meanWatches(key);
  d.patches = w.writeRate(key, "", {"PATCH", "PUT", "APPLY"});
  w.explain(key, "", {"PATCH", "PUT", "APPLY"});
  return d;
}

// Custom resources: churned (created in the window) or at rest.
void measureCustomResources(const Reading& r, Window& w, ClusterShape& s) {
  for (const auto& [key, crd] : customResources(r.crds)) {
    if (Measured creates = w.writeRate(key, "", {"POST"}); creates.value > 0) {
      s.churned.push_back(churnedKind(key, crd, std::move(creates), r, w));
      continue;
    }
    Measured objects = w.meanObjects(key);
    if (objects.value > 0) s.dormant.push_back(atRest(key, true, std::move(objects), w));
  }
}

// Built-in kinds at rest: the cluster's own objects, from their lists.
void measureBuiltinsAtRest(const Reading& r, Window& w, std::vector<DormantKind>& dormant) {
  for (const ResourceKey& key : dormantBuiltins()) {
    auto it = r.builtinLists.find(key.resource);
    if (it == r.builtinLists.end()) continue;
    std::size_t own = 0, all = 0;
    for (const json& item : itemsOf(it->second)) {
      ++all;
      if (!isPlaneObject(key.resource, metadataOf(item))) ++own;
    }
    if (own == 0) continue;
    dormant.push_back(atRest(key, false,
                             {static_cast<double>(own), "GET " + key.resource + ": " + std::to_string(own) + " of " +
                                                            std::to_string(all) + " are the cluster's"},
                             w));
  }
}

// Namespaces other than the plane's own and default.
Measured userNamespaces(const json& namespaces) {
  std::size_t userNs = 0, allNs = 0;
  for (const json& item : itemsOf(namespaces)) {
    ++allNs;
    const std::string name = metadataOf(item).value("name", "");
    if (!isPlaneNamespace(name) && name != "default") ++userNs;
  }
  return {static_cast<double>(userNs), "GET /api/v1/namespaces: " + std::to_string(userNs) + " of " +
                                           std::to_string(allNs) +
                                           " (kube-system, kube-public, kube-node-lease, default left out)"};
}

}  // namespace

ClusterShape measureShape(const Reading& r) {
  if (!(r.windowSeconds > 0)) throw ConfigError("capture", "window", "must be longer than 0 s");
  const metrics::FamilyMap before = parse(r.metricsBefore, "start");
  const metrics::FamilyMap after = parse(r.metricsAfter, "end");
  if (family(after, kRequests) == nullptr)
    throw UnavailableError(r.server + " serves no apiserver_request_total on /metrics: its writes cannot be measured");

  ClusterShape s;
  s.server = r.server;
  s.version = r.version;
  s.capturedAt = r.capturedAt;
  s.windowSeconds = r.windowSeconds;
  Window w(before, after, r.windowSeconds);
  for (const auto& [k, v] : w.rates()) s.writes.push_back({k.key, k.subresource, k.verb, v});
  s.nodes = measureNodes(r, w);
  measureCustomResources(r, w, s);
  measureBuiltinsAtRest(r, w, s.dormant);
  s.userNamespaces = userNamespaces(r.namespaces);

  // ---- what no workload of the scenario writes ----
  for (const auto& [k, v] : w.rates()) {
    if (w.explained(k) || v * r.windowSeconds < 1) continue;
    s.notReproduced.push_back(k.verb + " " + k.key.describe() + (k.subresource.empty() ? "" : "/" + k.subresource) +
                              " at " + significant(v) + "/s");
  }
  return s;
}

}  // namespace cpscale::capture
