// kube-controller-manager's EndpointSlice controller in the model plane
// (ModelEndpointSlices), and beside it the endpoints controller's one Endpoints object
// per Service: what they read of Services and pods, the slices each Service's endpoints
// are packed into, and the writes that keep them: batched per Service, a POST for a new
// object and a PUT after, each landing once its modelled latency has passed, and a
// DELETE once the Service is gone.
#include "sim/model/plane_impl.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace cpscale::model {

using nlohmann::json;

void ModelPlane::Impl::startEndpointSlices() {
  const ModelEndpointSlices& es = options_.endpointSlices;
  if (!es.enabled) return;
  if (es.maxEndpointsPerSlice == 0) throw std::invalid_argument("the EndpointSlice controller's slices hold none");
  if (options_.nodeLifecycle.apiserver >= options_.apiservers)
    throw std::invalid_argument("the controller-manager's apiserver is not one the model plane has");
  services_ = store_.findByKey("", "services");
  endpointSlices_ = store_.findByKey("discovery.k8s.io", "endpointslices");
  endpointPods_ = store_.findByKey("", "pods");
  endpointsTable_ = store_.findByKey("", "endpoints");
  if (endpointSlices_ == nullptr || endpointPods_ == nullptr) services_ = nullptr;
  startQueue(sliceQueue_, "endpoint_slice", es.sliceWorkers, [this](const std::string& key) { syncSlices(key); });
  startQueue(endpointsQueue_, "endpoint", es.endpointsWorkers, [this](const std::string& key) { syncEndpoints(key); });
}

bool ModelPlane::Impl::ServiceEndpoints::selects(const LabelSet& labels) const {
  for (const auto& [k, v] : selector) {
    auto it = std::lower_bound(
        labels.begin(), labels.end(), k,
        [](const std::pair<std::string, std::string>& l, const std::string& key) { return l.first < key; });
    if (it == labels.end() || it->first != k || it->second != v) return false;
  }
  return true;
}

std::optional<ModelPlane::Impl::PodEndpoint> ModelPlane::Impl::endpointOf(const Change& c) {
  if (c.type == ChangeType::kDeleted || !c.object) return std::nullopt;
  return endpointOf(c.ns, c.name, c.labels, *c.object);
}

std::optional<ModelPlane::Impl::PodEndpoint> ModelPlane::Impl::endpointOf(const std::string& ns,
                                                                          const std::string& name,
                                                                          std::shared_ptr<const LabelSet> labels,
                                                                          const std::string& text) {
  const json pod = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!pod.is_object()) return std::nullopt;
  const json status = pod.value("status", json::object());
  PodEndpoint ep;
  ep.ip = status.is_object() ? status.value("podIP", std::string()) : std::string();
  if (ep.ip.empty()) return std::nullopt;
  ep.ns = ns;
  ep.name = name;
  ep.labels = std::move(labels);
  ep.node = pod.value("/spec/nodeName"_json_pointer, std::string());
  if (status.is_object())
    for (const auto& cond : status.value("conditions", json::array()))
      if (cond.is_object() && cond.value("type", std::string()) == "Ready")
        ep.serving = cond.value("status", std::string()) == "True";
  // A terminating pod stays in its slices, not ready (EndpointSliceTerminatingCondition),
  // and leaves the Endpoints object.
  ep.terminating = pod.contains("/metadata/deletionTimestamp"_json_pointer);
  ep.ready = ep.serving && !ep.terminating;
  return ep;
}

void ModelPlane::Impl::serviceChanged(const Change& c, double weight) {
  const std::string key = c.ns + "/" + c.name;
  auto it = serviceEndpoints_.find(key);
  json svc = c.type == ChangeType::kDeleted || !c.object ? json() : json::parse(*c.object, nullptr, false);
  const json selector = svc.is_object() ? svc.value("/spec/selector"_json_pointer, json()) : json();
  if (!selector.is_object() || selector.empty()) {
    // Gone, or no selector (no endpoints of the controller's): its slices go with it.
    if (it == serviceEndpoints_.end()) return;
    // Deleted after this change's fan-out (a write inside it would nest in the store's).
    std::vector<std::pair<Table*, std::string>> gone;
    for (const EndpointSliceState& s : it->second.slices)
      if (s.written) gone.emplace_back(endpointSlices_, s.name);
    if (it->second.endpoints.written && endpointsTable_ != nullptr) gone.emplace_back(endpointsTable_, c.name);
    if (!gone.empty()) {
      const auto id = std::make_shared<engine::EventId>(0);
      *id = sched_.scheduleAfter(engine::Duration::zero(),
                                 [this, id, gone = std::move(gone), ns = c.ns, w = it->second.weight] {
                                   controllerWrites_.erase(*id);
                                   for (const auto& [table, name] : gone)
                                     controllerWrite(*table, "DELETE", ns, name, "", "", w);
                                 });
      controllerWrites_.insert(*id);
    }
    if (it->second.sync != 0) sched_.cancel(it->second.sync);
    if (it->second.endpointsSync != 0) sched_.cancel(it->second.endpointsSync);
    servicesByNamespace_[c.ns].erase(key);
    serviceEndpoints_.erase(it);
    return;
  }
  if (it == serviceEndpoints_.end()) {
    it = serviceEndpoints_.emplace(key, ServiceEndpoints{}).first;
    it->second.ns = c.ns;
    it->second.name = c.name;
    auto& inNamespace = servicesByNamespace_[c.ns];
    // The namespace's first Service: its pods' endpoints are read from the store now and
    // kept from here on (pods of namespaces without a Service are not parsed).
    if (inNamespace.empty()) {
      const std::string prefix = c.ns + "/";
      auto stale = podEndpoints_.lower_bound(prefix);
      while (stale != podEndpoints_.end() && stale->first.starts_with(prefix)) stale = podEndpoints_.erase(stale);
      for (auto o = endpointPods_->objects.lower_bound(prefix);
           o != endpointPods_->objects.end() && o->first.starts_with(prefix); ++o) {
        const std::string name = o->first.substr(prefix.size());
        if (auto ep = endpointOf(c.ns, name, o->second.labels, *o->second.text)) podEndpoints_[o->first] = *ep;
      }
    }
    inNamespace.insert(key);
  }
  ServiceEndpoints& s = it->second;
  s.weight = weight;
  s.uid = svc.value("/metadata/uid"_json_pointer, std::string());
  s.selector.clear();
  for (const auto& [k, v] : selector.items())
    if (v.is_string()) s.selector.emplace_back(k, v.get<std::string>());
  std::sort(s.selector.begin(), s.selector.end());
  s.ports.clear();
  for (const auto& p : svc.value("/spec/ports"_json_pointer, json::array())) {
    if (!p.is_object()) continue;
    ServiceEndpoints::Port port{p.value("name", std::string()), p.value("protocol", std::string("TCP")),
                                p.value("port", std::int64_t{0})};
    if (auto t = p.find("targetPort"); t != p.end() && t->is_number_integer()) port.port = t->get<std::int64_t>();
    s.ports.push_back(std::move(port));
  }
  // Its endpoints as the selector finds them now: the pods it no longer selects out,
  // the ones it selects in.
  std::vector<std::string> out;
  for (const auto& [pod, index] : s.sliceOfPod) {
    auto ep = podEndpoints_.find(c.ns + "/" + pod);
    if (ep == podEndpoints_.end() || !ep->second.labels || !s.selects(*ep->second.labels)) out.push_back(pod);
  }
  for (const std::string& pod : out) placeEndpoint(s, pod, nullptr);
  for (auto ep = podEndpoints_.lower_bound(c.ns + "/"); ep != podEndpoints_.end() && ep->second.ns == c.ns; ++ep)
    if (ep->second.labels && s.selects(*ep->second.labels)) placeEndpoint(s, ep->second.name, &ep->second);
  if (s.slices.empty()) {
    // A Service that selects nothing still has its one (empty) slice.
    s.slices.push_back({});
    s.slices.back().dirty = true;
  }
  s.endpoints.dirty = true;
  scheduleSliceSync(key);
}

void ModelPlane::Impl::podEndpointChanged(const Change& c) {
  auto services = servicesByNamespace_.find(c.ns);
  if (services == servicesByNamespace_.end() || services->second.empty()) return;
  const std::string key = c.ns + "/" + c.name;
  std::optional<PodEndpoint> now = endpointOf(c);
  auto was = podEndpoints_.find(key);
  if (was == podEndpoints_.end() && !now) return;
  if (was != podEndpoints_.end() && now && was->second == *now) return;
  const std::optional<PodEndpoint> before =
      was == podEndpoints_.end() ? std::nullopt : std::optional<PodEndpoint>(was->second);
  if (now)
    podEndpoints_[key] = *now;
  else
    podEndpoints_.erase(was);
  const PodEndpoint* ep = now ? &podEndpoints_[key] : nullptr;
  for (const std::string& svcKey : services->second) {
    ServiceEndpoints& s = serviceEndpoints_.at(svcKey);
    const bool selectedNow = ep && ep->labels && s.selects(*ep->labels);
    const bool selectedBefore = before && before->labels && s.selects(*before->labels);
    if (!selectedNow && !selectedBefore) continue;
    placeEndpoint(s, c.name, selectedNow ? ep : nullptr);
    scheduleSliceSync(svcKey);
  }
}

void ModelPlane::Impl::placeEndpoint(ServiceEndpoints& svc, const std::string& pod, const PodEndpoint* ep) {
  svc.endpoints.dirty = true;
  auto at = svc.sliceOfPod.find(pod);
  if (at != svc.sliceOfPod.end()) {
    EndpointSliceState& slice = svc.slices[at->second];
    if (ep == nullptr) {
      slice.endpoints.erase(pod);
      svc.sliceOfPod.erase(at);
    } else {
      slice.endpoints[pod] = *ep;
    }
    slice.dirty = true;
    return;
  }
  if (ep == nullptr) return;
  // A new endpoint goes to the first slice with room, else a new slice.
  const std::size_t max = options_.endpointSlices.maxEndpointsPerSlice;
  std::size_t i = 0;
  while (i < svc.slices.size() && svc.slices[i].endpoints.size() >= max) ++i;
  if (i == svc.slices.size()) svc.slices.push_back({});
  svc.slices[i].endpoints[pod] = *ep;
  svc.slices[i].dirty = true;
  svc.sliceOfPod[pod] = i;
}

void ModelPlane::Impl::scheduleSliceSync(const std::string& serviceKey) {
  ServiceEndpoints& s = serviceEndpoints_.at(serviceKey);
  queueAfter(s, serviceKey, false, options_.endpointSlices.batchPeriod);
  if (endpointsTable_ != nullptr) queueAfter(s, serviceKey, true, options_.endpointSlices.endpointsBatchPeriod);
}

void ModelPlane::Impl::queueAfter(ServiceEndpoints& s, const std::string& serviceKey, bool endpoints,
                                  engine::Duration after) {
  // queue.AddAfter(key, after): a Service that already waits takes this change with it.
  engine::EventId& timer = endpoints ? s.endpointsSync : s.sync;
  if (timer != 0) return;
  timer = sched_.scheduleAfter(after, [this, serviceKey, endpoints] {
    ServiceEndpoints& svc = serviceEndpoints_.at(serviceKey);
    (endpoints ? svc.endpointsSync : svc.sync) = 0;
    enqueue(endpoints ? endpointsQueue_ : sliceQueue_, serviceKey);
  });
}

void ModelPlane::Impl::syncSlices(const std::string& serviceKey) {
  auto writes = std::make_shared<std::vector<PendingWrite>>();
  auto it = serviceEndpoints_.find(serviceKey);
  if (it != serviceEndpoints_.end()) {
    ServiceEndpoints& s = it->second;
    for (std::size_t i = 0; i < s.slices.size(); ++i) {
      EndpointSliceState& slice = s.slices[i];
      if (!slice.dirty || slice.inFlight) continue;
      if (!slice.written) {
        // generateName "<service>-": the apiserver's five random characters, here a counter.
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%05llx", static_cast<unsigned long long>(++slicesNamed_ % 0x100000));
        slice.name = s.name + "-" + suffix;
      }
      slice.dirty = false;
      std::string body = sliceBody(s, slice);
      if (!unchanged(slice, body))
        writes->push_back({endpointSlices_, slice.written ? "PUT" : "POST", s.ns, slice.name, std::move(body), s.weight,
                           [this, serviceKey, i](int status) { sliceWritten(serviceKey, i, status); }});
    }
  }
  sendQueued(sliceQueue_, serviceKey, std::move(writes), 0);
}

void ModelPlane::Impl::syncEndpoints(const std::string& serviceKey) {
  auto writes = std::make_shared<std::vector<PendingWrite>>();
  auto it = serviceEndpoints_.find(serviceKey);
  if (it != serviceEndpoints_.end() && endpointsTable_ != nullptr) {
    ServiceEndpoints& s = it->second;
    EndpointSliceState& e = s.endpoints;
    if (e.dirty && !e.inFlight) {
      e.name = s.name;
      e.dirty = false;
      std::string body = endpointsBody(s);
      if (!unchanged(e, body))
        writes->push_back({endpointsTable_, e.written ? "PUT" : "POST", s.ns, s.name, std::move(body), s.weight,
                           [this, serviceKey](int status) { sliceWritten(serviceKey, kEndpointsObject, status); }});
    }
  }
  sendQueued(endpointsQueue_, serviceKey, std::move(writes), 0);
}

bool ModelPlane::Impl::unchanged(EndpointSliceState& object, const std::string& body) {
  object.sentHash = std::hash<std::string>{}(body);
  if (object.written && object.sentHash == object.writtenHash) return true;
  object.inFlight = true;
  return false;
}

void ModelPlane::Impl::sliceWritten(const std::string& serviceKey, std::size_t i, int status) {
  auto it = serviceEndpoints_.find(serviceKey);
  if (it == serviceEndpoints_.end()) return;
  ServiceEndpoints& s = it->second;
  if (i != kEndpointsObject && i >= s.slices.size()) return;
  EndpointSliceState& slice = i == kEndpointsObject ? s.endpoints : s.slices[i];
  slice.inFlight = false;
  if (status == 200 || status == 201) {
    slice.written = true;
    slice.writtenHash = slice.sentHash;
    return;
  }
  // Not sent, refused or lost: the controller's workqueue retries the Service after its
  // back-off (1 s at first; a slice deleted by someone else is created again).
  if (status == 404) slice.written = false;
  slice.dirty = true;
  queueAfter(s, serviceKey, i == kEndpointsObject, std::chrono::seconds(1));
}

std::string ModelPlane::Impl::endpointsBody(const ServiceEndpoints& svc) const {
  json ready = json::array(), notReady = json::array();
  for (const EndpointSliceState& slice : svc.slices)
    for (const auto& [pod, ep] : slice.endpoints)
      if (!ep.terminating)
        (ep.ready ? ready : notReady)
            .push_back({{"ip", ep.ip},
                        {"nodeName", ep.node},
                        {"targetRef", {{"kind", "Pod"}, {"namespace", ep.ns}, {"name", pod}}}});
  json ports = json::array();
  for (const auto& p : svc.ports) ports.push_back({{"name", p.name}, {"protocol", p.protocol}, {"port", p.port}});
  json subset = {{"ports", std::move(ports)}};
  if (!ready.empty()) subset["addresses"] = std::move(ready);
  if (!notReady.empty()) subset["notReadyAddresses"] = std::move(notReady);
  json subsets = json::array();
  if (subset.contains("addresses") || subset.contains("notReadyAddresses")) subsets.push_back(std::move(subset));
  return json{{"apiVersion", "v1"},
              {"kind", "Endpoints"},
              {"metadata", {{"name", svc.name}, {"namespace", svc.ns}}},
              {"subsets", std::move(subsets)}}
      .dump();
}

std::string ModelPlane::Impl::sliceBody(const ServiceEndpoints& svc, const EndpointSliceState& slice) const {
  json endpoints = json::array();
  for (const auto& [pod, ep] : slice.endpoints) {
    endpoints.push_back(
        {{"addresses", {ep.ip}},
         {"conditions", {{"ready", ep.ready}, {"serving", ep.serving}, {"terminating", ep.terminating}}},
         {"nodeName", ep.node},
         {"targetRef", {{"kind", "Pod"}, {"namespace", ep.ns}, {"name", pod}}}});
  }
  json ports = json::array();
  for (const auto& p : svc.ports) ports.push_back({{"name", p.name}, {"protocol", p.protocol}, {"port", p.port}});
  json meta = {{"name", slice.name},
               {"namespace", svc.ns},
               {"labels",
                {{"kubernetes.io/service-name", svc.name},
                 {"endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io"}}},
               {"ownerReferences",
                {{{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"name", svc.name},
                  {"uid", svc.uid},
                  {"controller", true},
                  {"blockOwnerDeletion", true}}}}};
  return json{{"apiVersion", "discovery.k8s.io/v1"}, {"kind", "EndpointSlice"},
              {"metadata", std::move(meta)},         {"addressType", "IPv4"},
              {"endpoints", std::move(endpoints)},   {"ports", std::move(ports)}}
      .dump();
}

}  // namespace cpscale::model
