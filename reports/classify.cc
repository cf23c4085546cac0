#include "reports/classify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "reports/format.h"
#include "reports/summary.h"
#include "sim/common/error.h"
#include "sim/metrics/axis_pressure.h"
#include "sim/result/json_io.h"

namespace cpscale::reports {

using metrics::Figure;
using metrics::Labels;
using metrics::sortedLabels;
using nlohmann::json;

namespace {

std::string printf1(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// What the pressure is, in words a reader checks against a dashboard.
std::string pressureText(std::string_view axis, double v) {
  if (axis == "node") return formatGrouped(v) + " liveness writes/s";
  if (axis == "churn") return formatGrouped(v) + " churn writes/s";
  return formatGrouped(v) + " resident objects per replica";
}

// An amount of the axis' pressure: "2,990/s", "200,000 objects".
std::string amount(std::string_view axis, double v) { return formatGrouped(v) + (axis == "state" ? " objects" : "/s"); }

std::string axisUnit(std::string_view axis) { return axis == "state" ? "objects" : "1/s"; }

std::string percent(double u) {
  if (std::isinf(u)) return "beyond all";
  if (u == 0) return "0 %";
  if (u >= 0.1) return printf1("%.0f", u * 100) + " %";
  if (u >= 0.001) return printf1("%.1f", u * 100) + " %";
  return "<0.1 %";
}

std::string headroomText(double h) { return printf1("%g", h); }

// Where the search held: "at 30,000 nodes" (the knob when it names no unit).
std::string heldAt(const AxisCapacity& c) {
  if (!c.held) return "";
  return c.knobUnit.empty() ? "at " + c.knob + "=" + formatGrouped(*c.held)
                            : "at " + formatGrouped(*c.held) + " " + c.knobUnit;
}

// Why a search's last held step is only a lower bound.
std::string lowerBoundWhy(const AxisCapacity& c) {
  if (c.note.empty()) return "the search stopped before a step failed";
  return c.note;
}

// "2,990/s at 30,000 nodes", "at least 2,990/s at 30,000 nodes"; with `why`, what makes
// a capacity a lower bound or unknown.
std::string capacityText(const AxisCapacity& c, bool why = true) {
  if (!c.capacity) return why ? "unknown: " + c.note : "unknown";
  if (*c.capacity == 0 && !c.held) return why ? "nothing: " + c.note : "nothing";
  if (c.atLeast)
    return "at least " + amount(c.axis, *c.capacity) + " " + heldAt(c) + (why ? ": " + lowerBoundWhy(c) : "");
  return amount(c.axis, *c.capacity) + " " + heldAt(c);
}

// Axis pressure, and the supporting figures that say what it is made of.
std::string subject(const Figure& p, std::span<const Figure> figures) {
  std::string axis(metrics::labelValue(p.labels, "axis"));
  if (!p.available()) return axis + ": " + figureKey(p) + " is unavailable (" + p.unavailableReason + ")";
  std::string detail;
  if (axis == "churn") {
    const Figure* share = metrics::findFigure(figures, "churn_custom_resource_share");
    const Figure* top = metrics::findFigure(figures, "churn_top_write_qps");
    if (share && share->available()) detail += "; churn_custom_resource_share " + formatValue(*share->value, "ratio");
    if (top && top->available()) {
      std::string group(metrics::labelValue(top->labels, "group"));
      detail += ", the most on " + std::string(metrics::labelValue(top->labels, "resource")) +
                (group.empty() ? "" : "." + group) + " (" + amount("churn", *top->value) + ")";
    }
  } else if (axis == "state") {
    const Figure* all = metrics::findFigure(figures, "resident_objects_all_replicas");
    const Figure* n = metrics::findFigure(figures, "resident_object_replicas");
    if (all && all->available() && n && n->available())
      detail += "; resident_objects_all_replicas " + formatGrouped(*all->value) + " over " + formatGrouped(*n->value) +
                " replica" + (*n->value == 1 ? "" : "s");
  }
  return axis + ": " + pressureText(axis, *p.value) + " (" + figureKey(p) + detail + ")";
}

// The recipe's own name first, then how it is known.
void chooseRecipe(Classification& c, std::span<const Figure> figures, const ClassifyOptions& o) {
  if (!o.recipe.empty()) {
    c.recipe = o.recipe;
    c.recipeFrom = o.recipeFrom.empty() ? "--recipe" : o.recipeFrom;
    return;
  }
  c.recipeGuessed = true;
  const Figure* n = metrics::findFigure(figures, "resident_object_replicas");
  if (n && n->available()) {
    c.recipe = *n->value > 1 ? "classic-ha" : "classic";
    c.recipeFrom = "guessed from " + formatGrouped(*n->value) + " kube-apiserver replica" +
                   (*n->value == 1 ? "" : "s") + "; give --recipe to say";
    return;
  }
  c.recipe = "classic";
  c.recipeFrom = "guessed: the number of kube-apiserver replicas is unknown (" +
                 (n ? n->unavailableReason : std::string("no resident_object_replicas")) + "); give --recipe to say";
}

AxisVerdict judgeAxis(const Classification& c, const CapacityTable& table, std::string_view axis) {
  AxisVerdict v;
  v.axis = axis;
  Labels labels = sortedLabels({{"axis", axis}});
  const Figure* p = metrics::findFigure(c.figures, "axis_pressure", labels);
  v.pressure = p ? *p
                 : Figure::unavailable("axis_pressure", labels, axisUnit(axis), metrics::Source::kApiserver,
                                       "not among the figures");
  if (const AxisCapacity* cap = table.find(c.recipe, axis)) v.capacity = *cap;
  std::string s = subject(v.pressure, c.figures);
  if (!v.pressure.available()) {
    v.reason = s;
  } else if (table.entries.empty()) {
    v.reason = s + "; no capacity table to compare it with";
  } else if (!v.capacity) {
    v.reason = s + "; the capacity table has no " + std::string(axis) + " search for " + c.recipe;
  } else if (!v.capacity->capacity) {
    v.reason = s + "; what " + c.recipe + " held is unknown: " + v.capacity->note;
  } else if (*v.capacity->capacity == 0) {
    double p0 = *v.pressure.value;
    v.utilization = p0 > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    v.reason = s + " is beyond what " + c.recipe + " held: " + v.capacity->note;
  } else {
    v.utilization = *v.pressure.value / *v.capacity->capacity;
    v.reason = s + " is " + (v.capacity->atLeast ? "at most " : "") + percent(*v.utilization) + " of what " + c.recipe +
               " held (" + capacityText(*v.capacity) + ")";
  }
  return v;
}

RungAxis checkRung(const Classification& c, const CapacityTable& table, const std::string& recipe,
                   const AxisVerdict& v) {
  RungAxis r;
  r.axis = v.axis;
  if (!v.pressure.available()) {
    r.checked = false;
    r.fits = true;
    r.reason = v.axis + ": not checked (" + figureKey(v.pressure) + " is unavailable)";
    return r;
  }
  const double need = *v.pressure.value / c.headroom;
  const std::string needs = v.axis + ": needs " + amount(v.axis, need);
  const AxisCapacity* cap = table.find(recipe, v.axis);
  if (!cap) {
    r.reason = needs + "; no " + v.axis + " search for " + recipe;
  } else if (!cap->capacity) {
    r.reason = needs + "; what it held is unknown (" + cap->note + ")";
  } else {
    r.fits = *cap->capacity >= need;
    r.reason = needs + ", held " + capacityText(*cap);
    if (!r.fits && cap->atLeast) r.reason += "; not shown to hold " + amount(v.axis, need);
  }
  return r;
}

// No rung fits: the axes every measured recipe falls short on, or else that no single
// recipe fits them all.
std::string whyNoRung(const Classification& c, const CapacityTable& table) {
  if (table.recipes.empty())
    return table.files.empty() ? "no capacity table was given" : "the capacity table holds no searches";
  bool anyChecked =
      std::any_of(c.axes.begin(), c.axes.end(), [](const AxisVerdict& v) { return v.pressure.available(); });
  if (!anyChecked) return "no axis pressure could be measured";
  std::string beyond;
  for (std::size_t i = 0; i < c.axes.size(); ++i) {
    const AxisVerdict& v = c.axes[i];
    if (!v.pressure.available()) continue;
    bool someFits = std::any_of(c.ladder.begin(), c.ladder.end(), [&](const RungCheck& r) { return r.axes[i].fits; });
    if (someFits) continue;
    std::string most;
    double best = -1;
    for (const auto& recipe : table.recipes)
      if (const AxisCapacity* cap = table.find(recipe, v.axis); cap && cap->capacity && *cap->capacity > best) {
        best = *cap->capacity;
        most = recipe + " held " + capacityText(*cap);
      }
    beyond += (beyond.empty() ? "" : "; ") + v.axis +
              " exceeds every measured recipe: " + pressureText(v.axis, *v.pressure.value) + " needs " +
              amount(v.axis, *v.pressure.value / c.headroom) + " at headroom " + headroomText(c.headroom) +
              (most.empty() ? "" : "; the most: " + most);
  }
  if (!beyond.empty()) return beyond;
  std::string each;
  for (const RungCheck& r : c.ladder)
    for (const RungAxis& a : r.axes)
      if (!a.fits) {
        each += (each.empty() ? "" : "; ") + r.recipe + " falls short on " + a.axis;
        break;
      }
  return "no single recipe fits every axis at once (" + each + ")";
}

json capacityJson(const AxisCapacity& c) {
  return {{"recipe", c.recipe},
          {"axis", c.axis},
          {"value", c.capacity ? result::jsonio::number(*c.capacity) : json(nullptr)},
          {"atLeast", c.atLeast},
          {"held", c.held ? result::jsonio::number(*c.held) : json(nullptr)},
          {"knob", c.knob},
          {"knobUnit", c.knobUnit},
          {"note", c.note},
          {"file", c.file}};
}

}  // namespace

std::string whyNoPressure(std::span<const Figure> pressures) {
  std::string why;
  for (const Figure& f : pressures) {
    if (f.name != "axis_pressure") continue;
    if (f.available()) return {};
    why += (why.empty() ? "" : "; ") + std::string(metrics::labelValue(f.labels, "axis")) + ": " + f.unavailableReason;
  }
  return why.empty() ? "no axis_pressure among the figures" : why;
}

std::vector<Figure> resultPressures(const result::RunResult& r, const std::string& where) {
  std::vector<Figure> steady;
  for (const Figure& f : r.figures)
    if (f.window == metrics::Window::kSteady) steady.push_back(f);
  if (steady.empty())
    throw ConfigError(
        where, "/figures",
        "has no steady-window figures" + (r.statusDetail.empty() ? "" : " (the run: " + r.statusDetail + ")"));
  std::vector<Figure> pressures = metrics::axisPressureFigures(steady);
  if (std::string why = whyNoPressure(pressures); !why.empty())
    throw ConfigError(where, "/figures", "gives no axis pressure over its steady window: " + why);
  return pressures;
}

const AxisCapacity* CapacityTable::find(std::string_view recipe, std::string_view axis) const {
  for (const AxisCapacity& e : entries)
    if (e.recipe == recipe && e.axis == axis) return &e;
  return nullptr;
}

void addToTable(CapacityTable& table, const result::CapacityIndex& idx, const std::string& file) {
  table.files.push_back(file);
  for (const result::CapacitySearch& s : idx.searches) {
    AxisCapacity c;
    c.recipe = s.profile;
    c.axis = s.axis;
    c.knob = s.knob;
    c.knobUnit = s.unit;
    c.file = file;
    c.atLeast = s.limit != result::CapacityLimit::kServer;
    if (!s.held) {
      c.capacity = 0;
      c.note = "its " + s.axis + " search did not hold its first step" +
               (s.brokeBy.empty() ? (s.detail.empty() ? "" : " (" + s.detail + ")") : " (" + s.brokeBy + ")");
    } else {
      c.held = s.held;
      std::vector<Figure> at = result::pressureAtHeld(s);
      Labels axis = sortedLabels({{"axis", s.axis}});
      const Figure* f = metrics::findFigure(at, "axis_pressure", axis);
      if (!f)
        c.note = "the step that held (" + heldAt(c) + ") carries no " + figureKey("axis_pressure", axis);
      else if (!f->available())
        c.note = figureKey(*f) + " at the step that held is unavailable: " + f->unavailableReason;
      else
        c.capacity = *f->value;
      if (c.atLeast && c.capacity) {
        switch (s.limit) {
          case result::CapacityLimit::kMaxReached: c.note = "every step up to the search's max held"; break;
          case result::CapacityLimit::kGenerator:
            c.note = "the generator, not the server, fell behind at the next step";
            break;
          case result::CapacityLimit::kInterrupted: c.note = "the search was interrupted before a step failed"; break;
          default:
            c.note = "the search stopped before a step failed" + (s.detail.empty() ? "" : ": " + s.detail);
            break;
        }
      }
    }
    auto same = std::find_if(table.entries.begin(), table.entries.end(),
                             [&](const AxisCapacity& e) { return e.recipe == c.recipe && e.axis == c.axis; });
    if (same != table.entries.end())
      *same = std::move(c);
    else
      table.entries.push_back(std::move(c));
    if (std::find(table.recipes.begin(), table.recipes.end(), s.profile) == table.recipes.end())
      table.recipes.push_back(s.profile);
  }
  // Ladder order; recipes off the ladder keep the order they were first seen in.
  auto rank = [](const std::string& r) {
    auto it = std::find(std::begin(kRecipeLadder), std::end(kRecipeLadder), r);
    return static_cast<std::size_t>(it - std::begin(kRecipeLadder));
  };
  std::stable_sort(table.recipes.begin(), table.recipes.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
}

Classification classify(std::vector<Figure> pressures, const CapacityTable& table, const ClassifyOptions& o) {
  Classification c;
  c.source = o.source;
  c.span = o.span;
  c.notes = o.notes;
  c.headroom = o.headroom;
  c.capacityFiles = table.files;
  c.figures = std::move(pressures);
  if (const Figure* f = metrics::findFigure(c.figures, "axis_pressure")) c.window = f->window;
  chooseRecipe(c, c.figures, o);
  for (std::string_view axis : kPressureAxes) c.axes.push_back(judgeAxis(c, table, axis));

  const AxisVerdict* top = nullptr;
  for (const AxisVerdict& v : c.axes)
    if (v.utilization && (!top || *v.utilization > *top->utilization)) top = &v;
  if (top) {
    c.binding = top->axis;
    c.bindingReason = top->reason;
  } else if (table.files.empty()) {
    c.bindingReason = "no capacity table was given: the pressures alone do not say which axis binds";
  } else if (std::none_of(c.axes.begin(), c.axes.end(), [](const AxisVerdict& v) { return v.capacity.has_value(); })) {
    c.bindingReason = "the capacity table has no searches for " + c.recipe;
  } else {
    c.bindingReason = "no axis could be compared with what " + c.recipe + " held";
  }

  for (const std::string& recipe : table.recipes) {
    RungCheck r;
    r.recipe = recipe;
    r.fits = true;
    bool checked = false;
    for (const AxisVerdict& v : c.axes) {
      r.axes.push_back(checkRung(c, table, recipe, v));
      r.fits = r.fits && r.axes.back().fits;
      checked = checked || r.axes.back().checked;
    }
    r.fits = r.fits && checked;
    if (r.fits && !c.rung) {
      c.rung = recipe;
      c.rungReason = recipe + " is the first rung that held pressure / " + headroomText(c.headroom) + " on every axis";
      std::string each;
      for (const RungAxis& a : r.axes) each += (each.empty() ? "" : "; ") + a.reason;
      c.rungReason += " (" + each + ")";
    }
    c.ladder.push_back(std::move(r));
  }
  if (!c.rung) c.rungReason = whyNoRung(c, table);
  return c;
}

std::string renderClassification(const Classification& c) {
  std::ostringstream out;
  out << "# cpscale classify: " << c.source << "\n\n";
  out << "window    " << (c.span.empty() ? std::string(metrics::toString(c.window)) : c.span) << "\n";
  for (const std::string& n : c.notes) out << "note      " << wrapText(n, kSummaryColumns - 10, "          ");
  out << "recipe    " << c.recipe << " (" << c.recipeFrom << ")\n";
  if (c.capacityFiles.empty()) {
    out << "capacity  none given: pressures only (--capacity INDEX.json compares them with what recipes held)\n";
  } else {
    for (std::size_t i = 0; i < c.capacityFiles.size(); ++i)
      out << (i ? "          " : "capacity  ") << c.capacityFiles[i] << "\n";
  }
  out << "headroom  " << headroomText(c.headroom) << "\n\n";

  std::vector<std::vector<std::string>> rows;
  for (const AxisVerdict& v : c.axes) {
    std::string pressure = v.pressure.available() ? pressureText(v.axis, *v.pressure.value) : "unavailable";
    std::string capacity =
        v.capacity ? capacityText(*v.capacity, false) : (c.capacityFiles.empty() ? "" : "not measured");
    rows.push_back({v.axis, pressure, capacity, v.utilization ? percent(*v.utilization) : ""});
  }
  out << markdownTable({"axis", "pressure", "held by " + c.recipe, "utilization"}, rows, {false, false, false, true},
                       kSummaryColumns)
      << "\n";

  // The binding axis' reason first, then the others'.
  out << "Binding axis: " << (c.binding ? *c.binding : "unknown") << "\n";
  if (!c.binding) out << wrapText("  " + c.bindingReason, kSummaryColumns, "    ");
  for (int pass = 0; pass < 2; ++pass)
    for (const AxisVerdict& v : c.axes)
      if ((pass == 0) == (c.binding && v.axis == *c.binding)) out << wrapText("  " + v.reason, kSummaryColumns, "    ");
  out << "\n";

  if (!c.ladder.empty()) {
    out << "Ladder (a recipe fits when it held pressure / " << headroomText(c.headroom) << " on every axis):\n";
    for (const RungCheck& r : c.ladder) {
      out << "  " << r.recipe << ": " << (r.fits ? "fits" : "does not fit") << "\n";
      for (const RungAxis& a : r.axes) out << wrapText("    " + a.reason, kSummaryColumns, "      ");
    }
    out << "\n";
  }
  out << "Rung: " << (c.rung ? *c.rung : "none") << "\n";
  if (c.rung)
    out << "  the first rung that held pressure / " << headroomText(c.headroom) << " on every axis\n";
  else
    out << wrapText("  " + c.rungReason, kSummaryColumns, "    ");
  return out.str();
}

nlohmann::json toJson(const Classification& c) {
  json axes = json::array();
  for (const AxisVerdict& v : c.axes) {
    axes.push_back({{"axis", v.axis},
                    {"pressure", v.pressure.value ? result::jsonio::number(*v.pressure.value) : json(nullptr)},
                    {"unit", v.pressure.unit},
                    {"unavailableReason", v.pressure.unavailableReason},
                    {"capacity", v.capacity ? capacityJson(*v.capacity) : json(nullptr)},
                    {"utilization", v.utilization ? result::jsonio::number(*v.utilization) : json(nullptr)},
                    {"reason", v.reason}});
  }
  json ladder = json::array();
  for (const RungCheck& r : c.ladder) {
    json as = json::array();
    for (const RungAxis& a : r.axes)
      as.push_back({{"axis", a.axis}, {"fits", a.fits}, {"checked", a.checked}, {"reason", a.reason}});
    ladder.push_back({{"recipe", r.recipe}, {"fits", r.fits}, {"axes", std::move(as)}});
  }
  json figures = json::array();
  for (const Figure& f : c.figures) figures.push_back(result::jsonio::figureJson(f));
  return {{"apiVersion", "cpscale.io/v1alpha1"},
          {"kind", "Classification"},
          {"source", c.source},
          {"window", std::string(metrics::toString(c.window))},
          {"span", c.span},
          {"notes", c.notes},
          {"recipe", {{"name", c.recipe}, {"from", c.recipeFrom}, {"guessed", c.recipeGuessed}}},
          {"headroom", result::jsonio::number(c.headroom)},
          {"capacityFiles", c.capacityFiles},
          {"axes", std::move(axes)},
          {"binding", {{"axis", c.binding ? json(*c.binding) : json(nullptr)}, {"reason", c.bindingReason}}},
          {"ladder", std::move(ladder)},
          {"rung", {{"recipe", c.rung ? json(*c.rung) : json(nullptr)}, {"reason", c.rungReason}}},
          {"figures", std::move(figures)}};
}

}  // namespace cpscale::reports
