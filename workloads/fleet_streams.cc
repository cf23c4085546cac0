// Each node's own watches (watches.mode perNode): what a 1.36 kubelet and kube-proxy
// open, every one a streaming list then a watch with its own selector, as their
// informers do. The kubelet's own Node also drives what the fleet sees of Ready (the
// lifecycle the shared node watch shows otherwise). A node's streams open when it
// starts (before it registers, as a kubelet's informers start), close when it fails or
// leaves, and open again, listing everything, when it returns.
#include "workloads/fleet_instance.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cpscale::workloads::fleet {

// The selectors of upstream v1.36: pkg/kubelet/kubelet.go (the Node and Service
// informers), pkg/kubelet/config/apiserver.go (the pod source), pkg/proxy/node.go and
// cmd/kube-proxy/app/server.go (kube-proxy's Node, Service, EndpointSlice and ServiceCIDR
// informers).
std::vector<FleetInstance::StreamSpec> FleetInstance::streamSpecsFor(const KubeletFleetParams::Watches& w) {
  namespace gvr = kube::gvr;
  std::vector<FleetInstance::StreamSpec> out;
  if (!w.perNode) return out;
  if (w.node) out.push_back({"kubelet", gvr::kNodes, "", "metadata.name={node}", true});
  if (w.pods) out.push_back({"kubelet", gvr::kPods, "", "spec.nodeName={node}", false});
  if (w.services) out.push_back({"kubelet", gvr::kServices, "", "spec.clusterIP!=None", false});
  if (w.kubeProxy) {
    out.push_back({"kube-proxy", gvr::kNodes, "", "metadata.name={node}", false});
    out.push_back(
        {"kube-proxy", gvr::kServices, "!service.kubernetes.io/service-proxy-name", "spec.clusterIP!=None", false});
    out.push_back({"kube-proxy", gvr::kEndpointSlices, "!service.kubernetes.io/headless", "", false});
    out.push_back({"kube-proxy", gvr::kServiceCIDRs, "", "", false});
  }
  return out;
}

namespace {

std::string withNode(std::string_view pattern, const std::string& node) {
  std::string s(pattern);
  if (auto at = s.find("{node}"); at != std::string::npos) s.replace(at, 6, node);
  return s;
}

void addCounts(json& into, const ReflectorCounts& c) {
  for (auto [key, v] : {std::pair{"lists", c.lists},
                        {"relists", c.relists},
                        {"streams", c.watches},
                        {"events", c.events},
                        {"bookmarks", c.bookmarks},
                        {"expired", c.expired},
                        {"errors", c.errors},
                        {"backoffs", c.backoffs},
                        {"objectsListed", c.objectsListed}}) {
    into[key] = into.value(key, std::uint64_t{0}) + v;
  }
}

}  // namespace

void FleetInstance::startStreams(Kubelet& k) {
  if (streamSpecs_.empty() || k.streams) return;
  k.streams = std::make_unique<NodeStreams>();
  const std::string node = nodeName(k.index);
  for (const StreamSpec& spec : streamSpecs_) {
    ReflectorOptions o;
    o.collection = kube::ResourceRef(spec.resource);
    o.selector.labelSelector = spec.labelSelector;
    o.selector.fieldSelector = withNode(spec.fieldSelector, node);
    o.selector.perActor = true;  // each sampled node's watches stand for its w nodes' on the model
    o.watchList = true;
    // Only what the handlers read is built of each event: a kube-proxy's EndpointSlice
    // stream carries every slice of the cluster to every node.
    if (spec.ownNode) o.keep = {"/metadata/name", "/status/conditions"};
    if (spec.resource == kube::gvr::kEndpointSlices)
      o.keep = {"/endpoints/*/addresses", "/endpoints/*/conditions/ready"};
    if (o.keep.empty()) o.keep = {"/metadata/name"};
    auto r = std::make_unique<Reflector>(calls_, events_, ctx_.sim, watchRng_, std::move(o));
    if (spec.ownNode) {
      r->onItem([this](const json& n) { observeNode(n); });
      r->onEvent([this](const kube::WatchEvent& ev) {
        if (ev.type == kube::WatchEventType::kAdded || ev.type == kube::WatchEventType::kModified)
          observeNode(ev.object);
      });
    }
    if (spec.resource == kube::gvr::kEndpointSlices) {
      r->onEvent([this, &k](const kube::WatchEvent& ev) {
        if (ev.type == kube::WatchEventType::kAdded || ev.type == kube::WatchEventType::kModified)
          observeSlice(k, ev.object);
      });
    }
    r->onListed([this, &k](bool first) {
      if (first) streamSynced(k);
    });
    r->onRecovered([this](TimePoint lost, TimePoint back) { groups_->outages.recovered(lost, back); });
    k.streams->reflectors.push_back(std::move(r));
  }
  for (auto& r : k.streams->reflectors) r->start();
}

void FleetInstance::streamSynced(Kubelet& k) {
  if (k.watchesAwaiting == 0) return;
  if (--k.watchesAwaiting == 0) setupStepDone(k);
}

// A node that fails or leaves drops its connections: its streams end with it. They are
// kept, stopped, until the instance ends: a LIST or backoff of theirs may still be
// pending, and their counts stay with the fleet's.
void FleetInstance::stopStreams(Kubelet& k) {
  if (!k.streams) return;
  for (auto& r : k.streams->reflectors) r->stop();
  retiredStreams_.push_back(std::move(k.streams));
}

// Per component and resource, over every node on this worker (streams of nodes that
// failed or left included); counts add up when the workers' summaries merge.
json FleetInstance::streamsSummary() const {
  json s = {{"mode", p_.watches.perNode ? "perNode" : "shared"}};
  if (!p_.watches.perNode) return s;
  std::uint64_t synced = 0, down = 0;
  for (const auto& k : kubelets_) {
    if (!k->streams) continue;
    for (const auto& r : k->streams->reflectors) {
      synced += r->synced();
      down += r->lostSince().has_value();
    }
  }
  json by = json::object();
  for (std::size_t i = 0; i < streamSpecs_.size(); ++i) {
    const StreamSpec& spec = streamSpecs_[i];
    by[std::string(spec.component) + "/" + spec.resource.resource] = streamCounts(i);
  }
  s["synced"] = synced;
  s["outNow"] = down;  // in an outage when the summary was taken
  s["byWatch"] = std::move(by);
  return s;
}

// The counts of every node's stream of spec `i`, ended ones included.
json FleetInstance::streamCounts(std::size_t i) const {
  json c = json::object();
  std::string lastError;
  auto add = [&](const Reflector& r) {
    addCounts(c, r.counts());
    if (!r.lastError().empty()) lastError = r.lastError();
  };
  for (const auto& k : kubelets_) {
    if (k->streams) add(*k->streams->reflectors[i]);
  }
  for (const auto& s : retiredStreams_) add(*s->reflectors[i]);
  if (!lastError.empty()) c["lastError"] = lastError;  // one of them: the last node's that has one
  return c;
}

// What the kubelets' own Node streams add up to, for the lifecycle summary when no
// shared node watch runs.
json FleetInstance::ownNodeCounts() const {
  for (std::size_t i = 0; i < streamSpecs_.size(); ++i) {
    if (streamSpecs_[i].ownNode) return streamCounts(i);
  }
  return json::object();
}

}  // namespace cpscale::workloads::fleet

namespace cpscale::workloads {

nlohmann::json OutageBook::summary() const {
  std::lock_guard lock(mu_);
  auto spans = spans_;
  std::sort(spans.begin(), spans.end());
  auto ms = [](engine::Duration d) { return std::round(std::chrono::duration<double>(d).count() * 1000) / 1000; };
  nlohmann::json seconds = nlohmann::json::array(), episodes = nlohmann::json::array();
  for (std::size_t i = 0; i < spans.size();) {
    engine::TimePoint from = spans[i].first, to = spans[i].second;
    for (; i < spans.size() && spans[i].first <= to; ++i) {
      to = std::max(to, spans[i].second);
      seconds.push_back(ms(spans[i].second - spans[i].first));
    }
    episodes.push_back(ms(to - from));
  }
  return {{"outages", spans.size()}, {"seconds", std::move(seconds)}, {"episodes", std::move(episodes)}};
}

}  // namespace cpscale::workloads
