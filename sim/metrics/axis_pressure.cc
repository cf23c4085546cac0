#include "sim/metrics/axis_pressure.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cpscale::metrics {
namespace {

// The groups a vanilla kube-apiserver serves itself (the core group is ""). A custom
// resource may sit in a *.k8s.io group (gateway.networking.k8s.io, with API approval),
// so the list is exact rather than a suffix rule.
constexpr std::string_view kBuiltinGroups[] = {"",
                                               "admissionregistration.k8s.io",
                                               "apiextensions.k8s.io",
                                               "apiregistration.k8s.io",
                                               "apps",
                                               "authentication.k8s.io",
                                               "authorization.k8s.io",
                                               "autoscaling",
                                               "batch",
                                               "certificates.k8s.io",
                                               "coordination.k8s.io",
                                               "discovery.k8s.io",
                                               "events.k8s.io",
                                               "extensions",
                                               "flowcontrol.apiserver.k8s.io",
                                               "internal.apiserver.k8s.io",
                                               "networking.k8s.io",
                                               "node.k8s.io",
                                               "policy",
                                               "rbac.authorization.k8s.io",
                                               "resource.k8s.io",
                                               "scheduling.k8s.io",
                                               "storage.k8s.io",
                                               "storagemigration.k8s.io"};

// A kubelet saying it is alive: its node Lease renewal and its node status.
bool isLivenessWrite(std::string_view group, std::string_view resource) {
  return (group == "coordination.k8s.io" && resource == "leases") || (group.empty() && resource == "nodes/status");
}

bool hasLabel(const Labels& labels, std::string_view name) {
  return std::any_of(labels.begin(), labels.end(), [&](const Label& l) { return l.name == name; });
}

Labels axisLabel(std::string_view axis) { return sortedLabels({{"axis", axis}}); }

// The window the inputs describe: that of the first figure an axis reads.
Window windowOf(std::span<const Figure> figures) {
  for (const Figure& f : figures)
    if (f.name == "write_qps" || f.name == "apiserver_objects") return f.window;
  return Window::kSteady;
}

void writePressures(std::vector<Figure>& out, std::span<const Figure> figures, Window window) {
  const Figure* total = nullptr;
  double liveness = 0, custom = 0;
  std::map<std::pair<std::string, std::string>, double> churnByResource;
  for (const Figure& f : figures) {
    if (f.name != "write_qps" || f.window != window) continue;
    if (f.labels.empty()) {
      if (!total) total = &f;
      continue;
    }
    if (!f.available() || !hasLabel(f.labels, "resource")) continue;
    std::string_view group = labelValue(f.labels, "group"), resource = labelValue(f.labels, "resource");
    if (isLivenessWrite(group, resource)) {
      liveness += *f.value;
      continue;
    }
    churnByResource[{std::string(group), std::string(resource)}] += *f.value;
    if (!isBuiltinGroup(group)) custom += *f.value;
  }
  auto unavailable = [&](std::string name, Labels labels, std::string unit, std::string why) {
    Figure f =
        Figure::unavailable(std::move(name), std::move(labels), std::move(unit), Source::kApiserver, std::move(why));
    f.window = window;
    out.push_back(std::move(f));
  };
  auto measured = [&](std::string name, Labels labels, double v, std::string unit) {
    Figure f = Figure::measured(std::move(name), std::move(labels), v, std::move(unit), total->source);
    f.window = window;
    out.push_back(std::move(f));
  };
  std::string why;
  if (!total)
    why = "no write_qps{} among the figures (write rates were not measured over this window)";
  else if (!total->available())
    why = "write_qps{} is unavailable: " + total->unavailableReason;
  if (!why.empty()) {
    unavailable("axis_pressure", axisLabel("node"), "1/s", why);
    unavailable("axis_pressure", axisLabel("churn"), "1/s", why);
    unavailable("churn_custom_resource_share", {}, "ratio", why);
    unavailable("churn_top_write_qps", {}, "1/s", why);
    return;
  }
  // The per-resource rates add up to the total but for rounding: a churn of -1e-12 is 0.
  const double churn = std::max(0.0, *total->value - liveness);
  measured("axis_pressure", axisLabel("node"), liveness, "1/s");
  measured("axis_pressure", axisLabel("churn"), churn, "1/s");
  if (churn <= 0 || churnByResource.empty()) {
    std::string none = churn <= 0 ? "no writes but liveness writes in the window"
                                  : "write_qps has no per-resource figures beside write_qps{}";
    unavailable("churn_custom_resource_share", {}, "ratio", none);
    unavailable("churn_top_write_qps", {}, "1/s", none);
    return;
  }
  measured("churn_custom_resource_share", {}, std::min(1.0, custom / churn), "ratio");
  auto top = std::max_element(churnByResource.begin(), churnByResource.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  measured("churn_top_write_qps", sortedLabels({{"group", top->first.first}, {"resource", top->first.second}}),
           top->second, "1/s");
}

void statePressure(std::vector<Figure>& out, std::span<const Figure> figures, Window window) {
  std::map<std::string, double> perReplica;    // apiserver -> objects it holds
  std::map<std::string, std::string> missing;  // apiserver -> why its count is unknown
  std::optional<Source> source;
  for (const Figure& f : figures) {
    if (f.name != "apiserver_objects" || f.window != window) continue;
    std::string apiserver(labelValue(f.labels, "apiserver"));
    if (!f.available()) {
      missing.emplace(apiserver, f.unavailableReason);
      continue;
    }
    if (!hasLabel(f.labels, "resource")) continue;
    perReplica[apiserver] += *f.value;
    if (!source) source = f.source;
  }
  for (const auto& [apiserver, objects] : perReplica) missing.erase(apiserver);
  auto add = [&](Figure f) {
    f.window = window;
    out.push_back(std::move(f));
  };
  std::string missingWhy;
  for (const auto& [apiserver, why] : missing) missingWhy += (missingWhy.empty() ? "" : "; ") + why;
  if (perReplica.empty()) {
    std::string why = missing.empty() ? "no apiserver_objects among the figures (no kube-apiserver's object counts "
                                        "were read over this window)"
                                      : missingWhy;
    add(Figure::unavailable("axis_pressure", axisLabel("state"), "objects", Source::kApiserver, why));
    add(Figure::unavailable("resident_objects_all_replicas", {}, "objects", Source::kApiserver, why));
    add(Figure::unavailable("resident_object_replicas", {}, "count", Source::kApiserver, why));
    return;
  }
  double largest = 0, all = 0;
  for (const auto& [apiserver, objects] : perReplica) {
    largest = std::max(largest, objects);
    all += objects;
  }
  add(Figure::measured("axis_pressure", axisLabel("state"), largest, "objects", *source));
  if (missing.empty())
    add(Figure::measured("resident_objects_all_replicas", {}, all, "objects", *source));
  else
    add(Figure::unavailable("resident_objects_all_replicas", {}, "objects", *source, missingWhy));
  add(Figure::measured("resident_object_replicas", {}, static_cast<double>(perReplica.size()), "count", *source));
}

}  // namespace

bool isBuiltinGroup(std::string_view group) {
  return std::find(std::begin(kBuiltinGroups), std::end(kBuiltinGroups), group) != std::end(kBuiltinGroups);
}

std::vector<Figure> axisPressureFigures(std::span<const Figure> figures) {
  std::vector<Figure> out;
  const Window window = windowOf(figures);
  writePressures(out, figures, window);
  statePressure(out, figures, window);
  return out;
}

}  // namespace cpscale::metrics
