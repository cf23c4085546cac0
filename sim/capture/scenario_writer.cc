#include "sim/capture/scenario_writer.h"

#include "sim/common/duration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace cpscale::capture {
namespace {

// A whole number for a count or a rate field.
std::string whole(double v) { return std::to_string(static_cast<long long>(std::llround(v))); }

// Go-style, to the millisecond: 250ms, 10s, 5m, 1h30m, 4m10s.
std::string goDuration(double seconds) {
  return formatDuration(std::chrono::milliseconds(std::llround(seconds * 1000)));
}

// A churn actor's or population's name: lower-case letters, digits and '-', 20 at most.
std::string workloadName(const std::string& from, std::vector<std::string>& taken) {
  std::string n;
  for (char c : from) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n.size() == 17) break;
  }
  if (n.empty()) n = "kind";
  std::string candidate = n;
  for (int i = 2; std::find(taken.begin(), taken.end(), candidate) != taken.end(); ++i)
    candidate = n + "-" + std::to_string(i);
  taken.push_back(candidate);
  return candidate;
}

// A custom resource's group as a churn actor may install it: kept when it is already a
// subgroup of cpscale.io, else renamed under captured.cpscale.io, its dots as dashes
// (a replay never installs another project's API group on the target).
std::string replayGroup(const std::string& group) {
  const std::string suffix = ".cpscale.io";
  if (group.size() > suffix.size() && group.compare(group.size() - suffix.size(), suffix.size(), suffix) == 0)
    return group;
  std::string label;
  for (char c : group) label += c == '.' ? '-' : c;
  if (label.size() > 63) label.resize(63);
  while (!label.empty() && label.back() == '-') label.pop_back();
  return label + ".captured.cpscale.io";
}

class Yaml {
 public:
  void comment(int indent, const std::string& text) { out_ << std::string(indent, ' ') << "# " << text << "\n"; }
  void field(int indent, const std::string& key, const std::string& value, const std::string& source = "") {
    if (!source.empty()) comment(indent, source);
    out_ << std::string(indent, ' ') << key << ": " << value << "\n";
  }
  void line(const std::string& text) { out_ << text << "\n"; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

using nlohmann::json;

// A schema node that takes what the churn actor writes at `field` (spec or status):
// an object keeping unknown fields, nothing required, no CEL rule, the actor's own
// properties typed as it writes them.
void takeSessions(json& schema, const std::map<std::string, const char*>& own) {
  if (!schema.is_object()) schema = json::object();
  schema["type"] = "object";
  schema["x-kubernetes-preserve-unknown-fields"] = true;
  schema.erase("required");
  schema.erase("x-kubernetes-validations");
  schema.erase("additionalProperties");  // not allowed beside properties with preserve
  for (const auto& [name, type] : own) schema["properties"][name] = {{"type", type}};
}

}  // namespace

std::optional<json> replayCrdTemplate(const ChurnedKind& c, std::string& why) {
  if (!c.crd.is_object() || !c.crd.contains("spec")) {
    why = "no CRD was captured for it";
    return std::nullopt;
  }
  const json& spec = c.crd["spec"];
  if (spec.value("scope", "Namespaced") != "Namespaced") {
    why = "its CRD is cluster-scoped, and sessions are namespaced";
    return std::nullopt;
  }
  const json versions = spec.value("versions", json::array());
  const json* version = nullptr;
  for (const json& v : versions)
    if (v.value("storage", false) || (version == nullptr && v.value("served", false))) version = &v;
  if (version == nullptr) {
    why = "its CRD serves no version";
    return std::nullopt;
  }
  json schema = version->value("/schema/openAPIV3Schema"_json_pointer, json{{"type", "object"}});
  schema["type"] = "object";
  schema.erase("required");
  schema.erase("x-kubernetes-validations");
  json& props = schema["properties"];
  takeSessions(props["spec"], {{"agent", "string"}, {"suspend", "boolean"}, {"payload", "string"}});
  takeSessions(props["status"], {{"phase", "string"}, {"step", "integer"}, {"lastUpdate", "string"}});
  json subresources = version->value("subresources", json::object());
  subresources["status"] = json::object();
  json v = {{"name", "v1"},
            {"served", true},
            {"storage", true},
            {"subresources", subresources},
            {"schema", {{"openAPIV3Schema", schema}}}};
  if (version->contains("additionalPrinterColumns"))
    v["additionalPrinterColumns"] = (*version)["additionalPrinterColumns"];
  return json{
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata",
       {{"name", "{{plural}}.{{group}}"},
        {"annotations", {{"cpscale.io/captured-from", c.key.describe() + " " + version->value("name", "")}}}}},
      {"spec",
       {{"group", "{{group}}"},
        {"scope", "Namespaced"},
        {"names",
         {{"plural", "{{plural}}"}, {"singular", "{{singular}}"}, {"kind", "{{kind}}"}, {"listKind", "{{kind}}List"}}},
        {"versions", json::array({v})}}}};
}

ChurnFit fitChurn(const ChurnedKind& c) {
  ChurnFit f;
  const double creates = c.creates.value;
  f.sessionsPerMinute = creates * 60;
  // Suspensions per session: each writes a suspend and a resume PATCH.
  const double suspends = c.specPatches.value / (2 * creates);
  f.maxSuspends = suspends < 2.4 ? 3 : static_cast<int>(std::ceil(suspends / 0.8));
  auto expected = [&](double p) {
    double sum = 0, pk = 1;
    for (int k = 1; k <= f.maxSuspends; ++k) sum += (pk *= p);
    return sum;
  };
  if (suspends > 0) {
    double lo = 0, hi = 1;
    for (int i = 0; i < 60; ++i) (expected((lo + hi) / 2) < suspends ? lo : hi) = (lo + hi) / 2;
    f.suspendProbability = (lo + hi) / 2;
  }
  const double k = expected(f.suspendProbability);
  const double spells = 1 + k;
  // Little's law: the live population is arrivals x lifetime; a lifetime is its
  // running spells and suspensions, each of one mean dwell.
  const double lifetime = creates > 0 ? c.liveObjects.value / creates : 0;
  f.dwellSeconds = std::max(1.0, lifetime / (spells + k));
  // Status PATCHes per spell past the one on entering it: 1/(e^(T/R) - 1) for a periodic
  // timer of period T in an exponential spell of mean R.
  const double extra = c.statusPatches.value / (creates * spells) - 1;
  if (extra > 0.02) f.statusIntervalSeconds = f.dwellSeconds * std::log1p(1 / extra);
  return f;
}

namespace {

// What the workloads written so far account for: their names (each unique), whether any
// loads the plane, and the namespaces the pods and the churn actors take.
struct Written {
  std::vector<std::string> names;
  bool load = false;
  double podNamespaces = 0;
  double churnNamespaces = 0;
};

// The comments that say where the numbers came from, the scenario's name, length and
// warmup, up to its workloads.
void writeHeader(Yaml& y, const ClusterShape& s, const WriteOptions& o) {
  const double x = o.scale;
  y.comment(0, "Captured by cpscale capture from " + s.server + " (" + s.version + ") at " + s.capturedAt + ":");
  y.comment(0, "writes over a " + goDuration(s.windowSeconds) +
                   " window between two /metrics scrapes, objects and watches per resource,");
  y.comment(0, "node Leases, namespaces and custom resources from lists. Scale x" + significant(x) +
                   ": nodes, rates and object counts");
  y.comment(0, "multiplied; namespaces, kinds and watchers per kind as captured.");
  y.comment(0, "Each field says where its number came from.");
  if (!s.notReproduced.empty()) {
    y.comment(0, "Not reproduced (no workload of a scenario writes them):");
    for (const auto& w : s.notReproduced) y.comment(0, "  " + w);
  }
  y.line("apiVersion: cpscale.io/v1alpha1");
  y.line("kind: Scenario");
  y.field(0, "name", o.name);
  y.field(0, "description",
          quoted("the shape of " + s.server + " captured " + s.capturedAt + ", scale " + significant(x)));
  y.field(0, "duration", o.duration);

  double longestLifetime = 0;
  for (const auto& c : s.churned)
    if (c.creates.value > 0) longestLifetime = std::max(longestLifetime, c.liveObjects.value / c.creates.value);
  if (longestLifetime > 0)
    y.field(0, "warmup", goDuration(std::max(30.0, std::ceil(2 * longestLifetime))),
            "twice the longest churned lifetime: the live population builds up before the window");
  y.line("seed: 1");
  y.line("scrapeInterval: 5s");
  y.line("workloads:");
}

// The kubelets' pods: how many per node, their status cadence, Events and replacements.
// Nothing when the nodes run no pod.
void writePods(Yaml& y, const NodeShape& n, double windowSeconds, double x, Written& w) {
  const double perNode = n.nodes.value > 0 ? std::round(n.pods.value / n.nodes.value) : 0;
  if (perNode <= 0) return;
  y.field(4, "podsPerNode", whole(std::min(perNode, 250.0)),
          significant(n.pods.value) + " pods / " + significant(n.nodes.value) + " nodes (" + n.pods.source + ")");
  y.line("    podQps: 100");
  y.line("    podBurst: 100");
  w.podNamespaces = 1;
  // Each pod start writes one status PATCH; the rest are each pod's own cadence.
  const double steady = n.podStatusPatches.value - n.podCreates.value;
  if (steady * windowSeconds >= 1)
    y.field(4, "podStatusInterval", goDuration(std::clamp(std::round(perNode * n.nodes.value / steady), 1.0, 86400.0)),
            "pods / " + significant(steady) + " status PATCHes/s besides one per pod start (" +
                n.podStatusPatches.source + ")");
  else
    y.field(4, "podStatusInterval", "24h",
            "no pod status PATCH besides one per pod start (" + n.podStatusPatches.source + ")");
  if (n.eventCreates.value > 0)
    y.field(4, "events", "true",
            significant(n.eventCreates.value) + " Event POSTs/s (" + n.eventCreates.source +
                "); the kubelets write 4 per pod start, 6 per node start");
  if (n.podCreates.value > 0)
    y.field(4, "churn", "{podReplacementsPerMinute: " + significant(n.podCreates.value * 60 * x, 4) + "}",
            significant(n.podCreates.value) + " pod POSTs/s (" + n.podCreates.source + "), each a replacement");
}

// The node axis: the cluster's nodes as kubelets, their leases, status reports and pods.
void writeKubelets(Yaml& y, const ClusterShape& s, double x, Written& w) {
  const NodeShape& n = s.nodes;
  const double nodes = std::round(n.nodes.value * x);
  if (nodes <= 0) return;
  w.load = true;
  y.line("  - kind: kubelets");
  y.field(4, "name", workloadName("fleet", w.names));
  y.field(4, "count", whole(nodes), significant(n.nodes.value) + " nodes: " + n.nodes.source);
  y.line("    registrationQps: 50");
  y.line("    registrationBurst: 50");
  const double duration = n.leaseDurationSeconds ? n.leaseDurationSeconds->value : 40;
  y.field(4, "leaseDurationSeconds", whole(duration),
          n.leaseDurationSeconds ? n.leaseDurationSeconds->source : "no node Lease listed: the kubelet's default");
  y.comment(4, "a renewal every " + significant(duration / 4) + " s: " + significant(n.nodes.value / (duration / 4)) +
                   " lease PUTs/s of the " + significant(n.leaseWrites.value) + "/s measured (" + n.leaseWrites.source +
                   "); the rest are the plane's and operators' leader-election leases");
  if (n.statusPatches.value > 0) {
    // A kubelet reports at a status computation (every 10 s): to the nearest one.
    const double every = std::clamp(std::round(n.nodes.value / n.statusPatches.value / 10) * 10, 10.0, 3600.0);
    y.field(4, "statusReportFrequency", goDuration(every),
            "nodes / " + significant(n.statusPatches.value) + " status PATCHes/s (" + n.statusPatches.source +
                "), to the kubelet's 10 s computation");
  } else {
    y.comment(4, "no node status write in the window (" + n.statusPatches.source +
                     "): the kubelet's default report every 5m");
  }
  writePods(y, n, s.windowSeconds, x, w);
}

// The mutation axis: one churn actor for a custom resource created in the window.
void writeChurn(Yaml& y, const ChurnedKind& c, const WriteOptions& o, Written& w) {
  const double x = o.scale;
  w.load = true;
  const ChurnFit f = fitChurn(c);
  y.line("  - kind: churn");
  y.field(4, "name", workloadName(c.key.resource, w.names));
  y.comment(4, c.key.describe() + ": " + significant(c.creates.value) + " POST, " + significant(c.deletes.value) +
                   " DELETE, " + significant(c.specPatches.value) + " spec and " + significant(c.statusPatches.value) +
                   " status writes per second, " + significant(c.liveObjects.value) + " live (" + c.liveObjects.source +
                   ")");
  if (c.deletes.value < 0.8 * c.creates.value)
    y.comment(4, "the cluster deleted fewer than it created; a session is deleted at its end");
  y.field(4, "sessionsPerMinute", significant(f.sessionsPerMinute * x, 4), c.creates.source);
  const double ns = std::max(1.0, c.namespaces.value);
  w.churnNamespaces += ns;
  y.field(4, "namespaces", whole(ns), c.namespaces.source);
  y.field(4, "createQps", whole(std::max(50.0, std::ceil(c.creates.value * x * 2))));
  y.field(4, "createBurst", whole(std::max(50.0, std::ceil(c.creates.value * x * 2))));
  if (c.bytesPerObject)
    y.field(4, "objectBytes", whole(std::max(0.0, c.bytesPerObject->value - kChurnOverheadBytes)),
            whole(c.bytesPerObject->value) + " stored bytes per object (" + c.bytesPerObject->source + ") less " +
                significant(kChurnOverheadBytes) + " a session stores besides its payload");
  y.field(4, "statusInterval", goDuration(f.statusIntervalSeconds),
          "status writes: one on entering each running spell, then one per interval (" + c.statusPatches.source + ")");
  y.field(4, "suspendProbability", significant(f.suspendProbability, 4),
          significant(c.specPatches.value / (2 * c.creates.value)) + " suspensions per session, 2 spec writes each (" +
              c.specPatches.source + ")");
  y.field(4, "maxSuspends", std::to_string(f.maxSuspends));
  y.field(4, "dwell", "{running: " + goDuration(f.dwellSeconds) + ", suspended: " + goDuration(f.dwellSeconds) + "}",
          "Little's law: " + significant(c.liveObjects.value) + " live / " + significant(c.creates.value) +
              " created/s over " + significant(1 + 2 * (c.specPatches.value / (2 * c.creates.value))) + " spells");
  y.field(4, "targets", "[{crd: " + c.key.resource + "." + replayGroup(c.key.group) + ", kind: " + c.kind + "}]",
          replayGroup(c.key.group) == c.key.group ? "" : "captured as " + c.key.describe());
  if (o.crdDir.empty()) return;
  std::string why;
  if (replayCrdTemplate(c, why))
    y.field(4, "crdTemplate", o.crdDir + "/" + c.key.describe() + ".json",
            "the captured CRD's schema, made to take the sessions (see the file)");
  else
    y.comment(4, "cpscale's own session CRD: " + why);
}

// The custom resources at rest as one population: their kinds, mean objects and watchers.
void writeCustomAtRest(Yaml& y, const std::vector<const DormantKind*>& custom, double x) {
  double total = 0, lo = custom.front()->objects.value, hi = lo;
  std::vector<double> watchers;
  for (const DormantKind* d : custom) {
    total += d->objects.value;
    lo = std::min(lo, d->objects.value), hi = std::max(hi, d->objects.value);
    watchers.push_back(d->watches.value - kPlaneWatchesPerCustomResource);
  }
  y.field(4, "crdKinds", std::to_string(custom.size()),
          "custom resources holding objects and created none in the window (GET customresourcedefinitions)");
  y.field(4, "objectsPerKind", whole(total / custom.size() * x),
          "mean of " + significant(total) + " objects over the kinds (" + significant(lo) + " to " + significant(hi) +
              "; " + custom.front()->objects.source + ")");
  const double perKind = std::round(median(watchers));
  if (perKind > 0)
    y.field(4, "watchers", "{perKind: " + whole(perKind) + "}",
            "median WATCHes per kind less the plane's own " + significant(kPlaneWatchesPerCustomResource) + " (" +
                custom.front()->watches.source + ")");
}

// One payload size for custom resources, ConfigMaps and Secrets at rest: their mean.
void writeBytesAtRest(Yaml& y, const std::vector<DormantKind>& dormant) {
  double bytes = 0, weight = 0;
  for (const DormantKind& d : dormant) {
    if (!d.bytesPerObject || !(d.custom || d.key.resource == "configmaps" || d.key.resource == "secrets")) continue;
    bytes += d.bytesPerObject->value * d.objects.value;
    weight += d.objects.value;
  }
  if (weight > 0)
    y.field(4, "objectBytes", whole(std::max(0.0, bytes / weight - kDormantOverheadBytes)),
            "mean stored bytes per object of the custom resources, ConfigMaps and Secrets (" +
                std::string("apiserver_resource_size_estimate_bytes") + ") less " + significant(kDormantOverheadBytes) +
                " an object at rest stores besides its payload");
}

// The state axis: what the cluster holds at rest, as one dormant workload. Its name, or
// empty when the cluster holds nothing of its own.
std::string writeDormant(Yaml& y, const ClusterShape& s, double x, Written& w) {
  std::vector<const DormantKind*> custom, builtin;
  for (const DormantKind& d : s.dormant) (d.custom ? custom : builtin).push_back(&d);
  if (custom.empty() && builtin.empty()) return "";
  y.line("  - kind: dormant");
  const std::string name = workloadName("state", w.names);
  y.field(4, "name", name);
  if (!custom.empty()) writeCustomAtRest(y, custom, x);
  writeBytesAtRest(y, s.dormant);
  const double ns = std::max(1.0, s.userNamespaces.value - w.churnNamespaces - w.podNamespaces);
  y.field(4, "namespaces", whole(ns),
          "the cluster's " + significant(s.userNamespaces.value) + " namespaces less the churn actors' and pods' (" +
              s.userNamespaces.source + ")");
  const std::map<std::string, std::string> fieldOf = {{"configmaps", "configMaps"},
                                                      {"secrets", "secrets"},
                                                      {"serviceaccounts", "serviceAccounts"},
                                                      {"roles", "roles"},
                                                      {"rolebindings", "roleBindings"},
                                                      {"clusterroles", "clusterRoles"},
                                                      {"clusterrolebindings", "clusterRoleBindings"}};
  if (!builtin.empty())
    y.comment(4,
              "the plane's own objects left out, which a replay's plane makes again: kube-system, "
              "kube-public, kube-node-lease, RBAC's bootstrap policy, each namespace's kube-root-ca.crt and "
              "default ServiceAccount");
  for (const DormantKind* d : builtin)
    y.field(4, fieldOf.at(d->key.resource), whole(d->objects.value * x), d->objects.source);
  double patches = 0;
  for (const DormantKind& d : s.dormant) patches += d.patches.value;
  if (patches > 0) y.field(4, "updatesPerSecond", significant(patches * x, 4), "writes to objects at rest, all kinds");
  y.line("    createQps: 100");
  y.line("    createBurst: 100");
  return name;
}

}  // namespace

std::string writeScenario(const ClusterShape& s, const WriteOptions& o) {
  Yaml y;
  writeHeader(y, s, o);
  Written w;
  writeKubelets(y, s, o.scale, w);
  for (const ChurnedKind& c : s.churned) writeChurn(y, c, o, w);
  const std::string state = writeDormant(y, s, o.scale, w);
  if (!state.empty() || w.load) y.line("gates:");
  if (!state.empty()) y.line("  - dormant_objects_missing{workload=" + state + "} == 0");
  if (w.load) y.line("  - generator_limited == false");
  return y.str();
}

}  // namespace cpscale::capture
