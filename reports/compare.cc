#include "reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "reports/format.h"
#include "reports/headline.h"
#include "reports/summary.h"

namespace cpscale::reports {

using metrics::Figure;

std::string_view toString(Direction d) {
  switch (d) {
    case Direction::kWorse: return "worse";
    case Direction::kBetter: return "better";
    case Direction::kNeutral: return "neutral";
  }
  return "?";
}

Polarity polarityOf(std::string_view name, const metrics::Labels& labels) {
  auto starts = [&](std::string_view p) { return name.starts_with(p); };
  // Shares describe the mix of traffic, not its cost: a profile that moves leases off
  // the apiserver lowers them on purpose.
  if (name == "lease_write_share" || name == "etcd_lease_proposal_share") return Polarity::kNeutral;
  // How requests spread over replicas, and the bounds of a fit: descriptions, not costs.
  if (starts("apiserver_request") || name == "apiserver_write_qps" || starts("bytes_per_object_ci_"))
    return Polarity::kNeutral;
  if (starts("rejected_write")) return Polarity::kHigherIsWorse;
  // Fit quality, what the workload asked for, and how many objects it made: inputs,
  // not outcomes.
  if (name == "bytes_per_object_r2" || starts("client_write_") || starts("apiserver_objects") ||
      starts("scrape_attempts") || starts("scrape_successes") || starts("apiserver_watch_cache") ||
      name == "watch_cache_capacity")
    return Polarity::kNeutral;
  if (name == "client_requests") {
    std::string_view outcome = metrics::labelValue(labels, "outcome");
    return outcome == "2xx" ? Polarity::kLowerIsWorse : Polarity::kHigherIsWorse;
  }
  if (name == "etcd_has_leader") return Polarity::kLowerIsWorse;
  if (starts("client_latency_") || starts("server_latency_") || starts("schedule_lag_") ||
      name == "generator_limited" || starts("apiserver_heap") || starts("apiserver_rss") ||
      starts("bytes_per_object") || name == "heap_base_bytes" || starts("write_qps") || starts("write_requests") ||
      starts("etcd_") || name == "client_errors" || name == "client_error_ratio" || starts("scrape_failures") ||
      starts("scrape_overruns") || starts("apiserver_watch_events"))
    return Polarity::kHigherIsWorse;
  return Polarity::kNeutral;
}

bool Comparison::regressed() const {
  for (const auto& c : changes)
    if (c.headline() && c.comparable && c.crossedTolerance && c.direction == Direction::kWorse) return true;
  return false;
}

namespace {

double toleranceFor(const CompareOptions& o, const std::string& key, const std::string& name) {
  if (auto it = o.overrides.find(key); it != o.overrides.end()) return it->second;
  if (auto it = o.overrides.find(name); it != o.overrides.end()) return it->second;
  return o.relativeTolerance;
}

const Figure* find(const std::vector<Figure>& fs, const Figure& like) {
  for (const Figure& f : fs)
    if (f.name == like.name && f.labels == like.labels && f.window == like.window) return &f;
  return nullptr;
}

// Length of the figure's window in a run, for turning "N events" into a rate; 0 when
// the result does not say.
double windowSeconds(const result::RunResult& r, metrics::Window w) {
  if (w == metrics::Window::kSteady) {
    if (r.measuredSeconds > 0) return r.measuredSeconds;
    if (const result::Phase* p = result::findPhase(r, "steady")) return p->endSeconds - p->startSeconds;
  }
  if (w == metrics::Window::kSetup)
    if (const result::Phase* p = result::findPhase(r, "setup")) return p->endSeconds - p->startSeconds;
  if (w == metrics::Window::kRun && !r.phases.empty()) {
    double end = 0;
    for (const result::Phase& p : r.phases) end = std::max(end, p.endSeconds);
    return end;
  }
  return 0;
}

// What a figure's noise is, in its own unit: below this, a change is not a change.
double absoluteToleranceFor(const CompareOptions& o, const Figure& f, double seconds) {
  if (f.unit == "1/s") return seconds > 0 ? o.minEvents / seconds : 0;
  if (f.unit == "count") return o.minEvents;
  if (f.unit == "s") return o.latencyFloorSeconds;
  if (f.unit == "ratio") return o.ratioFloor;
  return 0;
}

FigureChange change(const Figure* fa, const Figure* fb, const CompareOptions& o, double seconds) {
  const Figure& any = fa ? *fa : *fb;
  FigureChange c;
  c.key = figureKey(any);
  c.name = any.name;
  c.labels = any.labels;
  c.window = any.window;
  c.unit = any.unit;
  c.tolerance = toleranceFor(o, c.key, c.name);
  c.absoluteTolerance = absoluteToleranceFor(o, any, seconds);
  if (fa) c.a = fa->value;
  if (fb) c.b = fb->value;
  if (!fa)
    c.notComparableReason = "only in B";
  else if (!fb)
    c.notComparableReason = "only in A";
  else if (!fa->available() && !fb->available())
    c.notComparableReason =
        fa->unavailableReason == fb->unavailableReason
            ? "unavailable in A and B: " + fa->unavailableReason
            : "unavailable in A (" + fa->unavailableReason + ") and in B (" + fb->unavailableReason + ")";
  else if (!fa->available())
    c.notComparableReason = "unavailable in A (" + fa->unavailableReason + "), available in B";
  else if (!fb->available())
    c.notComparableReason = "available in A, unavailable in B: " + fb->unavailableReason;
  else if (!std::isfinite(*fa->value) || !std::isfinite(*fb->value))
    c.notComparableReason = "not a finite number";
  if (!c.notComparableReason.empty()) return c;

  c.comparable = true;
  double a = *c.a, b = *c.b;
  c.absoluteChange = b - a;
  bool beyondNoise = std::fabs(c.absoluteChange) > c.absoluteTolerance;
  if (a != 0) {
    c.relativeChange = (b - a) / std::fabs(a);
    c.crossedTolerance = beyondNoise && std::fabs(*c.relativeChange) > c.tolerance;
  } else {
    c.crossedTolerance = beyondNoise && b != 0;
  }
  Polarity p = polarityOf(c.name, c.labels);
  if (b == a || p == Polarity::kNeutral)
    c.direction = Direction::kNeutral;
  else
    c.direction = ((b > a) == (p == Polarity::kHigherIsWorse)) ? Direction::kWorse : Direction::kBetter;
  return c;
}

std::string signedValue(double v, const std::string& unit) {
  std::string s = formatValue(std::fabs(v), unit);
  return (v > 0 ? "+" : v < 0 ? "-" : "") + s;
}

std::string relative(const FigureChange& c) {
  if (c.absoluteChange == 0) return "0 %";
  if (!c.relativeChange) return "from 0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", *c.relativeChange * 100);
  return buf;
}

// Short, so the table fits a terminal; the tolerances are spelled out under it.
std::string verdict(const FigureChange& c) {
  if (!c.crossedTolerance) return "within";
  if (c.direction == Direction::kNeutral) return "moved";
  return c.direction == Direction::kWorse ? "WORSE" : "better";
}

std::string value(const std::optional<double>& v, const FigureChange& c, bool present) {
  if (!present) return "-";
  return v ? formatValue(*v, c.unit) : "unavailable";
}

bool presentIn(const FigureChange& c, char side) {
  return !(c.notComparableReason == (side == 'A' ? "only in B" : "only in A"));
}

// Reasons a figure could not be compared, numbered under the table.
using Notes = NumberedNotes;

std::string displayKey(const FigureChange& c, bool shortened, const std::vector<std::string>& ambiguous) {
  metrics::Figure f;
  f.name = c.name;
  f.labels = c.labels;
  bool keepGroup =
      std::find(ambiguous.begin(), ambiguous.end(), metrics::labelValue(c.labels, "resource")) != ambiguous.end();
  std::string key = shortened ? shortKey(f, keepGroup) : c.key;
  return key + (c.window == metrics::Window::kSteady ? "" : " [" + std::string(metrics::toString(c.window)) + "]");
}

std::vector<std::string> row(const FigureChange& c, bool shortened, const std::vector<std::string>& ambiguous,
                             Notes& notes) {
  std::string key = displayKey(c, shortened, ambiguous);
  if (!c.comparable)
    return {std::move(key),
            value(c.a, c, presentIn(c, 'A')),
            value(c.b, c, presentIn(c, 'B')),
            "",
            "",
            "n/a " + notes.mark(c.notComparableReason)};
  return {std::move(key),
          formatValue(*c.a, c.unit),
          formatValue(*c.b, c.unit),
          signedValue(c.absoluteChange, c.unit),
          relative(c),
          verdict(c)};
}

const std::vector<std::string> kHeader{"figure", "A", "B", "change", "relative", "verdict"};
const std::vector<bool> kRight{false, true, true, true, true, false};

std::string table(const std::vector<const FigureChange*>& changes, bool shortened,
                  const std::vector<std::string>& ambiguous = {}) {
  Notes notes;
  std::vector<std::vector<std::string>> rows;
  for (const FigureChange* ch : changes) rows.push_back(row(*ch, shortened, ambiguous, notes));
  return markdownTable(kHeader, rows, kRight, kSummaryColumns) + notes.render();
}

struct Counts {
  std::size_t comparable = 0, crossed = 0, worse = 0, better = 0, notComparable = 0;
};

Counts count(const Comparison& cmp, bool headline) {
  Counts n;
  for (const auto& c : cmp.changes) {
    if (c.headline() != headline) continue;
    if (!c.comparable) {
      ++n.notComparable;
      continue;
    }
    ++n.comparable;
    if (!c.crossedTolerance) continue;
    ++n.crossed;
    n.worse += c.direction == Direction::kWorse;
    n.better += c.direction == Direction::kBetter;
  }
  return n;
}

std::string countsText(const Counts& n) {
  std::ostringstream s;
  s << n.crossed << " of " << n.comparable << " moved beyond tolerance (" << n.worse << " worse, " << n.better
    << " better)";
  if (n.notComparable) s << ", " << n.notComparable << " not comparable";
  return s.str();
}

std::string verdictLine(const Comparison& c) {
  Counts h = count(c, true), d = count(c, false);
  std::string s = "Headline: " + countsText(h) + ". Details: " + countsText(d) + ". ";
  if (h.comparable + h.notComparable == 0) return s + "No headline figures to compare: no regression.";
  return s + (c.regressed() ? "B is worse than A." : "No regression in the headline.");
}

// `heading` renders a section title: "### x" in Markdown, "x:" in a terminal.
std::string body(const Comparison& c, const std::function<std::string(const std::string&)>& heading) {
  std::string out;
  std::vector<std::string> sections;
  for (const auto& ch : c.changes)
    if (ch.headline() && std::find(sections.begin(), sections.end(), ch.section) == sections.end())
      sections.push_back(ch.section);
  if (sections.empty()) out += heading("Headline") + "No headline figures in either result.\n\n";
  // The group is shown only where a resource name alone would be ambiguous.
  std::vector<metrics::Figure> labelled;
  for (const auto& ch : c.changes) {
    labelled.emplace_back();
    labelled.back().labels = ch.labels;
  }
  std::vector<std::string> ambiguous = ambiguousResourceNames(labelled);
  for (const auto& sec : sections) {
    std::vector<const FigureChange*> in;
    for (const auto& ch : c.changes)
      if (ch.section == sec) in.push_back(&ch);
    out += heading("Headline, " + sec) + table(in, true, ambiguous) + "\n";
  }
  std::vector<const FigureChange*> moved, notComparable;
  // Figures one run has and the other lacks entirely (a replica more, a workload less)
  // are counted by name, not listed one by one: hundreds of rows would bury the rest.
  std::map<std::string, std::vector<std::string>> onlyIn;  // "A"/"B" -> names, first-seen order
  std::map<std::string, std::size_t> onlyCount;
  std::size_t within = 0;
  for (const auto& ch : c.changes) {
    if (ch.headline()) continue;
    if (ch.notComparableReason == "only in A" || ch.notComparableReason == "only in B") {
      std::string side = ch.notComparableReason.substr(8);
      ++onlyCount[side];
      auto& names = onlyIn[side];
      if (std::find(names.begin(), names.end(), ch.name) == names.end()) names.push_back(ch.name);
    } else if (!ch.comparable) {
      notComparable.push_back(&ch);
    } else if (ch.crossedTolerance) {
      moved.push_back(&ch);
    } else {
      ++within;
    }
  }
  if (!moved.empty()) out += heading("Details beyond tolerance") + table(moved, false) + "\n";
  if (!notComparable.empty()) out += heading("Details not comparable") + table(notComparable, false) + "\n";
  for (const auto& [side, names] : onlyIn) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    std::size_t n = onlyCount[side];
    out += wrapText(std::to_string(n) + (n == 1 ? " other figure" : " other figures") + " only in " + side + ", of " +
                        std::to_string(names.size()) + (names.size() == 1 ? " name: " : " names: ") + list + ".",
                    kSummaryColumns, "") +
           "\n";
  }
  if (within)
    out += wrapText(std::to_string(within) + (within == 1 ? " other figure" : " other figures") +
                        " stayed within tolerance.",
                    kSummaryColumns, "") +
           "\n";
  return out;
}

std::string tolerancesText(const CompareOptions& t) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "A figure moved when it changed by more than %.0f %% and by more than its noise: %.0f events over "
                "its window for rates and counts, %s for latencies, %g percentage point%s for shares.",
                t.relativeTolerance * 100, t.minEvents, formatValue(t.latencyFloorSeconds, "s").c_str(),
                t.ratioFloor * 100, t.ratioFloor == 0.01 ? "" : "s");
  return buf;
}

}  // namespace

Comparison compareResults(const result::RunResult& a, const result::RunResult& b, const CompareOptions& o) {
  Comparison c;
  c.aName = a.runId;
  c.bName = b.runId;
  // A figure is in the headline when it is in either run's: a resource B started
  // writing, or one A wrote and B no longer does, is exactly what the reader must see.
  struct Entry {
    const Figure* figure;
    std::string section;
  };
  std::vector<Entry> marked;
  for (const result::RunResult* r : {&a, &b}) {
    Headline h = headline(*r);
    for (const Figure* f : h.writes) marked.push_back({f, "writes"});
    for (const auto& ax : h.axes)
      for (const Figure* f : ax.figures.figures) marked.push_back({f, std::string(toString(ax.axis))});
    for (const Figure* f : h.setup.figures) marked.push_back({f, "setup"});
  }
  auto sectionOf = [&](const Figure& f) -> std::string {
    for (const auto& e : marked)
      if (e.figure->name == f.name && e.figure->labels == f.labels && e.figure->window == f.window) return e.section;
    return "";
  };
  auto seconds = [&](metrics::Window w) {
    double sa = windowSeconds(a, w), sb = windowSeconds(b, w);
    return sa > 0 && sb > 0 ? std::min(sa, sb) : std::max(sa, sb);
  };
  std::vector<FigureChange> all;
  for (const Figure& fa : a.figures) all.push_back(change(&fa, find(b.figures, fa), o, seconds(fa.window)));
  for (const Figure& fb : b.figures)
    if (!find(a.figures, fb)) all.push_back(change(nullptr, &fb, o, seconds(fb.window)));
  for (auto& ch : all) {
    metrics::Figure like;
    like.name = ch.name;
    like.labels = ch.labels;
    like.window = ch.window;
    ch.section = sectionOf(like);
  }
  // Headline first, in the order a summary reads (writes, axes, setup); then details.
  static const std::vector<std::string> kOrder{"writes", "node-bound", "churn-bound", "state-bound", "setup"};
  auto rank = [](const FigureChange& ch) {
    auto it = std::find(kOrder.begin(), kOrder.end(), ch.section);
    return ch.section.empty() ? kOrder.size() : static_cast<std::size_t>(it - kOrder.begin());
  };
  std::stable_sort(all.begin(), all.end(), [&](const auto& x, const auto& y) { return rank(x) < rank(y); });
  c.changes = std::move(all);
  c.options = o;
  return c;
}

std::string renderComparisonText(const Comparison& c) {
  std::ostringstream out;
  out << "A: " << c.aName << "\nB: " << c.bName << "\n\n";
  // markdownTable's padding is what makes the text line up; the pipes double as
  // column rules in a terminal.
  out << body(c, [](const std::string& h) { return h + ":\n\n"; });
  out << wrapText(tolerancesText(c.options), kSummaryColumns, "") << "\n";
  out << wrapText(verdictLine(c), kSummaryColumns, "");
  return out.str();
}

std::string renderComparisonMarkdown(const Comparison& c, std::string_view title) {
  std::ostringstream out;
  out << "## " << title << "\n\n";
  out << wrapText("A is " + c.aName + ", B is " + c.bName + ". " + verdictLine(c), kSummaryColumns, "") << "\n";
  out << body(c, [](const std::string& h) { return "### " + h + "\n\n"; });
  out << wrapText(tolerancesText(c.options), kSummaryColumns, "");
  return out.str();
}

}  // namespace cpscale::reports
