// The kubelets workload: its scenario entry's parameters and the Workload that prepares,
// grows and starts the fleet. What an instance does on its worker is in the fleet_*.cc
// files, one seam each (see fleet_instance.h).
#include "workloads/kubelet_fleet.h"

#include <cmath>

#include "sim/common/error.h"
#include "workloads/fleet_instance.h"
#include "workloads/setup.h"

namespace cpscale::workloads {

// ---- parameters ------------------------------------------------------------------

namespace {

KubeletFleetParams::Watches readWatches(const YamlField& f) {
  f.expectMap({"mode", "node", "pods", "services", "kubeProxy", "nodesPerConnection"});
  KubeletFleetParams::Watches w;
  if (auto m = f.get("mode")) {
    std::string v = m->asString();
    if (v != "perNode" && v != "shared") throw m->error("must be perNode or shared, found '" + v + "'");
    w.perNode = v == "perNode";
  }
  for (auto [key, out] :
       {std::pair{"node", &w.node}, {"pods", &w.pods}, {"services", &w.services}, {"kubeProxy", &w.kubeProxy}}) {
    if (auto b = f.get(key)) {
      if (!w.perNode) throw b->error("only with mode: perNode (shared opens one node watch per worker)");
      *out = b->asBool();
    }
  }
  if (auto n = f.get("nodesPerConnection")) {
    if (!w.perNode) throw n->error("only with mode: perNode (shared opens one node watch per worker)");
    w.nodesPerConnection = n->asInt(1, 10000);
  }
  return w;
}

}  // namespace

KubeletFleetParams KubeletFleetParams::read(const YamlField& e) {
  e.expectMap({"kind",
               "name",
               "count",
               "registrationQps",
               "registrationBurst",
               "leaseDurationSeconds",
               "nodeStatusUpdateFrequency",
               "statusReportFrequency",
               "statusChangeProbability",
               "renewalPhase",
               "nodeImages",
               "podsPerNode",
               "podStatusInterval",
               "podQps",
               "podBurst",
               "events",
               "eventQps",
               "eventBurst",
               "failures",
               "churn",
               "nodeTemplate",
               "leaseTemplate",
               "podTemplate",
               "watches",
               "services"});
  KubeletFleetParams p;
  if (auto f = e.get("name")) {
    p.name = f->asString();
    if (!isDnsLabel(p.name, 20)) throw f->error("must be 1-20 lower-case letters, digits or '-'");
  }
  YamlField count = e.require("count");
  p.count = count.asInt();
  if (p.count < 0) throw count.error("must not be negative, found " + std::to_string(p.count));
  if (p.count > KubeletFleet::kMaxCount) throw count.error("at most 10,000,000 nodes");
  p.registration = readRateLimit(e, "registrationQps", "registrationBurst", 20);
  if (auto f = e.get("leaseDurationSeconds")) p.leaseDurationSeconds = f->asInt(4, 3600);
  if (auto f = e.get("nodeStatusUpdateFrequency")) {
    p.statusUpdateFrequency = readDuration(*f, std::chrono::milliseconds(100), std::chrono::hours(1));
  }
  if (auto f = e.get("statusReportFrequency")) {
    p.statusReportFrequency = readDuration(*f, std::chrono::seconds(1), std::chrono::hours(24));
    if (p.statusReportFrequency < p.statusUpdateFrequency) {
      throw f->error("must not be shorter than nodeStatusUpdateFrequency (" + formatDuration(p.statusUpdateFrequency) +
                     ")");
    }
  }
  if (auto f = e.get("statusChangeProbability")) {
    p.statusChangeProbability = f->asDouble();
    if (!(p.statusChangeProbability >= 0 && p.statusChangeProbability <= 1)) throw f->error("must be in [0, 1]");
  }
  if (auto f = e.get("renewalPhase")) {
    std::string v = f->asString();
    if (v == "random")
      p.renewalPhase = RenewalPhase::kRandom;
    else if (v == "registration")
      p.renewalPhase = RenewalPhase::kRegistration;
    else
      throw f->error("must be random or registration, found '" + v + "'");
  }
  if (auto f = e.get("nodeImages")) p.nodeImages = f->asInt(0, 1000);
  if (auto f = e.get("podsPerNode")) p.podsPerNode = f->asInt(0, 250);
  if (auto f = e.get("podStatusInterval")) {
    p.podStatusInterval = readDuration(*f, std::chrono::milliseconds(100), std::chrono::hours(24));
  }
  p.pods = readRateLimit(e, "podQps", "podBurst", 20);
  if (auto f = e.get("events")) p.events = f->asBool();
  p.eventRate = readRateLimit(e, "eventQps", "eventBurst", 500);
  if (!e.get("eventBurst")) p.eventRate.burst = 2 * std::ceil(p.eventRate.qps);  // the kubelet's ratio
  if (auto f = e.get("failures")) {
    f->expectMap({"fraction", "at", "returnAfter"});
    YamlField frac = f->require("fraction");
    p.failures.fraction = frac.asDouble();
    if (!(p.failures.fraction >= 0 && p.failures.fraction <= 1)) throw frac.error("must be in [0, 1]");
    p.failures.at = readDuration(f->require("at"));
    if (auto r = f->get("returnAfter")) p.failures.returnAfter = readDuration(*r, std::chrono::milliseconds(1));
  }
  if (auto f = e.get("churn")) {
    f->expectMap({"joinsPerMinute", "leavesPerMinute", "podReplacementsPerMinute"});
    for (auto [key, out] : {std::pair{"joinsPerMinute", &p.joinsPerMinute},
                            {"leavesPerMinute", &p.leavesPerMinute},
                            {"podReplacementsPerMinute", &p.podReplacementsPerMinute}}) {
      if (auto r = f->get(key)) {
        *out = r->asDouble();
        if (!(*out >= 0 && *out <= 1e6)) throw r->error("must be a rate in [0, 1e6]");
      }
    }
    if (p.podReplacementsPerMinute > 0 && p.podsPerNode == 0) {
      throw f->get("podReplacementsPerMinute")->error("replaces pods, but podsPerNode is 0");
    }
    if (p.count == 0 && p.leavesPerMinute > 0 && p.joinsPerMinute == 0) {
      throw f->error("nodes cannot leave a fleet of 0 that nobody joins");
    }
  }
  if (auto f = e.get("watches")) p.watches = readWatches(*f);
  if (auto f = e.get("services")) {
    f->expectMap({"count", "readinessFlipsPerMinute", "notReadyFor"});
    p.services.count = f->require("count").asInt(0, 10000);
    if (auto r = f->get("readinessFlipsPerMinute")) {
      p.services.readinessFlipsPerMinute = r->asDouble();
      if (!(p.services.readinessFlipsPerMinute >= 0 && p.services.readinessFlipsPerMinute <= 1e6))
        throw r->error("must be a rate in [0, 1e6]");
      if (p.services.readinessFlipsPerMinute > 0 && p.podsPerNode == 0)
        throw r->error("flips pods' readiness, but podsPerNode is 0");
    }
    if (auto d = f->get("notReadyFor"))
      p.services.notReadyFor = readDuration(*d, std::chrono::milliseconds(100), std::chrono::hours(1));
  }
  p.nodeTemplate =
      e.get("nodeTemplate") ? ObjectTemplate::load(*e.get("nodeTemplate")) : ObjectTemplate::load("node.json");
  p.leaseTemplate =
      e.get("leaseTemplate") ? ObjectTemplate::load(*e.get("leaseTemplate")) : ObjectTemplate::load("lease.json");
  if (p.podsPerNode > 0) {
    p.podTemplate =
        e.get("podTemplate") ? ObjectTemplate::load(*e.get("podTemplate")) : ObjectTemplate::load("pod.json");
  }
  return p;
}

bool failsAt(std::int64_t index, double fraction) {
  // Node i fails when floor((i+1)f) > floor(i f): exactly floor(n f) of the first n.
  return std::floor(static_cast<double>(index + 1) * fraction) > std::floor(static_cast<double>(index) * fraction);
}

KubeletFleet::KubeletFleet(KubeletFleetParams params)
    : params_(std::move(params)), groups_(std::make_shared<FleetGroups>()) {
  if (!params_.nodeTemplate) params_.nodeTemplate = ObjectTemplate::load("node.json");
  if (!params_.leaseTemplate) params_.leaseTemplate = ObjectTemplate::load("lease.json");
  if (params_.podsPerNode > 0 && !params_.podTemplate) params_.podTemplate = ObjectTemplate::load("pod.json");
}

std::string KubeletFleet::nodeName(const std::string& runId, const std::string& workload, std::int64_t index) {
  return "cpscale-" + runId + "-" + workload + "-" + std::to_string(index);
}

std::string KubeletFleet::podNamespace(const std::string& runId, const std::string& workload) {
  return "cpscale-" + runId + "-" + workload + "-pods";
}

// Idempotent: the pods' namespace (and its default ServiceAccount) may exist already,
// as it does when a growth prepares after its base.
void KubeletFleet::prepare(kube::ApiClient& api, engine::Clock&, const std::string& runId) {
  validateRunId(runId);
  const bool namespaced = params_.podsPerNode > 0 || params_.services.count > 0;
  if (namespaced) ensureNamespace(api, podNamespace(runId, params_.name), runId, params_.name, true);
  if (params_.firstIndex == 0) fleet::createServices(api, runId, params_);  // a growth's base made them
}

std::string KubeletFleet::whyNotMeasured(const std::string& figure) const {
  const bool notReady = figure == "node_not_ready_seconds_p50" || figure == "node_not_ready_seconds_max";
  const bool readyAgain = figure == "node_ready_again_seconds_p50" || figure == "node_ready_again_seconds_max";
  if (std::string why = notOwnFigure(kind(), figure); !why.empty()) return why;
  if ((notReady || readyAgain) &&
      static_cast<std::int64_t>(std::floor(static_cast<double>(params_.count) * params_.failures.fraction)) == 0)
    return "no node of fleet '" + params_.name + "' fails (failures.fraction x count is under one node)";
  if (readyAgain && !params_.failures.returnAfter)
    return "the failed nodes of fleet '" + params_.name + "' never return (no failures.returnAfter)";
  return "";
}

std::unique_ptr<Workload> KubeletFleet::growth(const std::string& field, double from, double to) const {
  if (field != "count") return nullptr;
  checkGrowth(*this, field, from, to, static_cast<double>(kMaxCount), true, static_cast<double>(params_.count),
              "nodes");
  KubeletFleetParams p = params_;
  p.firstIndex = static_cast<std::int64_t>(from);
  p.count = static_cast<std::int64_t>(to);
  // Churn rates are fleet-wide, not per node: they stay with the base, whose leaves and
  // pod replacements pick among the grown nodes too (FleetGroups).
  p.joinsPerMinute = p.leavesPerMinute = p.podReplacementsPerMinute = 0;
  auto g = std::make_unique<KubeletFleet>(std::move(p));
  g->groups_ = groups_;
  return g;
}

std::vector<kube::GroupVersionResource> KubeletFleet::resources() const {
  std::vector<kube::GroupVersionResource> r{kube::gvr::kNodes, kube::gvr::kLeases};
  if (params_.podsPerNode > 0) r.push_back(kube::gvr::kPods);
  if (params_.services.count > 0) r.push_back(kube::gvr::kServices);
  if (params_.events) r.push_back(kube::gvr::kEvents);
  return r;
}

std::unique_ptr<WorkloadInstance> KubeletFleet::start(WorkloadContext& ctx) {
  return std::make_unique<fleet::FleetInstance>(params_, ctx, groups_);
}

}  // namespace cpscale::workloads
