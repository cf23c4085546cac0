// How hard a cluster pushes along each of the three axes, in units that can be compared
// with what a recipe held: `cpscale classify` reads them off a cluster or a result, and
// `cpscale capacity` records them at every step, so a cluster's pressure and a recipe's
// capacity are the same figure measured in two places.
#pragma once

#include <span>
#include <vector>

#include "sim/metrics/figures.h"

namespace cpscale::metrics {

// From one window's figures (those of writeFigures/apiserverMemoryFigures, any window;
// the window is that of the first write_qps or apiserver_objects figure, and figures of
// other windows are left out):
//   axis_pressure{axis=node}  1/s: liveness writes: coordination.k8s.io leases writes +
//     nodes/status writes (write_qps{group,resource,verb}: 2xx, not dry-run)
//   axis_pressure{axis=churn} 1/s: every other write (write_qps{} minus liveness)
//   axis_pressure{axis=state} objects: the objects one replica holds (the sum of its
//     apiserver_objects{apiserver,group,resource}), the largest replica
// and the supporting figures classify's reasons read:
//   churn_custom_resource_share ratio: churn writes on resources outside the built-in
//     API groups, over all churn writes (unavailable when there were none)
//   churn_top_write_qps{group,resource} 1/s: the (group, resource) with the most churn
//     writes, all verbs together
//   resident_objects_all_replicas objects: objects x the replicas that hold them
//     (unavailable unless every replica's count is known: a total missing one is wrong)
//   resident_object_replicas count: the kube-apiserver replicas whose object counts
//     were read
// Each is unavailable (with the reason) when its inputs are; source and window are
// taken from the inputs.
std::vector<Figure> axisPressureFigures(std::span<const Figure> figures);

// Whether an API group is one a vanilla kube-apiserver serves itself ("" the core
// group), not a custom resource's: an exact list, as a CRD may sit in a *.k8s.io group.
bool isBuiltinGroup(std::string_view group);

}  // namespace cpscale::metrics
