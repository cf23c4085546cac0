// Routing in the model plane (plane_route.h): a request's path taken apart as
// kube-apiserver's request-info resolver does, and the labels it is counted under.
#include <gtest/gtest.h>

#include <string>

#include "sim/model/plane_route.h"

namespace cpscale::model {
namespace {

kube::HttpRequest request(const std::string& method, const std::string& path) {
  kube::HttpRequest r;
  r.method = method;
  r.path = path;
  return r;
}

TEST(ModelRouting, ANamespacedObjectsPathNamesItsGroupResourceAndSubresource) {
  const Route r = parseRoute(request("PUT", "/apis/apps/v1/namespaces/ns-1/deployments/web/status"));
  EXPECT_TRUE(r.resource);
  EXPECT_EQ(r.path, "/apis/apps/v1/namespaces/ns-1/deployments/web/status");
  EXPECT_EQ(r.group, "apps");
  EXPECT_EQ(r.version, "v1");
  EXPECT_EQ(r.ns, "ns-1");
  EXPECT_EQ(r.resourceName, "deployments");
  EXPECT_EQ(r.name, "web");
  EXPECT_EQ(r.sub, "status");
  EXPECT_EQ(r.verb, "PUT");
  EXPECT_FALSE(r.watch);
}

TEST(ModelRouting, ANamespacesOwnStatusIsNotANamespacedPath) {
  const Route r = parseRoute(request("PUT", "/api/v1/namespaces/ns-1/status"));
  EXPECT_EQ(r.group, "");
  EXPECT_EQ(r.ns, "");
  EXPECT_EQ(r.resourceName, "namespaces");
  EXPECT_EQ(r.name, "ns-1");
  EXPECT_EQ(r.sub, "status");
}

TEST(ModelRouting, GetAndDeleteAreNamedAsTheApiserverCountsThem) {
  EXPECT_EQ(parseRoute(request("GET", "/api/v1/namespaces/a/pods/p")).verb, "GET");
  EXPECT_EQ(parseRoute(request("GET", "/api/v1/namespaces/a/pods")).verb, "LIST");
  EXPECT_EQ(parseRoute(request("GET", "/api/v1/pods?watch=true")).verb, "WATCH");
  EXPECT_EQ(parseRoute(request("GET", "/api/v1/pods?watch=1")).verb, "WATCH");
  EXPECT_EQ(parseRoute(request("GET", "/api/v1/pods?watch=false")).verb, "LIST");
  EXPECT_EQ(parseRoute(request("DELETE", "/api/v1/namespaces/a/pods/p")).verb, "DELETE");
  EXPECT_EQ(parseRoute(request("DELETE", "/api/v1/namespaces/a/pods")).verb, "DELETECOLLECTION");
  EXPECT_TRUE(parseRoute(request("GET", "/api/v1/pods?watch=true")).watch);
}

TEST(ModelRouting, TheQueryIsPercentDecodedAndPlusIsASpace) {
  const Route r = parseRoute(
      request("GET", "/api/v1/namespaces/a/pods?labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&&dryRun&continue="));
  EXPECT_EQ(r.param("labelSelector"), "app=web,tier in (a)");
  EXPECT_EQ(r.param("limit"), "5");
  EXPECT_TRUE(r.has("dryRun"));
  EXPECT_EQ(r.param("dryRun"), "");
  EXPECT_TRUE(r.has("continue"));
  EXPECT_FALSE(r.has("watch"));
  EXPECT_EQ(r.path, "/api/v1/namespaces/a/pods");
}

TEST(ModelRouting, NonResourcePathsAndDiscoveryAreNotResources) {
  for (const char* path : {"/metrics", "/readyz", "/version", "/api", "/apis", "/api/v1", "/apis/apps/v1"}) {
    const Route r = parseRoute(request("GET", path));
    EXPECT_FALSE(r.resource) << path;
    EXPECT_EQ(r.verb, "GET") << path;
    EXPECT_EQ(r.path, path);
  }
}

TEST(ModelRouting, LabelsCarryTheScopeAndANonResourcePathAsItsSubresource) {
  EXPECT_EQ(requestLabels(parseRoute(request("GET", "/api/v1/namespaces/a/pods/p")), "GET").scope, "resource");
  EXPECT_EQ(requestLabels(parseRoute(request("POST", "/api/v1/namespaces/a/pods")), "POST").scope, "resource");
  EXPECT_EQ(requestLabels(parseRoute(request("GET", "/api/v1/namespaces/a/pods")), "GET").scope, "namespace");
  EXPECT_EQ(requestLabels(parseRoute(request("GET", "/api/v1/nodes")), "GET").scope, "cluster");
  const RequestLabels dry =
      requestLabels(parseRoute(request("PATCH", "/apis/apps/v1/namespaces/a/deployments/d?dryRun=All")), "PATCH");
  EXPECT_TRUE(dry.dryRun);
  EXPECT_EQ(dry.group, "apps");
  EXPECT_EQ(dry.component, "apiserver");
  const RequestLabels metrics = requestLabels(parseRoute(request("GET", "/metrics")), "GET");
  EXPECT_EQ(metrics.component, "");
  EXPECT_EQ(metrics.subresource, "/metrics");
  EXPECT_EQ(metrics.verb, "GET");
  EXPECT_EQ(metrics.scope, "");
}

TEST(ModelRouting, WritesAndHeadersAsTheApiserverSeesThem) {
  for (const char* verb : {"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION"}) EXPECT_TRUE(isWrite(verb)) << verb;
  for (const char* verb : {"GET", "LIST", "WATCH"}) EXPECT_FALSE(isWrite(verb)) << verb;
  kube::HttpRequest r = request("PATCH", "/api/v1/nodes/n");
  r.headers.push_back({"Content-Type", "application/merge-patch+json"});
  EXPECT_EQ(header(r, "content-type"), "application/merge-patch+json");
  EXPECT_EQ(header(r, "CONTENT-TYPE"), "application/merge-patch+json");
  EXPECT_EQ(header(r, "accept"), std::nullopt);
}

}  // namespace
}  // namespace cpscale::model
