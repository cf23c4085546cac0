// The vanilla control plane, exercised through cpscale's own client and through stock
// kubectl: readiness, CRUD on Leases and custom resources, watches, TLS and HTTP/2, and
// the controller components (kube-controller-manager, kube-scheduler) beside the
// apiserver: their identities, leader election, metrics and what their running changes.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/kubeconfig.h"
#include "test/integration/plane_fixture.h"
#include "workloads/cleanup.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cpscale::kube;

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config = PlaneEnvironment::instance().restConfig();
    transport = std::make_unique<CurlTransport>(config);
    client = std::make_unique<ApiClient>(*transport, clock);
  }

  RestConfig config;
  engine::WallClock clock;
  std::unique_ptr<CurlTransport> transport;
  std::unique_ptr<ApiClient> client;
};

TEST_F(ControlPlaneTest, KubectlAcceptsTheWrittenKubeconfig) {
  auto r =
      runCommand("kubectl --kubeconfig " + PlaneEnvironment::instance().kubeconfig().string() + " get --raw /readyz");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "ok");
}

TEST_F(ControlPlaneTest, ServesThePinnedVersionOverHttp2) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/version";
  HttpResponse resp = roundTrip(*transport, req);
  ASSERT_TRUE(resp.ok()) << resp.detail;
  ASSERT_EQ(resp.status, 200);
  EXPECT_EQ(resp.httpVersion, "2");
  EXPECT_EQ(json::parse(resp.body).at("gitVersion"), CPSCALE_KUBERNETES_VERSION);
}

TEST_F(ControlPlaneTest, KeysAndKubeconfigAreOwnerOnly) {
  const auto& dir = PlaneEnvironment::instance().plane().record().stateDir;
  for (const auto& p :
       {dir / "kubeconfig", dir / "pki/admin.key", dir / "pki/apiserver.key", dir / "pki/ca.key", dir / "pki/sa.key",
        dir / "kube-controller-manager.kubeconfig", dir / "kube-scheduler.kubeconfig",
        dir / "pki/kube-controller-manager.key", dir / "pki/kube-scheduler.key"}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(fs::status(p).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  }
}

TEST_F(ControlPlaneTest, ListensOnLoopbackOnly) {
  for (const auto& c : PlaneEnvironment::instance().plane().record().components)
    EXPECT_NE(c.url.find("://127.0.0.1:"), std::string::npos) << c.url;
  // Every listening socket of the plane's processes is bound to 127.0.0.1.
  for (const auto& c : PlaneEnvironment::instance().plane().record().components) {
    auto r = runCommand("ss -ltnpH 2>/dev/null | grep 'pid=" + std::to_string(c.process.pid) + ",'");
    ASSERT_FALSE(r.output.empty()) << c.name << " has no listening socket?";
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
      EXPECT_NE(line.find("127.0.0.1:"), std::string::npos) << c.name << ": " << line;
  }
}

TEST_F(ControlPlaneTest, LeaseLifecycleWithConflict) {
  ResourceRef leases = ResourceRef(gvr::kLeases).in("kube-node-lease");
  std::string name = "cpscale-it-lease";
  client->remove(leases.named(name));
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", name}, {"labels", {{"cpscale.io/run", "itest"}}}}},
                {"spec", {{"holderIdentity", name}, {"leaseDurationSeconds", 40}}}};
  ApiResult created = client->create(leases, lease);
  ASSERT_TRUE(created.ok()) << created.describe();
  EXPECT_EQ(created.status, 201);

  ApiResult got = client->get(leases.named(name));
  ASSERT_TRUE(got.ok()) << got.describe();
  EXPECT_EQ(got.body["spec"]["holderIdentity"], name);

  // A kubelet renews by PUT of its cached object.
  json renewed = got.body;
  renewed["spec"]["renewTime"] = "2026-01-01T00:00:00.000000Z";
  ApiResult updated = client->update(leases.named(name), renewed);
  ASSERT_TRUE(updated.ok()) << updated.describe();
  EXPECT_NE(updated.body["metadata"]["resourceVersion"], got.body["metadata"]["resourceVersion"]);

  // The same stale object again: 409 Conflict, returned, not retried.
  ApiResult stale = client->update(leases.named(name), renewed);
  EXPECT_TRUE(stale.conflict()) << stale.describe();
  EXPECT_EQ(stale.attempts, 1);

  ApiResult dup = client->create(leases, lease);
  EXPECT_TRUE(dup.alreadyExists()) << dup.describe();

  ApiResult removed = client->remove(leases.named(name));
  EXPECT_TRUE(removed.ok()) << removed.describe();
  EXPECT_TRUE(client->get(leases.named(name)).notFound());
}

json sessionCrd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "itsessions.it.cpscale.io", "labels": {"cpscale.io/run": "itest"}},
    "spec": {
      "group": "it.cpscale.io", "scope": "Namespaced",
      "names": {"plural": "itsessions", "singular": "itsession", "kind": "ITSession"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
    }})");
}

TEST_F(ControlPlaneTest, CustomResourceLifecycle) {
  ResourceRef crds(gvr::kCustomResourceDefinitions);
  ApiResult crd = client->create(crds, sessionCrd());
  ASSERT_TRUE(crd.ok() || crd.alreadyExists()) << crd.describe();
  // Wait for the CRD to be Established (bounded; the apiserver needs a moment).
  bool established = false;
  for (int i = 0; i < 100 && !established; ++i) {
    ApiResult c = client->get(crds.named("itsessions.it.cpscale.io"));
    for (const auto& cond : c.body["status"].value("conditions", json::array()))
      established = established || (cond["type"] == "Established" && cond["status"] == "True");
    if (!established) clock.sleepFor(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(established);

  ResourceRef sessions = ResourceRef({"it.cpscale.io", "v1", "itsessions", true}).in("default");
  json obj = {{"apiVersion", "it.cpscale.io/v1"},
              {"kind", "ITSession"},
              {"metadata", {{"name", "s1"}, {"labels", {{"cpscale.io/run", "itest"}}}}},
              {"spec", {{"agent", "a"}}}};
  // The discovery of a new CRD can lag Established by a moment: retry the first create briefly.
  ApiResult created;
  for (int i = 0; i < 50; ++i) {
    created = client->create(sessions, obj);
    if (!created.notFound()) break;
    clock.sleepFor(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(created.ok()) << created.describe();

  ApiResult patched = client->patchMerge(sessions.named("s1"), {{"spec", {{"state", "suspended"}}}});
  ASSERT_TRUE(patched.ok()) << patched.describe();
  EXPECT_EQ(patched.body["spec"]["state"], "suspended");
  EXPECT_EQ(patched.body["spec"]["agent"], "a");

  json withStatus = patched.body;
  withStatus["status"] = {{"phase", "Running"}};
  ApiResult status = client->update(sessions.named("s1").sub("status"), withStatus);
  ASSERT_TRUE(status.ok()) << status.describe();
  EXPECT_EQ(status.body["status"]["phase"], "Running");

  ListOptions byRun;
  byRun.labelSelector = "cpscale.io/run=itest";
  ApiResult listed = client->list(sessions.collection(), byRun);
  ASSERT_TRUE(listed.ok()) << listed.describe();
  ASSERT_EQ(listed.body["items"].size(), 1u);

  EXPECT_TRUE(client->remove(sessions.named("s1")).ok());
  ApiResult gone = client->remove(crds.named("itsessions.it.cpscale.io"));
  EXPECT_TRUE(gone.ok()) << gone.describe();
}

TEST_F(ControlPlaneTest, WatchSeesAddedModifiedDeleted) {
  ResourceRef cms = ResourceRef(gvr::kConfigMaps).in("default");
  ListOptions sel;
  sel.labelSelector = "cpscale.io/watch=it";
  ApiResult initial = client->list(cms, sel);
  ASSERT_TRUE(initial.ok()) << initial.describe();
  ListOptions wo = sel;
  wo.resourceVersion = initial.body["metadata"]["resourceVersion"];
  wo.allowWatchBookmarks = true;

  std::vector<std::string> seen;
  bool closed = false;
  CallId w = client->watch(
      cms, wo,
      [&](const WatchEvent& e) {
        if (e.type != WatchEventType::kBookmark) seen.push_back(std::string(toString(e.type)));
      },
      [&](const ApiResult&) { closed = true; });

  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "watched"}, {"labels", {{"cpscale.io/watch", "it"}}}}},
             {"data", {{"k", "v1"}}}};
  ASSERT_TRUE(client->create(cms, cm).ok());
  ASSERT_TRUE(client->patchMerge(cms.named("watched"), {{"data", {{"k", "v2"}}}}).ok());
  ASSERT_TRUE(client->remove(cms.named("watched")).ok());

  auto deadline = clock.now() + std::chrono::seconds(10);
  while (seen.size() < 3 && clock.now() < deadline) transport->poll(std::chrono::milliseconds(50));
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));
  client->cancel(w);
  EXPECT_TRUE(closed);
}

const controlplane::Component* member(const controlplane::PlaneRecord& r, const std::string& role) {
  for (const auto& c : r.components)
    if (c.role == role) return &c;
  return nullptr;
}

TEST_F(ControlPlaneTest, ControllersRunByDefaultAndEachHoldsItsLeaderLease) {
  const auto& rec = PlaneEnvironment::instance().plane().record();
  for (const char* role : {"kube-controller-manager", "kube-scheduler"}) {
    SCOPED_TRACE(role);
    const auto* c = member(rec, role);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(controlplane::isRunning(c->process));
    EXPECT_EQ(c->apiserver, "kube-apiserver-0");
    EXPECT_FALSE(c->dedicatedApiserver);
    // Leader election on: each acquires its Lease in kube-system (bounded wait: the
    // first acquisition follows the start by a retry period or two).
    ApiResult lease;
    std::string holder;
    for (int i = 0; i < 150 && holder.empty(); ++i) {
      lease = client->get(ResourceRef(gvr::kLeases).in("kube-system").named(role));
      if (lease.ok()) holder = lease.body.value("/spec/holderIdentity"_json_pointer, std::string());
      if (holder.empty()) clock.sleepFor(std::chrono::milliseconds(200));
    }
    EXPECT_FALSE(holder.empty()) << lease.describe();
  }
}

TEST_F(ControlPlaneTest, ControllerMetricsAnswerTheAdminCertificateOnly) {
  const auto& rec = PlaneEnvironment::instance().plane().record();
  for (const auto& [role, family] : {std::pair{"kube-controller-manager", "workqueue_depth"},
                                     std::pair{"kube-scheduler", "scheduler_pending_pods"}}) {
    SCOPED_TRACE(role);
    const auto* c = member(rec, role);
    ASSERT_NE(c, nullptr);
    // Verified against the plane's CA (its serving certificate is the plane's own).
    RestConfig withCert = config;
    withCert.server = c->url;
    CurlTransport t(withCert);
    HttpRequest m;
    m.method = "GET";
    m.path = "/metrics";
    HttpResponse resp = roundTrip(t, m);
    ASSERT_TRUE(resp.ok()) << resp.detail;
    EXPECT_EQ(resp.status, 200);
    EXPECT_NE(resp.body.find(family), std::string::npos);
    // Anonymous: refused (delegated authentication and authorization are on).
    RestConfig anonymous = withCert;
    anonymous.clientCertPem.clear();
    anonymous.clientKeyPem = kube::Secret();
    CurlTransport anon(anonymous);
    HttpResponse refused = roundTrip(anon, m);
    ASSERT_TRUE(refused.ok()) << refused.detail;
    EXPECT_TRUE(refused.status == 401 || refused.status == 403) << refused.status;
  }
}

TEST_F(ControlPlaneTest, TheNamespaceControllerDeletesNamespacesAndPodsGetServiceAccounts) {
  ResourceRef namespaces(gvr::kNamespaces);
  const std::string ns = "cpscale-it-nsctl";
  ASSERT_TRUE(
      client->create(namespaces, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}).ok());
  // ServiceAccount admission is on: once the controller made the namespace's default
  // ServiceAccount, a pod gets it and its token volume.
  ResourceRef sa = ResourceRef(gvr::kServiceAccounts).in(ns).named("default");
  bool haveSa = false;
  for (int i = 0; i < 100 && !haveSa; ++i) {
    haveSa = client->get(sa).ok();
    if (!haveSa) clock.sleepFor(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(haveSa) << "no default ServiceAccount: is the serviceaccount controller running?";
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec", {{"nodeName", "cpscale-it-nowhere"}, {"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
  ApiResult created = client->create(ResourceRef(gvr::kPods).in(ns), pod);
  ASSERT_TRUE(created.ok()) << created.describe();
  EXPECT_EQ(created.body.value("/spec/serviceAccountName"_json_pointer, std::string()), "default");
  bool tokenVolume = false;
  for (const auto& v : created.body.value("/spec/volumes"_json_pointer, json::array()))
    tokenVolume = tokenVolume || v.value("name", "").rfind("kube-api-access-", 0) == 0;
  EXPECT_TRUE(tokenVolume) << created.body.dump();
  kube::DeleteOptions now;
  now.gracePeriodSeconds = 0;  // no kubelet confirms it
  ASSERT_TRUE(client->remove(ResourceRef(gvr::kPods).in(ns).named("p"), now).ok());

  // Deleted: the namespace controller empties and finalizes it (cpscale does not).
  ASSERT_TRUE(client->remove(namespaces.named(ns)).ok());
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = client->get(namespaces.named(ns)).notFound();
    if (!gone) clock.sleepFor(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(gone) << "namespace still there after 60 s";
  EXPECT_TRUE(workloads::controllerManagerRuns(*client));
}

// A second plane: the profile turns both components off, and stopping stops everything.
TEST(ControllerToggleTest, AProfileTurnsControllersOffAndStopStopsEveryMember) {
  controlplane::PlaneOptions po;
  po.stateDir = makeTempDir("cpscale-nocontrollers");
  po.binDir = controlplane::defaultBinDir();
  po.name = "itest-bare";
  po.profile.controllerManager.enabled = false;
  po.profile.scheduler.enabled = false;
  controlplane::PlaneRecord rec;
  {
    controlplane::LocalPlane plane(po);
    rec = plane.record();
    EXPECT_EQ(member(rec, "kube-controller-manager"), nullptr);
    EXPECT_EQ(member(rec, "kube-scheduler"), nullptr);
    kube::LoadOptions lo;
    lo.explicitPath = plane.kubeconfig().string();
    CurlTransport t(kube::loadKubeconfig(lo));
    engine::WallClock clock;
    ApiClient api(t, clock);
    EXPECT_FALSE(workloads::controllerManagerRuns(api));
    // Without the serviceaccount controller, ServiceAccount admission is off: a pod in
    // a namespace without a default ServiceAccount is admitted.
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "p"}}},
                {"spec", {{"nodeName", "nowhere"}, {"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
    ApiResult created = api.create(ResourceRef(gvr::kPods).in("default"), pod);
    EXPECT_TRUE(created.ok()) << created.describe();
  }
  for (const auto& c : rec.components) EXPECT_FALSE(controlplane::isRunning(c.process)) << c.name;

  // Both controllers, the scheduler on a replica of its own: replica 0. The kubeconfig's
  // current context (where kubectl and cpscale's setup go) is then replica 1.
  po.stateDir = makeTempDir("cpscale-withcontrollers");
  po.name = "itest-full";
  po.profile = {};
  po.profile.apiservers = 2;
  po.profile.scheduler.apiserver = 0;
  {
    controlplane::LocalPlane plane(po);
    rec = plane.record();
    ASSERT_NE(member(rec, "kube-controller-manager"), nullptr);
    const auto* scheduler = member(rec, "kube-scheduler");
    ASSERT_NE(scheduler, nullptr);
    EXPECT_EQ(scheduler->apiserver, "kube-apiserver-0");
    EXPECT_TRUE(scheduler->dedicatedApiserver);
    const auto urls = rec.urls("kube-apiserver");
    ASSERT_EQ(urls.size(), 2u);
    EXPECT_EQ(rec.clientApiserverUrls(), std::vector<std::string>{urls[1]});
    kube::LoadOptions lo;
    lo.explicitPath = plane.kubeconfig().string();
    EXPECT_EQ(kube::loadKubeconfig(lo).server, urls[1]);
  }
  for (const auto& c : rec.components) EXPECT_FALSE(controlplane::isRunning(c.process)) << c.name;
}

}  // namespace
}  // namespace cpscale::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new cpscale::testing::PlaneEnvironment());
  return RUN_ALL_TESTS();
}
