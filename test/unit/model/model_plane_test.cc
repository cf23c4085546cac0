// The model plane's API semantics, through the ApiClient the workloads use, in
// virtual time.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sim/kube/resource.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using kube::ResourceRef;
using nlohmann::json;
using testing::Harness;

json configMap(const std::string& name, const std::string& ns, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
          {"data", {{"k", "v"}}}};
}

json lease(const std::string& name) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", "kube-node-lease"}}},
          {"spec", {{"holderIdentity", name}, {"leaseDurationSeconds", 40}}}};
}

const ResourceRef kLeases = ResourceRef(kube::gvr::kLeases).in("kube-node-lease");

TEST(ModelPlane, CreateGetUpdateConflictDelete) {
  Harness h;
  kube::ApiResult c = h.api->create(kLeases, lease("n1"));
  ASSERT_TRUE(c.ok()) << c.describe();
  EXPECT_EQ(c.status, 201);
  const std::string rv1 = c.body["metadata"]["resourceVersion"];
  EXPECT_FALSE(rv1.empty());
  EXPECT_FALSE(c.body["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(c.body["metadata"]["creationTimestamp"].get<std::string>().empty());
  EXPECT_GT(c.latency, 0ns);

  kube::ApiResult again = h.api->create(kLeases, lease("n1"));
  EXPECT_TRUE(again.alreadyExists()) << again.describe();
  EXPECT_EQ(again.apiStatus.code, 409);

  kube::ApiResult g = h.api->get(kLeases.named("n1"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.body["metadata"]["resourceVersion"], rv1);

  json next = g.body;
  next["spec"]["renewTime"] = "2026-01-01T00:00:00.000000Z";
  kube::ApiResult u = h.api->update(kLeases.named("n1"), next);
  ASSERT_TRUE(u.ok()) << u.describe();
  const std::string rv2 = u.body["metadata"]["resourceVersion"];
  EXPECT_NE(rv2, rv1);
  EXPECT_EQ(u.body["metadata"]["uid"], c.body["metadata"]["uid"]);

  // The same body again carries the stale resourceVersion.
  next["spec"]["renewTime"] = "2026-01-01T00:00:10.000000Z";
  kube::ApiResult stale = h.api->update(kLeases.named("n1"), next);
  EXPECT_TRUE(stale.conflict()) << stale.describe();
  EXPECT_EQ(stale.apiStatus.reason, "Conflict");
  EXPECT_EQ(h.plane->stats().conflicts, 1u);
  EXPECT_EQ(h.plane->stats().alreadyExists, 1u);

  // A write that changes nothing keeps the resourceVersion.
  kube::ApiResult same = h.api->update(kLeases.named("n1"), u.body);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same.body["metadata"]["resourceVersion"], rv2);

  kube::ApiResult d = h.api->remove(kLeases.named("n1"));
  EXPECT_TRUE(d.ok()) << d.describe();
  kube::ApiResult gone = h.api->get(kLeases.named("n1"));
  EXPECT_TRUE(gone.notFound());
  EXPECT_EQ(gone.apiStatus.reason, "NotFound");
  EXPECT_TRUE(h.api->update(kLeases.named("n1"), next).notFound());
  EXPECT_TRUE(h.api->remove(kLeases.named("n1")).notFound());
}

TEST(ModelPlane, NamespacesGenerateNamePatchesAndPreconditions) {
  Harness h;
  const ResourceRef cms = ResourceRef(kube::gvr::kConfigMaps).in("team");
  EXPECT_TRUE(h.api->create(cms, configMap("a", "team")).notFound()) << "no namespace yet";
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}};
  ASSERT_TRUE(h.api->create(ResourceRef(kube::gvr::kNamespaces), ns).ok());
  ASSERT_TRUE(h.api->create(cms, configMap("a", "team")).ok());

  json gen = configMap("", "team");
  gen["metadata"].erase("name");
  gen["metadata"]["generateName"] = "gen-";
  kube::ApiResult g = h.api->create(cms, gen);
  ASSERT_TRUE(g.ok()) << g.describe();
  EXPECT_TRUE(g.body["metadata"]["name"].get<std::string>().starts_with("gen-"));
  EXPECT_EQ(g.body["metadata"]["name"].get<std::string>().size(), 9u);

  kube::ApiResult m = h.api->patchMerge(cms.named("a"), {{"data", {{"k2", "v2"}}}});
  ASSERT_TRUE(m.ok()) << m.describe();
  EXPECT_EQ(m.body["data"]["k"], "v");
  EXPECT_EQ(m.body["data"]["k2"], "v2");
  // Nested: a null removes, an object merges, an array replaces, a new key is added in order.
  kube::ApiResult n = h.api->patchMerge(cms.named("a"), {{"data", {{"k2", nullptr}, {"a0", "first"}}},
                                                         {"metadata", {{"annotations", {{"x", "1"}}}}},
                                                         {"binaryData", json::object()}});
  ASSERT_TRUE(n.ok()) << n.describe();
  EXPECT_EQ(n.body["data"], (json{{"a0", "first"}, {"k", "v"}}));
  EXPECT_EQ(n.body["metadata"]["annotations"]["x"], "1");
  EXPECT_EQ(n.body["metadata"]["name"], "a");
  EXPECT_FALSE(n.body["metadata"]["uid"].get<std::string>().empty());
  // Served as nlohmann::json writes it: keys sorted, so equal objects are equal text.
  EXPECT_EQ(h.api->get(cms.named("a")).body.dump(), n.body.dump());
  kube::ApiResult j = h.api->patchJson(cms.named("a"), json::array({{{"op", "remove"}, {"path", "/data/k"}}}));
  ASSERT_TRUE(j.ok()) << j.describe();
  EXPECT_FALSE(j.body["data"].contains("k"));
  // A merge patch that names a stale resourceVersion is a precondition.
  kube::ApiResult stale = h.api->patchMerge(cms.named("a"), {{"metadata", {{"resourceVersion", "1"}}}});
  EXPECT_TRUE(stale.conflict()) << stale.describe();

  kube::DeleteOptions wrongUid;
  wrongUid.preconditionUid = "not-the-uid";
  EXPECT_TRUE(h.api->remove(cms.named("a"), wrongUid).conflict());
  // Deleting the namespace takes what it holds with it.
  ASSERT_TRUE(h.api->remove(ResourceRef(kube::gvr::kNamespaces).named("team")).ok());
  EXPECT_TRUE(h.api->get(cms.named("a")).notFound());
  EXPECT_TRUE(h.api->get(ResourceRef(kube::gvr::kNamespaces).named("team")).notFound());
}

TEST(ModelPlane, StatusSubresourceAndStrategicNodePatch) {
  Harness h;
  const ResourceRef nodes(kube::gvr::kNodes);
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", "n1"}}},
               {"status",
                {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"lastHeartbeatTime", "t0"}}})}}}};
  ASSERT_TRUE(h.api->create(nodes, node).ok());
  kube::ApiResult p = h.api->patchStrategic(
      nodes.named("n1").sub("status"),
      json::parse(
          R"({"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"type":"Ready","lastHeartbeatTime":"t1"}]}})"));
  ASSERT_TRUE(p.ok()) << p.describe();
  EXPECT_EQ(p.body["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(p.body["status"]["conditions"][0]["lastHeartbeatTime"], "t1");
  // The main resource keeps its status.
  json spec = p.body;
  spec["spec"]["unschedulable"] = true;
  spec["status"] = json::object();
  kube::ApiResult u = h.api->update(nodes.named("n1"), spec);
  ASSERT_TRUE(u.ok()) << u.describe();
  EXPECT_EQ(u.body["status"]["conditions"][0]["lastHeartbeatTime"], "t1");
  EXPECT_EQ(u.body["spec"]["unschedulable"], true);
}

TEST(ModelPlane, ListSelectorsAndPages) {
  Harness h;
  const ResourceRef cms = ResourceRef(kube::gvr::kConfigMaps).in("default");
  for (int i = 0; i < 7; ++i) {
    json labels = {{"app", i % 2 ? "odd" : "even"}, {"n", std::to_string(i)}};
    ASSERT_TRUE(h.api->create(cms, configMap("cm-" + std::to_string(i), "default", labels)).ok());
  }
  kube::ListOptions o;
  o.labelSelector = "app=odd";
  kube::ApiResult odd = h.api->list(cms, o);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd.body["kind"], "ConfigMapList");
  EXPECT_EQ(odd.body["items"].size(), 3u);
  EXPECT_FALSE(odd.body["metadata"]["resourceVersion"].get<std::string>().empty());
  o.labelSelector = "n in (1,2,9),app!=odd";
  EXPECT_EQ(h.api->list(cms, o).body["items"].size(), 1u);
  kube::ListOptions f;
  f.fieldSelector = "metadata.name=cm-4";
  EXPECT_EQ(h.api->list(cms, f).body["items"].size(), 1u);
  EXPECT_EQ(h.api->list(ResourceRef(kube::gvr::kConfigMaps), f).body["items"].size(), 1u) << "across namespaces";

  kube::ListOptions page;
  page.limit = 3;
  std::vector<std::string> names;
  int pages = 0;
  for (;;) {
    kube::ApiResult r = h.api->list(cms, page);
    ASSERT_TRUE(r.ok()) << r.describe();
    ++pages;
    for (const auto& item : r.body["items"]) names.push_back(item["metadata"]["name"]);
    page.continueToken = r.body["metadata"].value("continue", "");
    if (page.continueToken.empty()) break;
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(names.size(), 7u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  kube::ListOptions evens;
  evens.labelSelector = "app=even";
  ASSERT_TRUE(h.api->deleteCollection(cms, evens).ok());
  EXPECT_EQ(h.api->list(cms).body["items"].size(), 3u);
}

TEST(ModelPlane, CrdBecomesEstablishedAndServesItsResources) {
  Harness h;
  json crd = json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"widgets.example.com"},
    "spec":{"group":"example.com","scope":"Namespaced",
            "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
            "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
                         "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})");
  const ResourceRef crds(kube::gvr::kCustomResourceDefinitions);
  const ResourceRef widgets =
      ResourceRef(kube::GroupVersionResource{"example.com", "v1", "widgets", true}).in("default");
  EXPECT_TRUE(h.api->list(widgets).notFound()) << "not served before its CRD";
  ASSERT_TRUE(h.api->create(crds, crd).ok());
  kube::ApiResult g = h.api->get(crds.named("widgets.example.com"));
  ASSERT_TRUE(g.ok());
  bool established = false, accepted = false;
  for (const auto& c : g.body["status"]["conditions"]) {
    established |= c["type"] == "Established" && c["status"] == "True";
    accepted |= c["type"] == "NamesAccepted" && c["status"] == "True";
  }
  EXPECT_TRUE(established);
  EXPECT_TRUE(accepted);
  EXPECT_EQ(g.body["status"]["acceptedNames"]["kind"], "Widget");

  json w = {{"apiVersion", "example.com/v1"},
            {"kind", "Widget"},
            {"metadata", {{"name", "w1"}}},
            {"spec", {{"size", 1}}},
            {"status", {{"phase", "ignored"}}}};
  kube::ApiResult c = h.api->create(widgets, w);
  ASSERT_TRUE(c.ok()) << c.describe();
  EXPECT_FALSE(c.body.contains("status")) << "a status subresource: status is not written on create";
  kube::ApiResult s = h.api->patchMerge(widgets.named("w1").sub("status"), {{"status", {{"phase", "Running"}}}});
  ASSERT_TRUE(s.ok()) << s.describe();
  EXPECT_EQ(s.body["status"]["phase"], "Running");
  EXPECT_EQ(h.api->list(widgets).body["items"].size(), 1u);
  EXPECT_EQ(h.api->list(widgets).body["kind"], "WidgetList");

  ASSERT_TRUE(h.api->remove(crds.named("widgets.example.com")).ok());
  EXPECT_TRUE(h.api->list(widgets).notFound());
}

// Collects a watch's events.
struct Recorder {
  std::vector<kube::WatchEvent> events;
  std::optional<kube::ApiResult> closed;
  std::vector<std::string> types() const {
    std::vector<std::string> t;
    for (const auto& e : events) t.emplace_back(kube::toString(e.type));
    return t;
  }
};

kube::CallId watch(Harness& h, const ResourceRef& coll, kube::ListOptions o, Recorder& rec) {
  return h.api->watch(
      coll, o, [&rec](const kube::WatchEvent& e) { rec.events.push_back(e); },
      [&rec](const kube::ApiResult& r) { rec.closed = r; });
}

TEST(ModelPlane, WatchFanOutSelectorsAndTimeout) {
  Harness h;
  const ResourceRef cms = ResourceRef(kube::gvr::kConfigMaps).in("default");
  kube::ApiResult first = h.api->create(cms, configMap("a", "default", {{"app", "x"}}));
  ASSERT_TRUE(first.ok());
  const std::string rv = first.body["metadata"]["resourceVersion"];

  Recorder all, also, other, fresh;
  kube::ListOptions fromRv;
  fromRv.resourceVersion = rv;
  fromRv.timeoutSeconds = 30;
  watch(h, cms, fromRv, all);
  watch(h, cms, fromRv, also);
  kube::ListOptions selected = fromRv;
  selected.labelSelector = "app=y";
  watch(h, cms, selected, other);
  kube::ListOptions initial;  // no resourceVersion: the current state first
  initial.allowWatchBookmarks = true;
  initial.timeoutSeconds = 60;
  watch(h, cms, initial, fresh);
  h.sim.runFor(1s);

  ASSERT_TRUE(h.api->patchMerge(cms.named("a"), {{"data", {{"k", "v2"}}}}).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(all.types(), (std::vector<std::string>{"MODIFIED"}));
  EXPECT_EQ(also.types(), (std::vector<std::string>{"MODIFIED"}));
  EXPECT_TRUE(other.events.empty());
  EXPECT_EQ(fresh.types(), (std::vector<std::string>{"ADDED", "MODIFIED"}));
  EXPECT_EQ(all.events[0].object["data"]["k"], "v2");

  // A label change moves the object into the selected watch's view, and out of it.
  ASSERT_TRUE(h.api->patchMerge(cms.named("a"), {{"metadata", {{"labels", {{"app", "y"}}}}}}).ok());
  ASSERT_TRUE(h.api->patchMerge(cms.named("a"), {{"metadata", {{"labels", {{"app", "z"}}}}}}).ok());
  ASSERT_TRUE(h.api->remove(cms.named("a")).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(other.types(), (std::vector<std::string>{"ADDED", "DELETED"}));
  EXPECT_EQ(all.types(), (std::vector<std::string>{"MODIFIED", "MODIFIED", "MODIFIED", "DELETED"}));
  EXPECT_EQ(h.plane->stats().watchers, 4u);

  // timeoutSeconds ends the stream with 200 at that time; bookmarks come first.
  EXPECT_FALSE(all.closed);
  h.sim.runFor(40s);
  ASSERT_TRUE(all.closed);
  EXPECT_EQ(all.closed->outcome, kube::TransportOutcome::kOk);
  EXPECT_EQ(all.closed->status, 200);
  EXPECT_FALSE(fresh.closed);
  h.sim.runFor(30s);
  ASSERT_TRUE(fresh.closed);
  EXPECT_EQ(fresh.types().back(), "BOOKMARK");
  EXPECT_EQ(h.plane->stats().watchers, 0u);
  EXPECT_EQ(h.transport->inFlight(), 0u);
}

TEST(ModelPlane, ExpiredResourceVersionIs410AndCancelEndsAWatch) {
  ModelOptions o;
  o.watchHistory = 1s;
  o.watchHistoryMin = 2;
  Harness h(o);
  const ResourceRef cms = ResourceRef(kube::gvr::kConfigMaps).in("default");
  kube::ApiResult first = h.api->create(cms, configMap("a", "default"));
  const std::string rv = first.body["metadata"]["resourceVersion"];
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(h.api->patchMerge(cms.named("a"), {{"data", {{"i", std::to_string(i)}}}}).ok());
    h.sim.runFor(1s);
  }
  Recorder old;
  kube::ListOptions fromOld;
  fromOld.resourceVersion = rv;
  watch(h, cms, fromOld, old);
  h.sim.runFor(1s);
  ASSERT_EQ(old.events.size(), 1u);
  EXPECT_EQ(old.events[0].type, kube::WatchEventType::kError);
  EXPECT_EQ(old.events[0].object["code"], 410);
  EXPECT_EQ(old.events[0].object["reason"], "Expired");
  ASSERT_TRUE(old.closed);
  EXPECT_EQ(old.closed->status, 200);

  Recorder open;
  kube::CallId id = watch(h, cms, {}, open);
  h.sim.runFor(1s);
  EXPECT_EQ(open.types(), (std::vector<std::string>{"ADDED"}));
  h.api->cancel(id);
  ASSERT_TRUE(open.closed);
  EXPECT_EQ(open.closed->outcome, kube::TransportOutcome::kAborted);
  EXPECT_EQ(h.plane->stats().watchers, 0u);
}

// The history a watch can resume from is kube-apiserver's watch cache ring: full of
// events younger than the fresh duration, it doubles (so it holds more than that
// duration); full and its newest quarter older, it halves.
TEST(ModelPlane, TheWatchHistoryIsAWatchCacheRingThatGrowsAndShrinks) {
  ModelOptions o;
  o.watchHistory = 10s;
  o.watchHistoryMin = 4;
  Harness h(o);
  const ResourceRef cms = ResourceRef(kube::gvr::kConfigMaps).in("default");
  std::vector<std::string> rvs;
  auto write = [&](int i) {
    kube::ApiResult r = i == 0 ? h.api->create(cms, configMap("a", "default"))
                               : h.api->patchMerge(cms.named("a"), {{"data", {{"i", std::to_string(i)}}}});
    ASSERT_TRUE(r.ok());
    rvs.push_back(r.body["metadata"]["resourceVersion"]);
  };
  // Replays (true) or answers 410 (false) a watch from the n-th newest write's rv.
  auto resumes = [&](std::size_t n) {
    Recorder rec;
    kube::ListOptions from;
    from.resourceVersion = rvs[rvs.size() - n];
    const kube::CallId id = watch(h, cms, from, rec);
    h.sim.runFor(100ms);
    const bool expired = !rec.events.empty() && rec.events[0].type == kube::WatchEventType::kError;
    if (!rec.closed) h.api->cancel(id);
    h.sim.runFor(100ms);
    return !expired;
  };
  // One write a second for 30 s: 4 -> 8 -> 16 (full at 8 with its oldest 7 s old),
  // then full at 16 with its oldest 15 s old: it stays at 16, past the 10 s window.
  for (int i = 0; i < 30; ++i) {
    write(i);
    h.sim.runFor(1s);
  }
  EXPECT_TRUE(resumes(17));   // its 16 changes after it are all held
  EXPECT_FALSE(resumes(18));  // the 17th newest is gone
  // Slow writes: the newest quarter (4, then 2) is older than 10 s: 16 -> 8 -> 4.
  for (int i = 30; i < 32; ++i) {
    h.sim.runFor(10s);
    write(i);
  }
  EXPECT_TRUE(resumes(5));
  EXPECT_FALSE(resumes(6));
}

TEST(ModelPlane, AMembersScrapeIsAnsweredAtOnceWhateverItsLoad) {
  // One apiserver core asked for 100 core-seconds at once (100 creations each needing
  // 1 s of its CPU): 100x what it can serve in that second, and a backlog of ~99 s.
  // A scrape sent in the middle of it is answered after the unloaded read latency, not
  // behind the queue.
  ModelOptions o;
  o.calibration = testing::smallCalibration();
  o.calibration.apiserverCores = 1;
  o.calibration.apiserverCpuWrite = Param::fixed(1.0);
  o.requestTimeout = std::chrono::seconds(1000);
  Harness h(std::move(o));
  std::vector<kube::HttpResponse> answers;
  for (int i = 0; i < 100; ++i) {
    kube::HttpRequest req;
    req.method = "POST";
    req.path = "/api/v1/namespaces/default/configmaps";
    req.body = configMap("c" + std::to_string(i), "default").dump();
    h.transport->submit(std::move(req), [&](kube::HttpResponse r) { answers.push_back(std::move(r)); });
  }
  h.sim.runUntil(h.sim.now() + std::chrono::seconds(10));
  EXPECT_LT(answers.size(), 20u);  // the backlog is still there
  auto member = h.plane->memberTransport("kube-apiserver-0");
  std::optional<kube::HttpResponse> scrape;
  const auto sent = h.sim.now();
  kube::HttpRequest m;
  m.method = "GET";
  m.path = "/metrics";
  member->submit(std::move(m), [&](kube::HttpResponse r) { scrape = std::move(r); });
  h.sim.runUntil(sent + std::chrono::milliseconds(3));
  ASSERT_TRUE(scrape.has_value()) << "the scrape waited behind the backlog";
  EXPECT_EQ(scrape->status, 200);
  EXPECT_NE(scrape->body.find("apiserver_request_total"), std::string::npos);
  // An API request on the same member still queues.
  std::optional<kube::HttpResponse> get;
  kube::HttpRequest g;
  g.method = "GET";
  g.path = "/api/v1/namespaces/default/configmaps/c0";
  member->submit(std::move(g), [&](kube::HttpResponse r) { get = std::move(r); });
  h.sim.runUntil(h.sim.now() + std::chrono::seconds(5));
  EXPECT_FALSE(get.has_value());
}

TEST(ModelPlane, APodsGracelessDeleteIsAnUpdateThenADeletionOnceItIsBoundToANode) {
  // podStrategy.CheckGracefulDelete: a bound, running pod's delete of grace 0 writes its
  // deletionTimestamp first (watchers see it terminating), then deletes it; an unbound
  // pod is deleted at once.
  Harness h;
  const ResourceRef pods = ResourceRef(kube::gvr::kPods).in("default");
  auto pod = [](const std::string& name, const std::string& node) {
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "c"}, {"image", "i"}}}}}},
                {"status", {{"phase", "Running"}}}};
  };
  ASSERT_TRUE(h.api->create(pods, pod("bound", "node-1")).ok());
  ASSERT_TRUE(h.api->create(pods, pod("unbound", "")).ok());
  Recorder rec;
  kube::ListOptions o;
  o.resourceVersion = h.api->get(pods.named("unbound")).body["metadata"]["resourceVersion"];
  const kube::CallId id = watch(h, pods, o, rec);
  h.sim.runFor(1s);
  kube::DeleteOptions now;
  now.gracePeriodSeconds = 0;
  ASSERT_TRUE(h.api->remove(pods.named("bound"), now).ok());
  ASSERT_TRUE(h.api->remove(pods.named("unbound"), now).ok());
  h.sim.runFor(1s);
  ASSERT_EQ(rec.types(), (std::vector<std::string>{"MODIFIED", "DELETED", "DELETED"}));
  EXPECT_EQ(rec.events[0].object["metadata"]["name"], "bound");
  EXPECT_TRUE(rec.events[0].object["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(rec.events[0].object["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(rec.events[2].object["metadata"]["name"], "unbound");
  EXPECT_EQ(h.api->get(pods.named("bound")).status, 404);
  h.api->cancel(id);  // before the recorder goes
  h.sim.runFor(1s);
}

TEST(ModelPlane, AControllerManagerMemberServesItsWorkqueuesWhereTheProfileRunsOne) {
  ModelOptions o;
  o.nodeLifecycle.enabled = true;
  o.endpointSlices.enabled = true;
  Harness h(std::move(o));
  auto members = h.plane->members();
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[2].name, "kube-controller-manager");
  EXPECT_EQ(members[2].role, "kube-controller-manager");
  auto cm = h.plane->memberTransport("kube-controller-manager");
  kube::HttpRequest v;
  v.method = "GET";
  v.path = "/metrics";
  const kube::HttpResponse r = kube::roundTrip(*cm, v);
  EXPECT_EQ(r.status, 200);
  for (const char* line : {"workqueue_depth{name=\"endpoint_slice\"} 0", "workqueue_depth{name=\"endpoint\"} 0",
                           "leader_election_master_status{name=\"kube-controller-manager\"} 1"})
    EXPECT_NE(r.body.find(line), std::string::npos) << line << " in\n" << r.body;
}

TEST(ModelPlane, NonResourcePathsAndMembers) {
  Harness h;
  auto members = h.plane->members();
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].name, "kube-apiserver-0");
  EXPECT_EQ(members[1].name, "etcd-main");
  EXPECT_EQ(members[1].role, "etcd");
  EXPECT_EQ(h.transport->server(), "model://kube-apiserver-0");
  kube::HttpRequest v;
  v.method = "GET";
  v.path = "/version";
  kube::HttpResponse r = kube::roundTrip(*h.transport, v);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["gitVersion"], "v1.36.3-model");
  EXPECT_EQ(r.httpVersion, "2");
  v.path = "/readyz";
  EXPECT_EQ(kube::roundTrip(*h.transport, v).status, 200);
  auto etcd = h.plane->memberTransport("etcd-main");
  v.path = "/metrics";
  r = kube::roundTrip(*etcd, v);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("etcd_server_has_leader 1"), std::string::npos);
  EXPECT_THROW(h.plane->memberTransport("nobody"), std::invalid_argument);
  v.path = "/api/v1/nothings";
  EXPECT_EQ(kube::roundTrip(*h.transport, v).status, 404);
}

}  // namespace
}  // namespace cpscale::model
