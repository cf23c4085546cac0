// cleanupRun against a scripted API server in virtual time: what it counts as deleted,
// how failed lists are reported, and that its deadline bounds it whatever the server
// does.
#include "workloads/cleanup.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"
#include "test/support/fake_transport.h"
#include "workloads/params.h"

namespace cpscale::workloads {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

kube::HttpResponse answer(int status, const json& body) {
  kube::HttpResponse r;
  r.status = status;
  r.body = body.dump();
  r.headers.push_back({"content-type", "application/json"});
  return r;
}

kube::HttpResponse failure(int code) {
  return answer(code, {{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"status", "Failure"},
                       {"code", code},
                       {"reason", code == 403 ? "Forbidden" : "InternalError"}});
}

// Just enough of kube-apiserver for cleanup: labelled nodes that lists return and
// deletes remove, with every answer overridable.
struct FakeServer {
  static constexpr const char* kNodes = "/api/v1/nodes";
  engine::VirtualClock clock;
  kube::FakeTransport transport{clock};
  kube::ApiClient api{transport, clock};
  std::set<std::string> nodes;
  int deleteCollectionStatus = 405;       // nodes: one DELETE each
  bool deletesTakeEffect = true;          // false: accepted, but the objects never go
  std::map<std::string, int> failDelete;  // node -> status
  int listStatus = 200;                   // once set, every list answers it

  FakeServer() {
    transport.setHandler([this](const kube::HttpRequest& r) { return handle(r); });
  }

  kube::HttpResponse handle(const kube::HttpRequest& r) {
    std::string path = r.path.substr(0, r.path.find('?'));
    if (r.method == "GET") {
      if (listStatus != 200) return failure(listStatus);
      json items = json::array();
      if (path == kNodes)
        for (const auto& n : nodes) items.push_back({{"metadata", {{"name", n}}}});
      return answer(200, {{"items", items}, {"metadata", json::object()}});
    }
    if (r.method == "DELETE" && path == kNodes) {
      if (deleteCollectionStatus != 200) return failure(deleteCollectionStatus);
      if (deletesTakeEffect) nodes.clear();
      return answer(200, {{"items", json::array()}});
    }
    if (r.method == "DELETE" && path.rfind(std::string(kNodes) + "/", 0) == 0) {
      std::string name = path.substr(std::string(kNodes).size() + 1);
      if (auto f = failDelete.find(name); f != failDelete.end()) return failure(f->second);
      if (!nodes.count(name)) return failure(404);
      if (deletesTakeEffect) nodes.erase(name);
      return answer(200, {{"metadata", {{"name", name}}}});
    }
    return answer(200, {{"items", json::array()}});
  }

  std::size_t count(const std::string& method, const std::string& path) const {
    std::size_t n = 0;
    for (const auto& rec : transport.requests())
      n += rec.request.method == method && rec.request.path.substr(0, rec.request.path.find('?')) == path;
    return n;
  }

  CleanupResult cleanup(CleanupOptions o = {}) { return cleanupRun(api, clock, "r1", {}, o); }
  engine::Duration elapsed() const { return clock.now() - engine::TimePoint{}; }
};

TEST(CleanupTest, DeletesEverythingLabelledAndCountsIt) {
  FakeServer s;
  s.nodes = {"n1", "n2", "n3"};
  CleanupResult r = s.cleanup();
  EXPECT_TRUE(r.complete()) << nlohmann::json(r.errors).dump();
  EXPECT_EQ(r.deleted, (std::map<std::string, std::int64_t>{{"nodes", 3}}));
  EXPECT_TRUE(s.nodes.empty());
  EXPECT_EQ(s.elapsed(), 0s);  // nothing left at the first look: no waiting
}

TEST(CleanupTest, CrdsAndTheirObjectsAreDeletedAndCountedUnderTheirDocumentedKeys) {
  FakeServer s;
  const std::string crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  const std::string widgetPath = "/apis/example.io/v1/widgets";
  std::set<std::string> crds = {"widgets.example.io"}, widgets = {"w1", "w2"};
  s.deleteCollectionStatus = 200;
  s.transport.setHandler([&](const kube::HttpRequest& r) {
    std::string path = r.path.substr(0, r.path.find('?'));
    if (r.method == "GET" && path == crdPath) {
      json items = json::array();
      for (const auto& c : crds)
        items.push_back({{"metadata", {{"name", c}}},
                         {"spec",
                          {{"group", "example.io"},
                           {"names", {{"plural", "widgets"}}},
                           {"scope", "Cluster"},
                           {"versions", {{{"name", "v1"}, {"storage", true}}}}}}});
      return answer(200, {{"items", items}, {"metadata", json::object()}});
    }
    if (r.method == "DELETE" && path == crdPath + "/widgets.example.io") {
      crds.clear();
      widgets.clear();
      return answer(200, json::object());
    }
    if (path == widgetPath && crds.empty()) return failure(404);  // no longer served
    if (r.method == "GET" && path == widgetPath) {
      json items = json::array();
      for (const auto& w : widgets) items.push_back({{"metadata", {{"name", w}}}});
      return answer(200, {{"items", items}, {"metadata", json::object()}});
    }
    if (r.method == "DELETE" && path == widgetPath) {
      widgets.clear();
      return answer(200, json::object());
    }
    return s.handle(r);
  });
  CleanupResult r = s.cleanup();
  EXPECT_TRUE(r.complete()) << nlohmann::json(r.errors).dump() << nlohmann::json(r.remaining).dump();
  EXPECT_EQ(r.deleted,
            (std::map<std::string, std::int64_t>{{"widgets.example.io", 2}, {"customresourcedefinitions", 1}}));
  EXPECT_TRUE(crds.empty());
}

TEST(CleanupTest, ADeleteAnswering500IsNotCountedAndReported) {
  FakeServer s;
  s.nodes = {"n1", "n2", "n3"};
  s.failDelete["n2"] = 500;
  CleanupResult r = s.cleanup();
  EXPECT_EQ(r.deleted, (std::map<std::string, std::int64_t>{{"nodes", 2}}));
  EXPECT_EQ(r.remaining, (std::map<std::string, std::int64_t>{{"nodes", 1}}));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("500"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[0].find("n2"), std::string::npos) << r.errors[0];
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(s.count("DELETE", "/api/v1/nodes/n2"), 5u) << "the client retries a 500 (5 attempts)";
  // Only the refused object is left: waiting two minutes for it would not help.
  EXPECT_LT(s.elapsed(), 10s);
}

TEST(CleanupTest, ARefusedDeleteCollectionIsNotCounted) {
  FakeServer s;
  s.nodes = {"n1", "n2"};
  s.deleteCollectionStatus = 500;
  CleanupResult r = s.cleanup();
  EXPECT_TRUE(r.deleted.empty()) << nlohmann::json(r.deleted).dump();
  EXPECT_EQ(r.remaining, (std::map<std::string, std::int64_t>{{"nodes", 2}}));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("500"), std::string::npos) << r.errors[0];
  EXPECT_FALSE(r.complete());
}

TEST(CleanupTest, AFailedListWhileCheckingWhatIsLeftIsAnErrorNotNothingLeft) {
  for (int status : {403, 500}) {
    SCOPED_TRACE(status);
    FakeServer s;
    s.nodes = {"n1", "n2"};
    s.deleteCollectionStatus = 200;
    // Deletes go through; from the first look at the nodes after them, lists fail.
    s.transport.setHandler([&s, status](const kube::HttpRequest& r) {
      if (r.method == "GET" && r.path.rfind("/api/v1/nodes?", 0) == 0 && s.nodes.empty()) s.listStatus = status;
      return s.handle(r);
    });
    CleanupResult r = s.cleanup();
    EXPECT_EQ(r.deleted, (std::map<std::string, std::int64_t>{{"nodes", 2}}));
    ASSERT_EQ(r.errors.size(), 1u) << nlohmann::json(r.errors).dump();
    EXPECT_EQ(r.errors[0].rfind("checking what is left: ", 0), 0u) << r.errors[0];
    EXPECT_NE(r.errors[0].find(std::to_string(status)), std::string::npos) << r.errors[0];
    EXPECT_NE(r.errors[0].find("nodes"), std::string::npos) << r.errors[0];
    EXPECT_TRUE(r.remaining.empty());
    EXPECT_FALSE(r.complete());
  }
}

TEST(CleanupTest, AFailedListBeforeDeletingIsAnError) {
  FakeServer s;
  s.nodes = {"n1"};
  s.listStatus = 403;
  CleanupResult r = s.cleanup();
  EXPECT_FALSE(r.complete());
  EXPECT_TRUE(r.deleted.empty());
  EXPECT_EQ(s.nodes.size(), 1u);
  EXPECT_FALSE(r.errors.empty());
}

// A run's namespace left Terminating, and a controller-manager's leader Lease renewed
// `renewedAgo` before now (none when nullopt): who finalizes the namespace.
struct NamespaceServer {
  engine::VirtualClock clock;
  kube::FakeTransport transport{clock};
  kube::ApiClient api{transport, clock};
  bool namespacePresent = true;
  std::optional<std::chrono::seconds> renewedAgo;
  int finalizeCalls = 0;

  NamespaceServer() {
    transport.setHandler([this](const kube::HttpRequest& r) -> kube::HttpResponse {
      std::string path = r.path.substr(0, r.path.find('?'));
      if (path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager") {
        if (!renewedAgo) return failure(404);
        auto renewed = std::chrono::system_clock::now() - *renewedAgo;
        std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(renewed.time_since_epoch()).count();
        return answer(200, {{"spec", {{"leaseDurationSeconds", 15}, {"renewTime", microTime(ns)}}}});
      }
      if (r.method == "GET" && path == "/api/v1/namespaces") {
        json items = json::array();
        if (namespacePresent) items.push_back({{"metadata", {{"name", "cpscale-r1-x"}}}});
        return answer(200, {{"items", items}, {"metadata", json::object()}});
      }
      if (r.method == "GET" && path == "/api/v1/namespaces/cpscale-r1-x")
        return answer(200, {{"metadata", {{"name", "cpscale-r1-x"}}}, {"spec", {{"finalizers", {"kubernetes"}}}}});
      if (r.method == "PUT" && path == "/api/v1/namespaces/cpscale-r1-x/finalize") {
        ++finalizeCalls;
        namespacePresent = false;
        return answer(200, json::object());
      }
      return answer(200, {{"items", json::array()}, {"metadata", json::object()}});
    });
  }
};

TEST(CleanupTest, NamespacesAreFinalizedOnlyWhereNoControllerManagerRuns) {
  {
    NamespaceServer bare;  // a bare kube-apiserver: nobody else will
    CleanupOptions o;
    o.timeout = 30s;
    CleanupResult r = cleanupRun(bare.api, bare.clock, "r1", {}, o);
    EXPECT_EQ(bare.finalizeCalls, 1);
    EXPECT_TRUE(r.complete());
  }
  {
    NamespaceServer withController;  // its namespace controller's job: never bypassed
    withController.renewedAgo = 2s;
    EXPECT_TRUE(controllerManagerRuns(withController.api));
    CleanupOptions o;
    o.timeout = 30s;
    CleanupResult r = cleanupRun(withController.api, withController.clock, "r1", {}, o);
    EXPECT_EQ(withController.finalizeCalls, 0);
    EXPECT_EQ(r.remaining, (std::map<std::string, std::int64_t>{{"namespaces", 1}}));
  }
  {
    NamespaceServer stale;  // a Lease left by a controller-manager long gone
    stale.renewedAgo = 10min;
    EXPECT_FALSE(controllerManagerRuns(stale.api));
  }
}

TEST(CleanupTest, TheDeadlineStopsWaitingForAServerThatNeverFinishesDeleting) {
  FakeServer s;
  s.nodes = {"n1", "n2", "n3"};
  s.deleteCollectionStatus = 200;
  s.deletesTakeEffect = false;
  s.transport.setLatency(1s);
  CleanupOptions o;
  o.timeout = 60s;
  o.pollInterval = 250ms;
  CleanupResult r = s.cleanup(o);
  EXPECT_EQ(r.deleted, (std::map<std::string, std::int64_t>{{"nodes", 3}}));
  EXPECT_EQ(r.remaining, (std::map<std::string, std::int64_t>{{"nodes", 3}}));
  EXPECT_TRUE(r.errors.empty()) << nlohmann::json(r.errors).dump();
  EXPECT_FALSE(r.complete());
  // Every request takes 1 s. Deleting: the CRD list, 11 resource lists, one
  // deletecollection and the namespace list end at 14 s. Each look lists 13 resources
  // (13 s) and is followed by a 250 ms pause: looks end at 27, 40.25, 53.5 and 66.75 s,
  // the first past the 60 s deadline. (Measured from the end of deleting, as before,
  // the wait would have gone on to 80 s.)
  EXPECT_EQ(s.elapsed(), 66750ms);
  EXPECT_EQ(s.count("GET", "/api/v1/nodes"), 5u);
}

TEST(CleanupTest, TheDeadlineStopsDeletingAndReportsWhatIsLeft) {
  FakeServer s;
  for (int i = 0; i < 20; ++i) s.nodes.insert("n" + std::to_string(100 + i));
  s.transport.setLatency(1s);
  CleanupOptions o;
  o.timeout = 10s;
  CleanupResult r = s.cleanup(o);
  // CRDs, pods, leases and nodes are listed by 4 s; the deletecollection is refused
  // at 5 s; one DELETE a second fits 5 more before the deadline.
  EXPECT_EQ(s.elapsed(), 10s);
  EXPECT_EQ(r.deleted, (std::map<std::string, std::int64_t>{{"nodes", 5}}));
  EXPECT_EQ(r.remaining, (std::map<std::string, std::int64_t>{{"nodes", 15}}));
  EXPECT_EQ(s.nodes.size(), 15u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0],
            "cleanup deadline (10s) reached while deleting; not looked at: events, configmaps, secrets, "
            "rolebindings.rbac.authorization.k8s.io, roles.rbac.authorization.k8s.io, "
            "clusterrolebindings.rbac.authorization.k8s.io, clusterroles.rbac.authorization.k8s.io, "
            "serviceaccounts, namespaces");
  EXPECT_FALSE(r.complete());
}

}  // namespace
}  // namespace cpscale::workloads
