// The kubelets kind (workloads/kind.h): a fleet of synthetic kubelets on the node axis
// (workloads/kubelet_fleet.h).
#include <algorithm>
#include <cmath>

#include "workloads/kind.h"
#include "workloads/kubelet_fleet.h"

namespace cpscale::workloads {

namespace {

// Nearest rank: a sample that was observed, not an interpolation between two nodes.
double median(const std::vector<double>& sorted) { return sorted[(sorted.size() + 1) / 2 - 1]; }

// p50 and max of one kind of per-node sample, or both unavailable for `why`.
void seconds(SummaryFigures& f, const char* p50, const char* max, const std::vector<double>& s,
             const std::string& why) {
  if (!why.empty() || s.empty()) {
    const std::string reason = why.empty() ? "no sample" : why;
    f.unavailable(p50, reason, "s");
    f.unavailable(max, reason, "s");
    return;
  }
  f.add(p50, {median(s), ""}, "s");
  f.add(max, {s.back(), ""}, "s");
}

// The node lifecycle controller as the fleet's node watch saw it.
void lifecycleFigures(SummaryFigures& f) {
  const SummaryNumber streams = f.number({"nodeLifecycle", "watchStreams"});
  if (!streams.value || *streams.value == 0) {
    // Nothing was watched: no count can be told from a zero.
    std::string why = streams.value ? "the fleet's node watch never opened" : streams.why;
    const auto& lc = f.summary()["nodeLifecycle"];
    if (auto e = lc.find("watchLastError"); e != lc.end() && e->is_string()) why += ": " + e->get<std::string>();
    for (const char* n : {"node_not_ready_transitions", "node_ready_transitions", "nodes_not_ready_at_end"})
      f.unavailable(n, why);
    seconds(f, "node_not_ready_seconds_p50", "node_not_ready_seconds_max", {}, why);
    seconds(f, "node_ready_again_seconds_p50", "node_ready_again_seconds_max", {}, why);
    return;
  }
  const std::vector<double> notReady = f.samples("nodeLifecycle", "notReadySeconds");
  const std::vector<double> readyAgain = f.samples("nodeLifecycle", "readyAgainSeconds");
  const SummaryNumber failed = f.number("nodesFailed"), returned = f.number("nodesReturned");
  const std::string noFailure = !failed.value ? failed.why : *failed.value == 0 ? "no node failed in this run" : "";
  const std::string noNotReady = !noFailure.empty() ? noFailure
                                 : notReady.empty() ? "no NotReady was seen: no node lifecycle controller ran?"
                                                    : "";
  const std::string noReadyAgain = !noNotReady.empty()    ? noNotReady
                                   : !returned.value      ? returned.why
                                   : *returned.value == 0 ? "no failed node returned in this run"
                                   : readyAgain.empty()   ? "no returned node was seen Ready again"
                                                          : "";
  f.add("node_not_ready_transitions", f.number({"nodeLifecycle", "notReadyTransitions"}));
  seconds(f, "node_not_ready_seconds_p50", "node_not_ready_seconds_max", notReady, noNotReady);
  f.add("node_ready_transitions", f.number({"nodeLifecycle", "readyTransitions"}));
  seconds(f, "node_ready_again_seconds_p50", "node_ready_again_seconds_max", readyAgain, noReadyAgain);
  f.add("nodes_not_ready_at_end", f.number({"nodeLifecycle", "notReadyAtEnd"}));
}

// Nearest rank, as median().
double quantile(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

// How long each pod readiness change took to reach each kube-proxy's EndpointSlice
// stream, from the change's answered PATCH (one sample per change and node).
void deliveryFigures(SummaryFigures& f) {
  const metrics::Labels slices{{"resource", "endpointslices"}};
  const SummaryNumber changes = f.summary().contains("endpointDelivery")
                                    ? f.number({"endpointDelivery", "changes"})
                                    : SummaryNumber{std::nullopt, "the fleet has no Services (services.count is 0)"};
  const std::vector<double> s = f.samples("endpointDelivery", "seconds");
  std::string why;
  if (!changes.value)
    why = changes.why;
  else if (*changes.value == 0)
    why = "no pod changed readiness in this run (services.readinessFlipsPerMinute)";
  else if (s.empty())
    why =
        "no kube-proxy stream showed a changed pod: no EndpointSlice controller ran, or no node watches "
        "EndpointSlices (watches.kubeProxy)";
  f.add("endpoint_readiness_changes", changes);
  // A change nobody received is a measured 0, not a missing figure.
  f.add("watch_deliveries", changes.value ? SummaryNumber{static_cast<double>(s.size()), ""} : changes, "count",
        slices);
  for (auto [name, q] :
       {std::pair{"watch_delivery_p50", 0.5}, {"watch_delivery_p99", 0.99}, {"watch_delivery_max", 1.0}}) {
    if (!why.empty()) {
      f.unavailable(name, why, "s", slices);
    } else {
      f.add(name, {quantile(s, q), ""}, "s", slices);
    }
  }
}

// A relist storm as the nodes saw it: every node stream's outages (from its failure to
// its watching again) and the longest time some node was without a watch, from the
// first stream lost to the last one back (after a kube-apiserver restart: the time
// until every node watches again).
void outageFigures(SummaryFigures& f) {
  if (!f.summary().contains("nodeWatchOutages")) {
    for (const char* n :
         {"node_watch_outages", "node_watch_outage_p99", "node_watch_outage_max", "node_watches_restored_seconds"})
      f.unavailable(n, "the nodes do not watch on their own (watches.mode shared)",
                    std::string_view(n) == "node_watch_outages" ? "count" : "s");
    return;
  }
  const SummaryNumber outages = f.number({"nodeWatchOutages", "outages"});
  f.add("node_watch_outages", outages);
  const std::vector<double> s = f.samples("nodeWatchOutages", "seconds");
  const std::vector<double> episodes = f.samples("nodeWatchOutages", "episodes");
  const SummaryNumber out = f.number({"nodeWatches", "outNow"});
  std::string why;
  if (s.empty())
    why = "no node stream lost its watch after it had synced";
  else if (out.value && *out.value > 0)
    why = std::to_string(static_cast<long>(*out.value)) + " node streams were still without a watch when the run ended";
  if (s.empty()) {
    f.unavailable("node_watch_outage_p99", why, "s");
    f.unavailable("node_watch_outage_max", why, "s");
  } else {
    f.add("node_watch_outage_p99", {quantile(s, 0.99), ""}, "s");
    f.add("node_watch_outage_max", {s.back(), ""}, "s");
  }
  if (!why.empty())
    f.unavailable("node_watches_restored_seconds", why, "s");
  else
    f.add("node_watches_restored_seconds", {episodes.back(), ""}, "s");
}

// Renewals answered, and those missed: failed (after the one re-read a conflict gets) or
// never sent because the previous one was still in flight when the next was due. Failed
// nodes stop renewing on purpose; those are not missed.
void kubeletsFigures(SummaryFigures& f) {
  f.add("lease_renewals_answered", f.number("leaseRenewals"));
  f.add("lease_renewals_missed", f.number("leaseRenewalFailures") + f.number("leaseRenewalsSkipped"));
  if (f.summary().contains("nodeLifecycle")) lifecycleFigures(f);
  deliveryFigures(f);
  outageFigures(f);
}

// Registration, status, leases; pods bound to the nodes in a namespace of their own (with
// its default ServiceAccount, which pod admission wants); Events; the fleet's node watch;
// node churn's leaves.
void grantKubelets(const Workload& w, kube::RuleSet& g) {
  namespace gvr = kube::gvr;
  g.add(gvr::kNodes, {"create", "list", "watch", "delete"});
  g.add(gvr::kNodes, {"patch"}, "status");
  g.add(gvr::kLeases, {"create", "get", "update", "delete"});
  g.add(gvr::kNamespaces, {"create"});
  g.add(gvr::kServiceAccounts, {"create"});
  g.add(gvr::kPods, {"create", "delete"});
  g.add(gvr::kPods, {"patch"}, "status");
  g.add(gvr::kEvents, {"create"});
  if (static_cast<const KubeletFleet&>(w).params().services.count > 0) g.add(gvr::kServices, {"create"});
  // The nodes' own watches (KubeletFleetParams::Watches), as the node authorizer lets
  // kubelets and kube-proxy's role lets kube-proxy read them.
  const auto& watches = static_cast<const KubeletFleet&>(w).params().watches;
  if (watches.kubeletStreams() > 0) g.add(gvr::kPods, {"list", "watch"});
  if (watches.perNode && (watches.services || watches.kubeProxy)) g.add(gvr::kServices, {"list", "watch"});
  if (watches.kubeProxyStreams() > 0) {
    g.add(gvr::kEndpointSlices, {"list", "watch"});
    g.add(gvr::kServiceCIDRs, {"list", "watch"});
  }
}

bool ownsFamily(std::string_view figure) {
  return figure.starts_with("node_not_ready_") || figure.starts_with("node_ready_") ||
         figure == "nodes_not_ready_at_end" || figure.starts_with("lease_renewals_") ||
         figure.starts_with("watch_deliver") || figure == "endpoint_readiness_changes" ||
         figure.starts_with("node_watch");
}

}  // namespace

const WorkloadKind& kubeletsKind() {
  static const WorkloadKind k{
      .name = "kubelets",
      .axis = "node",
      .knobs = {{"count", "nodes"}},
      .figureNames = {"lease_renewals_answered", "lease_renewals_missed", "node_not_ready_transitions",
                      "node_not_ready_seconds_p50", "node_not_ready_seconds_max", "node_ready_transitions",
                      "node_ready_again_seconds_p50", "node_ready_again_seconds_max", "nodes_not_ready_at_end",
                      "endpoint_readiness_changes", "watch_deliveries", "watch_delivery_p50", "watch_delivery_p99",
                      "watch_delivery_max", "node_watch_outages", "node_watch_outage_p99", "node_watch_outage_max",
                      "node_watches_restored_seconds"},
      .ownsFamily = ownsFamily,
      .read = [](const YamlField& spec) -> WorkloadPtr {
        return std::make_unique<KubeletFleet>(KubeletFleetParams::read(spec));
      },
      .grant = grantKubelets,
      .figures = kubeletsFigures,
      .trim =
          [](nlohmann::json& summary) {
            if (auto d = summary.find("endpointDelivery"); d != summary.end() && d->is_object()) d->erase("seconds");
            if (auto d = summary.find("nodeWatchOutages"); d != summary.end() && d->is_object()) d->erase("seconds");
            auto lc = summary.find("nodeLifecycle");
            if (lc == summary.end() || !lc->is_object()) return;
            lc->erase("notReadySeconds");
            lc->erase("readyAgainSeconds");
          },
  };
  return k;
}

}  // namespace cpscale::workloads
