// kube-controller-manager's node lifecycle controller in the model plane
// (ModelNodeLifecycle): what it hears from each node, its passes, the status write that
// marks a silent node Unknown, and what follows it and the node's return (taints,
// events, pods marked NotReady), each a write of the controller-manager's own.
#include "sim/model/plane_impl.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace cpscale::model {

using engine::Duration;
using engine::TimePoint;
using nlohmann::json;

void ModelPlane::Impl::startNodeLifecycle() {
  const ModelNodeLifecycle& nl = options_.nodeLifecycle;
  if (!nl.enabled) return;
  if (nl.apiserver >= options_.apiservers)
    throw std::invalid_argument("the node lifecycle controller's apiserver is not one the model plane has");
  if (nl.monitorPeriod <= Duration::zero() || nl.gracePeriod <= Duration::zero())
    throw std::invalid_argument("the node lifecycle controller's periods must be positive");
  nodes_ = store_.findByKey("", "nodes");
  leases_ = store_.findByKey("coordination.k8s.io", "leases");
  pods_ = store_.findByKey("", "pods");
  events_ = store_.findByKey("", "events");
  RequestLabels l;
  l.version = "v1";
  l.resource = "nodes";
  l.subresource = "status";
  l.verb = "PUT";
  l.scope = "resource";
  nodeStatusPutKey_ = l.key();
  nodeLifecycleEvent_ = sched_.scheduleAt(start_ + nl.monitorPeriod, [this] { nodeLifecyclePass(); });
}

void ModelPlane::Impl::nodeHeard(const std::string& name) {
  auto it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) it = nodeHealth_.emplace(name, NodeHealth{}).first;
  it->second.heard = true;
}

void ModelPlane::Impl::forgetNode(const std::string& name) {
  auto it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) return;
  // A write in flight is answered 404 when it lands; its entry stays until then (passes
  // skip it: the Node is gone), so the destructor still finds its event.
  if (it->second.write == 0) {
    nodeHealth_.erase(it);
  } else {
    it->second = NodeHealth{.write = it->second.write};
  }
}

void ModelPlane::Impl::nodeLifecyclePass() {
  const ModelNodeLifecycle& nl = options_.nodeLifecycle;
  const TimePoint now = sched_.now();
  std::string key;
  for (auto& [name, h] : nodeHealth_) {
    // A node's Lease can be written before its Node exists: it waits for the Node.
    key.assign("/").append(name);
    auto node = nodes_->objects.find(key);
    if (node == nodes_->objects.end()) continue;
    // As tryUpdateNodeHealth: a node first seen, or heard from since, is probed now.
    if (h.heard || !h.probed) {
      h.probe = now;
      h.probed = true;
      h.heard = false;
    }
    // A tainted node whose kubelet reported Ready again is reachable: its taints go,
    // and with them the pods' scheduled evictions.
    if (h.tainted && node->second.rv != h.unknownRv && h.write == 0) {
      json obj = json::parse(*node->second.text, nullptr, /*allow_exceptions=*/false);
      bool ready = false;
      if (obj.is_object())
        for (const auto& c : obj["status"].value("conditions", json::array()))
          if (c.is_object() && c.value("type", std::string()) == "Ready")
            ready = c.value("status", std::string()) == "True";
      if (ready) {
        afterNodeReachable(name, h, node->second.weight);
        continue;
      }
    }
    if (h.write != 0 || now - h.probe <= nl.gracePeriod) continue;
    if (node->second.rv == h.unknownRv) continue;  // Unknown already, and unchanged since
    markNodeUnknown(name, h, node->second);
  }
  nodeLifecycleEvent_ = sched_.scheduleAfter(nl.monitorPeriod, [this] { nodeLifecyclePass(); });
}

void ModelPlane::Impl::markNodeUnknown(const std::string& name, NodeHealth& h, const StoredObject& node) {
  json obj = json::parse(*node.text, nullptr, /*allow_exceptions=*/false);
  if (!obj.is_object()) return;
  json& status = obj["status"];
  if (!status.is_object()) status = json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const std::string now = store_.timestamp();
  std::string readyBefore;
  for (const char* type : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
    json* c = nullptr;
    for (auto& e : conditions)
      if (e.is_object() && e.value("type", std::string()) == type) c = &e;
    if (c == nullptr) {
      const json meta = obj.value("metadata", json::object());
      conditions.push_back({{"type", type},
                            {"status", "Unknown"},
                            {"reason", "NodeStatusNeverUpdated"},
                            {"message", "Kubelet never posted node status."},
                            {"lastHeartbeatTime", meta.value("creationTimestamp", now)},
                            {"lastTransitionTime", now}});
      continue;
    }
    if (std::string_view(type) == "Ready") readyBefore = c->value("status", std::string());
    if (c->value("status", std::string()) != "Unknown") {
      (*c)["status"] = "Unknown";
      (*c)["reason"] = "NodeStatusUnknown";
      (*c)["message"] = "Kubelet stopped posting node status.";
      (*c)["lastTransitionTime"] = now;
    }
  }
  // Only a Ready that changed is written (upstream compares the Ready condition alone).
  if (readyBefore == "Unknown") {
    h.unknownRv = node.rv;
    return;
  }
  // The PUT carries the resourceVersion it read: a kubelet that reports in between wins
  // (409), and the next pass looks again.
  const double w = node.weight;
  const std::size_t replica = options_.nodeLifecycle.apiserver;
  // Its identity is not system:masters: the max-in-flight filter applies, and a 429 is
  // retried at the next pass.
  if (!takeSeat(replica, true, w)) {
    apis_[replica].metrics.dropped(nodeStatusPutKey_, 429, w);
    ++stats_.tooManyRequests;
    ++stats_.requests;
    return;
  }
  const double latency = charge(replica, Class::kWrite, "/nodes", w);
  apis_[replica].metrics.inflight(true, w);
  const double answerAt = std::min(latency, seconds(options_.requestTimeout));
  h.write = sched_.scheduleAfter(
      fromSeconds(answerAt), [this, name, body = obj.dump(), w, latency] { writeNodeStatus(name, body, w, latency); });
}

void ModelPlane::Impl::writeNodeStatus(const std::string& name, const std::string& body, double weight,
                                       double latency) {
  auto it = nodeHealth_.find(name);
  if (it != nodeHealth_.end()) it->second.write = 0;
  Apiserver& a = apis_[options_.nodeLifecycle.apiserver];
  a.metrics.inflight(true, -weight);
  releaseSeat(options_.nodeLifecycle.apiserver, true, weight);
  ++stats_.requests;
  if (latency > seconds(options_.requestTimeout)) {
    ++stats_.timeouts;
    a.metrics.request(nodeStatusPutKey_, 504, seconds(options_.requestTimeout), weight);
    return;
  }
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  StoreResult res = store_.update(*nodes_, "", name, "status", body, weight);
  a.metrics.request(nodeStatusPutKey_, res.status, latency, weight);
  if (res.reason == "Conflict") ++stats_.conflicts;
  if (res.weightedWrites > 0) countWrite(etcdFor(*nodes_), res.weightedWrites, res.weightedPuts);
  if (res.status != 200) return;
  ++stats_.nodesMarkedUnknown;
  it = nodeHealth_.find(name);
  if (it == nodeHealth_.end()) return;
  afterNodeUnknown(name, it->second, weight);
  auto node = nodes_->objects.find("/" + name);
  if (node != nodes_->objects.end()) it->second.unknownRv = node->second.rv;
}

namespace {

// The taint the node lifecycle controller puts on a node it no longer hears from.
json unreachableTaint(const char* effect) { return {{"key", "node.kubernetes.io/unreachable"}, {"effect", effect}}; }

// A namespaced object's store key, "ns/name", as its namespace and name.
std::pair<std::string, std::string> splitKey(const std::string& key) {
  const auto slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

// The pod's node from its JSON (spec.nodeName; compact, as the store keeps it).
void ModelPlane::Impl::indexPod(const Change& c) {
  const std::string key = c.ns + "/" + c.name;
  std::string node;
  if (c.type != ChangeType::kDeleted && c.object) {
    static constexpr std::string_view kField = R"("nodeName":")";
    const std::string& text = *c.object;
    if (auto at = text.find(kField); at != std::string::npos) {
      const auto from = at + kField.size();
      if (auto end = text.find('"', from); end != std::string::npos) node = text.substr(from, end - from);
    }
  }
  auto was = nodeOfPod_.find(key);
  if (was != nodeOfPod_.end() && was->second == node) return;
  if (was != nodeOfPod_.end()) {
    auto set = podsByNode_.find(was->second);
    if (set != podsByNode_.end()) {
      set->second.erase(key);
      if (set->second.empty()) podsByNode_.erase(set);
    }
    nodeOfPod_.erase(was);
  }
  if (node.empty()) return;
  nodeOfPod_.emplace(key, node);
  podsByNode_[node].insert(key);
}

// As monitorNodeHealth does once a node's Ready left True (node_lifecycle_controller.go):
// processTaintBaseEviction swaps in the unreachable NoExecute taint, the NoSchedule
// tainting pass adds node.kubernetes.io/unreachable:NoSchedule (two PATCHes of the
// Node), RecordNodeStatusChange records NodeNotReady on the node, and MarkPodsNotReady
// PUTs each bound pod's status with Ready False and records NodeNotReady (Warning) on it.
// The pods' evictions are scheduled by the taint eviction controller for their
// tolerationSeconds (300 s, from DefaultTolerationSeconds); the model does not evict.
void ModelPlane::Impl::afterNodeUnknown(const std::string& name, NodeHealth& h, double weight) {
  setNodeTaints(name, json::array({unreachableTaint("NoExecute")}), weight);
  setNodeTaints(name, json::array({unreachableTaint("NoExecute"), unreachableTaint("NoSchedule")}), weight);
  h.tainted = true;
  const json nodeRef = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", name}};
  recordControllerEvent(nodeRef, "default", "node-controller", "Normal", "NodeNotReady",
                        "Node " + name + " status is now: NodeNotReady", weight);
  auto bound = podsByNode_.find(name);
  if (bound == podsByNode_.end() || pods_ == nullptr) return;
  const std::vector<std::string> keys(bound->second.begin(), bound->second.end());
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const std::string now = store_.timestamp();
  for (const std::string& key : keys) {
    auto pod = pods_->objects.find(key);
    if (pod == pods_->objects.end()) continue;
    json obj = json::parse(*pod->second.text, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object() || !obj["status"].is_object() || !obj["status"]["conditions"].is_array()) continue;
    bool changed = false;
    for (auto& c : obj["status"]["conditions"]) {
      if (!c.is_object() || c.value("type", std::string()) != "Ready") continue;
      if (c.value("status", std::string()) != "False") {
        c["status"] = "False";
        c["lastTransitionTime"] = now;
        changed = true;
      }
      break;
    }
    if (!changed) continue;
    const auto [ns, podName] = splitKey(key);
    // Deleted meanwhile: nothing left to do.
    if (controllerWrite(*pods_, "PUT", ns, podName, "status", obj.dump(), pod->second.weight) == 404) continue;
    const json podRef = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", podName}, {"namespace", ns}};
    recordControllerEvent(podRef, ns, "node-controller", "Warning", "NodeNotReady", "Node is not ready",
                          pod->second.weight);
  }
}

// A node Ready again (markNodeAsReachable and the NoSchedule pass): both taints come
// off (two PATCHes), and the taint eviction controller cancels each bound pod's
// scheduled eviction with a TaintManagerEviction event.
void ModelPlane::Impl::afterNodeReachable(const std::string& name, NodeHealth& h, double weight) {
  setNodeTaints(name, json::array({unreachableTaint("NoSchedule")}), weight);
  setNodeTaints(name, nullptr, weight);
  h.tainted = false;
  auto bound = podsByNode_.find(name);
  if (bound == podsByNode_.end()) return;
  const std::vector<std::string> keys(bound->second.begin(), bound->second.end());
  for (const std::string& key : keys) {
    const auto [ns, podName] = splitKey(key);
    const json podRef = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", podName}, {"namespace", ns}};
    recordControllerEvent(podRef, ns, "taint-eviction-controller", "Normal", "TaintManagerEviction",
                          "Cancelling deletion of Pod " + key, weight);
  }
}

void ModelPlane::Impl::setNodeTaints(const std::string& name, const json& taints, double weight) {
  if (nodes_ == nullptr) return;
  controllerWrite(*nodes_, "PATCH", "", name, "", json{{"spec", {{"taints", taints}}}}.dump(), weight);
}

// As client-go's event recorder posts it: named after the object and the time.
void ModelPlane::Impl::recordControllerEvent(const json& involved, const std::string& ns, const char* component,
                                             const char* type, const char* reason, const std::string& message,
                                             double weight) {
  if (events_ == nullptr) return;
  store_.setNow(sched_.now(), options_.epochUnixNanos);
  const std::string now = store_.timestamp();
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(++controllerEvents_));
  const json e = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"name", involved.value("name", std::string()) + suffix}, {"namespace", ns}}},
                  {"involvedObject", involved},
                  {"reason", reason},
                  {"message", message},
                  {"type", type},
                  {"source", {{"component", component}}},
                  {"firstTimestamp", now},
                  {"lastTimestamp", now},
                  {"count", 1}};
  controllerWrite(*events_, "POST", ns, "", "", e.dump(), weight);
}

}  // namespace cpscale::model
