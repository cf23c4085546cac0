#include "reports/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "reports/format.h"

namespace cpscale::reports::svg {

namespace {

// Tableau 10: distinct at a glance, and still distinct for most colour-blind readers.
constexpr std::array<const char*, 10> kPalette{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                               "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
const char* colour(std::size_t i) { return kPalette[i % kPalette.size()]; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Tick labels read in the unit a person would use for the axis' range: MiB rather than
// 3.7e7 bytes, ms rather than 0.012 s.
struct Scale {
  double divisor = 1;
  std::string suffix;
};
Scale scaleFor(std::string_view unit, double max) {
  if (unit == "bytes") {
    static constexpr std::array<const char*, 5> kNames{" B", " KiB", " MiB", " GiB", " TiB"};
    double d = 1;
    std::size_t i = 0;
    while (max / d >= 1024 && i + 1 < kNames.size()) d *= 1024, ++i;
    return {d, kNames[i]};
  }
  if (unit == "s") {
    if (max < 1e-3) return {1e-6, " µs"};
    if (max < 1) return {1e-3, " ms"};
    return {1, " s"};
  }
  if (unit == "ratio") return {0.01, " %"};
  std::string per = unit == "1/s" ? "/s" : "";
  if (max >= 1e6) return {1e6, "M" + per};
  if (max >= 1e3) return {1e3, "k" + per};
  return {1, per};
}

std::string tickLabel(double v, const Scale& s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf + s.suffix;
}

// Columns of UTF-8 text (one per code point), for laying out legend entries.
std::size_t displayWidthOf(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

std::string truncate(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 1) + "…";
}

// Time ticks at steps a reader counts in: seconds, then minutes, then hours.
std::vector<double> timeTicks(double max) {
  static constexpr double kSteps[] = {1,   2,   5,    10,   15,   30,    60,    120,   300,
                                      600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400};
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps)
    if (max / s <= 8) {
      step = s;
      break;
    }
  std::vector<double> out;
  for (double t = 0; t <= max + 1e-9; t += step) out.push_back(t);
  return out;
}

struct Frame {
  double left, right, top, bottom;
  double xMax, yMax;
  double x(double v) const { return left + (xMax > 0 ? v / xMax : 0) * (right - left); }
  double y(double v) const { return bottom - (yMax > 0 ? v / yMax : 0) * (bottom - top); }
};

void open(std::ostringstream& out, const std::string& id, const std::string& cls, int w, int h,
          const std::string& title) {
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" << escape(id) << "\" class=\"chart " << cls
      << "\" viewBox=\"0 0 " << w << " " << h << "\" width=\"" << w << "\" height=\"" << h
      << "\" role=\"img\" aria-label=\"" << escape(title) << "\">\n";
  out << "<title>" << escape(title) << "</title>\n";
  out << "<text class=\"title\" x=\"0\" y=\"18\">" << escape(title) << "</text>\n";
}

// Horizontal grid lines with y tick labels; returns the axis scale used.
void yAxis(std::ostringstream& out, const Frame& f, const std::vector<double>& ticks, const Scale& s) {
  for (double t : ticks) {
    double y = f.y(t * s.divisor);
    out << "<line class=\"grid\" x1=\"" << num(f.left) << "\" x2=\"" << num(f.right) << "\" y1=\"" << num(y)
        << "\" y2=\"" << num(y) << "\"/>\n";
    out << "<text class=\"tick\" text-anchor=\"end\" x=\"" << num(f.left - 6) << "\" y=\"" << num(y + 4) << "\">"
        << escape(tickLabel(t, s)) << "</text>\n";
  }
  out << "<line class=\"axis\" x1=\"" << num(f.left) << "\" x2=\"" << num(f.right) << "\" y1=\"" << num(f.bottom)
      << "\" y2=\"" << num(f.bottom) << "\"/>\n";
}

void legend(std::ostringstream& out, const std::vector<std::string>& names, double x, double y, double maxY) {
  std::size_t fits = static_cast<std::size_t>(std::max(1.0, (maxY - y) / 20));
  for (std::size_t i = 0; i < names.size(); ++i) {
    double yy = y + static_cast<double>(i) * 20;
    if (i + 1 == fits && names.size() > fits) {
      out << "<text class=\"legend\" x=\"" << num(x) << "\" y=\"" << num(yy + 10) << "\">… " << (names.size() - i)
          << " more</text>\n";
      break;
    }
    out << "<rect x=\"" << num(x) << "\" y=\"" << num(yy) << "\" width=\"12\" height=\"12\" rx=\"2\" fill=\""
        << colour(i) << "\"/>\n";
    out << "<text class=\"legend\" x=\"" << num(x + 18) << "\" y=\"" << num(yy + 10) << "\">"
        << escape(truncate(names[i], 30)) << "</text>\n";
  }
}

// Value of a series at t: its latest point at or before t (0 before its first), the
// same step alignment the metrics layer uses to sum replicas.
double at(const Series& s, double t) {
  auto it = std::upper_bound(s.x.begin(), s.x.end(), t);
  if (it == s.x.begin()) return 0;
  return s.y[static_cast<std::size_t>(it - s.x.begin()) - 1];
}

}  // namespace

std::string escape(std::string_view s) { return xmlEscape(s); }

std::vector<double> niceTicks(double max, int approxCount) {
  if (!(max > 0) || !std::isfinite(max)) return {0, 1};
  double raw = max / std::max(1, approxCount);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  double multiple = step / mag;
  // Below 1, divide by the power of ten instead of multiplying by its inexact inverse,
  // so ticks are the doubles nearest 0.6 (not 0.6000000000000001) and labels read clean.
  double inverse = mag < 1 ? std::round(1 / mag) : 0;
  std::vector<double> out;
  for (int i = 0;; ++i) {
    double t = inverse > 0 ? i * multiple / inverse : i * multiple * mag;
    out.push_back(t);
    if (t >= max * (1 - 1e-9)) break;
  }
  return out;
}

std::string timeChart(const TimeChart& c) {
  constexpr int kW = 920, kH = 320;
  std::ostringstream out;
  open(out, c.id, c.stacked ? "chart-stacked" : "chart-lines", kW, kH, c.title);

  // One timeline for all series: stacking needs every layer at the same times.
  std::set<double> times;
  for (const Series& s : c.series) times.insert(s.x.begin(), s.x.end());
  std::vector<double> ts(times.begin(), times.end());
  std::vector<std::vector<double>> tops(c.series.size(), std::vector<double>(ts.size()));
  double ymax = 0;
  for (std::size_t j = 0; j < ts.size(); ++j) {
    double acc = 0;
    for (std::size_t i = 0; i < c.series.size(); ++i) {
      double v = at(c.series[i], ts[j]);
      if (!std::isfinite(v)) v = 0;
      acc = c.stacked ? acc + v : v;
      tops[i][j] = acc;
      ymax = std::max(ymax, acc);
    }
  }
  if (c.yMax) ymax = std::max(ymax, *c.yMax);
  Scale s = scaleFor(c.unit, ymax);
  std::vector<double> yt = niceTicks(ymax / s.divisor, 5);
  // The time axis spans the data and the run's timeline, whichever is longer: a
  // series that starts late must not hide that setup came first.
  double tEnd = ts.empty() ? 1 : ts.back();
  for (const PhaseSpan& p : c.phases) tEnd = std::max(tEnd, p.end);
  for (const IncidentMark& m : c.incidents) tEnd = std::max(tEnd, m.until.value_or(m.at));
  std::vector<double> xt = timeTicks(tEnd);
  Frame f{72, kW - 220.0, 40, kH - 36.0, std::max(xt.back(), tEnd), yt.back() * s.divisor};
  yAxis(out, f, yt, s);
  auto clampX = [&](double t) { return std::clamp(f.x(t), f.left, f.right); };
  const PhaseSpan* setup = nullptr;
  for (const PhaseSpan& p : c.phases)
    if (p.name == "setup" && p.end > p.start) setup = &p;
  if (setup)
    out << "<rect class=\"phase phase-setup\" x=\"" << num(clampX(setup->start)) << "\" y=\"" << num(f.top)
        << "\" width=\"" << num(clampX(setup->end) - clampX(setup->start)) << "\" height=\"" << num(f.bottom - f.top)
        << "\" fill=\"#6b7280\" fill-opacity=\"0.10\"/>\n";
  for (double t : xt)
    out << "<text class=\"tick\" text-anchor=\"middle\" x=\"" << num(f.x(t)) << "\" y=\"" << num(f.bottom + 18) << "\">"
        << escape(formatElapsed(t)) << "</text>\n";
  out << "<text class=\"axis-label\" text-anchor=\"end\" x=\"" << num(f.right) << "\" y=\"" << kH - 2
      << "\">time since start</text>\n";

  for (std::size_t i = 0; i < c.series.size(); ++i) {
    if (ts.empty()) break;
    std::ostringstream d;
    for (std::size_t j = 0; j < ts.size(); ++j) d << (j ? " L" : "M") << num(f.x(ts[j])) << " " << num(f.y(tops[i][j]));
    if (c.stacked) {
      for (std::size_t j = ts.size(); j-- > 0;) d << " L" << num(f.x(ts[j])) << " " << num(f.y(i ? tops[i - 1][j] : 0));
      out << "<path class=\"series area\" d=\"" << d.str() << " Z\" fill=\"" << colour(i)
          << "\" fill-opacity=\"0.85\" stroke=\"#fff\" stroke-width=\"0.5\"><title>" << escape(c.series[i].name)
          << "</title></path>\n";
    } else {
      out << "<path class=\"series line\" d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << colour(i)
          << "\" stroke-width=\"2\" stroke-linejoin=\"round\"><title>" << escape(c.series[i].name)
          << "</title></path>\n";
    }
  }
  // Drawn over the series: a white veil fades what setup did without hiding it.
  if (setup)
    out << "<rect class=\"phase-fade\" x=\"" << num(clampX(setup->start)) << "\" y=\"" << num(f.top - 2)
        << "\" width=\"" << num(clampX(setup->end) - clampX(setup->start)) << "\" height=\""
        << num(f.bottom - f.top + 2) << "\" fill=\"#ffffff\" fill-opacity=\"0.55\"/>\n";
  for (const PhaseSpan& p : c.phases) {
    if (p.name.starts_with("ramp/")) continue;
    double x0 = clampX(p.start), x1 = clampX(p.end > p.start ? p.end : tEnd);
    if (p.start > 0)
      out << "<line class=\"phase-boundary\" x1=\"" << num(x0) << "\" x2=\"" << num(x0) << "\" y1=\"" << num(f.top - 6)
          << "\" y2=\"" << num(f.bottom) << "\" stroke=\"#4b5563\" stroke-width=\"1\" stroke-dasharray=\"4 3\"/>\n";
    // A phase too narrow for even a few characters (a short settle before steady) keeps
    // its boundary line but no label, which would run into the next one; the phase
    // table names it.
    if (x1 - x0 < 4 * 6.5) continue;
    std::string label = p.name + (p.complete ? "" : " (cut short)");
    out << "<text class=\"phase-label\" x=\"" << num(std::min(x0 + 4, x1)) << "\" y=\"" << num(f.top - 8) << "\">"
        << escape(truncate(label, static_cast<std::size_t>((x1 - x0) / 6.5))) << "</text>\n";
  }
  // Where the last phase ended, when the data runs on (a drain, an interrupted run).
  double lastEnd = 0;
  for (const PhaseSpan& p : c.phases)
    if (!p.name.starts_with("ramp/")) lastEnd = std::max(lastEnd, p.end);
  if (lastEnd > 0 && f.x(lastEnd) < f.right - 0.5)
    out << "<line class=\"phase-boundary phase-end\" x1=\"" << num(f.x(lastEnd)) << "\" x2=\"" << num(f.x(lastEnd))
        << "\" y1=\"" << num(f.top - 6) << "\" y2=\"" << num(f.bottom)
        << "\" stroke=\"#4b5563\" stroke-width=\"1\" stroke-dasharray=\"4 3\"/>\n";
  for (const IncidentMark& m : c.incidents) {
    double x = clampX(m.at);
    // An instant is a narrow band around its line; a window spans its whole length.
    const double x0 = m.until ? x : x - 4, x1 = m.until ? std::max(clampX(*m.until), x + 2) : x + 4;
    out << "<g class=\"incident" << (m.until ? " incident-window" : "") << "\"><title>" << escape(m.label)
        << "</title><rect x=\"" << num(x0) << "\" y=\"" << num(f.top) << "\" width=\"" << num(x1 - x0) << "\" height=\""
        << num(f.bottom - f.top) << "\" fill=\"#cf222e\" fill-opacity=\"0.18\"/><line x1=\"" << num(x) << "\" x2=\""
        << num(x) << "\" y1=\"" << num(f.top) << "\" y2=\"" << num(f.bottom)
        << "\" stroke=\"#cf222e\" stroke-width=\"1.5\"/></g>\n";
  }
  std::vector<std::string> names;
  for (const Series& se : c.series) names.push_back(se.name);
  // The timeline's own entries sit at the bottom of the legend column.
  std::vector<std::pair<std::string, std::string>> marks;  // (swatch colour, text)
  if (setup) marks.emplace_back("#c4c8cf", "setup (faded)");
  if (!c.incidents.empty()) marks.emplace_back("#cf222e", c.incidents.size() == 1 ? "incident" : "incidents");
  double marksTop = f.bottom - 20.0 * static_cast<double>(marks.size());
  legend(out, names, f.right + 24, f.top, marksTop - 4);
  for (std::size_t i = 0; i < marks.size(); ++i) {
    double yy = marksTop + 20.0 * static_cast<double>(i);
    out << "<rect class=\"legend-mark\" x=\"" << num(f.right + 24) << "\" y=\"" << num(yy)
        << "\" width=\"12\" height=\"12\" rx=\"2\" fill=\"" << marks[i].first << "\"/>\n";
    out << "<text class=\"legend legend-timeline\" x=\"" << num(f.right + 42) << "\" y=\"" << num(yy + 10) << "\">"
        << escape(marks[i].second) << "</text>\n";
  }
  out << "</svg>\n";
  return out.str();
}

std::string barChart(const BarChart& c) {
  std::ostringstream out;
  open(out, c.id, "chart-bars", c.width, c.height, c.title);
  double ymax = 0;
  for (const auto& g : c.values)
    for (const auto& v : g)
      if (v && std::isfinite(*v)) ymax = std::max(ymax, *v);
  Scale s = scaleFor(c.unit, ymax);
  std::vector<double> yt = niceTicks(ymax / s.divisor, 4);
  Frame f{64, c.width - 12.0, 58, c.height - 30.0, 1, yt.back() * s.divisor};
  // Legend in a row under the title: the bars need the full width.
  double lx = 0;
  for (std::size_t i = 0; i < c.seriesNames.size(); ++i) {
    out << "<rect x=\"" << num(lx) << "\" y=\"30\" width=\"12\" height=\"12\" rx=\"2\" fill=\"" << colour(i)
        << "\"/>\n";
    out << "<text class=\"legend\" x=\"" << num(lx + 17) << "\" y=\"40\">" << escape(c.seriesNames[i]) << "</text>\n";
    lx += 30 + 6.5 * static_cast<double>(c.seriesNames[i].size());
  }
  yAxis(out, f, yt, s);
  double groupW = (f.right - f.left) / static_cast<double>(std::max<std::size_t>(1, c.groupNames.size()));
  double barW = groupW * 0.78 / static_cast<double>(std::max<std::size_t>(1, c.seriesNames.size()));
  for (std::size_t g = 0; g < c.groupNames.size(); ++g) {
    double gx = f.left + groupW * static_cast<double>(g) + groupW * 0.11;
    out << "<text class=\"tick\" text-anchor=\"middle\" x=\"" << num(f.left + groupW * (static_cast<double>(g) + 0.5))
        << "\" y=\"" << num(f.bottom + 18) << "\">" << escape(c.groupNames[g]) << "</text>\n";
    for (std::size_t i = 0; i < c.seriesNames.size(); ++i) {
      double x = gx + barW * static_cast<double>(i);
      const std::optional<double>& v = g < c.values.size() && i < c.values[g].size() ? c.values[g][i] : std::nullopt;
      if (!v || !std::isfinite(*v)) {
        out << "<text class=\"na\" text-anchor=\"middle\" x=\"" << num(x + barW / 2) << "\" y=\"" << num(f.bottom - 4)
            << "\">n/a</text>\n";
        continue;
      }
      double y = f.y(*v);
      // A bar of a tiny but real value stays visible.
      double h = std::max(1.0, f.bottom - y);
      out << "<rect class=\"series bar\" x=\"" << num(x + 1) << "\" y=\"" << num(f.bottom - h) << "\" width=\""
          << num(std::max(1.0, barW - 2)) << "\" height=\"" << num(h) << "\" fill=\"" << colour(i) << "\"><title>"
          << escape(c.seriesNames[i] + " " + c.groupNames[g] + ": " + formatValue(*v, c.unit)) << "</title></rect>\n";
    }
  }
  out << "</svg>\n";
  return out.str();
}

std::string xyChart(const XyChart& c) {
  std::ostringstream out;
  open(out, c.id, "chart-xy", c.width, c.height, c.title);
  auto usable = [](const XyPoint& p) { return p.y && std::isfinite(*p.y); };
  double xmax = 0, ymax = 0;
  for (const XySeries& se : c.series)
    for (const XyPoint& p : se.points) {
      if (std::isfinite(p.x)) xmax = std::max(xmax, p.x);
      if (usable(p)) ymax = std::max(ymax, *p.y);
    }
  if (c.mark && std::isfinite(c.mark->x)) xmax = std::max(xmax, c.mark->x);
  if (c.threshold && std::isfinite(*c.threshold)) ymax = std::max(ymax, *c.threshold);
  if (c.yMax) ymax = std::max(ymax, *c.yMax);

  // The legend in rows under the title: the series, then what the marks mean.
  struct Entry {
    std::string kind;  // "series", "held", "not-held", "mark", "threshold"
    std::string text;
    std::size_t colourIndex = 0;
  };
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < c.series.size(); ++i) entries.push_back({"series", truncate(c.series[i].name, 32), i});
  bool anyHeld = false, anyNotHeld = false;
  for (const XySeries& se : c.series)
    for (const XyPoint& p : se.points) (p.filled ? anyHeld : anyNotHeld) = true;
  if (anyHeld) entries.push_back({"held", "held", 0});
  if (anyNotHeld) entries.push_back({"not-held", "did not hold", 0});
  if (c.mark) entries.push_back({"mark", c.mark->label, 0});
  if (c.threshold) entries.push_back({"threshold", c.thresholdLabel.empty() ? "threshold" : c.thresholdLabel, 0});
  double lx = 0, ly = 30;
  std::ostringstream leg;
  for (const Entry& e : entries) {
    double w = 30 + 6.5 * static_cast<double>(displayWidthOf(e.text));
    if (lx > 0 && lx + w > c.width) lx = 0, ly += 18;
    if (e.kind == "series")
      leg << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" width=\"12\" height=\"12\" rx=\"2\" fill=\""
          << colour(e.colourIndex) << "\"/>\n";
    else if (e.kind == "held" || e.kind == "not-held")
      leg << "<circle class=\"legend-mark\" cx=\"" << num(lx + 6) << "\" cy=\"" << num(ly + 6) << "\" r=\"4\" fill=\""
          << (e.kind == "held" ? "#4b5563" : "#ffffff") << "\" stroke=\"#4b5563\" stroke-width=\"2\"/>\n";
    else if (e.kind == "mark")
      leg << "<line class=\"legend-mark\" x1=\"" << num(lx + 6) << "\" x2=\"" << num(lx + 6) << "\" y1=\""
          << num(ly - 1) << "\" y2=\"" << num(ly + 13) << "\" stroke=\"#cf222e\" stroke-width=\"2\"/>\n";
    else
      leg << "<line class=\"legend-mark\" x1=\"" << num(lx) << "\" x2=\"" << num(lx + 12) << "\" y1=\"" << num(ly + 6)
          << "\" y2=\"" << num(ly + 6) << "\" stroke=\"#9a6700\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n";
    leg << "<text class=\"legend\" x=\"" << num(lx + 17) << "\" y=\"" << num(ly + 10) << "\">" << escape(e.text)
        << "</text>\n";
    lx += w;
  }
  out << leg.str();

  Scale sy = scaleFor(c.unit, ymax);
  std::vector<double> yt = niceTicks(ymax / sy.divisor, 4);
  // Knob values read as the steps table prints them: 1,200, not 1.2k.
  std::vector<double> xt = niceTicks(xmax, 5);
  Frame f{64, c.width - 16.0, ly + 30, c.height - 38.0, xt.back(), yt.back() * sy.divisor};
  yAxis(out, f, yt, sy);
  for (double t : xt)
    out << "<text class=\"tick\" text-anchor=\"middle\" x=\"" << num(f.x(t)) << "\" y=\"" << num(f.bottom + 16) << "\">"
        << escape(formatKnobValue(t, "")) << "</text>\n";
  out << "<text class=\"axis-label\" text-anchor=\"end\" x=\"" << num(f.right) << "\" y=\"" << c.height - 4 << "\">"
      << escape(c.xUnit.empty() ? "value" : c.xUnit) << "</text>\n";

  // The threshold's label sits at the left end: the break is usually at the right.
  if (c.threshold && std::isfinite(*c.threshold)) {
    double y = f.y(*c.threshold);
    out << "<g class=\"threshold\"><title>" << escape(c.thresholdLabel) << "</title><line x1=\"" << num(f.left)
        << "\" x2=\"" << num(f.right) << "\" y1=\"" << num(y) << "\" y2=\"" << num(y)
        << "\" stroke=\"#9a6700\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/><text class=\"threshold-label\" "
           "text-anchor=\"start\" x=\""
        << num(f.left + 4) << "\" y=\"" << num(y - 4) << "\">" << escape(c.thresholdLabel) << "</text></g>\n";
  }
  if (c.mark && std::isfinite(c.mark->x)) {
    double x = f.x(c.mark->x);
    bool nearRight = x + 8 + 6.5 * static_cast<double>(displayWidthOf(c.mark->label)) > f.right;
    out << "<g class=\"break-mark\"><title>" << escape(c.mark->title.empty() ? c.mark->label : c.mark->title)
        << "</title><line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(f.top - 4) << "\" y2=\""
        << num(f.bottom) << "\" stroke=\"#cf222e\" stroke-width=\"1.5\"/><text class=\"break-label\" text-anchor=\""
        << (nearRight ? "end" : "start") << "\" x=\"" << num(nearRight ? x - 4 : x + 4) << "\" y=\"" << num(f.top + 8)
        << "\" fill=\"#cf222e\">" << escape(c.mark->label) << "</text></g>\n";
  }

  for (std::size_t i = 0; i < c.series.size(); ++i) {
    std::vector<XyPoint> pts = c.series[i].points;
    std::stable_sort(pts.begin(), pts.end(), [](const XyPoint& a, const XyPoint& b) { return a.x < b.x; });
    std::ostringstream d;
    bool pen = false;
    for (const XyPoint& p : pts) {
      if (!usable(p) || !std::isfinite(p.x)) {
        pen = false;  // no number: the line breaks here rather than pretend
        continue;
      }
      d << (d.tellp() > 0 ? " " : "") << (pen ? "L" : "M") << num(f.x(p.x)) << " " << num(f.y(*p.y));
      pen = true;
    }
    if (d.tellp() > 0)
      out << "<path class=\"series line\" d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << colour(i)
          << "\" stroke-width=\"2\" stroke-linejoin=\"round\"><title>" << escape(c.series[i].name)
          << "</title></path>\n";
    for (const XyPoint& p : pts) {
      if (!std::isfinite(p.x)) continue;
      if (!usable(p)) {
        out << "<text class=\"na\" text-anchor=\"middle\" x=\"" << num(f.x(p.x)) << "\" y=\"" << num(f.bottom - 4)
            << "\"><title>" << escape(p.note) << "</title>n/a</text>\n";
        continue;
      }
      out << "<circle class=\"point " << (p.filled ? "held" : "not-held") << "\" cx=\"" << num(f.x(p.x)) << "\" cy=\""
          << num(f.y(*p.y)) << "\" r=\"4\" fill=\"" << (p.filled ? colour(i) : "#ffffff") << "\" stroke=\"" << colour(i)
          << "\" stroke-width=\"2\"><title>" << escape(p.note) << "</title></circle>\n";
    }
  }
  out << "</svg>\n";
  return out.str();
}

std::string placeholder(const std::string& id, const std::string& title, const std::string& reason, int w, int h) {
  std::ostringstream out;
  open(out, id, "chart-unavailable", w, h, title);
  out << "<rect class=\"placeholder\" x=\"1\" y=\"32\" width=\"" << w - 2 << "\" height=\"" << h - 34
      << "\" rx=\"6\"/>\n";
  out << "<text class=\"placeholder-head\" text-anchor=\"middle\" x=\"" << w / 2 << "\" y=\"" << 32 + (h - 34) / 2 - 8
      << "\">Unavailable</text>\n";
  // SVG text does not wrap: break the reason into lines at word boundaries.
  std::size_t perLine = static_cast<std::size_t>(w / 7);
  std::vector<std::string> lines{""};
  std::istringstream words(reason);
  for (std::string word; words >> word;) {
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > perLine) lines.push_back("");
    lines.back() += (lines.back().empty() ? "" : " ") + word;
  }
  for (std::size_t i = 0; i < lines.size() && i < 4; ++i)
    out << "<text class=\"placeholder-reason\" text-anchor=\"middle\" x=\"" << w / 2 << "\" y=\""
        << 32 + (h - 34) / 2 + 14 + static_cast<int>(i) * 16 << "\">" << escape(lines[i]) << "</text>\n";
  out << "</svg>\n";
  return out.str();
}

}  // namespace cpscale::reports::svg
