#include "workloads/setup.h"

#include <nlohmann/json.hpp>

#include "sim/common/error.h"
#include "workloads/params.h"

namespace cpscale::workloads {

void ensureNamespace(kube::ApiClient& api, const std::string& name, const std::string& runId,
                     const std::string& workload, bool defaultServiceAccount) {
  nlohmann::json ns = {{"apiVersion", "v1"},
                       {"kind", "Namespace"},
                       {"metadata", {{"name", name}, {"labels", runLabels(runId, workload)}}}};
  kube::ApiResult r = api.create(kube::ResourceRef(kube::gvr::kNamespaces), ns);
  if (!r.ok() && !r.alreadyExists()) throw UnavailableError("creating namespace: " + r.describe());
  if (!defaultServiceAccount) return;
  nlohmann::json sa = {
      {"apiVersion", "v1"},
      {"kind", "ServiceAccount"},
      {"metadata", {{"name", "default"}, {"namespace", name}, {"labels", runLabels(runId, workload)}}}};
  r = api.create(kube::ResourceRef(kube::gvr::kServiceAccounts).in(name), sa);
  if (!r.ok() && !r.alreadyExists()) throw UnavailableError("creating service account: " + r.describe());
}

namespace {

bool established(const nlohmann::json& crd) {
  auto conditions = crd.value("/status/conditions"_json_pointer, nlohmann::json::array());
  for (const auto& c : conditions) {
    if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
  }
  return false;
}

}  // namespace

bool installCrd(kube::ApiClient& api, engine::Clock& clock, nlohmann::json crd, const std::string& runId,
                const std::string& workload, engine::Duration timeout) {
  const std::string name = crd.at("metadata").at("name").get<std::string>();
  crd["metadata"]["labels"].update(runLabels(runId, workload));
  const kube::ResourceRef crds(kube::gvr::kCustomResourceDefinitions);
  kube::ApiResult r = api.create(crds, crd);
  if (!r.ok() && !r.alreadyExists()) throw UnavailableError("installing CRD " + name + ": " + r.describe());
  const bool created = r.ok();
  const engine::TimePoint deadline = clock.now() + timeout;
  for (;;) {
    kube::ApiResult g = api.get(crds.named(name));
    if (g.ok() && established(g.body)) break;
    if (clock.now() >= deadline) {
      throw UnavailableError("CRD " + name + " did not become Established within " + formatDuration(timeout) +
                             (g.ok() ? "" : ": " + g.describe()));
    }
    clock.sleepFor(std::chrono::milliseconds(100));
  }
  // Established is not yet servable: the new resource's handler and watch cache answer
  // 404 or 429 "storage is (re)initializing" for a moment. Wait until a LIST succeeds,
  // so the first seconds of the measured window do not time a CRD's cold start.
  const auto& versions = crd.at("spec").at("versions");
  std::string version = versions.empty() ? "v1" : versions.front().value("name", "v1");
  for (const auto& v : versions)
    if (v.value("storage", false)) version = v.value("name", version);
  kube::ResourceRef resources({crd.at("spec").at("group").get<std::string>(), version,
                               crd.at("spec").at("names").at("plural").get<std::string>(),
                               crd.at("spec").value("scope", "Namespaced") == "Namespaced"});
  kube::ListOptions one;
  one.limit = 1;
  for (;;) {
    kube::ApiResult l = api.list(resources, one);
    if (l.ok()) return created;
    if (clock.now() >= deadline)
      throw UnavailableError("CRD " + name + " is Established but not served within " + formatDuration(timeout) + ": " +
                             l.describe());
    clock.sleepFor(std::chrono::milliseconds(100));
  }
}

}  // namespace cpscale::workloads
