// Capacity searches with known steps for the renderer tests: one that broke at its third
// step and was bisected, one where the generator fell behind, one that reached its max
// and one where no step held; a run that was the first of them, and an index of all four.
#pragma once

#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/result/capacity.h"
#include "sim/result/result.h"
#include "test/support/sample_result.h"

namespace cpscale::result::testing {

inline constexpr double kMiB = 1048576.0;

inline metrics::Gate latencyGate(const std::string& resource, const std::string& verb) {
  return metrics::parseGate(
      "client_latency_p99{measured_from=scheduled,resource=" + resource + ",verb=" + verb + "} <= 1s",
      "capacity_sample.h", "gates[0]");
}

inline metrics::Gate writeGate() { return metrics::parseGate("write_qps <= 2000", "capacity_sample.h", "gates[1]"); }

// What one step measured. The worst client p99 is `p99` of (verb, resource); every step
// also has a 50 ms PATCH nodes/status and, to be ignored, a from-send p99 above both.
struct StepSpec {
  double value = 0;
  double start = 0;
  std::string axis;
  std::string resource;
  std::string verb;
  double p99 = 0;
  double pressure = 0;
  double writeQps = 0;
  double heapMiB = 0;
  bool generatorLimited = false;
};

inline CapacityStep step(const StepSpec& s) {
  using metrics::Figure;
  using metrics::Source;
  CapacityStep st;
  st.value = s.value;
  st.startSeconds = s.start;
  st.endSeconds = s.start + 30;
  auto& f = st.figures;
  f.push_back(Figure::measured("axis_pressure", {{"axis", s.axis}}, s.pressure, "", Source::kApiserver));
  f.push_back(Figure::measured("write_qps", {}, s.writeQps, "1/s", Source::kApiserver));
  f.push_back(Figure::measured("lease_write_share", {}, s.axis == "node" ? 0.7 : 0.05, "ratio", Source::kApiserver));
  f.push_back(Figure::measured("client_latency_p99",
                               {{"measured_from", "scheduled"}, {"resource", s.resource}, {"verb", s.verb}}, s.p99, "s",
                               Source::kClient));
  f.push_back(Figure::measured("client_latency_p99",
                               {{"measured_from", "scheduled"}, {"resource", "nodes/status"}, {"verb", "PATCH"}}, 0.05,
                               "s", Source::kClient));
  f.push_back(Figure::measured("client_latency_p99",
                               {{"measured_from", "sent"}, {"resource", s.resource}, {"verb", s.verb}}, 99, "s",
                               Source::kClient));
  f.push_back(
      Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, s.heapMiB * kMiB, "bytes", Source::kApiserver));
  f.push_back(Figure::measured("generator_limited_by_schedule", {}, s.generatorLimited ? 1 : 0, "", Source::kClient));
  for (const metrics::Gate& g : {latencyGate(s.resource, s.verb), writeGate()}) {
    metrics::GateResult r = metrics::evaluateGate(g, f);
    st.gates.push_back(r);
  }
  st.generatorLimited = s.generatorLimited;
  st.held = !st.generatorLimited;
  for (const auto& g : st.gates) st.held = st.held && g.passed;
  if (st.generatorLimited) {
    st.brokeBy =
        "the generator fell behind its own schedule (generator_limited_by_schedule): the step measures the "
        "generator, not the server";
  } else {
    for (const auto& g : st.gates)
      if (!g.passed) {
        std::ostringstream measured;
        measured << *g.measured;
        st.brokeBy = g.gate.text + ": measured " + measured.str();
        break;
      }
  }
  return st;
}

inline StepSpec nodeStep(double nodes, double start, double p99) {
  return {nodes, start, "node", "leases", "PUT", p99, nodes / 1200, nodes / 10, 200 + nodes / 10};
}

// 300, 600 held; 1,200 broke on leases' p99; bisection then held 900, whose heap was
// not scraped.
inline CapacitySearch brokeAtStep3() {
  CapacitySearch s;
  s.profile = "classic-ha";
  s.scenario = "fleet-capacity";
  s.axis = "node";
  s.knob = "workloads.fleet.count";
  s.unit = "nodes";
  s.steps = {step(nodeStep(300, 30, 0.012)), step(nodeStep(600, 75, 0.025)), step(nodeStep(1200, 120, 1.8)),
             step(nodeStep(900, 180, 0.4))};
  auto& heap = s.steps[3].figures[6];
  heap = metrics::Figure::unavailable(heap.name, heap.labels, heap.unit, heap.source,
                                      "kube-apiserver-1 did not answer a scrape in the window");
  s.held = 900;
  s.limit = CapacityLimit::kServer;
  s.brokeBy = s.steps[2].brokeBy;
  s.detail = "held at 900 nodes; broke at the next step on the server: " + s.brokeBy;
  s.resultFile = "classic-ha/node/result.json";
  return s;
}

// Sessions per minute: 2,400 and 4,800 held, at 9,600 the generator fell behind.
inline CapacitySearch generatorLimited() {
  CapacitySearch s;
  s.profile = "classic-ha";
  s.scenario = "session-capacity";
  s.axis = "churn";
  s.knob = "workloads.sessions.sessionsPerMinute";
  s.unit = "sessions/min";
  for (auto [v, start, p99] : {std::tuple{2400.0, 30.0, 0.03}, {4800.0, 75.0, 0.06}, {9600.0, 120.0, 0.2}})
    s.steps.push_back(step({v, start, "churn", "sessions", "POST", p99, v / 9600, v / 30, 300, v == 9600}));
  s.held = 4800;
  s.limit = CapacityLimit::kGenerator;
  s.brokeBy = s.steps[2].brokeBy;
  s.detail =
      "the generator, not the server, was the limit at 9600 sessions/min; the recipe held at least 4800 "
      "sessions/min (run the generator on more cores or in shards to find the server's limit)";
  s.resultFile = "classic-ha/churn/result.json";
  return s;
}

// Objects per kind up to the max, every step held; the first step has no pressure.
inline CapacitySearch reachedMax() {
  CapacitySearch s;
  s.profile = "classic-ha";
  s.scenario = "platform-capacity";
  s.axis = "state";
  s.knob = "workloads.platform.objectsPerKind";
  s.unit = "objects/kind";
  for (auto [v, start] : {std::pair{3000.0, 30.0}, {6000.0, 75.0}, {12000.0, 120.0}})
    s.steps.push_back(step({v, start, "state", "configmaps", "POST", 0.02, v / 12000, 5, 300 + v / 20}));
  s.steps[0].figures.erase(s.steps[0].figures.begin());
  s.held = 12000;
  s.limit = CapacityLimit::kMaxReached;
  s.detail = "every step held up to the search's max (12000 objects/kind): capacity is at least that";
  s.resultFile = "classic-ha/state/result.json";
  return s;
}

// The first step already broke.
inline CapacitySearch noneHeld() {
  CapacitySearch s;
  s.profile = "split-etcd";
  s.scenario = "fleet-capacity";
  s.axis = "node";
  s.knob = "workloads.fleet.count";
  s.unit = "nodes";
  s.steps = {step(nodeStep(300, 30, 2.5))};
  s.limit = CapacityLimit::kServer;
  s.brokeBy = s.steps[0].brokeBy;
  s.detail = "the first step (300 nodes) already broke: " + s.brokeBy;
  s.resultFile = "split-etcd/node/result.json";
  return s;
}

// The sample run as `cpscale capacity` writes it for brokeAtStep3: the steps' windows as
// phases, capacity{axis,knob} among its figures.
inline RunResult capacityResult(CapacitySearch s = brokeAtStep3()) {
  RunResult r = sampleResult();
  r.scenario.name = s.scenario;
  r.phases = {{"setup", 0, 30, true, ""}};
  double grow = 0;
  for (const CapacityStep& st : s.steps) {
    std::string v = std::to_string(static_cast<long>(st.value));
    if (grow > 0) r.phases.push_back({"grow/" + v, grow, st.startSeconds, true, ""});
    r.phases.push_back({"step/" + v, st.startSeconds, st.endSeconds, true, ""});
    grow = st.endSeconds;
  }
  r.incidents.clear();
  metrics::Labels labels = {{"axis", s.axis}, {"knob", s.knob}};
  r.figures.push_back(s.held
                          ? metrics::Figure::measured("capacity", labels, *s.held, s.unit, metrics::Source::kApiserver)
                          : metrics::Figure::unavailable("capacity", labels, s.unit, metrics::Source::kApiserver,
                                                         "the first step did not hold: " + s.brokeBy));
  r.capacity = std::move(s);
  return r;
}

inline CapacityIndex capacityIndex() {
  CapacityIndex idx;
  idx.cpscaleVersion = "0.1.0";
  idx.host = "bench-1";
  idx.cpus = 2;
  idx.machine = "2 CPUs (AMD EPYC 7B13), 8 GiB";
  idx.kubernetesVersion = "v1.33.1";
  idx.etcdVersion = "3.5.21";
  idx.measuredAt = "2025-03-02T08:00:00Z";
  idx.searches = {brokeAtStep3(), generatorLimited(), reachedMax(), noneHeld()};
  return idx;
}

}  // namespace cpscale::result::testing
