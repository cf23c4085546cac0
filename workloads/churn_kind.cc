// The churn kind (workloads/kind.h): CRD sessions created, written and deleted, on the
// mutation axis (workloads/churn.h).
#include "workloads/churn.h"
#include "workloads/kind.h"

namespace cpscale::workloads {

namespace {

// Sessions: created, status written, suspended and resumed, deleted; the CRD installed
// and waited for (until a LIST of it succeeds); ConfigMaps and Events when it writes
// them.
void grantChurn(const Workload& w, kube::RuleSet& g) {
  namespace gvr = kube::gvr;
  g.add(gvr::kNamespaces, {"create"});
  g.add(gvr::kCustomResourceDefinitions, {"create", "get"});
  for (const auto& r : customResources(w)) {
    g.add(r, {"create", "list", "patch", "delete"});
    g.add(r, {"patch"}, "status");
  }
  for (const auto& r : w.resources())
    if (r == gvr::kConfigMaps || r == gvr::kEvents) g.add(r, {"create", "patch", "delete"});
}

}  // namespace

const WorkloadKind& churnKind() {
  static const WorkloadKind k{
      .name = "churn",
      .axis = "churn",
      .knobs = {{"sessionsPerMinute", "sessions/min"}},
      .figureNames = {"session_write_failures"},
      .ownsFamily = [](std::string_view figure) { return figure.starts_with("session_"); },
      .read = [](const YamlField& spec) -> WorkloadPtr {
        return std::make_unique<ChurnWorkload>(ChurnParams::read(spec));
      },
      .grant = grantChurn,
      // Session creations and writes that failed for good (after the client's retries).
      .figures =
          [](SummaryFigures& f) {
            f.add("session_write_failures", f.number("createFailures") + f.number("writeFailures"));
          },
  };
  return k;
}

}  // namespace cpscale::workloads
