// A profile is the control-plane configuration a run is tested on (a "recipe"): how
// many kube-apiservers, which etcd holds which resources, cache and admission
// settings, feature gates and any extra upstream flag. `cpscale up` and `cpscale run`
// apply it to the embedded local plane; against a user's cluster it is only recorded.
#pragma once

#include <chrono>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cpscale::controlplane {

struct EtcdSpec {
  std::string name;  // a DNS label: it names the member and its data directory
  // Resources routed to this etcd through --etcd-servers-overrides, as
  // "group/resource" ("/events" or "events" for the core group). Empty for the main
  // etcd, which holds everything else.
  std::vector<std::string> resources;
  // Extra etcd flags; those cpscale sets (name, data dir, URLs, cluster, TLS) are refused.
  std::vector<std::string> extraArgs;
};

// A control-plane component beside the apiservers: kube-controller-manager or
// kube-scheduler. It runs by default, as kubeadm and kwokctl run it, because its
// informers are part of what every apiserver serves and holds.
struct ComponentSpec {
  bool enabled = true;
  // The apiserver replica it talks to, dedicated to it (the role-split recipe): the
  // workloads' clients do not reach that replica. Unset: replica 0, shared with them.
  std::optional<int> apiserver;
  // Extra flags, each "--name=value"; those cpscale sets (addresses, ports, PKI,
  // kubeconfigs, authentication and authorization) are refused.
  std::vector<std::string> args;
};

// Who the workloads' requests authenticate as on the local plane.
enum class LoadIdentity {
  // The admin certificate (group system:masters): exempt from API Priority and
  // Fairness and from --max-requests-inflight, as a load tool run with an admin
  // kubeconfig is.
  kAdmin,
  // A certificate for user cpscale-load in group cpscale:load, bound to cluster-admin
  // by a ClusterRoleBinding: flow control applies to it as to any other client (flow
  // schema global-default), so a low limit answers it 429.
  kUser,
};

// The node-liveness seam (brief, seam 2): a node-facing tier in front of the plane that
// takes the kubelets' Lease renewals and writes through only transitions and one
// renewal per Lease every `propagateEvery` (sim/load/lease_tier.h). It runs in the load
// generator, in front of the local plane or the model.
struct LeaseTierSpec {
  std::chrono::milliseconds propagateEvery{30'000};
};

struct Profile {
  std::string name = "classic";  // a DNS label: it names the run's output directory
  std::string description = "one kube-apiserver, one etcd, upstream defaults";
  std::string source;  // file it was read from, empty for the built-in default
  int apiservers = 1;
  std::vector<EtcdSpec> etcds{EtcdSpec{"main", {}, {}}};
  bool watchCache = true;
  // --watch-cache-sizes entries, "resource[.group]#size".
  std::vector<std::string> watchCacheSizes;
  std::optional<int> maxRequestsInflight;
  std::optional<int> maxMutatingRequestsInflight;
  bool priorityAndFairness = true;
  LoadIdentity loadIdentity = LoadIdentity::kAdmin;
  std::map<std::string, bool> featureGates;
  // Extra kube-apiserver flags, each "--name=value"; they come last, so they win, which
  // is why loadProfile refuses those cpscale owns (addresses, ports, etcd, PKI,
  // authentication and authorization, and the flags behind the fields above).
  // The built-in default polls object counts as often as cpscale scrapes (the shipped
  // profiles say so explicitly): upstream refreshes apiserver_resource_objects once a
  // minute, too slowly to follow a population ramp.
  std::vector<std::string> apiserverArgs{"--etcd-count-metric-poll-period=5s"};
  ComponentSpec controllerManager;
  ComponentSpec scheduler;
  std::optional<LeaseTierSpec> leaseTier;

  // The apiserver replicas the workloads' clients reach: every replica not dedicated to
  // a component (in index order).
  std::vector<int> clientApiservers() const;

  // The --etcd-servers-overrides value for the given client URLs (one per etcd, in
  // order), or empty when every resource lives in the main etcd.
  std::string etcdServersOverrides(const std::vector<std::string>& etcdUrls) const;
};

// Why `every` cannot be a lease tier's propagation period on `p`, or "" when it can: at
// least 1 s, and below the node monitor grace period when a controller-manager runs
// (kube-controller-manager's --node-monitor-grace-period, default 50 s), or the node
// lifecycle controller marks live nodes Unknown between two writes.
std::string leaseTierRefusal(std::chrono::milliseconds every, const Profile& p);

// Reads and validates a profile file. Errors name file, line and field (ConfigError).
Profile loadProfile(const std::filesystem::path& path);

}  // namespace cpscale::controlplane
