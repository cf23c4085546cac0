// Figures of the controllers that act on what the load writes, from the /metrics of
// kube-controller-manager and kube-scheduler: how far their workqueues backed up, what
// the node lifecycle controller did to nodes that stopped renewing, and how the
// scheduler kept up. As with etcd, a user's cluster seldom exposes these processes:
// without a target the headline figures are present but unavailable, saying so.
#pragma once

#include <span>
#include <vector>

#include "sim/metrics/figures.h"
#include "sim/metrics/scrape_history.h"

namespace cpscale::metrics {

// Over the given (phase-sliced) scrapes, per component ("kube-controller-manager",
// "kube-scheduler"; the scheduler's only when it exposes workqueues):
//   workqueue_depth_max{component} (count): the deepest any queue got (workqueue_depth),
//   workqueue_adds{component} (count): items added to every queue (workqueue_adds_total),
//   and both per queue, {component,queue}, for the queues that held or took an item;
//   leader_election_master{component,name}: the last leader_election_master_status
//   (1: the process leads; with several processes of a component, 1 when one leads),
//   where exposed.
// kube-controller-manager:
//   node_lifecycle_evictions{} and {zone} (count): NoExecute taints the node lifecycle
//   controller placed on unhealthy nodes (node_collector_evictions_total),
//   node_lifecycle_unhealthy_nodes_max{} and {zone}: the most not-Ready nodes at once
//   (node_collector_unhealthy_nodes_in_zone, summed over zones for {}),
//   taint_eviction_pod_deletions (count): pods deleted off tainted nodes
//   (taint_eviction_controller_pod_deletions_total).
// kube-scheduler:
//   scheduler_pending_pods_max{} and {queue}: the most pods waiting at once
//   (scheduler_pending_pods, summed over queues for {}),
//   scheduler_schedule_attempts{} and {result} (count): scheduling attempts, over every
//   profile (scheduler_schedule_attempts_total).
// Counter increases are taken per server process (ScrapeHistory::counter), so a
// controller that restarted within the window counts from 0 again, not negatively.
std::vector<Figure> controllerFigures(std::span<const TargetScrapes> targets);

}  // namespace cpscale::metrics
