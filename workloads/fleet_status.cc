// Node status: computed every nodeStatusUpdateFrequency and PATCHed to
// nodes/<n>/status when a report is due, it changed, or the node watch shows Ready
// not True; heartbeats only, or every condition in full.
#include "workloads/fleet_instance.h"

namespace cpscale::workloads::fleet {

namespace {

// The four conditions a kubelet reports, in the order it sets them, with what it
// writes when each holds (the reasons and messages of pkg/kubelet/nodestatus).
struct ConditionText {
  const char* type;
  const char* status;
  const char* reason;
  const char* message;
};
constexpr ConditionText kConditions[] = {
    {"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
    {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
    {"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
    {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
};

}  // namespace

void FleetInstance::computeStatus(Kubelet& k) {
  const TimePoint now = ctx_.sim.now();
  k.statusGrid = now;
  // What the node watch shows is the kubelet's informer copy: a Ready that is not
  // True there (the node lifecycle controller marked it Unknown) differs from what the
  // kubelet computes, so it reports at once.
  const bool changed =
      (p_.statusChangeProbability > 0 && engine::toUnitInterval(k.rng.next()) < p_.statusChangeProbability) ||
      k.ready == ReadySeen::kNotTrue || k.fullStatus;
  // The kubelet compares against the last report time with its own tick: a tick that
  // lands on the frequency boundary reports.
  const bool due = now - k.lastReport >= p_.statusReportFrequency;
  if ((changed || due) && !k.reporting) patchStatus(k);
  if (statusEveryTick()) return;
  // The timer skips the computations that cannot PATCH (statusTimerPeriod): it is
  // already re-armed for a report's interval from now. Sooner while each computation
  // reports (Ready not True, a full status or a due report still to send); later
  // when the last report was sent between ticks.
  const bool reportsNext =
      k.ready == ReadySeen::kNotTrue || k.fullStatus || now - k.lastReport >= p_.statusReportFrequency;
  const TimePoint next =
      reportsNext ? now + p_.statusUpdateFrequency : statusTickAtOrAfter(k, k.lastReport + p_.statusReportFrequency);
  if (next != now + p_.statusTimerPeriod()) k.statusTimer.start(next);
}

// The first of the node's status computations at or after `t`.
TimePoint FleetInstance::statusTickAtOrAfter(const Kubelet& k, TimePoint t) const {
  if (t <= k.statusGrid) return k.statusGrid;
  const Duration f = p_.statusUpdateFrequency;
  return k.statusGrid + f * ((t - k.statusGrid + f - Duration{1}) / f);
}

// The kubelet's PATCH is the difference between its informer's copy and the status
// it computed: only heartbeats while the copy agrees, every condition in full when it
// does not (a Ready the controller set to Unknown) or the kubelet came back.
void FleetInstance::patchStatus(Kubelet& k) {
  const std::string t = rfc3339(unixNow());
  const bool full = k.fullStatus || k.ready == ReadySeen::kNotTrue;
  k.fullStatus = false;
  std::string body;
  body.reserve(full ? 1000 : 520);
  body += R"({"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},)"
          R"({"type":"PIDPressure"},{"type":"Ready"}],"conditions":[)";
  for (int i = 0; i < 4; ++i) {
    const ConditionText& c = kConditions[i];
    body += i ? "," : "";
    body += R"({"lastHeartbeatTime":")" + t + "\"";
    if (full) {
      body += R"(,"lastTransitionTime":")" + t + R"(","message":")" + c.message + R"(","reason":")" + c.reason +
              R"(","status":")" + c.status + "\"";
    }
    body += R"(,"type":")" + std::string(c.type) + "\"}";
  }
  body += "]}}";
  kube::ApiRequest req;
  req.verb = kube::Verb::kPatch;
  req.patchType = kube::PatchType::kStrategicMerge;
  req.ref = kube::ResourceRef(nodes_).named(nodeName(k.index)).sub("status");
  req.body = std::move(body);
  req.decode = kube::Decode::kNone;  // the Node it gets back is not read
  req.intendedAt = ctx_.sim.now();
  k.reporting = true;
  k.lastReport = ctx_.sim.now();
  calls_.call(std::move(req), [this, &k](kube::ApiResult r) {
    k.reporting = false;
    r.ok() ? ++c_.statusPatches : ++c_.statusFailed;
  });
}

}  // namespace cpscale::workloads::fleet
