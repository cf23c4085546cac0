#include "sim/run/job_manifest.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/common/duration.h"
#include "sim/run/shard.h"
#include "workloads/cleanup.h"
#include "workloads/kind.h"

namespace cpscale::run {
namespace {

// Documents keep their keys in the order written (kind and metadata first), as
// manifests are read.
using ojson = nlohmann::ordered_json;
using kube::PolicyRule;

const std::string& kRbac = kube::kRbacGroup;

// A `$(` the kubelet would expand is escaped; the rest of the text stays as written.
std::string escapeExpansion(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '(') out += '$';
    out += s[i];
  }
  return out;
}

// YAML writing. Plain only where every YAML reader (1.1 included: yes, on, ...) reads
// a string; quoted (JSON escaping is valid YAML) otherwise.
bool plainSafe(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-')) return false;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
    if (lower == word) return false;
  return true;
}

// A literal block keeps a file's text readable. Only for printable text without
// carriage returns; the explicit indentation indicator lets lines start with spaces,
// the chomping indicator keeps the trailing newlines exactly.
bool literalSafe(const std::string& s) {
  if (s.find('\n') == std::string::npos || s.find_first_not_of('\n') == std::string::npos) return false;
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return false;
  return true;
}

std::string scalar(const ojson& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return plainSafe(s) ? s : v.dump();
  }
  return v.dump();
}

void emit(std::ostream& os, const ojson& v, int indent);

void emitLiteral(std::ostream& os, const std::string& s, int indent) {
  std::size_t trailing = 0;
  while (trailing < s.size() && s[s.size() - 1 - trailing] == '\n') ++trailing;
  os << "|2" << (trailing == 0 ? "-" : trailing == 1 ? "" : "+") << "\n";
  const std::string body = s.substr(0, s.size() - trailing);
  std::size_t at = 0;
  for (;;) {
    std::size_t end = body.find('\n', at);
    const std::string line = body.substr(at, end == std::string::npos ? std::string::npos : end - at);
    os << (line.empty() ? "" : std::string(indent + 2, ' ') + line) << "\n";
    if (end == std::string::npos) break;
    at = end + 1;
  }
  for (std::size_t i = 1; i < trailing; ++i) os << "\n";
}

// The value after "key:" or "-": on the same line when it is a scalar or empty. Literal
// blocks only as a mapping's values, whose indentation the indicator counts from.
void emitValue(std::ostream& os, const ojson& v, int indent, bool inMapping) {
  if (inMapping && v.is_string() && literalSafe(v.get_ref<const std::string&>())) {
    os << " ";
    emitLiteral(os, v.get_ref<const std::string&>(), indent);
  } else if ((v.is_object() || v.is_array()) && !v.empty()) {
    os << "\n";
    emit(os, v, indent + 2);
  } else if (v.is_object()) {
    os << " {}\n";
  } else if (v.is_array()) {
    os << " []\n";
  } else {
    os << " " << scalar(v) << "\n";
  }
}

void emit(std::ostream& os, const ojson& v, int indent) {
  const std::string pad(indent, ' ');
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) {
      os << pad << scalar(ojson(k)) << ":";
      emitValue(os, child, indent, true);
    }
  } else if (v.is_array()) {
    for (const auto& item : v) {
      if (item.is_object() && !item.empty()) {
        // "- key: value" with the mapping's other keys under the first.
        std::ostringstream inner;
        emit(inner, item, indent + 2);
        os << pad << "- " << inner.str().substr(indent + 2);
      } else {
        os << pad << "-";
        emitValue(os, item, indent, false);
      }
    }
  } else {
    os << pad << scalar(v) << "\n";
  }
}

ojson labels(const JobSpec& s) { return {{kJobLabel, s.runId}}; }

ojson metadata(const JobSpec& s, const std::string& name, bool namespaced) {
  ojson m = {{"name", name}};
  if (namespaced) m["namespace"] = s.ns;
  m["labels"] = labels(s);
  return m;
}

std::string name(const JobSpec& s) { return "cpscale-" + s.runId; }

}  // namespace

std::vector<PolicyRule> runRules(const std::vector<workloads::WorkloadPtr>& entries) {
  namespace gvr = kube::gvr;
  kube::RuleSet g;
  const kube::GroupVersionResource crds = gvr::kCustomResourceDefinitions;
  // What each workload's actors send, as its kind grants it.
  for (const auto& w : entries)
    if (const workloads::WorkloadKind* kind = workloads::findKind(w->kind())) kind->grant(*w, g);

  // Cleanup, by label (workloads/cleanup.h): a deletecollection per namespace of every
  // resource a run may create objects of, then the namespaces and CRDs one by one.
  // RBAC cannot narrow a list to a label: the role reads every object of these
  // resources, Secrets included.
  for (const auto& r : workloads::builtinRunResources()) g.add(r, {"list", "deletecollection"});
  for (const auto& w : entries)
    for (const auto& r : w->resources()) g.add(r, {"list", "deletecollection"});
  g.add(gvr::kNamespaces, {"list", "delete"});
  g.add(crds, {"list", "delete"});
  // Whether a controller-manager runs (the namespaces' finalizer is then its job; the
  // role does not grant finalizing namespaces).
  g.add(gvr::kLeases.group, gvr::kLeases.resource, {"get"}, {"kube-controller-manager"});
  // The shards' meeting and results, in `default`.
  g.add(gvr::kConfigMaps, {"create", "get", "patch", "delete"});
  // The servers behind the `kubernetes` Service (recorded in the result).
  g.add("", "endpoints", {"get"}, {"kubernetes"});
  std::vector<PolicyRule> rules = g.rules();
  // The servers' metrics, scraped by shard 0.
  rules.push_back({{}, {}, {"get"}, {}, {"/metrics"}});
  return rules;
}

std::vector<std::string> jobArgs(const JobSpec& s) {
  std::vector<std::string> args{"run",
                                escapeExpansion("/scenario/" + s.scenarioFile),
                                "--in-cluster",
                                "--yes",
                                "--shard",
                                "$(JOB_COMPLETION_INDEX)/" + std::to_string(s.shards),
                                "--run-id",
                                s.runId,
                                "--publish-result",
                                "--out",
                                "/work/out"};
  for (const auto& o : s.overrides) {
    args.push_back("--set");
    args.push_back(escapeExpansion(o));
  }
  return args;
}

std::vector<ojson> jobManifests(const JobSpec& s) {
  const std::string n = name(s);
  const std::string scenarioMap = n + "-scenario";
  std::vector<ojson> docs;
  docs.push_back({{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", metadata(s, scenarioMap, true)},
                  {"data", {{s.scenarioFile, s.scenarioText}}}});
  docs.push_back({{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", metadata(s, n, true)}});
  docs.push_back({{"apiVersion", kRbac + "/v1"},
                  {"kind", "ClusterRole"},
                  {"metadata", metadata(s, n, false)},
                  {"rules", ojson(kube::toJson(s.rules))}});
  docs.push_back({{"apiVersion", kRbac + "/v1"},
                  {"kind", "ClusterRoleBinding"},
                  {"metadata", metadata(s, n, false)},
                  {"roleRef", {{"apiGroup", kRbac}, {"kind", "ClusterRole"}, {"name", n}}},
                  {"subjects", ojson::array({{{"kind", "ServiceAccount"}, {"name", n}, {"namespace", s.ns}}})}});

  const ojson container = {
      {"name", "cpscale"},
      {"image", s.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"args", jobArgs(s)},
      // The kubeconfig default ($HOME/.kube/config) and anything else written under
      // $HOME land on the writable volume.
      {"env", ojson::array({{{"name", "HOME"}, {"value", "/work"}}})},
      {"resources",
       {{"requests", {{"cpu", std::to_string(std::max<std::size_t>(1, s.workers))}, {"memory", "512Mi"}}}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", ojson::array({"ALL"})}}}}},
      {"volumeMounts", ojson::array({{{"name", "work"}, {"mountPath", "/work"}},
                                     {{"name", "scenario"}, {"mountPath", "/scenario"}, {"readOnly", true}}})}};
  ojson podSpec = {
      {"serviceAccountName", n},
      {"restartPolicy", "Never"},
      // A stopped shard 0 deletes the run's objects first (at most 2 minutes) and every
      // shard publishes what it measured.
      {"terminationGracePeriodSeconds", 180},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", kImageUser},
        {"runAsGroup", kImageUser},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      // Shards on different nodes where there are nodes to spare: each is a load
      // generator, and two on one node compete for its cores.
      {"affinity",
       {{"podAntiAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           ojson::array(
               {{{"weight", 100},
                 {"podAffinityTerm",
                  {{"labelSelector", {{"matchLabels", labels(s)}}}, {"topologyKey", "kubernetes.io/hostname"}}}}})}}}}},
      {"containers", ojson::array({container})},
      {"volumes", ojson::array({{{"name", "work"}, {"emptyDir", ojson::object()}},
                                {{"name", "scenario"}, {"configMap", {{"name", scenarioMap}}}}})}};
  docs.push_back({{"apiVersion", "batch/v1"},
                  {"kind", "Job"},
                  {"metadata", metadata(s, n, true)},
                  {"spec",
                   {{"completionMode", "Indexed"},
                    {"completions", s.shards},
                    {"parallelism", s.shards},
                    // A shard is never retried: a new pod for index I would join a meeting shard I
                    // has left (its window, its done mark) and publish a second result. A failed
                    // pod fails the Job, which stops the other shards: they stop their load,
                    // publish what they measured, and shard 0 cleans up.
                    {"backoffLimit", 0},
                    // The Job and its pods (their logs) for a day; the results are collected from
                    // their ConfigMaps, which stay until `cpscale collect`.
                    {"ttlSecondsAfterFinished", 86400},
                    {"template", {{"metadata", {{"labels", labels(s)}}}, {"spec", podSpec}}}}}});
  return docs;
}

std::string collectCommand(const JobSpec& s, const std::string& targetArgs) {
  // Setup, run and cleanup, plus time for the image to be pulled and the pods placed.
  const auto timeout = std::chrono::duration_cast<std::chrono::minutes>(s.expectedDuration) + std::chrono::minutes(10);
  std::string cmd = "cpscale collect --run-id " + s.runId + " --shards " + std::to_string(s.shards) + " --timeout " +
                    formatDuration(timeout);
  return targetArgs.empty() ? cmd : cmd + " " + targetArgs;
}

std::string toYaml(const ojson& doc) {
  std::ostringstream os;
  emit(os, doc, 0);
  return os.str();
}

}  // namespace cpscale::run
