// cpscale job: the ClusterRole its pods run with grants what a run sends and nothing
// else (checked by running every workload kind, the run's cleanup, the shards' meeting
// and results on fake servers, and asking of every request what the apiserver's RBAC
// authorizer would); the Indexed Job's manifests; their YAML reading back as they are.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/engine/clock.h"
#include "sim/kube/rbac.h"
#include "sim/run/job_manifest.h"
#include "sim/run/shard.h"
#include "sim/run/shard_results.h"
#include "sim/run/target_check.h"
#include "sim/scenario/scenario.h"
#include "test/support/configmap_server.h"
#include "test/support/fake_transport.h"
#include "test/support/workload_harness.h"
#include "workloads/cleanup.h"
#include "workloads/params.h"
#include "workloads/templates.h"

namespace cpscale::run::testing {
namespace {

namespace fs = std::filesystem;
using kube::PolicyRule;
using kube::RequestAttributes;
using workloads::testing::Harness;
using workloads::testing::jsonResponse;
using workloads::testing::statusResponse;
using namespace std::chrono_literals;

// Every workload kind with every feature that sends a request of its own.
const char* const kKubelets =
    "kind: kubelets\nname: fleet\ncount: 6\npodsPerNode: 2\nevents: true\nstatusChangeProbability: 0.5\n"
    "failures: {fraction: 0.5, at: 30s, returnAfter: 30s}\n"
    "churn: {joinsPerMinute: 30, leavesPerMinute: 30, podReplacementsPerMinute: 30}\n";
const char* const kChurn =
    "kind: churn\nname: sessions\nsessionsPerMinute: 120\nstatusInterval: 2s\ndwell: {running: 5s, suspended: 3s}\n"
    "targets:\n  - {crd: agentsessions.churn.cpscale.io, kind: AgentSession, weight: 1}\n"
    "  - {builtin: configmaps, weight: 1}\n  - {builtin: events, weight: 1}\n";
const char* const kDormant =
    "kind: dormant\nname: platform\ncrdKinds: 2\nobjectsPerKind: 5\nnamespaces: 2\nroles: 2\nroleBindings: 2\n"
    "clusterRoles: 2\nclusterRoleBindings: 2\nserviceAccounts: 2\nconfigMaps: 2\nsecrets: 2\nupdatesPerSecond: 5\n"
    "watchers: {perKind: 1}\n";

const std::string kRbac = "rbac.authorization.k8s.io";

// What the authorizer was asked, and what it refused.
struct Audit {
  std::set<std::string> used;  // "group|resource|verb", "url|verb"
  std::vector<std::string> refused;

  void ask(const std::vector<PolicyRule>& rules, const std::string& method, const std::string& path,
           const std::string& body = "") {
    const RequestAttributes a = kube::requestAttributes(method, path);
    if (a.resourceRequest) {
      used.insert(a.apiGroup + "|" + (a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource) + "|" +
                  a.verb);
    } else {
      used.insert(a.path + "|" + a.verb);
    }
    if (!kube::allows(rules, a)) refused.push_back(kube::describe(a));
    if (a.apiGroup == kRbac && (a.verb == "create" || a.verb == "update" || a.verb == "patch"))
      escalation(rules, a, body);
  }
  // What RBAC's registry checks beyond the verb (pkg/registry/rbac): a role granting
  // what its writer does not hold needs `escalate` on it (the dormant roles grant
  // deployments and widgets, which the role does not), a binding needs `bind` on the
  // role it refers to.
  void escalation(const std::vector<PolicyRule>& rules, const RequestAttributes& a, const std::string& body) {
    auto need = [&](const std::string& verb, const std::string& resource, const std::string& name) {
      used.insert(kRbac + "|" + resource + "|" + verb);
      if (!kube::allows(rules, verb, kRbac, resource, name)) refused.push_back(verb + " " + resource + " " + name);
    };
    if (a.resource == "roles" || a.resource == "clusterroles") need("escalate", a.resource, a.name);
    if ((a.resource == "rolebindings" || a.resource == "clusterrolebindings") && a.verb == "create") {
      const nlohmann::json b = nlohmann::json::parse(body);
      need("bind", b["roleRef"]["kind"] == "Role" ? "roles" : "clusterroles", b["roleRef"]["name"]);
    }
  }
  void askAll(const std::vector<PolicyRule>& rules, const kube::FakeTransport& t) {
    for (const auto& r : t.requests()) ask(rules, r.request.method, r.request.path, r.request.body);
  }
};

std::vector<workloads::WorkloadPtr> make(std::initializer_list<const char*> entries) {
  std::vector<workloads::WorkloadPtr> out;
  for (const char* e : entries) out.push_back(workloads::makeWorkload(workloads::testing::entry(e)));
  return out;
}

// A workload prepared and run for five minutes on the workloads' fake server, which
// answers some writes 409 and some reads and deletes 404, so that the recovery paths
// send their requests too. Its requests are asked of `role`, or of its own role.
void runWorkload(const char* entry, Audit& audit, const std::vector<PolicyRule>* role = nullptr) {
  auto ws = make({entry});
  const std::vector<PolicyRule> rules = role ? *role : runRules(ws);
  Harness h;
  int n = 0;
  h.override = [&n](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
    if (r.method == "GET" && r.path.find("customresourcedefinitions/") != std::string::npos)
      return jsonResponse(200, {{"status", {{"conditions", {{{"type", "Established"}, {"status", "True"}}}}}}});
    ++n;
    if ((r.method == "POST" || r.method == "PUT" || r.method == "PATCH") && n % 3 == 0)
      return statusResponse(409, r.method == "POST" ? "AlreadyExists" : "Conflict");
    if ((r.method == "GET" || r.method == "DELETE") && n % 5 == 0) return statusResponse(404, "NotFound");
    return std::nullopt;
  };
  h.transport.setLatency(0ms);  // prepare() is synchronous
  ws.front()->prepare(h.api, h.sim.clock(), "t1");
  h.transport.setLatency(1ms);
  auto inst = ws.front()->start(h.ctx);
  h.sim.runUntil(engine::TimePoint{5min});
  inst->stop();
  ASSERT_GT(h.transport.requests().size(), 50u);
  audit.askAll(rules, h.transport);
}

// A sync client on a server of the test's own.
struct Client {
  explicit Client(std::function<kube::HttpResponse(const kube::HttpRequest&)> answer)
      : transport(clock), api(transport, clock) {
    transport.setHandler(std::move(answer));
  }
  engine::VirtualClock clock;
  kube::FakeTransport transport;
  kube::ApiClient api;
};

// The run's cleanup when every resource has a labelled object to delete: each list
// answers one (the CRDs list the workloads' own), and a controller-manager runs.
void runCleanup(const std::vector<workloads::WorkloadPtr>& ws, const std::vector<PolicyRule>& rules, Audit& audit) {
  nlohmann::json crds = nlohmann::json::array();
  std::vector<kube::GroupVersionResource> resources;
  for (const auto& w : ws)
    for (const auto& g : w->resources()) {
      resources.push_back(g);
      if (g.group.ends_with("cpscale.io"))
        crds.push_back({{"metadata", {{"name", g.resource + "." + g.group}}},
                        {"spec",
                         {{"group", g.group},
                          {"scope", "Namespaced"},
                          {"names", {{"plural", g.resource}}},
                          {"versions", {{{"name", g.version}, {"storage", true}}}}}}});
    }
  Client c([&](const kube::HttpRequest& r) {
    const RequestAttributes a = kube::requestAttributes(r.method, r.path);
    if (a.verb == "list") {
      if (a.resource == "customresourcedefinitions")
        return jsonResponse(200, {{"items", crds}, {"metadata", nlohmann::json::object()}});
      return jsonResponse(200, {{"items", {{{"metadata", {{"name", "x"}, {"namespace", "cpscale-t1-x"}}}}}},
                                {"metadata", nlohmann::json::object()}});
    }
    if (a.verb == "get" && a.resource == "leases")
      return jsonResponse(200,
                          {{"spec",
                            {{"renewTime", workloads::microTime(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                    std::chrono::system_clock::now().time_since_epoch())
                                                                    .count())},
                             {"leaseDurationSeconds", 15}}}});
    return jsonResponse(200, {{"kind", "Status"}, {"status", "Success"}});
  });
  workloads::CleanupOptions co;
  co.timeout = 5s;
  workloads::cleanupRun(c.api, c.clock, "t1", resources, co);
  audit.askAll(rules, c.transport);
}

// The shards' meeting, a published result, and collect reading and deleting it; the
// servers' Endpoints and /metrics.
void runShardsAndScrapes(const std::vector<PolicyRule>& rules, Audit& audit) {
  ConfigMapServer server;
  Client c([&server](const kube::HttpRequest& r) { return server.answer(r); });
  ShardMeeting zero(c.api, "t1", {0, 2});
  zero.announceSetup();
  zero.steadyAt(1);
  zero.announceDone();
  zero.awaitDone(0s, [] { return false; });
  publishShardResult(c.api, "t1", 0, "{}", kResultChunkBytes);
  readShardResults(c.api, "t1");
  deleteShardResults(c.api, "t1");
  zero.remove();
  apiserverEndpoints(c.api);
  audit.askAll(rules, c.transport);
  audit.ask(rules, "GET", "/metrics");
}

TEST(JobRole, EachWorkloadsRequestsAreAllowedByItsOwnRole) {
  for (const char* entry : {kKubelets, kChurn, kDormant}) {
    SCOPED_TRACE(entry);
    Audit audit;
    runWorkload(entry, audit);
    EXPECT_TRUE(audit.refused.empty()) << ::testing::PrintToString(
        std::set<std::string>(audit.refused.begin(), audit.refused.end()));
  }
}

// The role of a scenario with every kind: what the run sends is allowed, and every
// verb it grants on every resource is one the run sent (or, for escalate and bind,
// needed).
TEST(JobRole, GrantsExactlyWhatARunSends) {
  const auto ws = make({kKubelets, kChurn, kDormant});
  const std::vector<PolicyRule> rules = runRules(ws);
  Audit audit;
  for (const char* entry : {kKubelets, kChurn, kDormant}) runWorkload(entry, audit, &rules);
  runCleanup(ws, rules, audit);
  runShardsAndScrapes(rules, audit);
  EXPECT_TRUE(audit.refused.empty()) << ::testing::PrintToString(audit.refused);

  std::vector<std::string> unused;
  for (const auto& rule : rules) {
    for (const auto& verb : rule.verbs) {
      for (const auto& url : rule.nonResourceURLs)
        if (!audit.used.count(url + "|" + verb)) unused.push_back(url + " " + verb);
      for (const auto& group : rule.apiGroups)
        for (const auto& resource : rule.resources)
          if (!audit.used.count(group + "|" + resource + "|" + verb))
            unused.push_back(group + "/" + resource + " " + verb);
    }
  }
  EXPECT_TRUE(unused.empty()) << "granted, never sent: " << ::testing::PrintToString(unused);
}

// Only a scenario with Roles and bindings gets escalate and bind: with them the role's
// holder could grant itself anything.
TEST(JobRole, EscalateAndBindOnlyForScenariosThatWriteRoles) {
  auto has = [](const std::vector<PolicyRule>& rules, const std::string& verb) {
    for (const auto& r : rules)
      if (std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end()) return true;
    return false;
  };
  for (const char* entry : {kKubelets, kChurn}) {
    const auto rules = runRules(make({entry}));
    EXPECT_FALSE(has(rules, "escalate") || has(rules, "bind")) << entry;
    EXPECT_FALSE(has(rules, "*")) << entry;
  }
  EXPECT_TRUE(has(runRules(make({kDormant})), "escalate"));
  // Its custom resources by their groups, not by a wildcard.
  const auto rules = runRules(make({kDormant}));
  EXPECT_TRUE(kube::allows(rules, "create", "op1.dormant.cpscale.io", "widgets"));
  EXPECT_FALSE(kube::allows(rules, "create", "op2.dormant.cpscale.io", "widgets"));
  EXPECT_FALSE(kube::allows(rules, "get", "", "secrets"));
  EXPECT_FALSE(kube::allows(rules, "update", "", "namespaces/finalize"));
}

TEST(RequestAttributes, AsTheApiserverDerivesThem) {
  auto a = kube::requestAttributes("GET", "/api/v1/namespaces/ns/pods?watch=true&labelSelector=a%3Db");
  EXPECT_EQ(kube::describe(a), "watch pods ns/");
  EXPECT_EQ(kube::describe(kube::requestAttributes("GET", "/api/v1/namespaces/ns/pods?watch=false")), "list pods ns/");
  EXPECT_EQ(kube::describe(kube::requestAttributes("GET", "/api/v1/nodes?limit=1")), "list nodes");
  EXPECT_EQ(kube::describe(kube::requestAttributes("PATCH", "/api/v1/nodes/n1/status")), "patch nodes/status n1");
  EXPECT_EQ(kube::describe(kube::requestAttributes("DELETE", "/apis/coordination.k8s.io/v1/namespaces/x/leases")),
            "deletecollection coordination.k8s.io/leases x/");
  EXPECT_EQ(kube::describe(kube::requestAttributes("PUT", "/api/v1/namespaces/n1/finalize")),
            "update namespaces/finalize n1/n1");
  EXPECT_EQ(kube::describe(kube::requestAttributes("POST", "/api/v1/namespaces")), "create namespaces");
  EXPECT_EQ(kube::describe(kube::requestAttributes("GET", "/metrics")), "get /metrics");
  EXPECT_FALSE(kube::requestAttributes("GET", "/apis/batch").resourceRequest);
  const std::vector<PolicyRule> rules{{{""}, {"*/status"}, {"patch"}, {}, {}},
                                      {{}, {}, {"get"}, {}, {"/debug/*"}},
                                      {{"x.io"}, {"a"}, {"*"}, {"only"}, {}}};
  EXPECT_TRUE(kube::allows(rules, kube::requestAttributes("PATCH", "/api/v1/nodes/n1/status")));
  EXPECT_FALSE(kube::allows(rules, kube::requestAttributes("PATCH", "/api/v1/nodes/n1")));
  EXPECT_TRUE(kube::allows(rules, kube::requestAttributes("GET", "/debug/pprof/heap")));
  EXPECT_FALSE(kube::allows(rules, kube::requestAttributes("GET", "/metrics")));
  EXPECT_TRUE(kube::allows(rules, kube::requestAttributes("DELETE", "/apis/x.io/v1/a/only")));
  EXPECT_FALSE(kube::allows(rules, kube::requestAttributes("DELETE", "/apis/x.io/v1/a/other")));
  // A named rule never allows a create: the name is not in the request.
  EXPECT_FALSE(kube::allows(rules, kube::requestAttributes("POST", "/apis/x.io/v1/a")));
}

JobSpec spec() {
  JobSpec s;
  s.runId = "rjob1";
  s.shards = 3;
  s.image = "registry.example/cpscale:1.2";
  s.ns = "load";
  s.scenarioFile = "smoke.yaml";
  s.scenarioText = "name: smoke\n";
  s.overrides = {"duration=30s", "description=costs $(HOME) and $$"};
  s.workers = 2;
  s.rules = runRules(make({kKubelets}));
  return s;
}

TEST(JobManifests, AnIndexedJobOfNonRootPodsEachOneShard) {
  const JobSpec s = spec();
  const auto docs = jobManifests(s);
  std::vector<std::string> kinds;
  for (const auto& d : docs) {
    kinds.push_back(d["kind"]);
    EXPECT_EQ(d["metadata"]["labels"], (nlohmann::json{{"cpscale.io/job", "rjob1"}}));  // not cpscale.io/run
    EXPECT_NE(d["metadata"]["name"].get<std::string>().find("rjob1"), std::string::npos);
  }
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"}));
  EXPECT_EQ(docs[0]["data"]["smoke.yaml"], "name: smoke\n");
  EXPECT_EQ(docs[2]["rules"], nlohmann::ordered_json(kube::toJson(s.rules)));
  EXPECT_EQ(docs[3]["subjects"][0],
            (nlohmann::ordered_json{{"kind", "ServiceAccount"}, {"name", "cpscale-rjob1"}, {"namespace", "load"}}));
  EXPECT_EQ(docs[3]["roleRef"]["name"], "cpscale-rjob1");

  const auto& job = docs[4];
  EXPECT_EQ(job["apiVersion"], "batch/v1");
  EXPECT_EQ(job["metadata"]["namespace"], "load");
  EXPECT_EQ(job["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(job["spec"]["completions"], 3);
  EXPECT_EQ(job["spec"]["parallelism"], 3);
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_GT(job["spec"]["ttlSecondsAfterFinished"], 0);
  const auto& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["serviceAccountName"], "cpscale-rjob1");
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["runAsUser"], kImageUser);
  EXPECT_NE(pod["securityContext"]["runAsUser"], 0);
  ASSERT_EQ(pod["containers"].size(), 1u);
  const auto& c = pod["containers"][0];
  EXPECT_EQ(c["image"], "registry.example/cpscale:1.2");
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], nlohmann::ordered_json::array({"ALL"}));
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "2");
  EXPECT_TRUE(c["resources"]["requests"].contains("memory"));
  // The output directory is the pod's writable volume; the scenario its ConfigMap.
  EXPECT_EQ(pod["volumes"][0],
            (nlohmann::ordered_json{{"name", "work"}, {"emptyDir", nlohmann::ordered_json::object()}}));
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/work");
  EXPECT_EQ(pod["volumes"][1]["configMap"]["name"], "cpscale-rjob1-scenario");
  EXPECT_EQ(c["volumeMounts"][1]["mountPath"], "/scenario");
  // JOB_COMPLETION_INDEX is the Job controller's to add (from the pod's completion-index
  // label); declaring it would only shadow that.
  for (const auto& e : c["env"]) EXPECT_NE(e["name"], "JOB_COMPLETION_INDEX");

  const std::vector<std::string> args = c["args"];
  EXPECT_EQ(args, jobArgs(s));
  EXPECT_EQ(args, (std::vector<std::string>{"run", "/scenario/smoke.yaml", "--in-cluster", "--yes", "--shard",
                                            "$(JOB_COMPLETION_INDEX)/3", "--run-id", "rjob1", "--publish-result",
                                            "--out", "/work/out", "--set", "duration=30s", "--set",
                                            // the kubelet turns $$ into $: this reads back as written
                                            "description=costs $$(HOME) and $$"}));
}

// A shard parses what the kubelet makes of its arguments: the index it was given.
TEST(JobManifests, TheShardArgumentParsesOnceTheIndexIsIn) {
  const std::vector<std::string> args = jobArgs(spec());
  std::string shard = args[5];
  shard.replace(shard.find("$(JOB_COMPLETION_INDEX)"), 23, "2");
  EXPECT_EQ(parseShard(shard).index, 2u);
  EXPECT_EQ(parseShard(shard).count, 3u);
}

TEST(JobManifests, CollectStepNamesTheRunAndTheCluster) {
  JobSpec s = spec();
  s.expectedDuration = 25min;
  EXPECT_EQ(collectCommand(s, "--kubeconfig /k --yes"),
            "cpscale collect --run-id rjob1 --shards 3 --timeout 35m --kubeconfig /k --yes");
}

nlohmann::json readBack(const std::string& yaml) { return workloads::yamlToJson(YAML::Load(yaml)); }

TEST(JobManifests, YamlReadsBackAsTheManifests) {
  JobSpec s = spec();
  // Every shipped scenario's text, and strings any YAML reader could take for
  // something else.
  for (const auto& f : fs::directory_iterator(fs::path(CPSCALE_SOURCE_DIR) / "scenarios")) {
    if (f.path().extension() != ".yaml") continue;
    SCOPED_TRACE(f.path().string());
    std::ifstream in(f.path());
    std::ostringstream text;
    text << in.rdbuf();
    s.scenarioText = text.str();
    s.rules = runRules(scenario::loadScenario(f.path()).workloads);
    for (const auto& d : jobManifests(s)) EXPECT_EQ(readBack(toYaml(d)), nlohmann::json(d)) << toYaml(d);
  }
  const nlohmann::ordered_json odd = {
      {"strings", {"true",      "yes",     "No",        "on",       "null", "~",   "",     "0",     "1e3",
                   "0x1F",      "-1",      ".5",        "a: b",     "#x",   "- x", "'q'",  "\"q\"", "@at",
                   "tab\there", "é ünï €", "trailing ", " leading", "[x]",  "{x}", "x\ny", "\r\n",  "multi\nline\n"}},
      {"text",
       {{"plain", "a\nb\n"},
        {"noNewline", "a\nb"},
        {"manyNewlines", "a\n\n\n"},
        {"leadingSpaces", "  indented first\nsecond\n"},
        {"blankInside", "a\n\n  b\n"},
        {"crlf", "a\r\nb\r\n"},
        {"onlyNewlines", "\n\n"}}},
      {"empty", {{"map", nlohmann::ordered_json::object()}, {"list", nlohmann::ordered_json::array()}}},
      {"nested", {{{"a", {1, 2}}, {"b", {{"c", nullptr}}}}, {{"x", true}}}},
      {"numbers", {0, -1, 2.5, 1e300}}};
  EXPECT_EQ(readBack(toYaml(odd)), nlohmann::json(odd)) << toYaml(odd);
}

}  // namespace
}  // namespace cpscale::run::testing
