// Pods bound to the fleet's nodes: created behind the pod bucket, started (Events and
// a first status), their status PATCHed in turn, and replaced through churn.
#include "workloads/fleet_instance.h"

namespace cpscale::workloads::fleet {

void FleetInstance::createPods(Kubelet& k) {
  if (!k.pods) {
    Duration gap = p_.podStatusInterval / p_.podsPerNode;
    k.pods = std::make_unique<Kubelet::Pods>(k, gap, seedFor(k.index) ^ 0x9e37);
  }
  for (std::int64_t i = 0; i < p_.podsPerNode; ++i) {
    events_.at(podBucket_.reserve(ctx_.sim.now()), [this, &k, i] {
      if (k.state != NodeState::kRunning && k.state != NodeState::kFailed) {
        podAnswered(k);
        return;
      }
      createPod(k, static_cast<std::uint32_t>(i), [this, &k](bool created) {
        podAnswered(k);
        if (!created) return;
        // The periodic updates start within one gap of the node's first pod, whose
        // own start was just reported: at the node's own phase of the gap, as its
        // renewals do, so a fleet registered in a burst does not report its pods in
        // one burst every gap.
        if (++k.pods->created == 1 && k.state == NodeState::kRunning) {
          k.pods->timer.start(firstTick(k, k.pods->timer.period()));
        }
      });
    });
  }
}

std::string FleetInstance::podName(const Kubelet& k, std::uint32_t slot) const {
  std::string name = nodeName(k.index) + "-p" + std::to_string(slot);
  const auto& gen = k.pods->generation;
  if (slot < gen.size() && gen[slot] > 0) name += "-g" + std::to_string(gen[slot]);
  return name;
}

// Creates the pod in `slot` (under its current generation's name) and, once it
// exists, runs the kubelet's start sequence: its events and its first status.
// `done(created)` runs when the POST is answered.
template <class Done>
void FleetInstance::createPod(Kubelet& k, std::uint32_t slot, Done done) {
  const std::string node = nodeName(k.index);
  json pod = p_.podTemplate->fill({{"name", podName(k, slot)}, {"namespace", pods_.ns}, {"node", node}});
  pod["metadata"]["labels"].update(ctx_.labels(p_.name));
  if (p_.services.count > 0) pod["metadata"]["labels"]["cpscale.io/service"] = serviceOf(k, slot);
  auto req = kube::ApiRequest::create(pods_, pod);
  req.decode = kube::Decode::kMetadata;
  req.intendedAt = ctx_.sim.now();
  auto answered = [this, &k, slot, pod = std::move(pod), done = std::move(done)](kube::ApiResult r) mutable {
    if (!r.ok() && !r.alreadyExists()) {
      ++c_.podFailed;
      done(false);
      return;
    }
    ++c_.podsCreated;
    if (r.ok()) pod["metadata"]["uid"] = r.body.value("/metadata/uid"_json_pointer, std::string());
    done(true);
    if (k.state == NodeState::kRunning) podStarted(k, slot, pod);
  };
  calls_.call(std::move(req), std::move(answered));
}

// What the kubelet does when it starts a pod bound to it: the image pull and
// container events, then the status manager's first PATCH (Running and Ready).
void FleetInstance::podStarted(Kubelet& k, std::uint32_t slot, const json& pod) {
  if (p_.events) {
    const json& container = pod["spec"]["containers"][0];
    const std::string image = container.value("image", std::string());
    json ref = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"namespace", pods_.ns},
                {"name", pod["metadata"]["name"]},
                {"fieldPath", "spec.containers{" + container.value("name", std::string()) + "}"}};
    if (auto uid = pod["metadata"].value("uid", std::string()); !uid.empty()) ref["uid"] = uid;
    const std::string node = nodeName(k.index);
    const auto pullMs = std::to_string(300 + engine::streamSeed(k.index, ref["name"].get<std::string>()) % 600);
    recordEvent(ref, pods_.ns, node, "Pulling", "Pulling image \"" + image + "\"");
    recordEvent(ref, pods_.ns, node, "Pulled",
                "Successfully pulled image \"" + image + "\" in " + pullMs + "ms (" + pullMs +
                    "ms including waiting). Image size: 321520 bytes.");
    recordEvent(ref, pods_.ns, node, "Created", "Container created");
    recordEvent(ref, pods_.ns, node, "Started", "Container started");
  }
  patchPodStatus(k, slot);
}

void FleetInstance::podStatus(Kubelet& k) {
  Kubelet::Pods& pods = *k.pods;
  if (pods.created == 0) return;
  const std::uint32_t i = pods.next++ % pods.created;
  if (!replacing_.empty() && replacing_.contains(slotKey(k, i))) return;  // between its DELETE and POST
  patchPodStatus(k, i);
}

void FleetInstance::patchPodStatus(Kubelet& k, std::uint32_t slot, bool flip) {
  const std::string t = rfc3339(unixNow());
  const bool ready = notReady_.empty() || !notReady_.contains(slotKey(k, slot));
  const char* status = ready ? "True" : "False";
  const std::string ip = podIP(k, slot);
  // What the kubelet's status manager sends: a strategic merge of the pod's status, its
  // readiness as its probe last found it.
  std::string body = R"({"status":{"phase":"Running","startTime":")" + t +
                     R"(","conditions":[{"type":"Ready","status":")" + status + R"(","lastProbeTime":")" + t +
                     R"(","lastTransitionTime":")" + t + R"("},{"type":"ContainersReady","status":")" + status +
                     R"(","lastProbeTime":")" + t + R"(","lastTransitionTime":")" + t + R"("}],"podIP":")" + ip +
                     R"(","podIPs":[{"ip":")" + ip + R"("}]}})";
  kube::ApiRequest req;
  req.verb = kube::Verb::kPatch;
  req.patchType = kube::PatchType::kStrategicMerge;
  req.ref = pods_.named(podName(k, slot)).sub("status");
  req.body = std::move(body);
  req.decode = kube::Decode::kNone;
  req.intendedAt = ctx_.sim.now();
  calls_.call(std::move(req), [this, &k, slot, flip, ready](kube::ApiResult r) {
    r.ok() ? ++c_.podUpdates : ++c_.podFailed;
    if (!flip) return;
    r.ok() ? flipAnswered(k, slot, ready) : void(++flipFailures_);
  });
}

// Pod replacement: somebody's controller deletes a pod and creates its successor.
// The kubelet's part on the wire is the confirming DELETE (grace period 0) once the
// containers are gone, then the new pod's start.
void FleetInstance::scheduleReplacement() {
  events_.at(ctx_.sim.now() + rng_.interArrival(ctx_.share(p_.podReplacementsPerMinute / 60.0)), [this] {
    if (Kubelet* k = pickLive(/*withPods=*/true)) {
      k->fleet->replacePod(*k, static_cast<std::uint32_t>(rng_.below(k->pods->created)));
    }
    scheduleReplacement();
  });
}

std::uint64_t FleetInstance::slotKey(const Kubelet& k, std::uint32_t slot) {
  return (static_cast<std::uint64_t>(k.index) << 8) | slot;
}

void FleetInstance::replacePod(Kubelet& k, std::uint32_t slot) {
  if (!replacing_.insert(slotKey(k, slot)).second) return;  // this one is being replaced already
  kube::DeleteOptions confirm;
  confirm.gracePeriodSeconds = 0;
  auto req = kube::ApiRequest::remove(pods_.named(podName(k, slot)), confirm);
  req.intendedAt = ctx_.sim.now();
  calls_.call(std::move(req), [this, &k, slot](kube::ApiResult r) {
    if (!r.ok() && !r.notFound()) {
      ++c_.replaceFailed;
      replacing_.erase(slotKey(k, slot));
      return;
    }
    auto& gen = k.pods->generation;
    if (gen.empty()) gen.resize(static_cast<std::size_t>(p_.podsPerNode));
    ++gen[slot];
    notReady_.erase(slotKey(k, slot));  // its successor starts ready
    events_.at(podBucket_.reserve(ctx_.sim.now()), [this, &k, slot] {
      if (k.state != NodeState::kRunning) {  // the node failed or left meanwhile: nobody starts it
        replacing_.erase(slotKey(k, slot));
        return;
      }
      createPod(k, slot, [this, &k, slot](bool created) {
        replacing_.erase(slotKey(k, slot));
        created ? ++c_.podsReplaced : ++c_.replaceFailed;
      });
    });
  });
}

}  // namespace cpscale::workloads::fleet
