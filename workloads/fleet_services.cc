// Services whose endpoints move: the fleet's ClusterIP Services, each selecting its share
// of the pods; the pods' IPs (one /24 per node, as its podCIDR); readiness flips, which
// the real EndpointSlice controller turns into slice updates; and the time from each
// flip's answered PATCH to each kube-proxy's EndpointSlice stream showing it, as
// clusterloader2's network programming latency counts from a pod's readiness.
#include <cmath>

#include "sim/common/error.h"
#include "workloads/fleet_instance.h"
#include "workloads/params.h"

namespace cpscale::workloads::fleet {

namespace {

constexpr const char* kServiceLabel = "cpscale.io/service";

}  // namespace

std::string serviceName(std::int64_t i) { return "svc-" + std::to_string(i); }

void createServices(kube::ApiClient& api, const std::string& runId, const KubeletFleetParams& p) {
  const std::string ns = KubeletFleet::podNamespace(runId, p.name);
  const json labels = runLabels(runId, p.name);
  for (std::int64_t i = 0; i < p.services.count; ++i) {
    json selector = labels;
    selector[kServiceLabel] = serviceName(i);
    json svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata", {{"name", serviceName(i)}, {"namespace", ns}, {"labels", labels}}},
                {"spec",
                 {{"type", "ClusterIP"},
                  {"selector", std::move(selector)},
                  {"ports", {{{"name", "http"}, {"port", 80}, {"targetPort", 8080}, {"protocol", "TCP"}}}}}}};
    kube::ApiResult r = api.create(kube::ResourceRef(kube::gvr::kServices).in(ns), svc);
    if (!r.ok() && !r.alreadyExists())
      throw UnavailableError("creating Service " + serviceName(i) + ": " + r.describe());
  }
}

// Inside the node's podCIDR (fleet_membership.cc): 10.(128 + index/256 % 128).(index %
// 256).0/24, the pod in slot s at .(s + 1). Unique up to 32,768 nodes.
std::string FleetInstance::podIP(const Kubelet& k, std::uint32_t slot) const {
  return "10." + std::to_string(128 + (k.index >> 8) % 128) + "." + std::to_string(k.index & 0xff) + "." +
         std::to_string(slot + 1);
}

// Pod i of the fleet (podsPerNode per node, in node order) selected by Service i mod count.
std::string FleetInstance::serviceOf(const Kubelet& k, std::uint32_t slot) const {
  const auto i = static_cast<std::uint64_t>(k.index) * static_cast<std::uint64_t>(p_.podsPerNode) + slot;
  return serviceName(static_cast<std::int64_t>(i % static_cast<std::uint64_t>(p_.services.count)));
}

void FleetInstance::scheduleFlip() {
  const double rate = ctx_.share(p_.services.readinessFlipsPerMinute / 60.0);
  events_.at(ctx_.sim.now() + rng_.interArrival(rate), [this] {
    if (Kubelet* k = pickLive(/*withPods=*/true)) {
      k->fleet->flipPod(*k, static_cast<std::uint32_t>(rng_.below(k->pods->created)));
    }
    scheduleFlip();
  });
}

// The pod's readiness probe fails for notReadyFor, then passes again: two status
// PATCHes, each a change of its EndpointSlice.
void FleetInstance::flipPod(Kubelet& k, std::uint32_t slot) {
  const std::uint64_t key = slotKey(k, slot);
  if (replacing_.contains(key) || !notReady_.insert(key).second) {
    ++flipsSkipped_;  // being replaced, or not ready already
    return;
  }
  patchPodStatus(k, slot, /*flip=*/true);
  const std::uint16_t gen = slot < k.pods->generation.size() ? k.pods->generation[slot] : 0;
  events_.at(ctx_.sim.now() + p_.services.notReadyFor, [this, &k, slot, key, gen] {
    if (!notReady_.erase(key)) return;  // replaced meanwhile: the successor starts ready
    const std::uint16_t now = slot < k.pods->generation.size() ? k.pods->generation[slot] : 0;
    if (now != gen || k.state != NodeState::kRunning) return;
    patchPodStatus(k, slot, /*flip=*/true);
  });
}

void FleetInstance::flipAnswered(Kubelet& k, std::uint32_t slot, bool ready) {
  ++flips_;
  groups_->deliveries.changed(podIP(k, slot), ready, ctx_.sim.now());
}

// An EndpointSlice event on node k's kube-proxy stream: each endpoint whose pod changed
// readiness, in the state it changed to, is a receipt.
void FleetInstance::observeSlice(const Kubelet& k, const json& slice) {
  DeliveryBook& book = groups_->deliveries;
  if (book.empty()) return;
  auto eps = slice.find("endpoints");
  if (eps == slice.end() || !eps->is_array()) return;
  std::vector<DeliveryBook::Endpoint> seen;
  seen.reserve(eps->size());
  for (const auto& e : *eps) {
    auto addrs = e.find("addresses");
    if (addrs == e.end() || !addrs->is_array() || addrs->empty() || !(*addrs)[0].is_string()) continue;
    bool ready = true;  // unset means ready (discovery.k8s.io/v1 EndpointConditions)
    if (auto c = e.find("conditions"); c != e.end() && c->is_object()) {
      if (auto r = c->find("ready"); r != c->end() && r->is_boolean()) ready = r->get<bool>();
    }
    seen.push_back({(*addrs)[0].get_ref<const std::string&>(), ready});
  }
  book.seen(seen, k.index, ctx_.sim.now());
}

// The flips this instance made (the fleet's delivery book is FleetInstance::summary's).
json FleetInstance::servicesSummary() const {
  return {
      {"readinessFlips", flips_}, {"readinessFlipFailures", flipFailures_}, {"readinessFlipsSkipped", flipsSkipped_}};
}

}  // namespace cpscale::workloads::fleet

namespace cpscale::workloads {

nlohmann::json DeliveryBook::summary() const {
  std::lock_guard lock(mu_);
  nlohmann::json seconds = nlohmann::json::array();
  for (double s : seconds_) seconds.push_back(std::round(s * 1000) / 1000);
  return {{"changes", changes_}, {"receipts", seconds_.size()}, {"seconds", std::move(seconds)}};
}

}  // namespace cpscale::workloads
