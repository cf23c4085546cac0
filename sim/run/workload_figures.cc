#include "sim/run/workload_figures.h"

#include <string>

#include <nlohmann/json.hpp>

#include "workloads/kind.h"

namespace cpscale::run {

void mergeSummary(nlohmann::json& merged, const nlohmann::json& part) {
  for (auto& [k, v] : part.items()) {
    if (!merged.contains(k)) {
      merged[k] = v;
      continue;
    }
    nlohmann::json& m = merged[k];
    if (v.is_boolean() && m.is_boolean()) {
      m = m.get<bool>() && v.get<bool>();
    } else if (v.is_number() && m.is_number()) {
      m = m.get<double>() + v.get<double>();
    } else if (v.is_array() && m.is_array()) {
      m.insert(m.end(), v.begin(), v.end());
    } else if (v.is_object() && m.is_object()) {
      mergeSummary(m, v);
    }
  }
}

std::vector<metrics::Figure> workloadFigures(std::vector<result::WorkloadSummary>& summaries) {
  std::vector<metrics::Figure> out;
  for (auto& w : summaries) {
    const workloads::WorkloadKind* kind = workloads::findKind(w.kind);
    if (!kind) continue;
    workloads::SummaryFigures f(w, out);
    kind->figures(f);
    if (kind->trim) kind->trim(w.summary);
  }
  for (auto& f : out) f.window = metrics::Window::kRun;
  return out;
}

}  // namespace cpscale::run
