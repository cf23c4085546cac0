// The node watch: one per worker stands in for every kubelet's informer on its own
// Node; what it shows of Ready drives the status PATCHes and times what the node
// lifecycle controller did to failed and returned nodes (summary `nodeLifecycle`).
#include "workloads/fleet_instance.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace cpscale::workloads::fleet {

namespace {

double roundedSeconds(Duration d) { return std::round(std::chrono::duration<double>(d).count() * 1000) / 1000; }

}  // namespace

// What the node watch saw the node lifecycle controller do. Samples are per node, in
// seconds (to the ms); arrays concatenate when the workers' summaries merge.
json FleetInstance::lifecycleSummary() const {
  std::uint64_t notReadyAtEnd = 0;
  for (const auto& k : kubelets_) notReadyAtEnd += k->state != NodeState::kGone && k->ready == ReadySeen::kNotTrue;
  json s = {{"notReadyTransitions", c_.notReadyTransitions}, {"readyTransitions", c_.readyTransitions},
            {"notReadyUnexpected", c_.notReadyUnexpected},   {"notReadyAtEnd", notReadyAtEnd},
            {"notReadySeconds", notReadySeconds_},           {"readyAgainSeconds", readyAgainSeconds_}};
  if (nodeWatch_) {
    const ReflectorCounts& w = nodeWatch_->counts();
    s["watchLists"] = w.lists;
    s["watchRelists"] = w.relists;
    s["watchStreams"] = w.watches;
    s["watchEvents"] = w.events;
    s["watchErrors"] = w.errors;
    if (!nodeWatch_->lastError().empty()) s["watchLastError"] = nodeWatch_->lastError();
  } else if (p_.watches.perNode && p_.watches.node) {
    const json c = ownNodeCounts();
    for (auto [to, from] : {std::pair{"watchLists", "lists"},
                            {"watchRelists", "relists"},
                            {"watchStreams", "streams"},
                            {"watchEvents", "events"},
                            {"watchErrors", "errors"}})
      s[to] = c.value(from, std::uint64_t{0});
  }
  return s;
}

// Whether the node watch this instance's nodes are seen through holds its first LIST
// (true once no member holds one any more: there is nothing left to wait for).
bool FleetInstance::watchSynced() const {
  const FleetInstance* w = group_->watcher;
  return w == nullptr || w->nodeWatch_->synced();
}

// Each kubelet keeps an informer on its own Node and computes its status PATCH
// against that copy. The fleet stands in for them with one watch per worker on the
// fleet's Nodes (label selector), one stream instead of one per node, held by the
// group's watcher; each event is handed to the kubelet that owns the node, in
// whichever instance of the group (the base or a growth) it is.
void FleetInstance::startNodeWatch() {
  ReflectorOptions o;
  o.collection = kube::ResourceRef(nodes_);
  o.selector.labelSelector = runSelector(ctx_.runId) + "," + kWorkloadLabel + "=" + p_.name;
  nodeWatch_ = std::make_unique<Reflector>(calls_, events_, ctx_.sim, watchRng_, std::move(o));
  nodeWatch_->onItem([this](const json& node) { observeNode(node); });
  nodeWatch_->onEvent([this](const kube::WatchEvent& ev) {
    if (ev.type == kube::WatchEventType::kAdded || ev.type == kube::WatchEventType::kModified) observeNode(ev.object);
  });
  nodeWatch_->onListed([this](bool first) {
    if (!first) return;
    for (FleetInstance* m : group_->members) m->maybeSetupDone();
  });
  nodeWatch_->start();
}

// The kubelet of `name` if an instance of this worker's group (this fleet's or a
// growth's) owns it.
Kubelet* FleetInstance::kubeletNamed(std::string_view name) const {
  if (!name.starts_with(prefix_)) return nullptr;
  name.remove_prefix(prefix_.size());
  std::uint32_t index = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
  if (ec != std::errc() || end != name.data() + name.size()) return nullptr;
  for (const FleetInstance* m : group_->members) {
    if (m->stopped_) continue;
    if (Kubelet* k = m->kubeletAt(index)) return k;
  }
  return nullptr;
}

// This instance's kubelet of node `index`. kubelets_ is in index order (nodes at
// start, then joins with growing indices).
Kubelet* FleetInstance::kubeletAt(std::uint32_t index) const {
  auto it = std::lower_bound(kubelets_.begin(), kubelets_.end(), index,
                             [](const std::unique_ptr<Kubelet>& k, std::uint32_t i) { return k->index < i; });
  return it != kubelets_.end() && (*it)->index == index ? it->get() : nullptr;
}

void FleetInstance::observeNode(const json& node) {
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return;
  auto name = meta->find("name");
  if (name == meta->end() || !name->is_string()) return;
  Kubelet* k = kubeletNamed(name->get_ref<const std::string&>());
  if (k == nullptr) return;
  // Two streams may show a node: its own (restarted, listing, when it returns) and the
  // fleet's shared watch. A version older than the one already read is stale: a list
  // served just before the kubelet's Ready PATCH and delivered after the shared watch
  // showed that PATCH would make a returned node NotReady again. (resourceVersions are
  // etcd revisions here: the plane's storage is etcd 3.)
  if (auto rv = meta->find("resourceVersion"); rv != meta->end() && rv->is_string()) {
    const std::string& text = rv->get_ref<const std::string&>();
    std::uint64_t v = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), v).ec == std::errc{}) {
      if (v < k->readyVersion) return;
      k->readyVersion = v;
    }
  }
  FleetInstance& owner = *k->fleet;
  // As the kubelet reads it (IsNodeReady): Ready is True, or it is not.
  bool readyTrue = false;
  const json* conditions = nullptr;
  if (auto st = node.find("status"); st != node.end() && st->is_object()) {
    if (auto c = st->find("conditions"); c != st->end() && c->is_array()) conditions = &*c;
  }
  if (conditions) {
    for (const auto& c : *conditions) {
      if (c.value("type", std::string()) == "Ready") readyTrue = c.value("status", std::string()) == "True";
    }
  }
  owner.readySeen(*k, readyTrue);
}

void FleetInstance::readySeen(Kubelet& k, bool readyTrue) {
  const ReadySeen was = k.ready;
  k.ready = readyTrue ? ReadySeen::kTrue : ReadySeen::kNotTrue;
  if (k.ready == was) return;
  Lifecycle* rec = k.tracked ? &lifecycle_.at(k.index) : nullptr;
  const TimePoint now = ctx_.sim.now();
  if (!readyTrue) {
    ++c_.notReadyTransitions;
    // The next status computation reports: wake the node for it.
    if (!statusEveryTick() && k.state == NodeState::kRunning && k.statusTimer.armed())
      k.statusTimer.start(statusTickAtOrAfter(k, now + Duration{1}));
    if (rec && rec->phase == Lifecycle::Phase::kFailed) {
      if (!rec->notReadySeen && rec->renewed) notReadySeconds_.push_back(roundedSeconds(now - rec->lastRenewal));
      rec->notReadySeen = true;
    } else {
      ++c_.notReadyUnexpected;  // a node that kept renewing was declared dead
    }
    return;
  }
  if (was != ReadySeen::kNotTrue) return;  // the first sighting is no transition
  ++c_.readyTransitions;
  if (rec && rec->phase == Lifecycle::Phase::kReturned && !rec->readyAgainSeen) {
    rec->readyAgainSeen = true;
    readyAgainSeconds_.push_back(roundedSeconds(now - rec->returnedAt));
  }
}

// A Lease write was answered: the moment the server last heard from the node, which
// is what the lifecycle controller's grace period counts from.
void FleetInstance::renewalAnswered(Kubelet& k) {
  if (!k.tracked) return;
  Lifecycle& rec = lifecycle_.at(k.index);
  rec.lastRenewal = ctx_.sim.now();
  rec.renewed = true;
}

}  // namespace cpscale::workloads::fleet
