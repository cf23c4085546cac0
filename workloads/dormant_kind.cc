// The dormant kind (workloads/kind.h): objects of many kinds that sit in every
// kube-apiserver's memory, and their watchers, on the state axis (workloads/dormant.h).
#include <algorithm>

#include "workloads/dormant.h"
#include "workloads/kind.h"

namespace cpscale::workloads {

namespace {

// Objects of every kind created and patched; watchers list and watch the CRD kinds; Roles
// granting what the role's holder does not hold, and bindings to them.
void grantDormant(const Workload& w, kube::RuleSet& g) {
  namespace gvr = kube::gvr;
  g.add(gvr::kNamespaces, {"create"});
  g.add(gvr::kCustomResourceDefinitions, {"create", "get"});
  for (const auto& r : customResources(w)) g.add(r, {"create", "list", "watch", "patch"});
  for (const auto& r : w.resources())
    if (r.group.empty() || r.group == kube::kRbacGroup) g.add(r, {"create", "patch"});
  g.add(kube::kRbacGroup, "roles", {"escalate", "bind"});
  g.add(kube::kRbacGroup, "clusterroles", {"escalate", "bind"});
}

SummaryNumber minus(const SummaryNumber& a, const SummaryNumber& b) {
  if (!a.value) return a;
  if (!b.value) return b;
  return {std::max(0.0, *a.value - *b.value), ""};
}

// Its own account: what it was asked to create against what it created, and its watchers
// against those that hold their first list, and what they received (ADDED, MODIFIED,
// DELETED; a sharded watcher gets its range's events only).
void dormantFigures(SummaryFigures& f) {
  const SummaryNumber asked = f.number("objects"), created = f.number("created");
  f.add("dormant_objects", asked);
  f.add("dormant_objects_created", created);
  f.add("dormant_objects_missing", minus(asked, created));
  const SummaryNumber watchers = f.number("watchers"), synced = f.number("watchersSynced");
  if (!watchers.value || *watchers.value == 0) {
    const std::string why = watchers.value ? "the workload opened no watchers" : watchers.why;
    for (const char* n : {"dormant_watchers", "dormant_watchers_synced", "dormant_watchers_unsynced"})
      f.unavailable(n, why);
    return;
  }
  f.add("dormant_watchers", watchers);
  f.add("dormant_watchers_synced", synced);
  f.add("dormant_watchers_unsynced", minus(watchers, synced));
  const SummaryNumber events = f.number("watchEvents");
  f.add("dormant_watch_events", events);
  f.add("dormant_watch_events_per_watcher", events.value ? SummaryNumber{*events.value / *watchers.value, ""} : events);
}

}  // namespace

const WorkloadKind& dormantKind() {
  static const WorkloadKind k{
      .name = "dormant",
      .axis = "state",
      .knobs = {{"objectsPerKind", "objects/kind"}, {"crdKinds", "kinds"}},
      .figureNames = {"dormant_objects", "dormant_objects_created", "dormant_objects_missing", "dormant_watchers",
                      "dormant_watchers_synced", "dormant_watchers_unsynced", "dormant_watch_events",
                      "dormant_watch_events_per_watcher"},
      .ownsFamily = [](std::string_view figure) { return figure.starts_with("dormant_"); },
      .read = [](const YamlField& spec) -> WorkloadPtr {
        return std::make_unique<DormantWorkload>(DormantParams::read(spec));
      },
      .grant = grantDormant,
      .figures = dormantFigures,
  };
  return k;
}

}  // namespace cpscale::workloads
