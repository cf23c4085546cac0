#include "workloads/setup.h"

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
  nlohmann::json sa = {{"apiVersion", "v1"},
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
    if (g.ok() && established(g.body)) return created;
    if (clock.now() >= deadline) {
      throw UnavailableError("CRD " + name + " did not become Established within " + formatDuration(timeout) +
                             (g.ok() ? "" : ": " + g.describe()));
    }
    clock.sleepFor(std::chrono::milliseconds(100));
  }
}

}  // namespace cpscale::workloads
