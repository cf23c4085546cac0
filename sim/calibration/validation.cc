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
  auto add = [&](const std::map<std::string, double>& l, const std::map<std::string, double>& m, double tolerance,
                 double minLive) {
    for (const auto& [key, lv] : l) {
      auto it = m.find(key);
      if (it == m.end() || lv < minLive || lv <= 0) continue;
      out.push_back({key, lv, it->second, std::abs(it->second - lv) / lv, tolerance});
    }
  };
  add(steady(live, byResource), steady(modelled, byResource), 0.10, minRate);
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
          // Its whole 150 s: the window takes in a node failure's whole cycle (silent at
          // 60 s, marked Unknown ~55 s later, back at 130 s), whose controller writes a
          // shorter window cuts in two. Its writes are held; not its pods (75 Poisson
          // replacements in the window: +-12 % by chance alone), its events (the
          // controllers' burst, 9.8 % off on 2026-12-06, 14.6 % on 2026-12-07), nor its
          // heap (the pods' watch cache ring, whose doubling the live plane reaches 9 s
          // before it would shrink and the model, slower through its setup, does not).
          {"node-bound-realistic.yaml",
           {},
           "",
           "",
           false,
           {"write_qps", "write_qps{resource=leases}", "write_qps{resource=nodes/status}",
            "write_qps{resource=pods/status}", "lease_write_share"}},
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
