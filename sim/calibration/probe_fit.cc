#include "sim/calibration/probe_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/calibration/calibration_file.h"
#include "sim/calibration/fit.h"
#include "sim/common/error.h"
#include "sim/controlplane/placement.h"
#include "sim/metrics/axis_pressure.h"
#include "sim/model/object_store.h"
#include "sim/result/json_io.h"

namespace cpscale::calibration {

using model::BackgroundRate;
using model::Calibration;
using model::CpuSet;
using model::FitQuality;
using model::Param;

namespace fs = std::filesystem;
using metrics::Figure;
using metrics::Label;
using metrics::Labels;
using metrics::labelValue;
using nlohmann::json;
using namespace std::chrono_literals;

std::string_view toString(ProbeKind k) {
  switch (k) {
    case ProbeKind::kIdle: return "idle";
    case ProbeKind::kNode: return "node";
    case ProbeKind::kChurn: return "churn";
    case ProbeKind::kState: return "state";
    case ProbeKind::kReads: return "reads";
    case ProbeKind::kWrites: return "writes";
  }
  return "idle";
}

std::optional<ProbeKind> parseProbeKind(std::string_view s) {
  for (ProbeKind k : {ProbeKind::kIdle, ProbeKind::kNode, ProbeKind::kChurn, ProbeKind::kState, ProbeKind::kReads,
                      ProbeKind::kWrites})
    if (toString(k) == s) return k;
  return std::nullopt;
}

// ---- probe files ----

namespace {
constexpr std::string_view kProbeKindName = "CalibrationProbe";
}

void writeProbeFile(const ProbeResult& p, const fs::path& dir) {
  json seconds = json::array(), cpu = json::array(), requests = json::array(), steady = json::array();
  for (const GeneratorSample& s : p.generator) {
    seconds.push_back(s.seconds);
    cpu.push_back(s.cpuSeconds);
    requests.push_back(s.requests);
    steady.push_back(s.steady);
  }
  json j = {{"kind", kProbeKindName},
            {"name", p.name},
            {"probe", std::string(toString(p.kind))},
            {"generator", {{"seconds", seconds}, {"cpuSeconds", cpu}, {"requests", requests}, {"steady", steady}}}};
  result::jsonio::writeFile(dir / kProbeFile, j.dump(1) + "\n");
}

ProbeResult readProbe(const fs::path& dir) {
  using result::jsonio::Reader;
  const fs::path file = dir / kProbeFile;
  json j = result::jsonio::readJsonFile(file);
  Reader root(j, file.string());
  root.object();
  if (std::string k = root.at("kind").str(); k != kProbeKindName)
    root.at("kind").fail("is '" + k + "', not a " + std::string(kProbeKindName));
  ProbeResult p;
  p.name = root.at("name").str();
  std::string kind = root.at("probe").str();
  auto parsed = parseProbeKind(kind);
  if (!parsed) root.at("probe").fail("is '" + kind + "' (one of idle, node, churn, state)");
  p.kind = *parsed;
  Reader g = root.at("generator");
  Reader seconds = g.at("seconds"), cpu = g.at("cpuSeconds"), requests = g.at("requests"), steady = g.at("steady");
  const std::size_t n = seconds.array().size();
  for (const Reader* r : {&cpu, &requests, &steady})
    if (r->array().size() != n)
      r->fail("has " + std::to_string(r->raw().size()) + " entries for " + std::to_string(n) + " samples");
  for (std::size_t i = 0; i < n; ++i) {
    GeneratorSample s{seconds.at(i).num(), cpu.at(i).num(), requests.at(i).unsignedInteger(), steady.at(i).boolean()};
    if (!p.generator.empty() && s.seconds <= p.generator.back().seconds)
      seconds.at(i).fail("times must strictly increase");
    p.generator.push_back(s);
  }
  p.result = result::readResult(dir / result::kResultFile);
  return p;
}

std::vector<ProbeResult> readProbes(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ConfigError(dir.string(), "", "is not a directory of calibration probes");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && fs::exists(e.path() / kProbeFile)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty())
    throw ConfigError(dir.string(), "", "holds no probe (a subdirectory with " + std::string(kProbeFile) + ")");
  std::vector<ProbeResult> out;
  for (const auto& d : dirs) out.push_back(readProbe(d));
  return out;
}

// ---- the fit ----

namespace {

using Figures = std::vector<Figure>;
using Time = std::optional<engine::TimePoint>;

// One measured window: a probe's steady window, or one step of a probe run as a ladder.
struct Win {
  const ProbeResult* probe = nullptr;
  std::string label;
  Figures figures;
};

std::string numberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::vector<Win> windowsOf(const ProbeResult& p) {
  std::vector<Win> out;
  if (p.result.capacity && !p.result.capacity->steps.empty()) {
    for (const result::CapacityStep& s : p.result.capacity->steps)
      out.push_back({&p, p.name + " step " + numberText(s.value), s.figures});
    return out;
  }
  Win w{&p, p.name, {}};
  for (const Figure& f : p.result.figures)
    if (f.window == metrics::Window::kSteady) w.figures.push_back(f);
  if (!w.figures.empty()) out.push_back(std::move(w));
  return out;
}

// The figure with exactly these labels (sorted by name), measured or not.
const Figure* exact(const Figures& fs, std::string_view name, const Labels& labels) {
  for (const Figure& f : fs)
    if (f.name == name && f.labels == labels) return &f;
  return nullptr;
}

Labels labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  return metrics::sortedLabels(kv);
}

// Measured figures of this name whose labels hold every (name, value) given (a value
// that is not a finite number counts as not measured).
std::vector<const Figure*> named(const Figures& fs, std::string_view name, const Labels& having = {}) {
  std::vector<const Figure*> out;
  for (const Figure& f : fs) {
    if (f.name != name || !f.value || !std::isfinite(*f.value)) continue;
    bool all = std::all_of(having.begin(), having.end(),
                           [&](const Label& l) { return labelValue(f.labels, l.name) == l.value; });
    if (all) out.push_back(&f);
  }
  return out;
}

// A figure's rate over the scrape interval ending at t: the point at t (to a
// millisecond); 0 before the series' first point (a counter series appears on its
// first increment) or after its last; the covering interval's rate in a gap. Without
// a time, or for a figure without a series, its value over the window. 0 for a figure
// that is missing or unavailable.
double valueAt(const Figure* f, Time t) {
  if (!f || !f->value) return 0;
  if (!t || f->overTime.empty()) return *f->value;
  const auto& ts = f->overTime.times;
  auto it = std::lower_bound(ts.begin(), ts.end(), *t - 1ms);
  if (it == ts.end()) return 0;
  const std::size_t i = static_cast<std::size_t>(it - ts.begin());
  if (*it <= *t + 1ms) return f->overTime.values[i];
  return i == 0 ? 0 : f->overTime.values[i];
}

double sumAt(const std::vector<const Figure*>& fs, Time t) {
  double s = 0;
  for (const Figure* f : fs) s += valueAt(f, t);
  return s;
}

// The times of a figure's series, or one "time" standing for its window's mean.
std::vector<Time> timesOf(const Figure& f) {
  if (f.overTime.empty()) return {Time{}};
  return {f.overTime.times.begin(), f.overTime.times.end()};
}

// The values of a gauge figure over its window (its series, else its value).
std::vector<double> samplesOf(const Figure& f) {
  std::vector<double> out = f.overTime.empty() && f.value ? std::vector<double>{*f.value} : f.overTime.values;
  std::erase_if(out, [](double v) { return !std::isfinite(v); });
  return out;
}

bool isWrite(std::string_view verb) { return metrics::isWriteVerb(verb); }
// The unloaded read is a single object's GET: a LIST's latency grows with what it
// returns, which the model charges per object (apiserverCpuListObject).
bool isRead(std::string_view verb) { return verb == "GET"; }

struct Design {
  std::vector<std::string> names;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  void add(std::vector<double> row, double v) {
    if (!std::isfinite(v) || !std::all_of(row.begin(), row.end(), [](double d) { return std::isfinite(d); })) return;
    x.push_back(std::move(row));
    y.push_back(v);
  }
};

struct Fitted {
  std::map<std::string, Param> params;  // by regressor name ("intercept" too)
  FitResult fit;
};

Param toParam(const Coefficient& c) { return {c.value, std::min(c.low, c.value), std::max(c.high, c.value)}; }

// Fits the design, first dropping regressors no observation exercised (held at 0,
// noted). Every coefficient non-negative. FitError names the fit.
Fitted fitDesign(Design d, const std::string& what, double confidence, std::vector<std::string>& notes) {
  std::vector<std::size_t> keep;
  Fitted out;
  for (std::size_t j = 0; j < d.names.size(); ++j) {
    bool exercised = std::any_of(d.x.begin(), d.x.end(), [&](const auto& row) { return std::fabs(row[j]) > 1e-12; });
    if (exercised) {
      keep.push_back(j);
    } else {
      out.params[d.names[j]] = Param::fixed(0);
      notes.push_back(what + ": " + d.names[j] + " was not exercised by any probe; held at 0");
    }
  }
  std::vector<std::string> names;
  for (std::size_t j : keep) names.push_back(d.names[j]);
  std::vector<std::vector<double>> x;
  for (const auto& row : d.x) {
    std::vector<double> r;
    for (std::size_t j : keep) r.push_back(row[j]);
    x.push_back(std::move(r));
  }
  FitOptions o;
  o.confidence = confidence;
  o.nonNegative.assign(names.size(), true);
  o.interceptNonNegative = true;
  try {
    out.fit = fitLeastSquares(x, d.y, names, o);
  } catch (const FitError& e) {
    throw FitError(what + ": " + e.what());
  }
  for (const Coefficient& c : out.fit.coefficients) out.params[c.name] = toParam(c);
  if (!out.fit.note.empty()) notes.push_back(what + ": " + out.fit.note);
  return out;
}

FitQuality quality(const std::string& name, const FitResult& f) {
  return {name, f.observations, f.parameters, f.r2, f.residualStd};
}

// Mean and its confidence interval over samples; a single sample is its own interval.
Param meanParam(const std::vector<double>& v, double confidence) {
  if (v.empty()) return {};
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  if (v.size() < 2) return Param::fixed(mean);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  const double se = std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  const double h = tQuantile(confidence, v.size() - 1) * se;
  return {mean, mean - h, mean + h};
}

// Mean with the range of the values as its interval (values that are not samples of
// one quantity: per-window or per-kind measurements).
Param rangeParam(const std::vector<double>& v) {
  if (v.empty()) return {};
  double sum = 0;
  for (double x : v) sum += x;
  return {sum / static_cast<double>(v.size()), *std::min_element(v.begin(), v.end()),
          *std::max_element(v.begin(), v.end())};
}

// The apiserver's heap in a window: after a forced GC where the scraper read it, else
// go_memstats_heap_inuse_bytes.
const Figure* heapFigure(const Figures& fs, const std::string& apiserver) {
  const Figure* gc = exact(fs, "apiserver_heap_inuse_after_gc_bytes", labels({{"apiserver", apiserver}}));
  if (gc && gc->value) return gc;
  const Figure* h = exact(fs, "apiserver_heap_inuse_bytes", labels({{"apiserver", apiserver}}));
  return h && h->value ? h : nullptr;
}

// ---- the fits ----

// CPU per watch event sent, from the fan-out probes alone: their windows differ in
// watchers and nothing else (the same updates, no LISTs), so the apiserver's CPU
// against the events it sent in each scrape interval is the cost of an event. In the
// fit over every probe the events are nearly proportional to the writes that cause
// them, and a cost of ~10 us an event is lost in the writes' noise.
struct CpuRow {
  double lease = 0, other = 0, custom = 0, eventWrites = 0, reads = 0, events = 0, listed = 0, cpu = 0;
  // Changes dispatched to watchers per second (dispatchedAt).
  double dispatched = 0;
  bool fanout = false;        // a reads probe's window with no LIST traffic
  bool builtinProbe = false;  // a window of a probe of built-in writes (pods)
};

// "resource.group" (or "resource" in the core group), as a family labels a resource with
// either a group label or the qualified name alone.
std::string qualifiedResource(const Figure& f) {
  const std::string resource(labelValue(f.labels, "resource")), group(labelValue(f.labels, "group"));
  return group.empty() ? resource : resource + "." + group;
}

// The changes the watch cache dispatched to watchers per second at t on one replica: each
// resource's events received (apiserver_watch_cache_events_received_total) times its
// open watches (apiserver_longrunning_requests{verb="WATCH"}). Exact where every watch
// is dispatched every change. Pods and nodes count their events sent instead (their
// trigger index keeps a pinned watch from the others' changes, which no metric counts;
// the probes' watches of them select what they are dispatched).
double dispatchedAt(const Figures& fs, const Labels& self, Time t) {
  std::map<std::string, double> watches;
  for (const Figure* f : named(fs, "apiserver_longrunning_requests", self))
    if (labelValue(f->labels, "verb") == "WATCH") watches[qualifiedResource(*f)] += valueAt(f, t);
  auto indexed = [](const std::string& r) { return r == "pods" || r == "nodes"; };
  double dispatched = 0;
  for (const Figure* f : named(fs, "apiserver_watch_cache_events_received_total_per_second", self)) {
    const std::string r = qualifiedResource(*f);
    if (indexed(r)) continue;
    if (auto it = watches.find(r); it != watches.end()) dispatched += valueAt(f, t) * it->second;
  }
  for (const Figure* f : named(fs, "apiserver_watch_events_total_per_second", self))
    if (indexed(qualifiedResource(*f))) dispatched += valueAt(f, t);
  return dispatched;
}

// One observation per scrape interval of every window and replica: its CPU against
// its requests by class.
std::vector<CpuRow> apiserverCpuRows(const std::vector<Win>& wins) {
  std::vector<CpuRow> rows;
  for (const Win& w : wins) {
    const auto cpus = named(w.figures, "apiserver_cpu_cores", labels({}));
    std::vector<const Figure*> perReplica;
    for (const Figure* f : cpus)
      if (!labelValue(f->labels, "apiserver").empty()) perReplica.push_back(f);
    if (perReplica.empty()) continue;
    const Figure* allWrites = exact(w.figures, "write_qps", {});
    std::vector<const Figure*> leaseWrites;
    for (const Figure* f :
         named(w.figures, "write_qps", labels({{"group", "coordination.k8s.io"}, {"resource", "leases"}}))) {
      std::string_view verb = labelValue(f->labels, "verb");
      if (verb == "PUT" || verb == "PATCH" || verb == "APPLY") leaseWrites.push_back(f);
    }
    const auto replicaWrites = named(w.figures, "apiserver_write_qps");
    // Custom resources' writes, and Events' (the resource without a watch cache).
    std::vector<const Figure*> customWrites, eventWrites;
    for (const Figure* f : named(w.figures, "write_qps")) {
      const std::string_view group = labelValue(f->labels, "group"), resource = labelValue(f->labels, "resource");
      if (resource.empty()) continue;
      if (!metrics::isBuiltinGroup(group)) customWrites.push_back(f);
      if (!model::hasWatchCache(group, resource)) eventWrites.push_back(f);
    }
    for (const Figure* cpu : perReplica) {
      const std::string api(labelValue(cpu->labels, "apiserver"));
      const Labels self = labels({{"apiserver", api}});
      const Figure* requests = exact(w.figures, "apiserver_request_qps", self);
      const Figure* writes = exact(w.figures, "apiserver_write_qps", self);
      const auto watch = named(w.figures, "apiserver_watch_events_total_per_second", self);
      // Objects LISTs returned, from the watch cache and from etcd.
      auto listed = named(w.figures, "apiserver_cache_list_returned_objects_total_per_second", self);
      for (const Figure* f : named(w.figures, "apiserver_storage_list_returned_objects_total_per_second", self))
        listed.push_back(f);
      double listedInWindow = 0;
      for (const Figure* f : listed) listedInWindow += f->value.value_or(0);
      const bool fanout = w.probe->kind == ProbeKind::kReads && listedInWindow < 1;
      for (Time t : timesOf(*cpu)) {
        // write_qps sums every replica: this replica's share of it by its own writes.
        double share = 1;
        if (perReplica.size() > 1) {
          const double all = sumAt(replicaWrites, t);
          share = all > 0 ? valueAt(writes, t) / all : 1.0 / static_cast<double>(perReplica.size());
        }
        CpuRow r;
        r.lease = sumAt(leaseWrites, t) * share;
        r.other = std::max(0.0, valueAt(allWrites, t) * share - r.lease);
        r.custom = std::min(r.other, sumAt(customWrites, t) * share);
        r.other -= r.custom;
        r.eventWrites = std::min(r.other, sumAt(eventWrites, t) * share);
        r.other -= r.eventWrites;
        r.reads = std::max(0.0, valueAt(requests, t) - valueAt(writes, t));
        r.events = sumAt(watch, t);
        r.listed = sumAt(listed, t);
        r.cpu = valueAt(cpu, t);
        r.fanout = fanout;
        r.dispatched = dispatchedAt(w.figures, self, t);
        r.builtinProbe = w.probe->kind == ProbeKind::kWrites;
        rows.push_back(r);
      }
    }
  }
  return rows;
}

// The CPU per watch event sent and per change dispatched to a watcher, from the fan-out
// probes alone where they ran (their writes alike, the events they sent and the watchers
// they opened apart); none otherwise. The two are told apart only where a probe's
// watchers were dispatched changes they did not select (fanout-filtered): elsewhere
// every dispatch is an event sent, and the event's cost holds both.
struct WatchCpu {
  Param event, dispatch;
};
std::optional<WatchCpu> fitWatchEventCpu(const std::vector<CpuRow>& rows, const CalibrationFitOptions& o,
                                         Calibration& c) {
  Design fan;
  bool filtered = false;
  for (const CpuRow& r : rows) {
    if (!r.fanout) continue;
    filtered = filtered || r.dispatched > 2 * r.events + 200;
  }
  fan.names =
      filtered ? std::vector<std::string>{"watchEvents", "dispatched"} : std::vector<std::string>{"watchEvents"};
  for (const CpuRow& r : rows) {
    if (!r.fanout) continue;
    if (filtered)
      fan.add({r.events, r.dispatched}, r.cpu);
    else
      fan.add({r.events}, r.cpu);
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& x : fan.x) lo = std::min(lo, x[0]), hi = std::max(hi, x[0]);
  // Two fan-outs at least a few hundred events a second apart.
  if (fan.y.size() < 4 || hi - lo <= 200) return std::nullopt;
  Fitted f = fitDesign(std::move(fan), "apiserver CPU per watch event (fan-out probes)", o.confidence, c.notes);
  c.fits.push_back(quality("apiserver_cpu_watch_event", f.fit));
  WatchCpu out{f.params.at("watchEvents"), Param::fixed(0)};
  if (filtered) {
    out.dispatch = f.params.at("dispatched");
    c.notes.push_back(
        "apiserverCpuWatchEvent, apiserverCpuWatchDispatch: the fan-out probes' CPU against the events sent and "
        "the changes dispatched to watchers (each resource's apiserver_watch_cache_events_received_total times "
        "its open watches), their writes alike; fanout-filtered's watchers select nothing, so its dispatches "
        "send no event. The other costs are fitted to the CPU less both");
  } else {
    c.notes.push_back(
        "apiserverCpuWatchEvent: the fan-out probes' CPU against the events sent, their writes alike; no probe "
        "dispatched changes its watchers did not select, so the dispatch is not told apart: it is in the "
        "event's cost and apiserverCpuWatchDispatch is 0 (a pinned pod or node watch is then charged nothing "
        "for the changes it filters out)");
  }
  return out;
}

void fitApiserverCpu(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  const std::vector<CpuRow> rows = apiserverCpuRows(wins);
  if (rows.empty())
    throw FitError(
        "apiserver CPU: no probe window has apiserver_cpu_cores{apiserver} (is process_cpu_seconds_total scraped?)");

  const std::optional<WatchCpu> watch = fitWatchEventCpu(rows, o, c);
  // Built-in writes other than Leases (Pods, their status, Node status) apart from
  // custom resources' only where a probe wrote many of them (the pods probes):
  // elsewhere they are a Node's status now and then, and the two costs are one. Events
  // (no watch cache, no watchers) apart from both where the pods probes ran with and
  // without them.
  bool split = false, withEvents = false, withoutEvents = false;
  for (const CpuRow& r : rows) {
    if (!r.builtinProbe) continue;
    split = true;
    withEvents = withEvents || r.eventWrites > 10;
    withoutEvents = withoutEvents || r.eventWrites < 1;
  }
  const bool eventSplit = withEvents && withoutEvents;
  Design d;
  d.names = {"leaseWrites", "otherWrites", "reads", "listObjects"};
  if (split) d.names.push_back("customWrites");
  if (eventSplit) d.names.push_back("eventWrites");
  if (!watch) d.names.push_back("watchEvents");
  for (const CpuRow& r : rows) {
    double other = r.other + (eventSplit ? 0 : r.eventWrites) + (split ? 0 : r.custom);
    std::vector<double> x = {r.lease, other, r.reads, r.listed};
    if (split) x.push_back(r.custom);
    if (eventSplit) x.push_back(r.eventWrites);
    if (!watch) x.push_back(r.events);
    d.add(std::move(x), watch ? r.cpu - watch->event.value * r.events - watch->dispatch.value * r.dispatched : r.cpu);
  }
  Fitted f = fitDesign(std::move(d), "apiserver CPU", o.confidence, c.notes);
  c.apiserverIdleCores = f.params.at("intercept");
  c.apiserverCpuLeaseWrite = f.params.at("leaseWrites");
  c.apiserverCpuWrite = f.params.at("otherWrites");
  c.apiserverCpuCustomWrite = split ? f.params.at("customWrites") : c.apiserverCpuWrite;
  c.apiserverCpuEventWrite = eventSplit ? f.params.at("eventWrites") : c.apiserverCpuWrite;
  if (!split) {
    c.notes.push_back(
        "apiserverCpuWrite: one cost for every write but a Lease's, built-in, custom or an Event: no pods probe "
        "wrote enough built-in objects to tell them apart");
  } else {
    c.notes.push_back(std::string("apiserverCpuWrite, apiserverCpuCustomWrite: a built-in resource's writes (Pods, ") +
                      "their status, Node status" + (eventSplit ? "" : ", Events") +
                      ") apart from a custom resource's, told apart by the pods probes' built-in writes");
    c.notes.push_back(eventSplit ? "apiserverCpuEventWrite: an Event's write (no watch cache, no watchers), told apart "
                                   "by the pods probes with and without their Events"
                                 : "apiserverCpuEventWrite: as apiserverCpuWrite: no pods probe ran without Events");
  }
  c.apiserverCpuRead = f.params.at("reads");
  c.apiserverCpuWatchEvent = watch ? watch->event : f.params.at("watchEvents");
  c.apiserverCpuWatchDispatch = watch ? watch->dispatch : Param::fixed(0);
  c.apiserverCpuListObject = f.params.at("listObjects");
  c.fits.push_back(quality("apiserver_cpu", f.fit));
}

void fitEtcdCpu(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  Design d;
  d.names = {"proposals"};
  for (const Win& w : wins) {
    for (const Figure* cpu : named(w.figures, "etcd_cpu_cores")) {
      std::string_view member = labelValue(cpu->labels, "etcd");
      if (member.empty()) continue;
      const auto proposals = named(w.figures, "etcd_proposals_committed_per_second", labels({{"etcd", member}}));
      for (Time t : timesOf(*cpu)) d.add({sumAt(proposals, t)}, valueAt(cpu, t));
    }
  }
  if (d.y.empty()) throw FitError("etcd CPU: no probe window has etcd_cpu_cores{etcd}");
  Fitted f = fitDesign(std::move(d), "etcd CPU", o.confidence, c.notes);
  c.etcdIdleCores = f.params.at("intercept");
  c.etcdCpuPerProposal = f.params.at("proposals");
  c.fits.push_back(quality("etcd_cpu", f.fit));
}

void fitGeneratorCpu(const std::vector<ProbeResult>& probes, const CalibrationFitOptions& o, Calibration& c) {
  Design d;
  d.names = {"requests"};
  double cpu = 0, requests = 0;
  for (const ProbeResult& p : probes) {
    for (std::size_t i = 1; i < p.generator.size(); ++i) {
      const GeneratorSample& a = p.generator[i - 1];
      const GeneratorSample& b = p.generator[i];
      if (!a.steady || !b.steady || b.seconds <= a.seconds || b.requests < a.requests) continue;
      const double dt = b.seconds - a.seconds;
      d.add({static_cast<double>(b.requests - a.requests) / dt}, (b.cpuSeconds - a.cpuSeconds) / dt);
      cpu += b.cpuSeconds - a.cpuSeconds;
      requests += static_cast<double>(b.requests - a.requests);
    }
  }
  if (requests <= 0)
    throw FitError("generator CPU: no probe recorded a completed request in its steady window (probe.json samples)");
  try {
    Fitted f = fitDesign(d, "generator CPU", o.confidence, c.notes);
    c.generatorCpuPerRequest = f.params.at("requests");
    c.fits.push_back(quality("generator_cpu", f.fit));
  } catch (const FitError& e) {
    c.generatorCpuPerRequest = Param::fixed(cpu / requests);
    c.notes.push_back(std::string(e.what()) +
                      "; generatorCpuPerRequest is the steady windows' CPU over their requests");
  }
}

// The windows by load (the apiservers' CPU, else their write rate), least first.
std::vector<const Win*> byLoad(const std::vector<Win>& wins) {
  auto load = [](const Win& w) {
    if (const Figure* f = exact(w.figures, "apiserver_cpu_cores_all_replicas", {})) {
      // Unavailable: the apiserver did not answer its scrapes, the most loaded of all.
      return f->value ? *f->value : std::numeric_limits<double>::infinity();
    }
    double s = 0;
    for (const Figure* f : named(w.figures, "apiserver_cpu_cores"))
      if (!labelValue(f->labels, "apiserver").empty()) s += *f->value;
    if (s > 0) return s;
    return valueAt(exact(w.figures, "write_qps", {}), {});
  };
  std::vector<const Win*> out;
  for (const Win& w : wins) out.push_back(&w);
  std::stable_sort(out.begin(), out.end(), [&](const Win* a, const Win* b) { return load(*a) < load(*b); });
  return out;
}

Param unloadedLatency(const std::vector<Win>& wins, bool (*inClass)(std::string_view), const std::string& cls,
                      std::vector<std::string>& notes) {
  const auto sorted = byLoad(wins);
  for (const Win* w : sorted) {
    double weighted = 0, weights = 0;
    std::vector<double> p50s;
    for (const Figure* f : named(w->figures, "client_latency_p50", labels({{"measured_from", "sent"}}))) {
      std::string_view verb = labelValue(f->labels, "verb");
      if (!inClass(verb)) continue;
      double n = 0;
      for (const Figure* r : named(w->figures, "client_requests",
                                   labels({{"resource", labelValue(f->labels, "resource")}, {"verb", verb}})))
        n += *r->value;
      if (n <= 0) continue;
      weighted += n * *f->value;
      weights += n;
      p50s.push_back(*f->value);
    }
    if (weights > 0) {
      Param p = rangeParam(p50s);
      p.value = weighted / weights;
      notes.push_back("latency" + cls + ": the generator's p50 from the sent time in " + w->label +
                      ", weighted by requests; the interval is the range over request kinds");
      return p;
    }
  }
  for (const Win* w : sorted) {
    std::vector<double> p50s;
    for (const Figure* f : named(w->figures, "server_latency_p50"))
      if (inClass(labelValue(f->labels, "verb"))) p50s.push_back(*f->value);
    if (!p50s.empty()) {
      notes.push_back("latency" + cls + ": the apiserver's p50 (histogram buckets) in " + w->label +
                      ", no generator request of the class was measured; the interval is the range over request kinds");
      return rangeParam(p50s);
    }
  }
  throw FitError("unloaded " + cls + " latency: no probe window measured a " + cls + " request");
}

// The fixed payload size of a probe's workload of this kind (dormant: a state probe;
// churn: a churn probe).
double payloadBytes(const ProbeResult& p, std::string_view workload = "dormant") {
  const std::string what = std::string(toString(p.kind)) + " probe " + p.name;
  const json& cfg = p.result.scenario.effectiveConfig;
  if (cfg.is_object() && cfg.contains("workloads") && cfg["workloads"].is_array()) {
    for (const json& w : cfg["workloads"]) {
      if (!w.is_object() || w.value("kind", "") != workload) continue;
      if (w.contains("objectBytes") && w["objectBytes"].is_number()) return w["objectBytes"].get<double>();
      throw FitError(what + ": the " + std::string(workload) +
                     " workload's objectBytes must be a fixed size (a number)");
    }
  }
  throw FitError(what + ": its scenario has no " + std::string(workload) + " workload");
}

// The events the watch caches hold at t (watch_cache_events), summed over resources:
// the custom resources' (a group kube-apiserver does not serve itself).
struct HeldEvents {
  double custom = 0;
};
HeldEvents heldAt(const Figures& fs, const std::string& apiserver, Time t) {
  HeldEvents e;
  for (const Figure* f : named(fs, "watch_cache_events", labels({{"apiserver", apiserver}}))) {
    const std::string_view group = labelValue(f->labels, "group");
    if (!metrics::isBuiltinGroup(group)) e.custom += valueAt(f, t);
  }
  return e;
}

// One observation of heap per object at a JSON size, with its own interval (the ramp
// fit's): what the two-point case below draws its line's extremes from.
struct HeapObservation {
  double x, y, low, high;
};

// Heap per object against the objects' JSON size: one observation per (state probe,
// kind), and what was measured, in words.
struct HeapObservations {
  Design design;
  std::vector<HeapObservation> points;
  std::string measured;
};

// A state probe none of whose ramp fits held (the heap's noise against a short ramp):
// the level instead, the steady window's heap over the idle plane's, per object beyond
// the idle's. None without an idle probe or without 100 objects beyond its.
std::optional<double> heapLevelPerObject(const ProbeResult& p, const std::vector<ProbeResult>& probes) {
  auto level = [](const ProbeResult& q, std::string_view name) -> std::optional<double> {
    for (const Figure& f : q.result.figures)
      if (f.name == name && f.window == metrics::Window::kSteady && f.value &&
          !labelValue(f.labels, "apiserver").empty())
        return *f.value;
    return std::nullopt;
  };
  auto heapLevel = [&](const ProbeResult& q) {
    auto h = level(q, "apiserver_heap_inuse_after_gc_bytes");
    return h ? h : level(q, "apiserver_heap_inuse_bytes");
  };
  for (const ProbeResult& idle : probes) {
    if (idle.kind != ProbeKind::kIdle) continue;
    auto h1 = heapLevel(p), h0 = heapLevel(idle);
    auto n1 = level(p, "apiserver_objects_total"), n0 = level(idle, "apiserver_objects_total");
    if (h1 && h0 && n1 && n0 && *n1 > *n0 + 100) return (*h1 - *h0) / (*n1 - *n0);
    break;
  }
  return std::nullopt;
}

HeapObservations heapObservations(const std::vector<ProbeResult>& probes, const CalibrationFitOptions& o,
                                  Calibration& c) {
  HeapObservations out;
  out.design.names = {"jsonBytes"};
  for (const ProbeResult& p : probes) {
    if (p.kind != ProbeKind::kState) continue;
    const double bytes = payloadBytes(p) + o.envelopeBytes;
    std::map<std::string, std::vector<double>> byKind, lows, highs;
    for (const Figure& f : p.result.figures) {
      if (f.window != metrics::Window::kSetup || !f.value || !std::isfinite(*f.value)) continue;
      // Per kind, and the whole population's ramp (no kind label) as one more
      // observation at the same size.
      std::string kind(labelValue(f.labels, "kind"));
      if (kind.empty()) kind = "all kinds";
      if (f.name == "bytes_per_object") byKind[kind].push_back(*f.value);
      if (f.name == "bytes_per_object_ci_low") lows[kind].push_back(*f.value);
      if (f.name == "bytes_per_object_ci_high") highs[kind].push_back(*f.value);
    }
    if (byKind.empty()) {
      if (const auto perObject = heapLevelPerObject(p, probes)) {
        out.design.add({bytes}, *perObject);
        out.points.push_back({bytes, *perObject, *perObject, *perObject});
        out.measured += (out.measured.empty() ? "" : ", ") + std::string("level ") + numberText(*perObject) + " B at " +
                        numberText(bytes) + " B";
        c.notes.push_back("heap per object: " + p.name +
                          ": no ramp fit held; the steady heap over the idle plane's, per object beyond its");
      }
    }
    for (const auto& [kind, slopes] : byKind) {
      const double mean = rangeParam(slopes).value;  // every replica caches every object
      out.design.add({bytes}, mean);
      const double lo = lows[kind].empty() ? mean : *std::min_element(lows[kind].begin(), lows[kind].end());
      const double hi = highs[kind].empty() ? mean : *std::max_element(highs[kind].begin(), highs[kind].end());
      out.points.push_back({bytes, mean, lo, hi});
      out.measured +=
          (out.measured.empty() ? "" : ", ") + kind + " " + numberText(mean) + " B at " + numberText(bytes) + " B";
    }
  }
  return out;
}

// Per object and per byte: bytes_per_object of the state probes' ramps against the
// objects' JSON size.
void fitHeapPerObject(const std::vector<ProbeResult>& probes, const CalibrationFitOptions& o, Calibration& c) {
  HeapObservations h = heapObservations(probes, o, c);
  if (h.design.y.empty())
    throw FitError(
        "heap per object: no state probe measured bytes_per_object{kind} (the ramps were too short or noisy)");
  const std::vector<HeapObservation>& obs = h.points;
  if (obs.size() == 2 && obs[0].x != obs[1].x) {
    // Two sizes (the per-kind ramps too noisy to count): the line through both, its
    // interval the extremes the two ramps' own intervals allow.
    const HeapObservation& a = obs[0].x < obs[1].x ? obs[0] : obs[1];
    const HeapObservation& b = obs[0].x < obs[1].x ? obs[1] : obs[0];
    const double dx = b.x - a.x;
    auto line = [&](double ya, double yb) { return std::pair{(yb - ya) / dx, ya - (yb - ya) / dx * a.x}; };
    const auto [slope, icept] = line(a.y, b.y);
    const auto [sLow, iHigh] = line(a.high, b.low);
    const auto [sHigh, iLow] = line(a.low, b.high);
    c.heapPerObjectByte = {std::max(0.0, slope), std::max(0.0, sLow), std::max(0.0, sHigh)};
    c.heapPerObject = {std::max(0.0, icept), std::max(0.0, iLow), std::max(0.0, iHigh)};
    c.notes.push_back(
        "heap per object: two payload sizes, the line through them (no residual to fit: the "
        "intervals are the extremes the ramps' own 95 % intervals allow)");
    FitQuality q;
    q.name = "heap_per_object";
    q.observations = 2;
    q.parameters = 2;
    q.r2 = 1;
    c.fits.push_back(q);
  } else {
    Fitted f = fitDesign(std::move(h.design), "heap per object", o.confidence, c.notes);
    c.heapPerObject = f.params.at("intercept");
    c.heapPerObjectByte = f.params.at("jsonBytes");
    c.fits.push_back(quality("heap_per_object", f.fit));
  }
  c.notes.push_back("heap per object measured by kind (JSON size = payload + " + numberText(o.envelopeBytes) +
                    " B): " + h.measured);
}

// The base: the idle plane's heap.
void fitHeapBase(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  std::vector<double> idle;
  bool afterGc = false;
  for (const Win& w : wins) {
    if (w.probe->kind != ProbeKind::kIdle) continue;
    for (const Figure* any : named(w.figures, "apiserver_heap_inuse_bytes")) {
      std::string api(labelValue(any->labels, "apiserver"));
      if (api.empty()) continue;
      const Figure* h = heapFigure(w.figures, api);
      afterGc = afterGc || h->name == "apiserver_heap_inuse_after_gc_bytes";
      for (double v : samplesOf(*h)) idle.push_back(v);
    }
  }
  if (idle.empty()) throw FitError("heap base: no idle probe window has apiserver_heap_inuse_bytes{apiserver}");
  c.heapBaseBytes = meanParam(idle, o.confidence);
  c.notes.push_back(std::string("heapBaseBytes: the idle plane's heap ") +
                    (afterGc ? "after a forced GC" : "in use (go_memstats_heap_inuse_bytes)") +
                    ", its own objects included; the interval is the mean's");
}

// A custom resource's watch cache: the churn probe's heap over the base, less its
// sessions' versions (one per event the ring holds: every write is a new version),
// against the events the sessions' ring holds. Its slope is each event's own cost,
// its intercept the custom resource's (the probe serves one).
void fitWatchCacheHeap(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  Design ring;
  ring.names = {"events"};
  std::size_t churnWindows = 0;
  for (const Win& w : wins) {
    if (w.probe->kind != ProbeKind::kChurn) continue;
    ++churnWindows;
    const double version =
        c.heapPerObject.value + c.heapPerObjectByte.value * (payloadBytes(*w.probe, "churn") + o.envelopeBytes);
    for (const Figure* any : named(w.figures, "apiserver_heap_inuse_bytes")) {
      std::string api(labelValue(any->labels, "apiserver"));
      if (api.empty()) continue;
      const Figure* heap = heapFigure(w.figures, api);
      for (Time t : timesOf(*heap)) {
        const HeldEvents e = heldAt(w.figures, api, t);
        if (e.custom <= 0) continue;
        ring.add({e.custom}, valueAt(heap, t) - c.heapBaseBytes.value - e.custom * version);
      }
    }
  }
  if (ring.y.empty()) {
    c.heapPerCustomResourceEvent = Param::fixed(0);
    c.heapPerCustomResource = Param::fixed(0);
    c.notes.push_back(
        churnWindows == 0
            ? "watch cache: no churn probe; heapPerCustomResourceEvent and heapPerCustomResource held at 0"
            : "watch cache: the churn probe has no watch_cache_events (watch_cache_capacity was not "
              "scraped); heapPerCustomResourceEvent and heapPerCustomResource held at 0");
  } else {
    Fitted fr = fitDesign(std::move(ring), "watch cache heap", o.confidence, c.notes);
    c.heapPerCustomResourceEvent = fr.params.at("events");
    // The session version subtracted per event is itself a fit: its interval widens
    // the event's by as much (nearly every held event is a session's).
    const double bytes = payloadBytes(*std::find_if(wins.begin(), wins.end(),
                                                    [](const Win& w) { return w.probe->kind == ProbeKind::kChurn; })
                                           ->probe,
                                      "churn") +
                         o.envelopeBytes;
    const double version = c.heapPerObject.value + c.heapPerObjectByte.value * bytes;
    const double versionLow = c.heapPerObject.low + c.heapPerObjectByte.low * bytes;
    const double versionHigh = c.heapPerObject.high + c.heapPerObjectByte.high * bytes;
    c.heapPerCustomResourceEvent.low = std::max(0.0, c.heapPerCustomResourceEvent.low - (versionHigh - version));
    c.heapPerCustomResourceEvent.high += version - versionLow;
    c.heapPerCustomResource = fr.params.at("intercept");
    c.fits.push_back(quality("heap_per_custom_resource_event", fr.fit));
    c.notes.push_back(
        "watch cache: " + numberText(c.heapPerCustomResourceEvent.value) +
        " B per event a custom resource's ring holds beyond its object, " + numberText(c.heapPerCustomResource.value) +
        " B for the custom resource served: the churn probe's heap over the base less one session version per "
        "held event, against watch_cache_events");
  }
}

// Nodes: heap against the node count over the node probe's steps, the Leases' and
// Nodes' watch cache rings included (they fill with the fleet's renewals).
void fitNodeHeap(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  const double lease = c.heapPerObject.value + c.heapPerObjectByte.value * o.leaseBytes;
  Design nodes;
  nodes.names = {"nodes"};
  for (const Win& w : wins) {
    if (w.probe->kind != ProbeKind::kNode) continue;
    for (const Figure* any : named(w.figures, "apiserver_heap_inuse_bytes")) {
      std::string api(labelValue(any->labels, "apiserver"));
      if (api.empty()) continue;
      const Figure* heap = heapFigure(w.figures, api);
      const Figure* count =
          exact(w.figures, "apiserver_objects", labels({{"apiserver", api}, {"group", ""}, {"resource", "nodes"}}));
      if (!count || !count->value) continue;
      for (Time t : timesOf(*heap)) nodes.add({valueAt(count, t)}, valueAt(heap, t));
    }
  }
  c.heapBytesPerObjectByResource["leases"] = lease;
  try {
    Fitted fn = fitDesign(std::move(nodes), "heap per node", o.confidence, c.notes);
    const double pair = fn.params.at("nodes").value;
    c.heapBytesPerObjectByResource["nodes"] = std::max(0.0, pair - lease);
    c.fits.push_back(quality("heap_per_node", fn.fit));
    c.notes.push_back("heap per node: " + numberText(pair) + " B per node with its Lease [" +
                      numberText(fn.params.at("nodes").low) + ", " + numberText(fn.params.at("nodes").high) +
                      "]; leases by the per-object rule at " + numberText(o.leaseBytes) + " B, nodes the rest");
  } catch (const FitError& e) {
    c.notes.push_back(std::string(e.what()) + "; no override for nodes (the per-object rule applies)");
  }
}

// Each open watch: the heap against the open watches (apiserver_longrunning_requests
// {verb="WATCH"}) over the fan-out probes' windows, which hold the same objects and
// write the same updates with 10, 50 and (fanout-filtered) a thousand watchers; the
// events the ring holds (it fills with the updates as a window goes on) fitted beside.
void fitWatchHeap(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  Design d;
  d.names = {"watches", "heldEvents"};
  double fewest = std::numeric_limits<double>::infinity(), most = 0;
  for (const Win& w : wins) {
    if (!w.probe->name.starts_with("fanout")) continue;
    for (const Figure* any : named(w.figures, "apiserver_heap_inuse_bytes")) {
      std::string api(labelValue(any->labels, "apiserver"));
      if (api.empty()) continue;
      const Figure* heap = heapFigure(w.figures, api);
      const auto open =
          named(w.figures, "apiserver_longrunning_requests", labels({{"apiserver", api}, {"verb", "WATCH"}}));
      for (Time t : timesOf(*heap)) {
        const double watches = sumAt(open, t);
        fewest = std::min(fewest, watches), most = std::max(most, watches);
        d.add({watches, heldAt(w.figures, api, t).custom}, valueAt(heap, t));
      }
    }
  }
  // Open watches a few hundred apart, or the slope is the heap's noise.
  if (d.y.size() < 4 || most - fewest < 200) {
    c.heapPerWatch = Param::fixed(0);
    c.notes.push_back(
        "heapPerWatch: not fitted (no fan-out probes whose open watches were a few hundred apart): an open watch "
        "costs the model no heap");
    return;
  }
  Fitted f = fitDesign(std::move(d), "heap per watch", o.confidence, c.notes);
  c.heapPerWatch = f.params.at("watches");
  c.fits.push_back(quality("heap_per_watch", f.fit));
  c.notes.push_back("heapPerWatch: " + numberText(c.heapPerWatch.value) + " B per open watch [" +
                    numberText(c.heapPerWatch.low) + ", " + numberText(c.heapPerWatch.high) +
                    "]: the fan-out probes' heap against their open watches (" + numberText(fewest) + " to " +
                    numberText(most) + "), the ring's held events fitted beside");
}

// kube-apiserver's heap: per object and per byte, the idle plane's base, a custom
// resource's watch cache, the nodes' override and each open watch, each fit using the
// ones before it.
void fitHeap(const std::vector<ProbeResult>& probes, const std::vector<Win>& wins, const CalibrationFitOptions& o,
             Calibration& c) {
  fitHeapPerObject(probes, o, c);
  fitHeapBase(wins, o, c);
  fitWatchCacheHeap(wins, o, c);
  fitNodeHeap(wins, o, c);
  fitWatchHeap(wins, o, c);
}

void fitEtcdStorage(const std::vector<Win>& wins, const CalibrationFitOptions& o, Calibration& c) {
  // Growth of the in-use db over each window against the window's writes.
  Design d;
  d.names = {"writes"};
  for (const Win& w : wins) {
    const Figure* writes = exact(w.figures, "write_requests", {});
    if (!writes || !writes->value) continue;
    for (const Figure* inUse : named(w.figures, "etcd_db_total_size_in_use_bytes")) {
      if (labelValue(inUse->labels, "etcd").empty() || inUse->overTime.size() < 2) continue;
      d.add({*writes->value}, inUse->overTime.values.back() - inUse->overTime.values.front());
    }
  }
  // Its growth may shrink with a compaction within a window: the intercept absorbs
  // the mean of that, never a negative cost per write.
  Fitted f = fitDesign(std::move(d), "etcd db bytes per write", o.confidence, c.notes);
  c.etcdDbBytesPerWrite = f.params.at("writes");
  c.fits.push_back(quality("etcd_db", f.fit));
  std::vector<double> base;
  for (const Win& w : wins) {
    if (w.probe->kind != ProbeKind::kIdle) continue;
    for (const Figure* f : named(w.figures, "etcd_db_total_size_bytes"))
      if (!labelValue(f->labels, "etcd").empty())
        for (double v : samplesOf(*f)) base.push_back(v);
  }
  if (base.empty()) throw FitError("etcd db base: no idle probe window has etcd_db_total_size_bytes{etcd}");
  c.etcdDbBaseBytes = rangeParam(base);

  std::vector<double> fsync;
  for (const Win& w : wins)
    for (const Figure* f : named(w.figures, "etcd_wal_fsync_seconds_mean")) fsync.push_back(*f->value);
  if (fsync.empty()) {
    c.etcdFsyncSeconds = Param::fixed(0);
    c.notes.push_back(
        "etcdFsyncSeconds: not measured (no etcd_wal_fsync_seconds_mean): 0, the unloaded write "
        "latency includes it");
  } else {
    c.etcdFsyncSeconds = rangeParam(fsync);
    c.notes.push_back("etcdFsyncSeconds: mean WAL fsync over the probe windows; the interval is their range");
  }
}

void measureBackground(const std::vector<Win>& wins, Calibration& c) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> rates;
  std::size_t idleWindows = 0;
  for (const Win& w : wins) {
    if (w.probe->kind != ProbeKind::kIdle) continue;
    ++idleWindows;
    for (const Figure* f : named(w.figures, "write_qps")) {
      if (f->labels.empty() || *f->value <= 0) continue;
      rates[{std::string(labelValue(f->labels, "group")), std::string(labelValue(f->labels, "resource")),
             std::string(labelValue(f->labels, "verb"))}]
          .push_back(*f->value);
    }
  }
  if (idleWindows == 0) throw FitError("background writes: no idle probe");
  for (const auto& [key, v] : rates) {
    double s = 0;
    for (double x : v) s += x;
    const auto& [group, resource, verb] = key;
    c.background.push_back({resource, group, verb, s / static_cast<double>(idleWindows)});
  }
}

void measureRssOverHeap(const std::vector<Win>& wins, Calibration& c) {
  std::vector<double> ratios;
  for (const Win& w : wins)
    for (const Figure* rss : named(w.figures, "apiserver_rss_bytes")) {
      std::string_view api = labelValue(rss->labels, "apiserver");
      if (api.empty()) continue;
      const Figure* heap = exact(w.figures, "apiserver_heap_inuse_bytes", rss->labels);
      if (heap && heap->value && *heap->value > 0) ratios.push_back(*rss->value / *heap->value);
    }
  if (ratios.empty()) {
    c.notes.push_back("rssOverHeap: not measured (no apiserver_rss_bytes beside apiserver_heap_inuse_bytes); " +
                      numberText(c.rssOverHeap) + " assumed");
    return;
  }
  c.rssOverHeap = rangeParam(ratios).value;
}

// The placement every probe ran with (they must agree): each set of CPUs with the
// roles pinned to it, its cores the CPUs it lists. Empty when nothing was pinned.
std::vector<CpuSet> placementOf(const std::vector<ProbeResult>& probes) {
  const auto& first = probes.front().result.environment.placement;
  for (const ProbeResult& p : probes)
    if (p.result.environment.placement != first)
      throw FitError("the probes ran with different placements (" + probes.front().name + " and " + p.name +
                     "): a calibration describes one host");
  std::map<std::string, CpuSet> sets;
  for (const auto& [role, cpus] : first) {
    CpuSet& set = sets[cpus];
    set.cpus = cpus;
    set.roles.push_back(role);
  }
  std::vector<CpuSet> out;
  for (auto& [cpus, set] : sets) {
    // The probes' machine may have had more CPUs than this one: any CPU number is one.
    set.cores = static_cast<double>(controlplane::parseCpuList(cpus, std::numeric_limits<int>::max(),
                                                               "probe " + probes.front().name, "environment.placement")
                                        .size());
    out.push_back(std::move(set));
  }
  return out;
}

// The plane's own watchers per resource, on the idle plane at the end of its window:
// apiserver_longrunning_requests{verb="WATCH",scope="cluster"} summed over replicas.
// Watches of one namespace or one object (the apiserver's own on kube-system, a
// component's on its leader-election Lease) see only their own changes, not a
// workload's: they are left out.
void measurePlaneWatchers(const std::vector<Win>& wins, Calibration& c) {
  for (const Win& w : wins) {
    if (w.probe->kind != ProbeKind::kIdle) continue;
    for (const Figure& f : w.figures) {
      if (f.name != "apiserver_longrunning_requests" || !f.value) continue;
      if (labelValue(f.labels, "verb") != "WATCH" || labelValue(f.labels, "scope") != "cluster") continue;
      const std::string group(labelValue(f.labels, "group")), resource(labelValue(f.labels, "resource"));
      c.planeWatchers[group.empty() ? resource : resource + "." + group] += *f.value;
    }
    break;  // one idle window is the plane's own
  }
  if (c.planeWatchers.empty())
    c.notes.push_back(
        "planeWatchers: the idle probe has no apiserver_longrunning_requests{verb=\"WATCH\"}: the plane's "
        "own informers get no events in the model");
  else
    c.notes.push_back(
        "planeWatchers: the idle plane's cluster-wide watches per resource at the end of its window "
        "(apiserver_longrunning_requests{verb=\"WATCH\",scope=\"cluster\"})");
  // On a custom resource: its cluster-wide watches less the probe's own informers on it
  // (a dormant workload's watchers.perKind, on each of its kinds, groups
  // op<k>.dormant.cpscale.io), in every window that has one.
  std::vector<double> perCustom;
  for (const Win& w : wins) {
    const json& workloads = w.probe->result.scenario.effectiveConfig.value("workloads", json::array());
    double own = -1;
    for (const json& wl : workloads)
      if (wl.value("kind", std::string()) == "dormant" && wl.value("crdKinds", 0) > 0)
        own = wl.value("/watchers/perKind"_json_pointer, 0.0);
    if (own < 0) continue;
    for (const Figure& f : w.figures) {
      if (f.name != "apiserver_longrunning_requests" || !f.value) continue;
      if (labelValue(f.labels, "verb") != "WATCH" || labelValue(f.labels, "scope") != "cluster") continue;
      if (!labelValue(f.labels, "group").ends_with(".dormant.cpscale.io")) continue;
      perCustom.push_back(*f.value - own);
    }
  }
  if (perCustom.empty()) {
    c.planeWatchersPerCustomResource = 1;
    c.notes.push_back(
        "planeWatchersPerCustomResource: no probe served a custom resource with its watches counted: 1 "
        "assumed (the controller-manager's garbage collector and quota monitor share one metadata "
        "informer per resource)");
  } else {
    std::sort(perCustom.begin(), perCustom.end());
    c.planeWatchersPerCustomResource = std::max(0.0, perCustom[perCustom.size() / 2]);
    c.notes.push_back("planeWatchersPerCustomResource: the median over " + std::to_string(perCustom.size()) +
                      " windows of a dormant kind's cluster-wide watches less the probe's own informers on it (range " +
                      numberText(perCustom.front()) + " to " + numberText(perCustom.back()) + ")");
  }
}

}  // namespace

Calibration fitCalibration(const std::vector<ProbeResult>& probes, const CalibrationFitOptions& options) {
  std::set<ProbeKind> kinds;
  for (const ProbeResult& p : probes) kinds.insert(p.kind);
  for (ProbeKind k : {ProbeKind::kIdle, ProbeKind::kNode, ProbeKind::kChurn, ProbeKind::kState})
    if (!kinds.contains(k))
      throw FitError("no " + std::string(toString(k)) + " probe among the " + std::to_string(probes.size()) + " given");
  std::vector<Win> wins;
  for (const ProbeResult& p : probes) {
    if (p.result.status != result::RunStatus::kCompleted)
      throw FitError("probe " + p.name + " did not complete (" + std::string(result::toString(p.result.status)) +
                     (p.result.statusDetail.empty() ? "" : ": " + p.result.statusDetail) + ")");
    for (Win& w : windowsOf(p)) wins.push_back(std::move(w));
  }

  Calibration c;
  for (const ProbeResult& p : probes) {
    const result::RunResult& r = p.result;
    if (c.host.empty()) c.host = r.environment.host;
    if (c.cpus == 0) c.cpus = r.environment.cpus;
    if (c.kubernetesVersion.empty()) c.kubernetesVersion = r.target.kubernetesVersion;
    if (c.etcdVersion.empty()) c.etcdVersion = r.target.etcdVersion;
    if (c.profile.empty()) c.profile = r.profile.name;
    c.measuredAt = std::max(c.measuredAt, r.environment.endedAt);
    c.sharedHost = c.sharedHost && r.target.kind == "local";
  }
  if (c.cpus > 0)
    c.hostCores = c.apiserverCores = c.etcdCores = c.cpus;
  else
    c.notes.push_back("the results do not record the host's CPUs: hostCores " + numberText(c.hostCores) + " assumed");
  c.placement = placementOf(probes);
  if (!c.placement.empty()) {
    c.sharedHost = false;
    for (const CpuSet& set : c.placement) {
      if (std::find(set.roles.begin(), set.roles.end(), "kube-apiserver") != set.roles.end())
        c.apiserverCores = set.cores;
      if (std::find(set.roles.begin(), set.roles.end(), "etcd") != set.roles.end()) c.etcdCores = set.cores;
    }
  }
  measurePlaneWatchers(wins, c);

  fitApiserverCpu(wins, options, c);
  fitEtcdCpu(wins, options, c);
  fitGeneratorCpu(probes, options, c);
  c.latencyWrite = unloadedLatency(wins, isWrite, "Write", c.notes);
  c.latencyRead = unloadedLatency(wins, isRead, "Read", c.notes);
  fitHeap(probes, wins, options, c);
  fitEtcdStorage(wins, options, c);
  measureBackground(wins, c);
  measureRssOverHeap(wins, c);
  return c;
}

// ---- summary ----

std::string renderCalibrationSummary(const Calibration& c) {
  std::ostringstream os;
  char line[256];
  os << "Calibration of " << (c.profile.empty() ? "?" : c.profile) << " on " << calibrationMachine(c) << ", Kubernetes "
     << c.kubernetesVersion << ", etcd " << c.etcdVersion << ", measured " << c.measuredAt << "\n";
  if (c.placement.empty()) {
    os << (c.sharedHost ? "Host: every process on the same " + numberText(c.hostCores) + " cores (nothing pinned)\n"
                        : "Host: each member on cores of its own\n");
  } else {
    os << "Host, as the probes were pinned:\n";
    for (const CpuSet& set : c.placement) {
      std::string roles;
      for (const auto& r : set.roles) roles += (roles.empty() ? "" : ", ") + r;
      os << "  CPU " << set.cpus << " (" << numberText(set.cores) << " core" << (set.cores == 1 ? "" : "s")
         << "): " << roles << "\n";
    }
  }
  os << "\n";
  std::snprintf(line, sizeof line, "%-26s %12s  %-25s %s\n", "parameter", "value", "95% interval", "unit");
  os << line;
  for (const ParamField& f : calibrationParams()) {
    const Param& p = c.*f.member;
    std::string interval =
        p.low == p.value && p.high == p.value ? "(set)" : "[" + numberText(p.low) + ", " + numberText(p.high) + "]";
    std::snprintf(line, sizeof line, "%-26s %12s  %-25s %s\n", f.name, numberText(p.value).c_str(), interval.c_str(),
                  f.unit);
    os << line;
  }
  std::snprintf(line, sizeof line, "%-26s %12s  %-25s %s\n", "rssOverHeap", numberText(c.rssOverHeap).c_str(), "",
                "ratio");
  os << line;
  for (const auto& [resource, bytes] : c.heapBytesPerObjectByResource) {
    std::snprintf(line, sizeof line, "%-26s %12s  %-25s %s\n", ("heap " + resource).c_str(), numberText(bytes).c_str(),
                  "", "bytes/object");
    os << line;
  }
  if (!c.planeWatchers.empty()) {
    os << "\nthe plane's own watchers (each change of the resource is sent to each)\n";
    for (const auto& [resource, n] : c.planeWatchers) os << "  " << resource << ": " << numberText(n) << "\n";
    os << "  each custom resource: " << numberText(c.planeWatchersPerCustomResource) << "\n";
  }
  os << "\nfit                      n    k   R²      residual std\n";
  for (const FitQuality& f : c.fits) {
    std::snprintf(line, sizeof line, "%-22s %4zu %4zu   %-7.4f %s\n", f.name.c_str(), f.observations, f.parameters,
                  f.r2, numberText(f.residualStd).c_str());
    os << line;
  }
  if (!c.background.empty()) {
    os << "\nbackground writes (idle plane)\n";
    for (const BackgroundRate& b : c.background)
      os << "  " << b.verb << " " << (b.group.empty() ? "" : b.group + "/") << b.resource << ": "
         << numberText(b.perSecond) << "/s\n";
  }
  if (!c.notes.empty()) {
    os << "\nnotes\n";
    for (const std::string& n : c.notes) os << "  - " << n << "\n";
  }
  return os.str();
}

}  // namespace cpscale::calibration
