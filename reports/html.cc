#include "reports/html.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "reports/capacity_report.h"
#include "reports/format.h"
#include "reports/headline.h"
#include "reports/summary.h"
#include "reports/svg.h"

namespace cpscale::reports {

using metrics::Figure;
using metrics::labelValue;
using svg::escape;

std::string latencyChartId(std::string_view resource, std::string_view verb) {
  std::string id = std::string(kChartLatency) + "-";
  for (char c : std::string(resource) + "-" + std::string(verb))
    id += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                                                      : '-';
  return id;
}

std::string capacityGateChartId(std::size_t n) { return "chart-capacity-gate-" + std::to_string(n); }

namespace {

// Layers beyond this are summed into "other": a legend of forty resources helps nobody.
constexpr std::size_t kMaxLayers = 8;
constexpr std::size_t kMaxLatencyCharts = 12;

svg::Series toSeries(std::string name, const metrics::TimeSeries& ts) {
  svg::Series s{std::move(name), {}, {}};
  for (std::size_t i = 0; i < ts.size(); ++i) {
    s.x.push_back(metrics::seconds(ts.times[i].time_since_epoch()));
    s.y.push_back(ts.values[i]);
  }
  return s;
}

// The figure's series over the whole run: a steady-window figure whose twin measured
// over setup has the earlier points, so the chart shows the ramp (faded) before it.
svg::Series runSeries(std::string name, const result::RunResult& r, const Figure& f) {
  svg::Series s = toSeries(std::move(name), f.overTime);
  const Figure* setup = findExact(r.figures, f.name, f.labels, metrics::Window::kSetup);
  if (!setup || setup->overTime.empty()) return s;
  svg::Series early = toSeries("", setup->overTime);
  double first = s.x.empty() ? 1e300 : s.x.front();
  svg::Series out{s.name, {}, {}};
  for (std::size_t i = 0; i < early.x.size() && early.x[i] < first; ++i) {
    out.x.push_back(early.x[i]);
    out.y.push_back(early.y[i]);
  }
  out.x.insert(out.x.end(), s.x.begin(), s.x.end());
  out.y.insert(out.y.end(), s.y.begin(), s.y.end());
  return out;
}

// Charts draw the steady (or whole-run) figures; a setup twin only lends its points.
bool charted(const Figure& f) { return f.window != metrics::Window::kSetup && f.available() && !f.overTime.empty(); }

// Every time chart carries the run's phases and incidents.
svg::TimeChart onTimeline(svg::TimeChart c, const result::RunResult& r) {
  for (const result::Phase& p : r.phases) c.phases.push_back({p.name, p.startSeconds, p.endSeconds, p.complete});
  for (const result::Incident& i : r.incidents) c.incidents.push_back({incidentLine(i), i.atSeconds, i.untilSeconds});
  return c;
}

// Sum of series on the union of their times, each contributing its latest value.
svg::Series sum(std::string name, const std::vector<svg::Series>& parts) {
  std::set<double> times;
  for (const auto& p : parts) times.insert(p.x.begin(), p.x.end());
  svg::Series out{std::move(name), {}, {}};
  for (double t : times) {
    double acc = 0;
    for (const auto& p : parts) {
      auto it = std::upper_bound(p.x.begin(), p.x.end(), t);
      if (it != p.x.begin()) acc += p.y[static_cast<std::size_t>(it - p.x.begin()) - 1];
    }
    out.x.push_back(t);
    out.y.push_back(acc);
  }
  return out;
}

double mean(const svg::Series& s) {
  double acc = 0;
  for (double v : s.y) acc += v;
  return s.y.empty() ? 0 : acc / static_cast<double>(s.y.size());
}

// Keeps the largest layers (by mean) and sums the rest into "other (N)".
std::vector<svg::Series> largestLayers(std::vector<svg::Series> layers) {
  std::stable_sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) { return mean(a) > mean(b); });
  if (layers.size() <= kMaxLayers) return layers;
  std::vector<svg::Series> rest(layers.begin() + kMaxLayers - 1, layers.end());
  layers.resize(kMaxLayers - 1);
  layers.push_back(sum("other (" + std::to_string(rest.size()) + ")", rest));
  return layers;
}

// Why a family has nothing to draw: the unavailable figure's own reason when there is
// one, otherwise that the result holds no such series.
std::string whyNot(const std::vector<Figure>& figures, std::string_view name, std::string_view what) {
  for (const Figure& f : figures)
    if (f.name == name && !f.available()) return f.unavailableReason;
  return "the result has no " + std::string(what) + " over time (" + std::string(name) + ")";
}

std::string resourceName(const Figure& f, const std::set<std::string>& ambiguous) {
  std::string r(labelValue(f.labels, "resource"));
  std::string g(labelValue(f.labels, "group"));
  return ambiguous.count(r) && !g.empty() ? r + "." + g : r;
}

// Resource names that exist in more than one API group need their group to be told apart.
std::set<std::string> ambiguousResources(const std::vector<Figure>& figures, std::string_view name) {
  std::map<std::string, std::set<std::string>> groups;
  for (const Figure& f : figures)
    if (f.name == name)
      groups[std::string(labelValue(f.labels, "resource"))].insert(std::string(labelValue(f.labels, "group")));
  std::set<std::string> out;
  for (auto& [r, gs] : groups)
    if (gs.size() > 1) out.insert(r);
  return out;
}

std::string writeQpsChart(const result::RunResult& r) {
  std::string title = "Write QPS by resource (stacked, all apiservers)";
  auto ambiguous = ambiguousResources(r.figures, "write_qps");
  std::map<std::string, std::vector<svg::Series>> perResource;  // summed over verbs
  std::vector<std::string> order;
  for (const Figure& f : r.figures) {
    if (f.name != "write_qps" || labelValue(f.labels, "resource").empty() || !charted(f)) continue;
    std::string name = resourceName(f, ambiguous);
    if (!perResource.count(name)) order.push_back(name);
    perResource[name].push_back(runSeries(name, r, f));
  }
  if (order.empty())
    return svg::placeholder(std::string(kChartWriteQps), title, whyNot(r.figures, "write_qps", "write rates"));
  std::vector<svg::Series> layers;
  for (const auto& name : order) {
    // A resource nobody wrote at any time would be a legend entry for a flat line.
    svg::Series total = sum(name, perResource[name]);
    if (std::any_of(total.y.begin(), total.y.end(), [](double v) { return v != 0; }))
      layers.push_back(std::move(total));
  }
  return svg::timeChart(
      onTimeline({std::string(kChartWriteQps), title, "1/s", largestLayers(std::move(layers)), true, {}, {}, {}}, r));
}

std::string leaseShareChart(const result::RunResult& r) {
  std::string title = "Lease share of writes";
  std::vector<svg::Series> lines;
  for (const Figure& f : r.figures) {
    if (!charted(f) || !f.labels.empty()) continue;
    if (f.name == "lease_write_share") lines.push_back(runSeries("apiserver writes", r, f));
    if (f.name == "etcd_lease_proposal_share") lines.push_back(runSeries("etcd proposals", r, f));
  }
  if (lines.empty())
    return svg::placeholder(std::string(kChartLeaseShare), title,
                            whyNot(r.figures, "lease_write_share", "lease share"));
  return svg::timeChart(
      onTimeline({std::string(kChartLeaseShare), title, "ratio", std::move(lines), false, 1.0, {}, {}}, r));
}

std::string heapChart(const result::RunResult& r) {
  std::string title = "Heap in use per kube-apiserver";
  std::vector<svg::Series> lines;
  for (const Figure& f : r.figures)
    if (f.name == "apiserver_heap_inuse_bytes" && charted(f))
      lines.push_back(runSeries(std::string(labelValue(f.labels, "apiserver")), r, f));
  if (lines.empty())
    return svg::placeholder(std::string(kChartHeap), title,
                            whyNot(r.figures, "apiserver_heap_inuse_bytes", "apiserver heap"));
  return svg::timeChart(onTimeline({std::string(kChartHeap), title, "bytes", std::move(lines), false, {}, {}, {}}, r));
}

std::string objectsChart(const result::RunResult& r) {
  std::string first;
  for (const Figure& f : r.figures)
    if (f.name == "apiserver_objects" && charted(f)) {
      first = std::string(labelValue(f.labels, "apiserver"));
      break;
    }
  std::string title =
      "Objects by resource (stacked" + (first.empty() ? std::string() : ", as " + first + " counts them") + ")";
  auto ambiguous = ambiguousResources(r.figures, "apiserver_objects");
  std::vector<svg::Series> layers;
  for (const Figure& f : r.figures)
    if (f.name == "apiserver_objects" && charted(f) && labelValue(f.labels, "apiserver") == first)
      layers.push_back(runSeries(resourceName(f, ambiguous), r, f));
  if (layers.empty())
    return svg::placeholder(std::string(kChartObjects), "Objects by resource",
                            whyNot(r.figures, "apiserver_objects", "object counts"));
  return svg::timeChart(onTimeline(
      {std::string(kChartObjects), title, "objects", largestLayers(std::move(layers)), true, {}, {}, {}}, r));
}

std::string latencyCharts(const result::RunResult& r) {
  static constexpr std::array<const char*, 4> kQuantiles{"p50", "p90", "p99", "p99.9"};
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Figure& f : r.figures) {
    if (!f.name.starts_with("client_latency_") && !f.name.starts_with("server_latency_")) continue;
    if (f.window == metrics::Window::kSetup) continue;
    std::pair<std::string, std::string> rv{std::string(labelValue(f.labels, "resource")),
                                           std::string(labelValue(f.labels, "verb"))};
    if (rv.first.empty() || std::find(pairs.begin(), pairs.end(), rv) != pairs.end()) continue;
    pairs.push_back(rv);
  }
  if (pairs.empty())
    return svg::placeholder(std::string(kChartLatency), "Latency percentiles",
                            whyNot(r.figures, "server_latency_p99", "latency figures"));
  std::ostringstream out;
  std::size_t shown = std::min(pairs.size(), kMaxLatencyCharts);
  for (std::size_t p = 0; p < shown; ++p) {
    const auto& [resource, verb] = pairs[p];
    svg::BarChart c{latencyChartId(resource, verb),
                    verb + " " + resource,
                    "s",
                    {"client (from schedule)", "client (from send)", "server"},
                    {},
                    {}};
    bool any = false;
    std::vector<std::string> why;  // distinct reasons of the unavailable figures
    for (const char* q : kQuantiles) {
      c.groupNames.push_back(q);
      std::vector<std::optional<double>> row(3);
      for (const Figure& f : r.figures) {
        if (labelValue(f.labels, "resource") != resource || labelValue(f.labels, "verb") != verb) continue;
        if (f.window == metrics::Window::kSetup) continue;
        if (f.name == std::string("client_latency_") + q)
          row[labelValue(f.labels, "measured_from") == "sent" ? 1 : 0] = f.value;
        else if (f.name == std::string("server_latency_") + q)
          row[2] = f.value;
        else
          continue;
        any = any || f.available();
        if (!f.available() && std::find(why.begin(), why.end(), f.unavailableReason) == why.end())
          why.push_back(f.unavailableReason);
      }
      c.values.push_back(row);
    }
    std::string reason;
    for (const auto& w : why) reason += (reason.empty() ? "" : "; ") + w;
    // A chart of nothing but "n/a" marks says less than one sentence saying why.
    out << "<figure class=\"small\">"
        << (any ? svg::barChart(c)
                : svg::placeholder(c.id, c.title, reason.empty() ? "no latency percentiles were measured" : reason,
                                   c.width, c.height))
        << "</figure>\n";
  }
  if (pairs.size() > shown)
    out << "<p class=\"note\">" << pairs.size() - shown
        << " more (resource, verb) pairs are listed under All figures.</p>\n";
  return out.str();
}

// ---- page pieces ----

std::string axisCharts(const result::RunResult& r, Axis axis) {
  switch (axis) {
    case Axis::kNode: return leaseShareChart(r);
    case Axis::kChurn: return writeQpsChart(r);
    case Axis::kState: return heapChart(r) + objectsChart(r);
  }
  return "";
}

// Phases and incidents first: whether the run's figures can be trusted at all.
std::string timelineSection(const result::RunResult& r) {
  if (r.phases.empty() && r.incidents.empty()) return "";
  std::ostringstream out;
  out << "<section id=\"timeline\">\n<h2>Run phases</h2>\n";
  if (!r.phases.empty()) {
    out << "<table class=\"phases\"><thead><tr><th>phase</th><th class=\"num\">start</th><th class=\"num\">end</th>"
           "<th class=\"num\">length</th><th>state</th></tr></thead><tbody>\n";
    for (const result::Phase& p : r.phases) {
      bool ramp = p.name.starts_with("ramp/");
      out << "<tr class=\"phase-" << (ramp ? "ramp" : escape(p.name)) << "\"><td>" << (ramp ? "&#8627; " : "")
          << escape(p.name) << "</td><td class=\"num\">" << escape(formatElapsed(p.startSeconds))
          << "</td><td class=\"num\">" << escape(formatElapsed(p.endSeconds)) << "</td><td class=\"num\">"
          << escape(formatElapsed(p.endSeconds - p.startSeconds)) << "</td><td>"
          << (p.complete
                  ? std::string("complete")
                  : "<span class=\"unavailable\">cut short</span>" +
                        (p.detail.empty() ? std::string() : " <span class=\"why\">(" + escape(p.detail) + ")</span>"))
          << "</td></tr>\n";
    }
    out << "</tbody></table>\n";
  }
  if (r.incidents.empty()) {
    out << "<p class=\"note\">No incidents.</p>\n";
  } else {
    out << "<h3>Incidents</h3>\n<ul class=\"incidents\">\n";
    for (const result::Incident& i : r.incidents)
      out << "<li class=\"incident\">" << escape(incidentLine(i)) << "</li>\n";
    out << "</ul>\n";
  }
  out << "</section>\n";
  return out.str();
}

std::string replicaSection(const result::RunResult& r, const std::vector<std::string>& replicas) {
  std::ostringstream out;
  out << "<section id=\"replicas\">\n<h2>Load per kube-apiserver replica</h2>\n<p class=\"lede\">Steady window: how evenly "
         "the replicas shared the requests, and what each holds in memory.</p>\n"
         "<table class=\"replicas\"><thead><tr><th>apiserver</th>";
  auto columns = replicaColumns(r, replicas);
  for (const auto& [name, title] : columns) out << "<th class=\"num\">" << escape(title) << "</th>";
  out << "</tr></thead><tbody>\n";
  for (const auto& a : replicas) {
    out << "<tr><td>" << escape(a) << "</td>";
    for (const auto& [name, title] : columns) {
      const Figure* f = replicaFigure(r, name, a);
      if (!f)
        out << "<td class=\"num muted\">-</td>";
      else if (!f->available())
        out << "<td class=\"num unavailable\" title=\"" << escape(f->unavailableReason) << "\">unavailable</td>";
      else
        out << "<td class=\"num\">" << escape(formatFigureValue(*f)) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody></table>\n</section>\n";
  return out.str();
}

std::string figureTable(const std::vector<const Figure*>& figures, std::size_t omitted = 0,
                        std::span<const Figure> all = {}) {
  std::ostringstream out;
  out << "<table class=\"figures\"><thead><tr><th>figure</th><th class=\"num\">value</th><th>window</th><th>source</th></tr>"
         "</thead><tbody>\n";
  for (const Figure* f : figures) {
    out << "<tr class=\"window-" << metrics::toString(f->window) << "\"><td><code>" << escape(figureKey(*f))
        << "</code></td>";
    if (f->available()) {
      std::string detail = bytesPerObjectDetail(all, *f);
      out << "<td class=\"num\">" << escape(formatFigureValue(*f))
          << (detail.empty() ? "" : " <span class=\"why\">" + escape(detail) + "</span>") << "</td>";
    } else {
      out << "<td class=\"num unavailable\">unavailable <span class=\"why\">(" << escape(f->unavailableReason)
          << ")</span></td>";
    }
    out << "<td class=\"window\">" << metrics::toString(f->window) << "</td><td><span class=\"src src-"
        << metrics::toString(f->source) << "\">" << metrics::toString(f->source) << "</span></td></tr>\n";
  }
  if (omitted) out << "<tr><td colspan=\"4\" class=\"note\">" << omitted << " more under All figures</td></tr>\n";
  out << "</tbody></table>\n";
  return out.str();
}

std::string controllersSection(const result::RunResult& r, const ControllersHeadline& c) {
  std::ostringstream out;
  out << "<section id=\"controllers\">\n<h2>Controllers</h2>\n<p class=\"lede\">How kube-controller-manager and "
         "kube-scheduler kept up with the load: their workqueues, the node lifecycle controller and the scheduling "
         "queue (steady window).</p>\n";
  if (!c.figures.empty()) out << figureTable(c.figures, 0, r.figures);
  if (!c.workqueues.empty()) {
    out << "<h3>Workqueues that got deepest</h3>\n<table class=\"workqueues\"><thead><tr><th>workqueue</th>"
           "<th>component</th><th class=\"num\">depth max</th><th class=\"num\">adds</th></tr></thead><tbody>\n";
    auto cell = [&](const Figure* f) -> std::string {
      if (!f) return "<td class=\"num muted\">-</td>";
      if (!f->available())
        return "<td class=\"num unavailable\" title=\"" + escape(f->unavailableReason) + "\">unavailable</td>";
      return "<td class=\"num\">" + escape(formatFigureValue(*f)) + "</td>";
    };
    for (const WorkqueueRow& q : c.workqueues)
      out << "<tr><td><code>" << escape(q.queue) << "</code></td><td>" << escape(q.component) << "</td>"
          << cell(q.depthMax) << cell(q.adds) << "</tr>\n";
    if (c.omittedWorkqueues)
      out << "<tr><td colspan=\"4\" class=\"note\">" << c.omittedWorkqueues << " more under All figures</td></tr>\n";
    out << "</tbody></table>\n";
  }
  out << "</section>\n";
  return out.str();
}

// ---- a capacity run ----

// One figure of every step against the knob: `value` reads the step's number (nullopt
// with the reason when it has none) and the point's words.
struct StepValue {
  std::optional<double> y;
  std::string note;  // what the value is, or why there is none
};

// A gate's threshold, drawn on its chart: what "holds" meant.
struct Threshold {
  double value = 0;
  std::string label;
};

std::string capacityChart(const result::CapacitySearch& s, std::string id, std::string title, std::string seriesName,
                          std::string unit, const std::function<StepValue(const result::CapacityStep&)>& value,
                          std::optional<Threshold> threshold = std::nullopt, int width = 430) {
  svg::XyChart c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.xUnit = s.unit;
  c.unit = std::move(unit);
  c.width = width;
  if (threshold) {
    c.threshold = threshold->value;
    c.thresholdLabel = threshold->label;
  }
  if (c.unit == "ratio") c.yMax = 1.0;
  svg::XySeries series{std::move(seriesName), {}};
  std::string why;  // of the first step without a number
  bool any = false;
  for (const result::CapacityStep* st : stepsByValue(s)) {
    StepValue v = value(*st);
    std::string at = formatKnobValue(st->value, s.unit) + ": ";
    std::string verdict = st->held ? "held" : st->generatorLimited ? "generator-limited" : "did not hold";
    if (v.y)
      any = true;
    else if (why.empty())
      why = v.note;
    series.points.push_back({st->value, v.y, st->held, at + v.note + " (" + verdict + ")"});
  }
  if (!any) return svg::placeholder(c.id, c.title, why.empty() ? "no step was measured" : why, width, c.height);
  c.series.push_back(std::move(series));
  if (const result::CapacityStep* b = breakingStep(s))
    c.mark = svg::XyMark{b->value, std::string(breakLabel(*b)),
                         std::string(breakLabel(*b)) + " at " + formatKnobValue(b->value, s.unit) +
                             (b->brokeBy.empty() ? "" : ": " + b->brokeBy)};
  return svg::xyChart(c);
}

StepValue figureValue(const Figure* f, std::string_view key) {
  if (!f) return {std::nullopt, notInStep(key)};
  if (!f->available()) return {std::nullopt, f->unavailableReason};
  return {f->value, formatFigureValue(*f)};
}

std::string capacityCharts(const result::CapacitySearch& s) {
  std::ostringstream out;
  std::vector<std::string> gateKeys;
  // The hold gates, in the order the search judged them; every step was judged by the
  // same list, so a gate is told apart by its text.
  std::vector<metrics::Gate> gates;
  for (const result::CapacityStep& st : s.steps)
    for (const auto& g : st.gates)
      if (std::none_of(gates.begin(), gates.end(), [&](const metrics::Gate& x) { return x.text == g.gate.text; }))
        gates.push_back(g.gate);
  for (std::size_t i = 0; i < gates.size(); ++i) {
    const metrics::Gate& gate = gates[i];
    std::string key = figureKey(gate.figure, gate.selector);
    gateKeys.push_back(key);
    std::string unit;
    for (const result::CapacityStep& st : s.steps)
      if (unit.empty()) unit = unitOf(st.figures, gate.figure);
    std::string threshold = std::string(metrics::toString(gate.op)) + " " +
                            (gate.thresholdText.empty() ? formatValue(gate.threshold, unit) : gate.thresholdText);
    // Gate texts are long: their charts take the page's width.
    out << "<figure class=\"wide\">"
        << capacityChart(
               s, capacityGateChartId(i + 1), "Gate: " + gate.text, key, unit,
               [&](const result::CapacityStep& st) -> StepValue {
                 for (const auto& g : st.gates)
                   if (g.gate.text == gate.text) {
                     if (g.measured) return {g.measured, formatValue(*g.measured, unit)};
                     return {std::nullopt, g.reason.empty() ? "the gate had nothing to compare" : g.reason};
                   }
                 return {std::nullopt, "the step was not judged by this gate"};
               },
               Threshold{gate.threshold, threshold}, 920)
        << "</figure>\n";
  }
  auto covered = [&](const std::string& key) {
    return std::find(gateKeys.begin(), gateKeys.end(), key) != gateKeys.end();
  };
  std::string pk = pressureKey(s.axis);
  std::string pressureUnit, heapUnit = "bytes";
  for (const result::CapacityStep& st : s.steps)
    if (const Figure* f = stepFigures(st, s.axis).pressure; f && pressureUnit.empty()) pressureUnit = f->unit;
  if (!covered(pk))
    out << "<figure class=\"small\">"
        << capacityChart(
               s, std::string(kChartCapacityPressure), "Axis pressure (" + s.axis + ")", pk, pressureUnit,
               [&](const result::CapacityStep& st) { return figureValue(stepFigures(st, s.axis).pressure, pk); })
        << "</figure>\n";
  if (!covered(std::string(kStepWriteQpsKey)))
    out << "<figure class=\"small\">"
        << capacityChart(s, std::string(kChartCapacityWriteQps), "Write QPS, all writes", std::string(kStepWriteQpsKey),
                         "1/s",
                         [&](const result::CapacityStep& st) {
                           return figureValue(stepFigures(st, s.axis).writeQps, kStepWriteQpsKey);
                         })
        << "</figure>\n";
  if (!covered(std::string(kStepHeapKey)))
    out << "<figure class=\"small\">"
        << capacityChart(
               s, std::string(kChartCapacityHeap), "Heap in use, all kube-apiservers", std::string(kStepHeapKey),
               heapUnit,
               [&](const result::CapacityStep& st) { return figureValue(stepFigures(st, s.axis).heap, kStepHeapKey); })
        << "</figure>\n";
  out << "<figure class=\"small\">"
      << capacityChart(s, std::string(kChartCapacityClientP99), "Worst client p99 (from scheduled)",
                       std::string(kStepClientP99Key), "s",
                       [&](const result::CapacityStep& st) {
                         const Figure* f = stepFigures(st, s.axis).clientP99;
                         StepValue v = figureValue(f, kStepClientP99Key);
                         if (v.y) v.note += ", " + verbResource(*f);
                         return v;
                       })
      << "</figure>\n";
  return out.str();
}

std::string capacitySection(const result::RunResult& r) {
  const result::CapacitySearch& s = *r.capacity;
  std::ostringstream out;
  std::vector<const result::CapacityStep*> steps = stepsByValue(s);
  out << "<section id=\"capacity\">\n<h2>Capacity</h2>\n<p class=\"lede\"><code>" << escape(s.knob) << "</code>"
      << (s.unit.empty() ? "" : " (" + escape(s.unit) + ")") << " stepped on the " << escape(s.axis) << " axis";
  if (!steps.empty()) {
    std::size_t bisected = bisectionSteps(s);
    out << ": " << steps.size() << (steps.size() == 1 ? " step" : " steps") << ", each held for a steady window"
        << (bisected ? ", " + std::to_string(bisected) + " of them by bisection" : "");
  }
  out << ".";
  if (s.held)
    out << " The headline, gates and figures below are those of the last step that held ("
        << escape(formatKnobValue(*s.held, s.unit)) << ").";
  out << "</p>\n";
  const char* resultClass = s.limit == result::CapacityLimit::kServer && s.held       ? "ok"
                            : s.limit == result::CapacityLimit::kMaxReached && s.held ? "ok"
                            : s.held                                                  ? "warn"
                                                                                      : "bad";
  out << "<table class=\"kv\"><tbody>\n<tr><th>result</th><td><span id=\"capacity-result\" class=\"pill " << resultClass
      << "\">" << escape(capacityResultText(s)) << "</span></td></tr>\n<tr><th>limit</th><td>" << toString(s.limit)
      << " <span class=\"why\">(" << escape(describeLimit(s.limit)) << ")</span></td></tr>\n";
  if (!s.brokeBy.empty()) out << "<tr><th>broke by</th><td><code>" << escape(s.brokeBy) << "</code></td></tr>\n";
  if (!s.detail.empty()) out << "<tr><th>detail</th><td>" << escape(s.detail) << "</td></tr>\n";
  out << "</tbody></table>\n";
  if (steps.empty()) return out.str() + "<p class=\"note\">No step was measured.</p>\n</section>\n";

  auto cell = [](const Figure* f, std::string_view key, std::string extra = "") {
    if (!f)
      return "<td class=\"num unavailable\">unavailable <span class=\"why\">(" + escape(notInStep(key)) +
             ")</span></td>";
    if (!f->available())
      return "<td class=\"num unavailable\">unavailable <span class=\"why\">(" + escape(f->unavailableReason) +
             ")</span></td>";
    return "<td class=\"num\">" + escape(formatFigureValue(*f)) +
           (extra.empty() ? "" : " <span class=\"why\">" + escape(extra) + "</span>") + "</td>";
  };
  const result::CapacityStep* broke = breakingStep(s);
  out << "<table class=\"capacity-steps\"><thead><tr><th class=\"num\">" << escape(s.unit.empty() ? "value" : s.unit)
      << "</th><th>held</th><th class=\"num\" title=\"" << escape(pressureKey(s.axis))
      << "\">pressure</th><th class=\"num\" title=\"write_qps\">writes</th><th class=\"num\" "
         "title=\"lease_write_share\">lease share</th><th class=\"num\" title=\""
      << escape(kStepClientP99Key) << "\">client p99</th><th class=\"num\" title=\"" << escape(kStepHeapKey)
      << "\">heap</th><th>broke by</th></tr></thead><tbody>\n";
  for (const result::CapacityStep* st : steps) {
    StepFigures f = stepFigures(*st, s.axis);
    std::string cls = st->held ? "held" : st->generatorLimited ? "generator-limited" : "not-held";
    if (st == broke) cls += " break";
    out << "<tr class=\"" << cls << "\"><td class=\"num\">" << escape(formatKnobValue(st->value, ""))
        << "</td><td class=\"" << (st->held ? "verdict-pass" : "verdict-fail") << "\">" << stepHeldText(*st)
        << (st == broke ? " <span class=\"break-label\">&#8592; " + escape(breakLabel(*st)) + "</span>" : "") << "</td>"
        << cell(f.pressure, pressureKey(s.axis)) << cell(f.writeQps, kStepWriteQpsKey)
        << cell(f.leaseShare, kStepLeaseShareKey)
        << cell(f.clientP99, kStepClientP99Key, f.clientP99 ? verbResource(*f.clientP99) : "")
        << cell(f.heap, kStepHeapKey) << "<td class=\"broke-by\">"
        << (st->held ? std::string()
                     : "<span class=\"why\">" +
                           escape(st->brokeBy.empty() ? "the step did not hold and recorded no reason" : st->brokeBy) +
                           "</span>")
        << "</td></tr>\n";
  }
  out << "</tbody></table>\n<p class=\"legend-line\">pressure: <code>" << escape(pressureKey(s.axis))
      << "</code>; writes: <code>" << kStepWriteQpsKey << "</code>; lease share: <code>" << kStepLeaseShareKey
      << "</code>; client p99: the worst <code>" << kStepClientP99Key
      << "</code> of any verb and resource; heap: <code>" << kStepHeapKey << "</code>.</p>\n<div class=\"charts\">\n"
      << capacityCharts(s) << "</div>\n</section>\n";
  return out.str();
}

std::string kv(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::ostringstream out;
  out << "<table class=\"kv\"><tbody>\n";
  for (const auto& [k, v] : rows)
    out << "<tr><th>" << escape(k) << "</th><td>" << (v.empty() ? "<span class=\"muted\">-</span>" : escape(v))
        << "</td></tr>\n";
  out << "</tbody></table>\n";
  return out.str();
}

std::string card(const std::vector<Figure>& figures, std::string_view name, std::string_view label) {
  // Only the unlabelled figure is a run-wide total, and the card shows the steady window.
  const Figure* f = findExact(figures, name, {});
  if (!f) f = findExact(figures, name, {}, metrics::Window::kSetup);
  std::ostringstream out;
  out << "<div class=\"card\"><div class=\"card-label\">" << escape(label) << "</div>";
  if (f && f->available())
    out << "<div class=\"card-value\">" << escape(formatFigureValue(*f)) << "</div>";
  else
    out << "<div class=\"card-value unavailable\" title=\"" << escape(f ? f->unavailableReason : "not in the result")
        << "\">unavailable</div>";
  out << "</div>";
  return out.str();
}

constexpr const char* kCss = R"(
:root{--ink:#1d2330;--muted:#6b7280;--line:#e5e7eb;--bg:#f7f8fa;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:32px 28px 64px}
header h1{font-size:26px;margin:0 0 4px;letter-spacing:-.01em}
header .sub{color:var(--muted);margin:0 0 14px}
.pill{display:inline-block;padding:1px 10px;border-radius:999px;font-size:12px;font-weight:600;vertical-align:middle;border:1px solid}
.pill.ok{color:var(--ok);border-color:#a6dcb4;background:#eefbf1}
.pill.bad{color:var(--bad);border-color:#f3b4b9;background:#fff0f1}
.pill.warn{color:var(--warn);border-color:#e8d08a;background:#fff8e1}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:12px;margin:20px 0 8px}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 14px}
.card-label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card-value{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:18px 22px;margin:18px 0}
section h2{font-size:18px;margin:0 0 2px}
section p.lede{color:var(--muted);margin:0 0 12px}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid var(--line);vertical-align:top}
thead th{font-size:12px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.04em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv th{width:220px;color:var(--muted);font-weight:500}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.unavailable{color:var(--warn)}
.why{color:var(--muted);font-size:12px;white-space:normal}
.muted,.note{color:var(--muted)}
.src{font-size:12px;color:var(--muted)}
.verdict-pass{color:var(--ok);font-weight:600}.verdict-fail{color:var(--bad);font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:10px 24px;margin:8px 0 4px}
figure{margin:0}
section h3{font-size:14px;margin:12px 0 4px}
tr.window-setup td,tr.phase-ramp td{color:var(--muted)}
ul.incidents{margin:4px 0;padding-left:20px}li.incident{color:var(--bad)}
svg.chart text.phase-label{font-size:11px;font-weight:600;fill:#4b5563}
svg.chart{max-width:100%;height:auto;overflow:visible}
svg.chart text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;font-size:11px;fill:#4b5563}
svg.chart text.title{font-size:13px;font-weight:600;fill:var(--ink)}
svg.chart text.legend{font-size:11.5px;fill:#374151}
svg.chart text.na{font-size:10px;fill:#9ca3af}
svg.chart .grid{stroke:#eceef1;stroke-width:1}
svg.chart .axis{stroke:#9ca3af;stroke-width:1}
svg.chart rect.placeholder{fill:#fafafa;stroke:#d1d5db;stroke-dasharray:6 4}
svg.chart text.placeholder-head{font-size:14px;font-weight:600;fill:var(--warn)}
svg.chart text.placeholder-reason{font-size:12px;fill:#6b7280}
details summary{cursor:pointer;color:var(--muted);margin:6px 0}
pre{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:10px;overflow:auto;font-size:12px}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}
table.capacity-steps tr.not-held td,table.capacity-steps tr.generator-limited td{background:#fff8f8}
table.validation tr.bad td{background:#fff8f8;color:var(--bad)}
.break-label{color:var(--bad);font-weight:600;white-space:nowrap}
table.capacity-steps td.broke-by{overflow-wrap:anywhere;min-width:12em}
p.legend-line{color:var(--muted);font-size:12px;margin:0 0 8px}
figure.wide{flex-basis:100%}
svg.chart text.break-label{font-size:11px;font-weight:600;fill:var(--bad)}
svg.chart text.threshold-label{font-size:11px;fill:var(--warn)}
@media print{body{background:#fff}section{break-inside:avoid}}
)";

// The document up to its <main>: the title, and the style inline.
std::string pageHead(const std::string& title) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing may be fetched: the page must render the same offline, years later.
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
      << "<title>cpscale: " << escape(title) << "</title>\n<style>" << kCss << "</style>\n</head>\n<body>\n<main>\n";
  return out.str();
}

// The page's header: the run, its status and gates, the model's line and four cards.
std::string headerSection(const result::RunResult& r, const std::string& title) {
  std::size_t passed = 0;
  for (const auto& g : r.gates) passed += g.passed;
  const char* statusClass = r.status == result::RunStatus::kCompleted     ? "ok"
                            : r.status == result::RunStatus::kInterrupted ? "warn"
                                                                          : "bad";
  std::ostringstream out;
  out << "<header>\n<h1>" << escape(title) << "</h1>\n<p class=\"sub\">run <code>" << escape(r.runId) << "</code> · "
      << result::targetKindText(r.target.kind) << (r.target.server.empty() ? "" : " " + escape(r.target.server))
      << " · measured " << escape(formatElapsed(r.measuredSeconds))
      << (r.environment.startedAt.empty() ? "" : " from " + escape(r.environment.startedAt)) << "</p>\n";
  out << "<span id=\"status\" class=\"pill " << statusClass << "\">" << toString(r.status) << "</span> ";
  if (!r.gates.empty())
    out << "<span class=\"pill " << (passed == r.gates.size() ? "ok" : "bad") << "\">" << passed << " of "
        << r.gates.size() << " gates passed</span>";
  if (!r.statusDetail.empty()) out << " <span class=\"muted\">" << escape(r.statusDetail) << "</span>";
  if (std::string m = modelLine(r); !m.empty()) out << "\n<p class=\"note\">" << escape(m) << "</p>";
  out << "\n<div class=\"cards\">" << card(r.figures, "write_qps", "write QPS")
      << card(r.figures, "lease_write_share", "lease share of writes")
      << card(r.figures, "apiserver_heap_inuse_bytes_all_replicas", "heap, all apiservers")
      << card(r.figures, "bytes_per_object_all_replicas", "bytes per object") << "</div>\n</header>\n";
  return out.str();
}

// The headline's sections: all writes, one per axis that ran, the replicas, the
// controllers, setup, and the charts of the axes that did not run.
std::string headlineSections(const result::RunResult& r) {
  std::ostringstream out;
  Headline h = headline(r);
  if (!h.writes.empty())
    out << "<section id=\"writes\" class=\"headline\">\n<h2>All writes</h2>\n<p class=\"lede\">Writes that reached storage "
           "and writes the apiserver refused, over every workload (steady window).</p>\n"
        << figureTable(h.writes, 0, r.figures) << "</section>\n";
  std::vector<Axis> shown;
  for (const AxisHeadline& a : h.axes) {
    shown.push_back(a.axis);
    // The node fleet's own figures cover the whole run: the lede must not claim otherwise.
    bool wholeRun = std::any_of(a.figures.figures.begin(), a.figures.figures.end(),
                                [](const Figure* f) { return f->window == metrics::Window::kRun; });
    out << "<section id=\"axis-" << toString(a.axis) << "\" class=\"axis\">\n<h2>" << toString(a.axis)
        << "</h2>\n<p class=\"lede\">" << escape(describe(a.axis))
        << (wholeRun ? " (steady window; the fleet's own figures over the whole run)" : " (steady window)")
        << "</p>\n<div class=\"charts\">\n"
        << axisCharts(r, a.axis) << "</div>\n";
    if (a.figures.figures.empty())
      out << "<p class=\"note\">The result has no figures for this axis.</p>\n";
    else
      out << figureTable(a.figures.figures, a.figures.omitted, r.figures);
    out << "</section>\n";
  }
  // Charts of axes that did not run still show what happened over time, below.
  std::string other;
  for (Axis a : kAllAxes)
    if (std::find(shown.begin(), shown.end(), a) == shown.end()) other += axisCharts(r, a);
  if (!h.replicas.empty()) out << replicaSection(r, h.replicas);
  if (!h.controllers.empty()) out << controllersSection(r, h.controllers);
  if (!h.setup.figures.empty()) {
    const result::Phase* setup = result::findPhase(r, "setup");
    out << "<section id=\"setup\">\n<h2>Setup</h2>\n<p class=\"lede\">Registration, population ramps and the bytes-per-object "
           "fit (with its confidence interval and r²)"
        << (setup ? ", " + escape(formatSpan(*setup)) : std::string()) << ": recorded, not the headline.</p>\n"
        << figureTable(h.setup.figures, h.setup.omitted, r.figures) << "</section>\n";
  }
  if (!other.empty())
    out << "<section id=\"other-charts\">\n<h2>Over time</h2>\n<p class=\"lede\">Charts of axes this run did not "
           "exercise.</p>\n<div class=\"charts\">\n"
        << other << "</div>\n</section>\n";
  return out.str();
}

std::string gatesSection(const result::RunResult& r) {
  std::ostringstream out;
  out << "<section id=\"gates\">\n<h2>Gates</h2>\n";
  if (r.gates.empty()) {
    out << "<p class=\"note\">No gates were set.</p>\n";
  } else {
    out << "<table class=\"gates\"><thead><tr><th>gate</th><th class=\"num\">measured</th><th>threshold</th><th>verdict</th>"
           "<th>reason</th></tr></thead><tbody>\n";
    for (const auto& g : r.gates)
      out << "<tr><td><code>" << escape(g.gate.text) << "</code></td><td class=\"num\">"
          << escape(formatGateMeasured(r, g)) << "</td><td><code>" << escape(formatGateThreshold(g))
          << "</code></td><td class=\"" << (g.passed ? "verdict-pass\">pass" : "verdict-fail\">FAIL") << "</td><td>"
          << escape(g.reason) << "</td></tr>\n";
    out << "</tbody></table>\n";
  }
  out << "</section>\n";
  return out.str();
}

std::string generatorSection(const result::RunResult& r) {
  std::ostringstream out;
  out << "<section id=\"generator\">\n<h2>Generator health</h2>\n<p class=\"lede\">Whether cpscale kept its schedule: "
         "when it did not, the figures above describe the generator's limits as much as the control plane's.</p>\n";
  auto health = generatorHealthFigures(r.figures);
  if (health.empty())
    out << "<p class=\"note\">The result has no generator health figures.</p>\n";
  else
    out << figureTable(health);
  out << "</section>\n";
  return out.str();
}

// The calibration's measured error: each figure live and modelled on its machine.
// Empty when the model recorded no validation.
std::string validationTable(const nlohmann::json& model) {
  auto v = model.find("validation");
  if (model.is_null() || v == model.end() || !v->is_array() || v->empty()) return "";
  std::ostringstream out;
  out << "<table class=\"validation\"><caption>The calibration's validation against live runs</caption><thead><tr>"
         "<th>figure</th><th>live</th><th>model</th><th>error</th><th>tolerance</th></tr></thead><tbody>\n";
  for (const auto& e : *v) {
    const double err = e.value("relativeError", 0.0), tol = e.value("tolerance", 0.0);
    out << "<tr" << (err > tol ? " class=\"bad\"" : "") << "><td>" << escape(e.value("figure", std::string()))
        << "</td><td>" << formatGrouped(e.value("live", 0.0)) << "</td><td>" << formatGrouped(e.value("model", 0.0))
        << "</td><td>" << formatValue(err, "ratio") << "</td><td>" << formatValue(tol, "ratio") << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

// What ran where: the run, scenario, profile, target and host, the plane's members,
// the model's validation, the workloads' summaries and the configurations in full.
std::string environmentSection(const result::RunResult& r) {
  std::ostringstream out;
  out << "<section id=\"environment\">\n<h2>Environment and versions</h2>\n"
      << kv({{"run id", r.runId},
             {"shard", result::shardLine(r)},
             {"status", std::string(toString(r.status)) + (r.statusDetail.empty() ? "" : ": " + r.statusDetail)},
             {"exit code", std::to_string(r.exitCode)},
             {"scenario", r.scenario.name + (r.scenario.sourceFile.empty() ? "" : " (" + r.scenario.sourceFile + ")")},
             {"scenario description", r.scenario.description},
             {"profile", r.profile.name + (r.profile.applied ? " (applied to the local plane)" : " (recorded only)")},
             {"profile description", r.profile.description},
             {"target", r.target.kind + (r.target.server.empty() ? "" : " " + r.target.server)},
             {"context", r.target.context},
             {"kubernetes version", r.target.kubernetesVersion},
             {"etcd version", r.target.etcdVersion},
             {"cpscale version", r.environment.cpscaleVersion},
             {"host", r.environment.host},
             {"cpus", r.environment.cpus ? std::to_string(r.environment.cpus) : ""},
             {"memory",
              r.environment.memoryBytes ? formatValue(static_cast<double>(r.environment.memoryBytes), "bytes") : ""},
             {"started", r.environment.startedAt},
             {"ended", r.environment.endedAt},
             {"measured", formatElapsed(r.measuredSeconds)}});
  if (!r.target.members.empty()) {
    out << "<table class=\"members\"><thead><tr><th>member</th><th>role</th><th>url</th><th>version</th><th>serves / talks to</th></tr></thead><tbody>\n";
    for (const auto& m : r.target.members)
      out << "<tr><td>" << escape(m.name) << "</td><td>" << escape(m.role) << "</td><td><code>" << escape(m.url)
          << "</code></td><td>" << escape(m.version) << "</td><td>" << escape(m.serves) << "</td></tr>\n";
    out << "</tbody></table>\n";
  }
  out << validationTable(r.model);
  if (!r.workloads.empty()) {
    out << "<table class=\"workloads\"><thead><tr><th>workload</th><th>name</th><th>summary</th></tr></thead><tbody>\n";
    for (const auto& w : r.workloads)
      out << "<tr><td>" << escape(w.kind) << "</td><td>" << escape(w.name) << "</td><td><code>"
          << escape(w.summary.dump()) << "</code></td></tr>\n";
    out << "</tbody></table>\n";
  }
  out << "<details><summary>Effective scenario configuration</summary><pre>"
      << escape(r.scenario.effectiveConfig.dump(2)) << "</pre></details>\n";
  out << "<details><summary>Profile specification</summary><pre>" << escape(r.profile.spec.dump(2))
      << "</pre></details>\n";
  out << "</section>\n";
  return out.str();
}

}  // namespace

std::string_view reportStyle() { return kCss; }

std::string renderHtml(const result::RunResult& r) {
  const std::string title = r.scenario.name + " on " + r.profile.name;
  std::ostringstream out;
  out << pageHead(title) << headerSection(r, title) << timelineSection(r);
  if (r.capacity) out << capacitySection(r);
  out << headlineSections(r);
  out << "<section id=\"latency\">\n<h2>Latency percentiles</h2>\n<p class=\"lede\">Per resource and verb. The client "
         "measures from the scheduled send time (corrected for coordinated omission) and from the actual send; the "
         "server figure comes from apiserver_request_duration_seconds buckets.</p>\n<div class=\"charts\">\n"
      << latencyCharts(r) << "</div>\n</section>\n";
  out << gatesSection(r) << generatorSection(r) << environmentSection(r);
  out << "<section id=\"all-figures\">\n<h2>All figures</h2>\n<details><summary>" << r.figures.size()
      << " figures</summary>\n";
  out << figureTable(groupedFigures(r.figures), 0, r.figures) << "</details>\n</section>\n";
  out << "<footer>cpscale " << escape(r.environment.cpscaleVersion) << " · result schema " << result::kResultApiVersion
      << "</footer>\n</main>\n</body>\n</html>\n";
  return out.str();
}

}  // namespace cpscale::reports
