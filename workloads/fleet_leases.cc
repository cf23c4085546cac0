// The kubelet's Lease: created at registration, renewed by a PUT of the cached copy
// every period, read again only after a 409 Conflict, created anew when deleted.
#include "workloads/fleet_instance.h"

#include <cstring>

namespace cpscale::workloads::fleet {

namespace {

constexpr const char* kRvMarker = "@@cpscale-rv@@";
constexpr const char* kRenewMarker = "@@cpscale-renew@@";

}  // namespace

void FleetInstance::createLease(Kubelet& k, const std::string& nodeUid) {
  const std::string name = nodeName(k.index);
  json lease = p_.leaseTemplate->fill(
      {{"name", name}, {"leaseDurationSeconds", p_.leaseDurationSeconds}, {"renewTime", microTime(unixNow())}});
  lease["metadata"]["labels"].update(ctx_.labels(p_.name));
  if (!nodeUid.empty()) {
    // As the kubelet does, so garbage collection removes the Lease with its Node.
    lease["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", name}, {"uid", nodeUid}}});
  }
  auto req = kube::ApiRequest::create(leases_, lease);
  req.intendedAt = ctx_.sim.now();
  k.renewing = true;
  calls_.call(std::move(req), [this, &k](kube::ApiResult r) {
    k.renewing = false;
    if (k.awaitingLease) {
      k.awaitingLease = false;
      setupStepDone(k);
    }
    if (r.ok()) {
      ++c_.leasesCreated;
      renewalAnswered(k);
      cacheLease(k, std::move(r.body));
    } else if (r.alreadyExists()) {
      // Left by an earlier run with this id: adopt it, as a restarted kubelet does.
      refetchLease(k, false);
    } else {
      ++c_.renewFailed;
    }
    if (k.state == NodeState::kRunning && !k.leaseTimer.armed()) k.leaseTimer.start(firstTick(k, p_.renewPeriod()));
  });
}

// Caches the server's copy of the Lease as the next PUT's body.
void FleetInstance::cacheLease(Kubelet& k, json obj) {
  if (!obj.is_object()) return;
  std::string rv = obj.value("/metadata/resourceVersion"_json_pointer, std::string());
  obj["metadata"]["resourceVersion"] = kRvMarker;
  obj["spec"]["renewTime"] = kRenewMarker;
  std::string s = obj.dump();
  std::size_t rvAt = s.find(kRvMarker);
  s.replace(rvAt, std::strlen(kRvMarker), rv);
  std::size_t renewAt = s.find(kRenewMarker);
  s.replace(renewAt, std::strlen(kRenewMarker), std::string(kMicroTimeLength, '0'));
  k.lease = leaseTexts_.store(s, rvAt, rv.size(), renewAt, kMicroTimeLength);
}

void FleetInstance::renew(Kubelet& k) {
  if (k.lease.empty()) return;  // creation still in flight or failed: next period
  if (k.renewing) {
    // The previous renewal has not come back within a period; a kubelet's loop would
    // still be blocked in it, so this tick is not a request.
    ++c_.renewSkipped;
    return;
  }
  putLease(k, /*afterConflict=*/false);
}

void FleetInstance::putLease(Kubelet& k, bool afterConflict) {
  kube::ApiRequest req;
  req.verb = kube::Verb::kUpdate;
  req.ref = leases_.named(nodeName(k.index));
  std::size_t renewAt = 0;
  leaseTexts_.build(k.lease, req.body, renewAt);
  formatMicroTime(unixNow(), req.body.data() + renewAt);
  req.decode = kube::Decode::kResourceVersion;  // all it keeps of the answer
  req.intendedAt = ctx_.sim.now();
  k.renewing = true;
  calls_.call(std::move(req), [this, &k, afterConflict](kube::ApiResult r) {
    k.renewing = false;
    if (r.ok()) {
      ++c_.renewals;
      renewalAnswered(k);
      if (!r.resourceVersion.empty()) k.lease.setResourceVersion(r.resourceVersion);
      return;
    }
    if (r.conflict() && !afterConflict) {
      // The only time the kubelet reads its Lease: fetch the latest and retry once.
      ++c_.conflicts;
      refetchLease(k, true);
      return;
    }
    if (r.notFound() && k.state == NodeState::kRunning) {
      // Someone deleted it; the kubelet creates a new one.
      ++c_.renewFailed;
      k.lease = {};
      createLease(k, "");
      return;
    }
    ++c_.renewFailed;
  });
}

void FleetInstance::refetchLease(Kubelet& k, bool thenPut) {
  auto req = kube::ApiRequest::get(leases_.named(nodeName(k.index)));
  req.intendedAt = ctx_.sim.now();
  k.renewing = true;
  calls_.call(std::move(req), [this, &k, thenPut](kube::ApiResult r) {
    k.renewing = false;
    if (!r.ok()) {
      ++c_.renewFailed;
      return;
    }
    cacheLease(k, std::move(r.body));
    if (thenPut && k.state == NodeState::kRunning) putLease(k, /*afterConflict=*/true);
  });
}

}  // namespace cpscale::workloads::fleet
