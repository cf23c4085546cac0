#include "workloads/workload.h"

#include "workloads/churn.h"
#include "workloads/dormant.h"
#include "workloads/kubelet_fleet.h"

namespace cpscale::workloads {

WorkloadPtr makeWorkload(const YamlField& spec) {
  if (!spec.isMap()) throw spec.error("expected a workload entry (a map with 'kind')");
  const YamlField kind = spec.require("kind");
  const std::string k = kind.asString();
  if (k == "kubelets") return std::make_unique<KubeletFleet>(KubeletFleetParams::read(spec));
  if (k == "churn") return std::make_unique<ChurnWorkload>(ChurnParams::read(spec));
  if (k == "dormant") return std::make_unique<DormantWorkload>(DormantParams::read(spec));
  throw kind.error("unknown workload kind '" + k + "' (known: kubelets, churn, dormant)");
}

}  // namespace cpscale::workloads
