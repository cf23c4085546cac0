#include "sim/kube/resource.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace cpscale::kube {
namespace {

TEST(ResourcePath, CoreNamespacedObject) {
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kPods).in("default").named("web-0")),
            "/api/v1/namespaces/default/pods/web-0");
}

TEST(ResourcePath, CoreCollectionAcrossAllNamespaces) {
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kPods)), "/api/v1/pods");
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kPods).in("kube-system")), "/api/v1/namespaces/kube-system/pods");
}

TEST(ResourcePath, ClusterScoped) {
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kNodes).named("node-1")), "/api/v1/nodes/node-1");
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kNamespaces).named("cpscale-a")), "/api/v1/namespaces/cpscale-a");
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kClusterRoles).named("system:node")),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:node");
}

TEST(ResourcePath, GroupedAndCustomResources) {
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kLeases).in("kube-node-lease").named("n1")),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1");
  GroupVersionResource sessions{"agents.example.com", "v1alpha1", "sessions", true};
  EXPECT_EQ(resourcePath(ResourceRef(sessions).in("cpscale-churn").named("s-42")),
            "/apis/agents.example.com/v1alpha1/namespaces/cpscale-churn/sessions/s-42");
  GroupVersionResource clusterCr{"example.com", "v1", "widgets", false};
  EXPECT_EQ(resourcePath(ResourceRef(clusterCr)), "/apis/example.com/v1/widgets");
}

TEST(ResourcePath, Subresources) {
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kNodes).named("n1").sub("status")), "/api/v1/nodes/n1/status");
  GroupVersionResource deployments{"apps", "v1", "deployments", true};
  EXPECT_EQ(resourcePath(ResourceRef(deployments).in("ns").named("d").sub("scale")),
            "/apis/apps/v1/namespaces/ns/deployments/d/scale");
  EXPECT_EQ(ResourceRef(gvr::kNodes).named("n1").sub("status").statsName(), "nodes/status");
  EXPECT_EQ(ResourceRef(gvr::kNodes).named("n1").sub("status").collection().statsName(), "nodes");
}

TEST(ResourcePath, InvalidReferencesThrow) {
  EXPECT_THROW(resourcePath(ResourceRef(gvr::kNodes).in("ns").named("n")), std::invalid_argument);
  EXPECT_THROW(resourcePath(ResourceRef(gvr::kPods).named("p")), std::invalid_argument);
  EXPECT_THROW(resourcePath(ResourceRef(gvr::kNodes).sub("status")), std::invalid_argument);
  EXPECT_THROW(resourcePath(ResourceRef(GroupVersionResource{"", "", "pods", true})), std::invalid_argument);
  EXPECT_THROW(resourcePath(ResourceRef(gvr::kNodes).named("..")), std::invalid_argument);
}

TEST(ResourcePath, SegmentsArePercentEncoded) {
  EXPECT_EQ(resourcePath(ResourceRef(gvr::kConfigMaps).in("ns").named("a b/c?d")),
            "/api/v1/namespaces/ns/configmaps/a%20b%2Fc%3Fd");
}

TEST(RequestPath, ListQueryIsEncodedAndOrdered) {
  ListOptions o;
  o.labelSelector = "cpscale.io/run=r1,tier in (a,b)";
  o.fieldSelector = "spec.nodeName=n1";
  o.resourceVersion = "0";
  o.limit = 500;
  o.continueToken = "eyJ2Ijoi+/=";
  o.extra.emplace_back("shardSelector", "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
  EXPECT_EQ(
      requestPath(ResourceRef(gvr::kPods), toQuery(o, false)),
      "/api/v1/pods?labelSelector=cpscale.io%2Frun%3Dr1%2Ctier%20in%20%28a%2Cb%29"
      "&fieldSelector=spec.nodeName%3Dn1&resourceVersion=0&limit=500&continue=eyJ2Ijoi%2B%2F%3D"
      "&shardSelector=shardRange%28object.metadata.uid%2C%20%270x0000000000000000%27%2C%20%270x8000000000000000%27%29");
}

TEST(RequestPath, WatchQuery) {
  ListOptions o;
  o.resourceVersion = "123";
  o.allowWatchBookmarks = true;
  o.timeoutSeconds = 300;
  EXPECT_EQ(requestPath(ResourceRef(gvr::kLeases).in("kube-node-lease"), toQuery(o, true)),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
            "?resourceVersion=123&watch=true&allowWatchBookmarks=true&timeoutSeconds=300");
  // Bookmarks only make sense on a watch.
  EXPECT_EQ(requestPath(ResourceRef(gvr::kNodes), toQuery(o, false)),
            "/api/v1/nodes?resourceVersion=123&timeoutSeconds=300");
}

TEST(RequestPath, WriteQuery) {
  EXPECT_EQ(requestPath(ResourceRef(gvr::kNodes), toQuery(WriteOptions{"cpscale-kubelet", true})),
            "/api/v1/nodes?fieldManager=cpscale-kubelet&dryRun=All");
  EXPECT_EQ(requestPath(ResourceRef(gvr::kNodes), toQuery(WriteOptions{})), "/api/v1/nodes");
}

}  // namespace
}  // namespace cpscale::kube
