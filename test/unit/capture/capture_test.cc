// cpscale capture on stored bodies: two /metrics scrapes 100 s apart and the lists a
// capture makes (test/fixtures/capture), each number of the shape and of the written
// scenario worked out by hand from them. And that a capture sends GETs alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/capture/collect.h"
#include "sim/capture/scenario_writer.h"
#include "sim/capture/shape.h"
#include "sim/common/error.h"
#include "sim/scenario/scenario.h"
#include "test/support/fake_transport.h"

namespace cpscale::capture {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(CPSCALE_SOURCE_DIR) / "test/fixtures/capture";

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
json readJson(const std::string& name) { return json::parse(readText(kFixtures / (name + ".json"))); }

kube::HttpResponse response(int status, std::string body = {}) {
  kube::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}
kube::HttpRequest request(const std::string& method, const std::string& path) {
  kube::HttpRequest r;
  r.method = method;
  r.path = path;
  return r;
}
WriteOptions named(const std::string& name, double scale = 1, const std::string& duration = "5m") {
  WriteOptions o;
  o.name = name;
  o.scale = scale;
  o.duration = duration;
  return o;
}

Reading fixtureReading() {
  Reading r;
  r.server = "https://203.0.113.7:6443";
  r.version = "v1.36.3";
  r.capturedAt = "2026-12-05T12:00:00Z";
  r.windowSeconds = 100;
  r.metricsBefore = readText(kFixtures / "metrics-before.txt");
  r.metricsAfter = readText(kFixtures / "metrics-after.txt");
  r.nodes = readJson("nodes");
  r.nodeLeases = readJson("leases");
  r.namespaces = readJson("namespaces");
  r.crds = readJson("crds");
  for (const ResourceKey& k : dormantBuiltins()) r.builtinLists[k.resource] = readJson(k.resource);
  r.customLists[{"example.com", "gadgets"}] = readJson("gadgets");
  return r;
}

TEST(CaptureShape, NodesAndTheirCadenceFromCountersAndLists) {
  const ClusterShape s = measureShape(fixtureReading());
  EXPECT_EQ(s.nodes.nodes.value, 4);
  ASSERT_TRUE(s.nodes.leaseDurationSeconds);
  EXPECT_EQ(s.nodes.leaseDurationSeconds->value, 40);  // 3 of 4 Leases say 40, one 20
  EXPECT_DOUBLE_EQ(s.nodes.leaseWrites.value, 0.5);    // (1038 + 12 - 990 - 10) / 100, 409s included
  // PATCH 10 -> 14, and PUT 500 -> 4: a restarted counter, counted from 0.
  EXPECT_DOUBLE_EQ(s.nodes.statusPatches.value, 0.08);
  EXPECT_EQ(s.nodes.pods.value, 20);
  EXPECT_DOUBLE_EQ(s.nodes.podStatusPatches.value, 0.26);
  EXPECT_DOUBLE_EQ(s.nodes.podCreates.value, 0.06);  // a counter absent at the start counts from 0
  EXPECT_DOUBLE_EQ(s.nodes.eventCreates.value, 0.24);
  EXPECT_NE(s.nodes.statusPatches.source.find("subresource=status"), std::string::npos);
}

TEST(CaptureShape, CustomResourcesCreatedInTheWindowChurn) {
  const ClusterShape s = measureShape(fixtureReading());
  ASSERT_EQ(s.churned.size(), 1u);
  const ChurnedKind& c = s.churned[0];
  EXPECT_EQ(c.key.describe(), "gadgets.example.com");
  EXPECT_EQ(c.kind, "Gadget");
  EXPECT_DOUBLE_EQ(c.creates.value, 1);
  EXPECT_DOUBLE_EQ(c.deletes.value, 1);
  EXPECT_DOUBLE_EQ(c.specPatches.value, 1);
  EXPECT_DOUBLE_EQ(c.statusPatches.value, 3);
  EXPECT_EQ(c.liveObjects.value, 20);  // 18 and 22
  ASSERT_TRUE(c.bytesPerObject);
  EXPECT_EQ(c.bytesPerObject->value, 3000);  // 66,000 bytes / 22 objects at the end
  EXPECT_EQ(c.namespaces.value, 2);          // a and b
}

TEST(CaptureShape, WhatTheClusterHoldsAtRestLeavesThePlanesOwnOut) {
  const ClusterShape s = measureShape(fixtureReading());
  std::map<std::string, const DormantKind*> by;
  for (const DormantKind& d : s.dormant) by[d.key.describe()] = &d;
  // nothings.empty.io holds no object; roles holds only the bootstrap policy's.
  EXPECT_EQ(by.size(), 6u);
  EXPECT_FALSE(by.count("nothings.empty.io"));
  EXPECT_FALSE(by.count("roles.rbac.authorization.k8s.io"));
  ASSERT_TRUE(by.count("things.op.example.org"));
  EXPECT_TRUE(by["things.op.example.org"]->custom);
  EXPECT_EQ(by["things.op.example.org"]->objects.value, 50);
  EXPECT_EQ(by["things.op.example.org"]->watches.value, 3);  // cluster and namespace scopes; the LIST is not a watch
  EXPECT_EQ(by["things.op.example.org"]->bytesPerObject->value, 2600);
  EXPECT_FALSE(by["stuff.other.io"]->bytesPerObject) << "a size estimate of -1 is not a size";
  // kube-root-ca.crt in a and b and kube-system's ConfigMap are the plane's.
  EXPECT_EQ(by["configmaps"]->objects.value, 3);
  EXPECT_EQ(by["secrets"]->objects.value, 2);
  EXPECT_EQ(by["serviceaccounts"]->objects.value, 1);  // each namespace's default is the plane's
  EXPECT_EQ(by["clusterroles.rbac.authorization.k8s.io"]->objects.value, 1);
  EXPECT_DOUBLE_EQ(by["configmaps"]->patches.value, 0.1);
  EXPECT_EQ(s.userNamespaces.value, 3);
  // A dry run writes nothing; what no workload writes is said.
  EXPECT_EQ(s.notReproduced,
            (std::vector<std::string>{"POST serviceaccounts/token at 2/s", "POST deployments.apps at 0.05/s"}));
}

// fitChurn's lifecycle writes what was measured: per session 1 POST, 2 spec PATCHes per
// suspension, and a status PATCH entering each running spell plus one per interval.
TEST(CaptureChurnFit, TheFittedLifecycleWritesTheMeasuredRates) {
  ChurnedKind c;
  c.creates.value = 5;
  c.deletes.value = 5;
  c.specPatches.value = 7.5;  // 0.75 suspensions per session
  c.statusPatches.value = 22;
  c.liveObjects.value = 106;
  const ChurnFit f = fitChurn(c);
  EXPECT_DOUBLE_EQ(f.sessionsPerMinute, 300);
  double k = 0, pk = 1;
  for (int i = 1; i <= f.maxSuspends; ++i) k += (pk *= f.suspendProbability);
  EXPECT_NEAR(2 * k * 5, 7.5, 1e-9);
  const double spells = 1 + k;
  EXPECT_NEAR(f.dwellSeconds * (spells + k) * 5, 106, 1e-6);  // Little's law
  ASSERT_GT(f.statusIntervalSeconds, 0);
  const double perSpell = 1 + 1 / std::expm1(f.statusIntervalSeconds / f.dwellSeconds);
  EXPECT_NEAR(5 * spells * perSpell, 22, 1e-6);

  c.specPatches.value = 0;    // no suspension: one running spell per session
  c.statusPatches.value = 5;  // one status PATCH a session: on transitions only
  const ChurnFit g = fitChurn(c);
  EXPECT_EQ(g.suspendProbability, 0);
  EXPECT_EQ(g.statusIntervalSeconds, 0);
}

TEST(CaptureScenario, TheFixtureClusterIsWrittenExactlyAsWorkedOutByHand) {
  const std::string text = writeScenario(measureShape(fixtureReading()), named("fixture", 1, "2m"));
  EXPECT_EQ(text, readText(kFixtures / "expected-scenario.yaml"));
}

// Stored copies for what the worked fixture does not reach. Written by the code and read
// by eye, not worked out by hand: they hold the text still. After a change meant to be
// made, CPSCALE_UPDATE_CAPTURE_GOLDEN=1 rewrites them, to be read in the diff.
void expectStored(const std::string& text, const std::string& name) {
  if (std::getenv("CPSCALE_UPDATE_CAPTURE_GOLDEN")) std::ofstream(kFixtures / name) << text;
  EXPECT_EQ(text, readText(kFixtures / name)) << name;
}

std::string measuredText(const Measured& m) { return significant(m.value, 6) + " <- " + m.source + "\n"; }
std::string measuredText(const std::optional<Measured>& m) { return m ? measuredText(*m) : "none\n"; }

// Every number of a shape and where it came from, one a line.
std::string shapeText(const ClusterShape& s) {
  std::string t = s.server + " " + s.version + " " + s.capturedAt + " " + significant(s.windowSeconds) + " s\n";
  const NodeShape& n = s.nodes;
  for (const Measured* m : {&n.nodes, &n.leaseWrites, &n.statusPatches, &n.pods, &n.podStatusPatches, &n.podCreates,
                            &n.podDeletes, &n.eventCreates})
    t += "node " + measuredText(*m);
  t += "node lease " + measuredText(n.leaseDurationSeconds);
  for (const ChurnedKind& c : s.churned) {
    t += "churned " + c.key.describe() + " " + c.kind + "\n";
    for (const Measured* m : {&c.creates, &c.deletes, &c.specPatches, &c.statusPatches, &c.liveObjects, &c.namespaces})
      t += "  " + measuredText(*m);
    t += "  bytes " + measuredText(c.bytesPerObject);
  }
  for (const DormantKind& d : s.dormant) {
    t += "dormant " + d.key.describe() + (d.custom ? " custom\n" : "\n");
    for (const Measured* m : {&d.objects, &d.watches, &d.patches}) t += "  " + measuredText(*m);
    t += "  bytes " + measuredText(d.bytesPerObject);
  }
  t += "namespaces " + measuredText(s.userNamespaces);
  for (const WriteRate& w : s.writes)
    t += "write " + w.verb + " " + w.key.describe() + "/" + w.subresource + " " + significant(w.perSecond, 6) + "\n";
  for (const std::string& w : s.notReproduced) t += "not reproduced " + w + "\n";
  return t;
}

TEST(CaptureShape, EveryNumberAndItsSourceAreTheStoredOnes) {
  expectStored(shapeText(measureShape(fixtureReading())), "expected-shape.txt");
}

TEST(CaptureScenario, TwiceTheScaleWithCrdTemplatesIsTheStoredScenario) {
  WriteOptions o = named("fixture-x2", 2, "10m");
  o.crdDir = "fixture.crds";
  expectStored(writeScenario(measureShape(fixtureReading()), o), "expected-scenario-x2.yaml");
}

// No node Lease, status write or pod; a churned kind deleting little, of no size and
// no CRD; nothing at rest.
TEST(CaptureScenario, ASparseClusterIsTheStoredScenario) {
  ClusterShape s = measureShape(fixtureReading());
  s.nodes.leaseDurationSeconds.reset();
  s.nodes.statusPatches.value = 0;
  s.nodes.pods.value = 0;
  ChurnedKind& c = s.churned.at(0);
  c.deletes.value = c.creates.value / 2;
  c.bytesPerObject.reset();
  c.crd = json();
  s.dormant.clear();
  s.notReproduced.clear();
  WriteOptions o = named("sparse");
  o.crdDir = "sparse.crds";
  expectStored(writeScenario(s, o), "expected-scenario-sparse.yaml");
}

// Objects at rest alone: no load, so no generator gate.
TEST(CaptureScenario, AClusterAtRestIsTheStoredScenario) {
  ClusterShape s = measureShape(fixtureReading());
  s.nodes.nodes.value = 0;
  s.churned.clear();
  expectStored(writeScenario(s, named("at-rest")), "expected-scenario-at-rest.yaml");
}

TEST(CaptureScenario, TheWrittenScenarioLoadsAsRunLoadsIt) {
  const fs::path p = fs::path(::testing::TempDir()) / "captured.yaml";
  std::ofstream(p) << writeScenario(measureShape(fixtureReading()), named("fixture"));
  const scenario::Scenario s = scenario::loadScenario(p);
  ASSERT_EQ(s.workloads.size(), 3u);
  EXPECT_EQ(s.name, "fixture");
  EXPECT_EQ(s.warmup, std::chrono::seconds(40));  // twice the 20 s a session lives
  EXPECT_EQ(s.gates.size(), 2u);
}

TEST(CaptureScenario, ScaleMultipliesNodesRatesAndObjectsNotNamespacesKindsOrWatchers) {
  const ClusterShape shape = measureShape(fixtureReading());
  const fs::path p = fs::path(::testing::TempDir()) / "captured-x2.yaml";
  std::ofstream(p) << writeScenario(shape, named("fixture", 2));
  const json e = scenario::loadScenario(p).effective;
  const json& w = e["workloads"];
  EXPECT_EQ(w[0]["count"], 8);
  EXPECT_EQ(w[0]["podsPerNode"], 5);
  EXPECT_EQ(w[0]["churn"]["podReplacementsPerMinute"], 7.2);
  EXPECT_EQ(w[1]["sessionsPerMinute"], 120);
  EXPECT_EQ(w[1]["namespaces"], 2);
  EXPECT_EQ(w[2]["crdKinds"], 2);
  EXPECT_EQ(w[2]["objectsPerKind"], 80);
  EXPECT_EQ(w[2]["configMaps"], 6);
  EXPECT_EQ(w[2]["watchers"]["perKind"], 2);
  EXPECT_EQ(w[2]["updatesPerSecond"], 0.2);
}

TEST(CaptureScenario, AGroupOutsideCpscaleIsRenamedUnderCapturedNeverInstalledAsIs) {
  const std::string text = writeScenario(measureShape(fixtureReading()), {});
  EXPECT_NE(text.find("crd: gadgets.example-com.captured.cpscale.io, kind: Gadget"), std::string::npos) << text;
  EXPECT_NE(text.find("captured as gadgets.example.com"), std::string::npos);
}

// The captured CRD's storage version (v2 here) served as v1, with its own properties
// and printer columns, made to take a session: its required lists and CEL rules at the
// root, spec and status dropped, spec.suspend retyped as the actor writes it (the
// captured schema said string), a status subresource added.
TEST(CaptureScenario, AChurnedKindIsReplayedWithItsCapturedSchemaMadeToTakeSessions) {
  const ClusterShape s = measureShape(fixtureReading());
  std::string why;
  const auto t = replayCrdTemplate(s.churned.at(0), why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ((*t)["metadata"]["name"], "{{plural}}.{{group}}");
  EXPECT_EQ((*t)["metadata"]["annotations"]["cpscale.io/captured-from"], "gadgets.example.com v2");
  EXPECT_EQ((*t)["spec"]["names"]["kind"], "{{kind}}");
  ASSERT_EQ((*t)["spec"]["versions"].size(), 1u);
  const json& v = (*t)["spec"]["versions"][0];
  EXPECT_EQ(v["name"], "v1");
  EXPECT_TRUE(v["storage"].get<bool>());
  EXPECT_TRUE(v["subresources"].contains("status"));
  EXPECT_EQ(v["additionalPrinterColumns"][0]["jsonPath"], ".spec.size");
  const json& root = v["schema"]["openAPIV3Schema"];
  EXPECT_FALSE(root.contains("required"));
  EXPECT_FALSE(root.contains("x-kubernetes-validations"));
  const json& spec = root["properties"]["spec"];
  EXPECT_TRUE(spec["x-kubernetes-preserve-unknown-fields"].get<bool>());
  EXPECT_FALSE(spec.contains("required"));
  EXPECT_FALSE(spec.contains("x-kubernetes-validations"));
  EXPECT_EQ(spec["properties"]["size"], (json{{"type", "integer"}, {"minimum", 1}}));  // kept
  EXPECT_EQ(spec["properties"]["suspend"]["type"], "boolean");
  EXPECT_EQ(spec["properties"]["payload"]["type"], "string");
  EXPECT_EQ(root["properties"]["status"]["properties"]["ready"]["type"], "boolean");
  EXPECT_EQ(root["properties"]["status"]["properties"]["step"]["type"], "integer");

  ChurnedKind cluster = s.churned.at(0);
  cluster.crd["spec"]["scope"] = "Cluster";
  EXPECT_FALSE(replayCrdTemplate(cluster, why));
  EXPECT_NE(why.find("cluster-scoped"), std::string::npos) << why;
}

// With crdDir the scenario names the template beside it, and loads with it there.
TEST(CaptureScenario, TheScenarioNamesItsCrdTemplatesBesideIt) {
  const fs::path dir = fs::path(::testing::TempDir()) / "capture-crds";
  fs::remove_all(dir);
  fs::create_directories(dir / "prod.crds");
  const ClusterShape shape = measureShape(fixtureReading());
  WriteOptions o = named("prod");
  o.crdDir = "prod.crds";
  const std::string text = writeScenario(shape, o);
  EXPECT_NE(text.find("    crdTemplate: prod.crds/gadgets.example.com.json\n"), std::string::npos) << text;
  std::string why;
  std::ofstream(dir / "prod.crds" / "gadgets.example.com.json") << replayCrdTemplate(shape.churned.at(0), why)->dump();
  std::ofstream(dir / "prod.yaml") << text;
  EXPECT_EQ(scenario::loadScenario(dir / "prod.yaml").workloads.size(), 3u);
  fs::remove(dir / "prod.crds" / "gadgets.example.com.json");
  EXPECT_THROW(scenario::loadScenario(dir / "prod.yaml"), ConfigError);  // not found: named
  fs::remove_all(dir);
}

TEST(CaptureShape, BadBodiesAreNamed) {
  Reading r = fixtureReading();
  r.metricsAfter = "apiserver_request_total{verb=\"PUT\" 1\n";
  try {
    measureShape(r);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/metrics at the window's end"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
  }
  r.metricsAfter = "# TYPE up gauge\nup 1\n";
  EXPECT_THROW(measureShape(r), UnavailableError);
}

// ---- collect: GETs only ----

TEST(CaptureReadOnly, AnythingButAGetIsRefusedBeforeTheNetwork) {
  kube::FakeTransport inner;
  inner.setHandler([](const kube::HttpRequest&) { return response(200); });
  ReadOnlyTransport t(inner);
  for (const char* m : {"POST", "PUT", "PATCH", "DELETE"}) {
    kube::HttpRequest req = request(m, "/api/v1/namespaces");
    EXPECT_THROW(t.submit(req, [](kube::HttpResponse) {}), std::logic_error) << m;
  }
  EXPECT_TRUE(inner.requests().empty());
  EXPECT_EQ(kube::roundTrip(t, request("GET", "/version")).status, 200);
  EXPECT_EQ(t.gets(), 1u);
}

// A cluster served from the fixtures: the first /metrics is the window's start, the
// second its end; ConfigMaps come in two pages.
class FixtureCluster {
 public:
  FixtureCluster() {
    transport.setHandler([this](const kube::HttpRequest& req) { return answer(req); });
  }
  kube::FakeTransport transport;
  int metricsServed = 0;

 private:
  kube::HttpResponse answer(const kube::HttpRequest& req) {
    const std::string path = req.path.substr(0, req.path.find('?'));
    auto ok = [](std::string body) { return response(200, std::move(body)); };
    if (path == "/version") return ok(R"({"gitVersion":"v1.36.3"})");
    if (path == "/metrics")
      return ok(readText(kFixtures / (metricsServed++ == 0 ? "metrics-before.txt" : "metrics-after.txt")));
    if (path == "/api/v1/configmaps") {
      json all = readJson("configmaps");
      json page = all;
      const bool second = req.path.find("continue=next") != std::string::npos;
      page["items"] = json::array();
      for (std::size_t i = second ? 3 : 0; i < (second ? all["items"].size() : 3); ++i)
        page["items"].push_back(all["items"][i]);
      if (!second) page["metadata"]["continue"] = "next";
      return ok(page.dump());
    }
    static const std::map<std::string, std::string> lists = {
        {"/api/v1/nodes", "nodes"},
        {"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "leases"},
        {"/api/v1/namespaces", "namespaces"},
        {"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "crds"},
        {"/api/v1/secrets", "secrets"},
        {"/api/v1/serviceaccounts", "serviceaccounts"},
        {"/apis/rbac.authorization.k8s.io/v1/roles", "roles"},
        {"/apis/rbac.authorization.k8s.io/v1/rolebindings", "rolebindings"},
        {"/apis/rbac.authorization.k8s.io/v1/clusterroles", "clusterroles"},
        {"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "clusterrolebindings"},
        {"/apis/example.com/v2/gadgets", "gadgets"},
    };
    if (auto it = lists.find(path); it != lists.end()) return ok(readJson(it->second).dump());
    return response(404, "{}");
  }
};

TEST(CaptureCollect, ReadsWithGetsAloneAndWaitsTheWindowOnce) {
  FixtureCluster cluster;
  double clock = 1000;
  std::vector<std::chrono::milliseconds> waits;
  CollectOptions o;
  o.window = std::chrono::seconds(100);
  o.seconds = [&] { return clock; };
  o.wait = [&](std::chrono::milliseconds d) {
    waits.push_back(d);
    clock += std::chrono::duration<double>(d).count();
  };
  o.now = [] { return std::string("2026-12-05T12:00:00Z"); };
  const Reading r = collect(cluster.transport, o);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0], std::chrono::seconds(100));
  EXPECT_DOUBLE_EQ(r.windowSeconds, 100);
  EXPECT_EQ(r.version, "v1.36.3");
  EXPECT_EQ(cluster.metricsServed, 2);
  for (const auto& rec : cluster.transport.requests()) EXPECT_EQ(rec.request.method, "GET") << rec.request.path;
  // Both pages of ConfigMaps, and the custom resource created in the window at the
  // version its CRD stores (v2, not the also-served v1beta1).
  EXPECT_EQ(r.builtinLists.at("configmaps")["items"].size(), 6u);
  ASSERT_EQ(r.customLists.size(), 1u);
  EXPECT_EQ(r.customLists.begin()->second["items"].size(), 3u);
  // Lists of objects ask for their metadata only.
  bool metadataOnly = false;
  for (const auto& rec : cluster.transport.requests())
    if (rec.request.path.rfind("/api/v1/secrets", 0) == 0)
      for (const auto& h : rec.request.headers)
        metadataOnly = metadataOnly || h.value.find("as=PartialObjectMetadataList") != std::string::npos;
  EXPECT_TRUE(metadataOnly);
  // And what it read gives the same shape as the stored reading.
  const ClusterShape a = measureShape(r), b = measureShape(fixtureReading());
  EXPECT_EQ(a.dormant.size(), b.dormant.size());
  EXPECT_EQ(a.churned[0].namespaces.value, b.churned[0].namespaces.value);
}

TEST(CaptureCollect, AGetThatFailsNamesItsPathAndStatusNotTheCredentials) {
  kube::FakeTransport t;
  t.setHandler([](const kube::HttpRequest& req) {
    if (req.path == "/version") return response(200, "{}");
    return response(403, "forbidden");
  });
  try {
    CollectOptions o;
    o.window = std::chrono::seconds(10);
    o.wait = [](std::chrono::milliseconds) {};
    collect(t, o);
    FAIL();
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("GET /metrics"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("HTTP 403"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cpscale::capture
