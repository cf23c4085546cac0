#include "reports/headline.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "workloads/kind.h"

namespace cpscale::reports {

using metrics::Figure;
using metrics::labelValue;
using metrics::Window;

namespace {

using Pool = std::vector<const Figure*>;
using Pred = std::function<bool(const Figure&)>;

Pool pool(std::span<const Figure> figures, Window w) {
  Pool out;
  for (const Figure& f : figures)
    if (f.window == w) out.push_back(&f);
  return out;
}

void addAll(std::vector<const Figure*>& out, const Pool& p, std::string_view name, const Pred& pred = nullptr) {
  for (const Figure* f : p)
    if (f->name == name && (!pred || pred(*f))) out.push_back(f);
}

// The largest `cap` figures of a family (unavailable ones after the measured ones, in
// the order they came), counting the rest in `omitted`.
void addLargest(AxisFigures& out, const Pool& p, std::string_view name, const Pred& pred, std::size_t cap) {
  std::vector<const Figure*> found;
  addAll(found, p, name, pred);
  std::stable_sort(found.begin(), found.end(), [](const Figure* a, const Figure* b) {
    if (a->available() != b->available()) return a->available();
    return a->available() && *a->value > *b->value;
  });
  if (found.size() > cap) {
    out.omitted += found.size() - cap;
    found.resize(cap);
  }
  out.figures.insert(out.figures.end(), found.begin(), found.end());
}

bool hasLabels(const Figure& f) { return !f.labels.empty(); }
std::string_view resourceOf(const Figure& f) { return labelValue(f.labels, "resource"); }
// A resource written at 0/s in the window was not written: not a headline row.
bool written(const Figure& f) { return !f.available() || *f.value != 0; }
// The fit over the whole population ({apiserver, heap}), not one kind's ramp.
bool wholeFit(const Figure& f) { return labelValue(f.labels, "kind").empty() && !f.labels.empty(); }

// Every replica reports the same object counts: one is enough for the headline.
std::string_view firstApiserver(const Pool& p, std::string_view name) {
  for (const Figure* f : p)
    if (f->name == name) {
      std::string_view a = labelValue(f->labels, "apiserver");
      if (!a.empty()) return a;
    }
  return "";
}

}  // namespace

std::vector<Axis> axesOfRun(const result::RunResult& r) {
  std::set<Axis> ran;
  for (const auto& w : r.workloads) {
    const workloads::WorkloadKind* kind = workloads::findKind(w.kind);
    if (!kind) continue;
    if (auto a = axisNamed(kind->axis)) ran.insert(*a);
  }
  std::vector<Axis> out;
  for (Axis a : kAllAxes)
    if (ran.empty() || ran.count(a)) out.push_back(a);
  return out;
}

AxisFigures axisFigures(std::span<const Figure> figures, Axis axis, std::size_t cap) {
  AxisFigures out;
  Pool p = pool(figures, Window::kSteady);
  // A family that could not be measured at all is one unlabelled unavailable figure:
  // keep it, so the headline says why instead of leaving the row out.
  auto familyUnavailable = [](const Figure& f) { return f.labels.empty() && !f.available(); };
  auto leasePut = [&](const Figure& f) {
    std::string_view r = resourceOf(f);
    return (r == "leases" || r == "leases.coordination.k8s.io") && labelValue(f.labels, "verb") == "PUT" &&
           labelValue(f.labels, "measured_from") != "sent";
  };
  switch (axis) {
    case Axis::kNode: {
      addLargest(
          out, p, "write_qps",
          [&](const Figure& f) { return hasLabels(f) && isNodeResource(resourceOf(f)) && written(f); }, cap);
      addAll(out.figures, p, "lease_write_share");
      addAll(out.figures, p, "etcd_lease_proposal_share");
      addAll(out.figures, p, "client_latency_p99", leasePut);
      addAll(out.figures, p, "server_latency_p99",
             [&](const Figure& f) { return leasePut(f) || familyUnavailable(f); });
      std::string_view first = firstApiserver(p, "apiserver_objects");
      addAll(out.figures, p, "apiserver_objects",
             [&](const Figure& f) { return resourceOf(f) == "nodes" && labelValue(f.labels, "apiserver") == first; });
      // The fleet's own record over the whole run: nodes that went NotReady and came
      // back, and how long the control plane took to show it.
      Pool run = pool(figures, Window::kRun);
      for (const char* name :
           {"node_not_ready_transitions", "node_not_ready_seconds_p50", "node_not_ready_seconds_max",
            "node_ready_transitions", "node_ready_again_seconds_p50", "node_ready_again_seconds_max"})
        addAll(out.figures, run, name);
      break;
    }
    case Axis::kChurn: {
      AxisFigures writes;
      addLargest(
          writes, p, "write_qps",
          [&](const Figure& f) { return hasLabels(f) && !isNodeResource(resourceOf(f)) && written(f); }, cap);
      out.omitted += writes.omitted;
      out.figures.insert(out.figures.end(), writes.figures.begin(), writes.figures.end());
      // Latency of exactly the (resource, verb) pairs shown above.
      // The client does not know a resource's group; the server does, and must match.
      auto hasGroup = [](const Figure& f) {
        return std::any_of(f.labels.begin(), f.labels.end(), [](const auto& l) { return l.name == "group"; });
      };
      auto shown = [&](const Figure& f) {
        return std::any_of(writes.figures.begin(), writes.figures.end(), [&](const Figure* w) {
          return resourceOf(*w) == resourceOf(f) && labelValue(w->labels, "verb") == labelValue(f.labels, "verb") &&
                 (!hasGroup(f) || labelValue(w->labels, "group") == labelValue(f.labels, "group"));
        });
      };
      addAll(out.figures, p, "client_latency_p99",
             [&](const Figure& f) { return labelValue(f.labels, "measured_from") != "sent" && shown(f); });
      addAll(out.figures, p, "server_latency_p99", shown);
      break;
    }
    case Axis::kState: {
      for (std::string family : {"apiserver_heap_inuse_bytes", "apiserver_rss_bytes"}) {
        addAll(out.figures, p, family);
        addAll(out.figures, p, family + "_all_replicas");
        addAll(out.figures, p, family + "_all_replicas_peak");
      }
      // Fitted over the setup ramp, so normally under Setup; a result that fitted them
      // over the steady window shows them here.
      addAll(out.figures, p, "bytes_per_object", wholeFit);
      addAll(out.figures, p, "bytes_per_object_all_replicas");
      std::string_view first = firstApiserver(p, "apiserver_objects");
      auto ofFirst = [&](const Figure& f) { return f.labels.empty() || labelValue(f.labels, "apiserver") == first; };
      addAll(out.figures, p, "apiserver_objects_total", ofFirst);
      addLargest(out, p, "apiserver_objects", ofFirst, cap);
      // What one object of each kind takes in storage, by kube-apiserver's estimate.
      addLargest(out, p, "stored_bytes_per_object", ofFirst, cap);
      break;
    }
  }
  return out;
}

ControllersHeadline controllersHeadline(std::span<const Figure> figures, std::size_t cap) {
  ControllersHeadline out;
  Pool p = pool(figures, Window::kSteady);
  auto fromController = [](const Figure& f) {
    return f.source == metrics::Source::kControllerManager || f.source == metrics::Source::kScheduler;
  };
  if (std::none_of(p.begin(), p.end(), [&](const Figure* f) { return fromController(*f) && f->available(); }))
    return out;
  auto isWorkqueue = [&](const Figure& f) {
    return fromController(f) && (f.name == "workqueue_depth_max" || f.name == "workqueue_adds");
  };
  // Per component, its deepest queue and its adds, in the order the result lists them.
  for (const Figure* f : p)
    if (isWorkqueue(*f) && f->labels.size() == 1 && !labelValue(f->labels, "component").empty())
      out.figures.push_back(f);
  auto total = [&](const Figure& f) { return fromController(f) && f.labels.empty(); };
  for (const char* name : {"node_lifecycle_evictions", "node_lifecycle_unhealthy_nodes_max",
                           "taint_eviction_pod_deletions", "scheduler_pending_pods_max", "scheduler_schedule_attempts"})
    addAll(out.figures, p, name, total);
  addAll(out.figures, p, "scheduler_schedule_attempts",
         [&](const Figure& f) { return fromController(f) && !labelValue(f.labels, "result").empty() && written(f); });

  std::map<std::pair<std::string, std::string>, WorkqueueRow> queues;
  for (const Figure* f : p) {
    std::string_view q = labelValue(f->labels, "queue");
    if (!isWorkqueue(*f) || q.empty()) continue;
    std::string component(labelValue(f->labels, "component"));
    WorkqueueRow& row = queues[{component, std::string(q)}];
    row.component = component;
    row.queue = std::string(q);
    (f->name == "workqueue_depth_max" ? row.depthMax : row.adds) = f;
  }
  for (auto& [key, row] : queues) out.workqueues.push_back(row);
  // A queue that backed up says more than one that was merely busy.
  auto valueOf = [](const Figure* f) { return f && f->available() ? *f->value : -1.0; };
  std::stable_sort(out.workqueues.begin(), out.workqueues.end(), [&](const WorkqueueRow& a, const WorkqueueRow& b) {
    if (valueOf(a.depthMax) != valueOf(b.depthMax)) return valueOf(a.depthMax) > valueOf(b.depthMax);
    return valueOf(a.adds) > valueOf(b.adds);
  });
  if (out.workqueues.size() > cap) {
    out.omittedWorkqueues = out.workqueues.size() - cap;
    out.workqueues.resize(cap);
  }
  return out;
}

Headline headline(const result::RunResult& r, std::size_t cap) {
  Headline h;
  Pool steady = pool(r.figures, Window::kSteady);
  addAll(h.writes, steady, "write_qps", [](const Figure& f) { return f.labels.empty(); });
  addAll(h.writes, steady, "rejected_write_qps", [](const Figure& f) { return f.labels.empty(); });

  std::vector<Axis> axes = axesOfRun(r);
  auto has = [&](Axis a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
  for (Axis a : axes) h.axes.push_back({a, axisFigures(r.figures, a, cap)});

  Pool setup = pool(r.figures, Window::kSetup);
  addAll(h.setup.figures, setup, "write_qps", [](const Figure& f) { return f.labels.empty(); });
  // Registration is the node fleet's setup; creating a population or the first objects
  // of a churn is everyone else's.
  addLargest(
      h.setup, setup, "write_qps",
      [&](const Figure& f) {
        if (!hasLabels(f) || !written(f)) return false;
        return isNodeResource(resourceOf(f)) ? has(Axis::kNode) : (has(Axis::kChurn) || has(Axis::kState));
      },
      cap);
  if (has(Axis::kState)) {
    addAll(h.setup.figures, setup, "bytes_per_object", wholeFit);
    addAll(h.setup.figures, setup, "bytes_per_object_all_replicas");
    std::string_view first;
    for (const Figure* f : setup)
      if (f->name == "bytes_per_object" && !labelValue(f->labels, "kind").empty()) {
        first = labelValue(f->labels, "apiserver");
        break;
      }
    addLargest(
        h.setup, setup, "bytes_per_object",
        [&](const Figure& f) {
          return !labelValue(f.labels, "kind").empty() && labelValue(f.labels, "apiserver") == first;
        },
        cap);
  }

  std::vector<std::string> replicas;
  for (const Figure& fig : r.figures) {
    const Figure* f = &fig;
    if (f->window == Window::kSetup) continue;
    if (f->name == "apiserver_request_qps" || f->name == "apiserver_heap_inuse_bytes") {
      std::string a(labelValue(f->labels, "apiserver"));
      if (!a.empty() && std::find(replicas.begin(), replicas.end(), a) == replicas.end()) replicas.push_back(a);
    }
  }
  if (replicas.size() > 1) h.replicas = std::move(replicas);
  h.controllers = controllersHeadline(r.figures, cap);
  return h;
}

const Figure* replicaFigure(const result::RunResult& r, std::string_view name, const std::string& apiserver) {
  const metrics::Labels self{{"apiserver", apiserver}};
  if (const Figure* f = findExact(r.figures, name, self)) return f;
  return findExact(r.figures, name, self, Window::kRun);
}

std::vector<std::pair<std::string, std::string>> replicaColumns(const result::RunResult& r,
                                                                const std::vector<std::string>& replicas) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto [name, title] :
       {std::pair{"apiserver_request_qps", "requests"}, std::pair{"apiserver_write_qps", "writes"},
        std::pair{"apiserver_heap_inuse_bytes", "heap in use"}, std::pair{"apiserver_rss_bytes", "RSS"}})
    for (const auto& a : replicas)
      if (replicaFigure(r, name, a)) {
        out.emplace_back(name, title);
        break;
      }
  return out;
}

std::vector<const Figure*> headlineFigures(const Headline& h) {
  std::vector<const Figure*> out = h.writes;
  for (const auto& a : h.axes) out.insert(out.end(), a.figures.figures.begin(), a.figures.figures.end());
  out.insert(out.end(), h.setup.figures.begin(), h.setup.figures.end());
  out.insert(out.end(), h.controllers.figures.begin(), h.controllers.figures.end());
  for (const WorkqueueRow& q : h.controllers.workqueues)
    for (const Figure* f : {q.depthMax, q.adds})
      if (f) out.push_back(f);
  return out;
}

const Figure* findExact(std::span<const Figure> figures, std::string_view name, const metrics::Labels& labels,
                        Window window) {
  for (const Figure& f : figures)
    if (f.name == name && f.labels == labels && f.window == window) return &f;
  return nullptr;
}

std::string bytesPerObjectDetail(std::span<const Figure> figures, const Figure& f) {
  if (f.name != "bytes_per_object" || !f.available()) return "";
  const Figure* lo = findExact(figures, "bytes_per_object_ci_low", f.labels, f.window);
  const Figure* hi = findExact(figures, "bytes_per_object_ci_high", f.labels, f.window);
  const Figure* r2 = findExact(figures, "bytes_per_object_r2", f.labels, f.window);
  std::string out;
  if (lo && hi && lo->available() && hi->available()) {
    std::string l = formatValue(*lo->value, lo->unit), h = formatValue(*hi->value, hi->unit);
    // "3.2–3.6 KiB": the unit once when both ends share it.
    auto space = l.rfind(' ');
    if (space != std::string::npos && h.size() > l.size() - space && h.ends_with(l.substr(space))) l.resize(space);
    out += l + "–" + h;
  }
  if (r2 && r2->available()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "r² %.2f", *r2->value);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out.empty() ? "" : "(" + out + ")";
}

std::vector<const Figure*> groupedFigures(const std::vector<Figure>& figures) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const Figure& f : figures)
    if (seen.insert(f.name).second) names.push_back(f.name);
  std::map<std::string, std::vector<const Figure*>> byName;
  for (const Figure& f : figures) byName[f.name].push_back(&f);
  std::vector<const Figure*> out;
  for (const auto& n : names) {
    auto& fs = byName[n];
    std::stable_sort(fs.begin(), fs.end(), [](const Figure* a, const Figure* b) { return a->window < b->window; });
    out.insert(out.end(), fs.begin(), fs.end());
  }
  return out;
}

std::string formatSpan(const result::Phase& p) {
  return formatElapsed(p.startSeconds) + " to " + formatElapsed(p.endSeconds) + " (" +
         formatElapsed(p.endSeconds - p.startSeconds) + ")";
}

std::vector<std::string> phaseLines(const result::RunResult& r) {
  std::vector<std::string> out;
  auto state = [](const result::Phase& p) {
    if (p.complete) return std::string("complete");
    return "cut short" + (p.detail.empty() ? std::string() : ": " + p.detail);
  };
  // Ramps happen inside setup: listed under it, whatever order the run recorded them in.
  std::vector<std::string> ramps;
  for (const result::Phase& p : r.phases)
    if (p.name.starts_with("ramp/"))
      ramps.push_back("  - ramp " + p.name.substr(5) + ": " + formatSpan(p) + (p.complete ? "" : ", " + state(p)));
  bool rampsShown = false;
  for (const result::Phase& p : r.phases) {
    if (p.name.starts_with("ramp/")) continue;
    std::string line = p.name + ": " + formatSpan(p) + ", " + state(p);
    if (p.name == "setup") line += " (recorded, not the headline)";
    if (p.name == "steady") line += " (the headline and the gates)";
    out.push_back(line);
    if (p.name == "setup") {
      out.insert(out.end(), ramps.begin(), ramps.end());
      rampsShown = true;
    }
  }
  if (!rampsShown) out.insert(out.end(), ramps.begin(), ramps.end());
  return out;
}

std::string incidentLine(const result::Incident& i) {
  std::string s = (i.untilSeconds ? "from " + formatElapsed(i.atSeconds) + " to " + formatElapsed(*i.untilSeconds)
                                  : "at " + formatElapsed(i.atSeconds)) +
                  ": " + i.kind;
  if (!i.member.empty()) s += " " + i.member;
  if (!i.detail.empty()) s += " (" + i.detail + ")";
  return s;
}

}  // namespace cpscale::reports
