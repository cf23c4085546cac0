// The kubelet's Events, as its recorder writes them: a node's start, a pod's start,
// behind the fleet's event bucket and dropped when its queue is full.
#include "workloads/fleet_instance.h"

#include <cstdio>

namespace cpscale::workloads::fleet {

namespace {

// Events waiting for a token beyond this many are dropped, as the kubelet's event
// broadcaster drops when its queue (1000) is full.
constexpr std::size_t kEventQueue = 1000;

}  // namespace

// The node's start: what a kubelet records when it starts (or restarts) and
// registers, in that order.
void FleetInstance::nodeStartEvents(Kubelet& k) {
  if (!p_.events) return;
  const std::string node = nodeName(k.index);
  const json ref = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}};
  const std::string status = "Node " + node + " status is now: ";
  recordEvent(ref, "default", node, "Starting", "Starting kubelet.");
  for (const char* reason : {"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"}) {
    recordEvent(ref, "default", node, reason, status + reason);
  }
  recordEvent(ref, "default", node, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods");
  recordEvent(ref, "default", node, "NodeReady", status + "NodeReady");
}

// One Event as client-go's recorder makes it (name: object name and the time in hex
// nanoseconds), sent when the fleet's event bucket has a token. Fire-and-forget.
void FleetInstance::recordEvent(const json& involved, const std::string& ns, const std::string& host,
                                const char* reason, std::string message) {
  if (eventsQueued_ >= kEventQueue) {
    ++c_.eventsDropped;
    return;
  }
  // The sequence keeps names of events recorded in the same instant apart.
  const std::int64_t nanos = unixNow() + static_cast<std::int64_t>(eventSeq_++);
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(nanos));
  const std::string t = rfc3339(unixNow());
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata",
              {{"name", involved["name"].get<std::string>() + "." + hex},
               {"namespace", ns},
               {"labels", ctx_.labels(p_.name)}}},
             {"involvedObject", involved},
             {"reason", reason},
             {"message", std::move(message)},
             {"source", {{"component", "kubelet"}, {"host", host}}},
             {"firstTimestamp", t},
             {"lastTimestamp", t},
             {"count", 1},
             {"type", "Normal"},
             {"eventTime", nullptr},
             {"reportingComponent", "kubelet"},
             {"reportingInstance", host}};
  ++eventsQueued_;
  events_.at(eventBucket_.reserve(ctx_.sim.now()), [this, ns, ev = std::move(ev)] {
    --eventsQueued_;
    auto req = kube::ApiRequest::create(kube::ResourceRef(kube::gvr::kEvents).in(ns), ev);
    req.decode = kube::Decode::kNone;
    req.intendedAt = ctx_.sim.now();
    ++eventsInFlight_;
    calls_.call(std::move(req), [this](kube::ApiResult r) {
      --eventsInFlight_;
      r.ok() ? ++c_.eventsCreated : ++c_.eventFailed;
      maybeSetupDone();
    });
  });
}

}  // namespace cpscale::workloads::fleet
