#include "sim/metrics/axis_pressure.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

namespace cpscale::metrics {
namespace {

Figure writes(std::string group, std::string resource, std::string verb, double qps) {
  return Figure::measured("write_qps", sortedLabels({{"group", group}, {"resource", resource}, {"verb", verb}}), qps,
                          "1/s", Source::kApiserver);
}
Figure allWrites(double qps) { return Figure::measured("write_qps", {}, qps, "1/s", Source::kApiserver); }
Figure objects(std::string apiserver, std::string group, std::string resource, double n) {
  return Figure::measured("apiserver_objects",
                          sortedLabels({{"apiserver", apiserver}, {"group", group}, {"resource", resource}}), n,
                          "objects", Source::kApiserver);
}

const Figure& get(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  const Figure* f = findFigure(figs, name, labels);
  if (!f) throw std::runtime_error("no figure " + std::string(name));
  return *f;
}
double valueOf(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  const Figure& f = get(figs, name, labels);
  if (!f.value) throw std::runtime_error(std::string(name) + " unavailable: " + f.unavailableReason);
  return *f.value;
}
Labels axis(std::string_view a) { return sortedLabels({{"axis", a}}); }

TEST(AxisPressure, NodeIsLeaseAndNodeStatusWritesChurnIsTheRest) {
  std::vector<Figure> in = {
      allWrites(1000), writes("coordination.k8s.io", "leases", "PUT", 900), writes("", "nodes/status", "PATCH", 30),
      // A node registration and a pod status are not liveness.
      writes("", "nodes", "POST", 10), writes("", "pods/status", "PATCH", 20),
      writes("agents.example.com", "sessions", "POST", 25), writes("agents.example.com", "sessions", "DELETE", 15)};
  auto out = axisPressureFigures(in);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("node")), 930);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("churn")), 70);
  EXPECT_EQ(get(out, "axis_pressure", axis("node")).unit, "1/s");
  EXPECT_DOUBLE_EQ(valueOf(out, "churn_custom_resource_share"), 40.0 / 70);
  const Figure& top = get(out, "churn_top_write_qps");
  EXPECT_DOUBLE_EQ(*top.value, 40);
  EXPECT_EQ(labelValue(top.labels, "group"), "agents.example.com");
  EXPECT_EQ(labelValue(top.labels, "resource"), "sessions");
}

TEST(AxisPressure, ChurnOnACustomResourceInAK8sIoGroupIsStillCustom) {
  auto out = axisPressureFigures(
      std::vector<Figure>{allWrites(10), writes("gateway.networking.k8s.io", "httproutes", "PUT", 10)});
  EXPECT_DOUBLE_EQ(valueOf(out, "churn_custom_resource_share"), 1.0);
}

TEST(AxisPressure, StateIsTheLargestReplicasObjectsAndTheTotalCountsEveryReplica) {
  std::vector<Figure> in = {
      objects("kube-apiserver-0", "", "configmaps", 20000),
      objects("kube-apiserver-0", "rbac.authorization.k8s.io", "roles", 5000),
      objects("kube-apiserver-1", "", "configmaps", 20000),
      objects("kube-apiserver-1", "rbac.authorization.k8s.io", "roles", 4990),
      // The per-replica total beside them is not counted twice.
      Figure::measured("apiserver_objects_total", sortedLabels({{"apiserver", "kube-apiserver-0"}}), 25000, "objects",
                       Source::kApiserver)};
  auto out = axisPressureFigures(in);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("state")), 25000);
  EXPECT_EQ(get(out, "axis_pressure", axis("state")).unit, "objects");
  EXPECT_DOUBLE_EQ(valueOf(out, "resident_objects_all_replicas"), 49990);
  EXPECT_DOUBLE_EQ(valueOf(out, "resident_object_replicas"), 2);
}

TEST(AxisPressure, UnavailableInputsGiveUnavailablePressuresWithTheirReason) {
  Figure w =
      Figure::unavailable("write_qps", {}, "1/s", Source::kApiserver, "kube-apiserver api-0 answered 1 scrape(s)");
  Figure o = Figure::unavailable("apiserver_objects", sortedLabels({{"apiserver", "api-0"}}), "objects",
                                 Source::kApiserver, "neither apiserver_resource_objects nor ... is exposed by api-0");
  auto out = axisPressureFigures(std::vector<Figure>{w, o});
  for (const char* a : {"node", "churn", "state"}) EXPECT_FALSE(get(out, "axis_pressure", axis(a)).available()) << a;
  EXPECT_NE(get(out, "axis_pressure", axis("node")).unavailableReason.find("answered 1 scrape(s)"), std::string::npos);
  EXPECT_NE(get(out, "axis_pressure", axis("state")).unavailableReason.find("exposed by api-0"), std::string::npos);
  EXPECT_FALSE(get(out, "churn_custom_resource_share").available());

  // Nothing to read at all: each says which figure is missing.
  auto none = axisPressureFigures(std::vector<Figure>{});
  EXPECT_NE(get(none, "axis_pressure", axis("churn")).unavailableReason.find("no write_qps{}"), std::string::npos);
  EXPECT_NE(get(none, "axis_pressure", axis("state")).unavailableReason.find("no apiserver_objects"),
            std::string::npos);
}

TEST(AxisPressure, AReplicaWithoutCountsLeavesTheLargestButNotTheTotal) {
  std::vector<Figure> in = {objects("api-0", "", "configmaps", 100),
                            Figure::unavailable("apiserver_objects", sortedLabels({{"apiserver", "api-1"}}), "objects",
                                                Source::kApiserver, "kube-apiserver api-1 never answered a scrape")};
  auto out = axisPressureFigures(in);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("state")), 100);
  EXPECT_NE(get(out, "resident_objects_all_replicas").unavailableReason.find("api-1 never answered"),
            std::string::npos);
}

TEST(AxisPressure, OnlyLivenessWritesLeaveNoChurnShare) {
  auto out =
      axisPressureFigures(std::vector<Figure>{allWrites(30), writes("coordination.k8s.io", "leases", "PUT", 30)});
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("churn")), 0);
  EXPECT_FALSE(get(out, "churn_custom_resource_share").available());
}

TEST(AxisPressure, WindowAndSourceComeFromTheInputsAndOtherWindowsAreLeftOut) {
  Figure steady = allWrites(50);
  Figure setup = allWrites(5000);
  setup.window = Window::kSetup;
  Figure setupLeases = writes("coordination.k8s.io", "leases", "POST", 5000);
  setupLeases.window = Window::kSetup;
  auto out = axisPressureFigures(std::vector<Figure>{steady, setup, setupLeases});
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("churn")), 50);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("node")), 0);
  for (const Figure& f : out) EXPECT_EQ(f.window, Window::kSteady) << f.name;

  Figure s = allWrites(7);
  s.window = Window::kSetup;
  auto fromSetup = axisPressureFigures(std::vector<Figure>{s});
  for (const Figure& f : fromSetup) {
    EXPECT_EQ(f.window, Window::kSetup) << f.name;
    EXPECT_EQ(f.source, Source::kApiserver) << f.name;
  }
}

// The figure names and labels axisPressureFigures reads are those writeFigures and
// apiserverMemoryFigures make from real scrapes.
TEST(AxisPressure, ReadsWhatWriteAndMemoryFiguresMake) {
  auto req = [](std::string group, std::string resource, std::string sub, std::string verb, double v) {
    return "apiserver_request_total{code=\"200\",dry_run=\"\",group=\"" + group + "\",resource=\"" + resource +
           "\",subresource=\"" + sub + "\",verb=\"" + verb + "\"} " + std::to_string(v) + "\n";
  };
  auto body = [&](double leases, double status, double sessions, double objs) {
    return "# TYPE apiserver_request_total counter\n" + req("coordination.k8s.io", "leases", "", "PUT", leases) +
           req("", "nodes", "status", "PATCH", status) + req("agents.example.com", "sessions", "", "POST", sessions) +
           "# TYPE apiserver_resource_objects gauge\napiserver_resource_objects{group=\"\",resource=\"configmaps\"} " +
           std::to_string(objs) +
           "\napiserver_resource_objects{group=\"agents.example.com\",resource=\"sessions\"} 50\n";
  };
  std::vector<TargetScrapes> ts = {testing::target("kube-apiserver-0", TargetRole::kApiserver,
                                                   {{0, body(0, 0, 0, 900)}, {10, body(300, 20, 100, 1000)}})};
  std::vector<Figure> figs = writeFigures(ts);
  for (Figure& f : apiserverMemoryFigures(ts)) figs.push_back(std::move(f));
  auto out = axisPressureFigures(figs);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("node")), 32);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("churn")), 10);
  EXPECT_DOUBLE_EQ(valueOf(out, "axis_pressure", axis("state")), 1050);
  EXPECT_DOUBLE_EQ(valueOf(out, "churn_custom_resource_share"), 1.0);
}

}  // namespace
}  // namespace cpscale::metrics
