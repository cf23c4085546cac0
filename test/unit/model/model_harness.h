// A model plane on a virtual simulator with a calibration small enough to reason
// about, and an ApiClient over its client transport: the client the workloads use.
#pragma once

#include <memory>
#include <string>

#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/resource.h"
#include "sim/metrics/prometheus_text.h"
#include "sim/model/model_plane.h"

namespace cpscale::model::testing {

// ConfigMaps in `default`, the objects most model tests write.
inline const kube::ResourceRef kConfigMaps = kube::ResourceRef(kube::gvr::kConfigMaps).in("default");
inline nlohmann::json configMap(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}, {"namespace", "default"}}}};
}

inline Calibration smallCalibration() {
  Calibration c;
  c.sharedHost = false;
  c.apiserverCores = 2;
  c.etcdCores = 1;
  c.apiserverIdleCores = Param::fixed(0.05);
  c.apiserverCpuLeaseWrite = Param::fixed(0.0004);
  c.apiserverCpuWrite = Param::fixed(0.001);
  c.apiserverCpuCustomWrite = Param::fixed(0.001);
  c.apiserverCpuEventWrite = Param::fixed(0.001);
  c.apiserverCpuRead = Param::fixed(0.0005);
  c.apiserverCpuWatchEvent = Param::fixed(0.00005);
  c.etcdIdleCores = Param::fixed(0.02);
  c.etcdCpuPerProposal = Param::fixed(0.0002);
  c.generatorCpuPerRequest = Param::fixed(0.0001);
  c.latencyRead = Param::fixed(0.002);
  c.latencyWrite = Param::fixed(0.006);
  c.heapBaseBytes = Param::fixed(100e6);
  c.heapPerObject = Param::fixed(1000);
  c.heapPerObjectByte = Param::fixed(2);
  c.heapBytesPerObjectByResource["leases"] = 3000;
  c.rssOverHeap = 1.5;
  c.etcdDbBaseBytes = Param::fixed(1e6);
  c.etcdDbBytesPerWrite = Param::fixed(500);
  c.etcdFsyncSeconds = Param::fixed(0.002);
  return c;
}

struct Harness {
  explicit Harness(ModelOptions o = {}, double weight = 1) {
    if (o.calibration.latencyRead.value == 0) o.calibration = smallCalibration();
    plane = std::make_unique<ModelPlane>(sim, std::move(o));
    transport = plane->clientTransport(weight);
    api = std::make_unique<kube::ApiClient>(*transport, sim.clock(), sim);
  }
  engine::VirtualSimulator sim;
  std::unique_ptr<ModelPlane> plane;
  kube::TransportPtr transport;
  std::unique_ptr<kube::ApiClient> api;
};

// A member's /metrics as it serves it now.
inline metrics::ParseResult scrapeMember(Harness& h, const std::string& member) {
  auto t = h.plane->memberTransport(member);
  kube::HttpRequest req;
  req.method = "GET";
  req.path = "/metrics";
  return metrics::parsePrometheusText(kube::roundTrip(*t, req).body);
}

// The sum of a family's samples whose labels include `match`, as the member serves it;
// -1 when it serves no such family.
inline double scraped(Harness& h, const std::string& member, const std::string& family,
                      const metrics::Labels& match = {}) {
  metrics::ParseResult p = scrapeMember(h, member);
  auto f = p.families.find(family);
  if (!p.ok() || f == p.families.end()) return -1;
  double sum = 0;
  for (const auto& s : f->second.samples) {
    bool all = true;
    for (const auto& [k, v] : match) all = all && metrics::labelValue(s.labels, k) == v;
    if (all) sum += s.value;
  }
  return sum;
}

}  // namespace cpscale::model::testing
