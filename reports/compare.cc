#include "reports/compare.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/format.h"
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
      starts("etcd_") || name == "client_errors" || starts("scrape_failures") || starts("scrape_overruns") ||
      starts("apiserver_watch_events"))
    return Polarity::kHigherIsWorse;
  return Polarity::kNeutral;
}

bool Comparison::regressed() const {
  for (const auto& c : changes)
    if (c.comparable && c.crossedTolerance && c.direction == Direction::kWorse) return true;
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
    if (f.name == like.name && f.labels == like.labels) return &f;
  return nullptr;
}

FigureChange change(const Figure* fa, const Figure* fb, const CompareOptions& o) {
  const Figure& any = fa ? *fa : *fb;
  FigureChange c;
  c.key = figureKey(any);
  c.name = any.name;
  c.labels = any.labels;
  c.unit = any.unit;
  c.tolerance = toleranceFor(o, c.key, c.name);
  if (fa) c.a = fa->value;
  if (fb) c.b = fb->value;
  if (!fa) c.notComparableReason = "only in B";
  else if (!fb) c.notComparableReason = "only in A";
  else if (!fa->available() && !fb->available())
    c.notComparableReason = "unavailable in A (" + fa->unavailableReason + ") and in B (" + fb->unavailableReason + ")";
  else if (!fa->available()) c.notComparableReason = "unavailable in A: " + fa->unavailableReason;
  else if (!fb->available()) c.notComparableReason = "unavailable in B: " + fb->unavailableReason;
  else if (!std::isfinite(*fa->value) || !std::isfinite(*fb->value)) c.notComparableReason = "not a finite number";
  if (!c.notComparableReason.empty()) return c;

  c.comparable = true;
  double a = *c.a, b = *c.b;
  c.absoluteChange = b - a;
  if (a != 0) {
    c.relativeChange = (b - a) / std::fabs(a);
    c.crossedTolerance = std::fabs(*c.relativeChange) > c.tolerance;
  } else {
    c.crossedTolerance = b != 0;
  }
  Polarity p = polarityOf(c.name, c.labels);
  if (b == a || p == Polarity::kNeutral) c.direction = Direction::kNeutral;
  else c.direction = ((b > a) == (p == Polarity::kHigherIsWorse)) ? Direction::kWorse : Direction::kBetter;
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

std::string verdict(const FigureChange& c) {
  char tol[32];
  std::snprintf(tol, sizeof tol, "%.0f %%", c.tolerance * 100);
  if (!c.crossedTolerance) return "within " + std::string(tol);
  if (c.direction == Direction::kNeutral) return "changed beyond " + std::string(tol);
  return std::string(c.direction == Direction::kWorse ? "WORSE" : "better") + " beyond " + tol;
}

struct Rows {
  std::vector<std::vector<std::string>> crossed, within, notComparable;
  std::size_t worse = 0, better = 0;
};

Rows rows(const Comparison& c) {
  Rows r;
  for (const auto& ch : c.changes) {
    if (!ch.comparable) {
      r.notComparable.push_back({ch.key, ch.a ? formatValue(*ch.a, ch.unit) : "-", ch.b ? formatValue(*ch.b, ch.unit) : "-",
                                 ch.notComparableReason});
      continue;
    }
    std::vector<std::string> row{ch.key,         formatValue(*ch.a, ch.unit), formatValue(*ch.b, ch.unit),
                                 signedValue(ch.absoluteChange, ch.unit), relative(ch), verdict(ch)};
    if (ch.crossedTolerance) {
      r.worse += ch.direction == Direction::kWorse;
      r.better += ch.direction == Direction::kBetter;
      r.crossed.push_back(std::move(row));
    } else {
      r.within.push_back(std::move(row));
    }
  }
  return r;
}

std::string verdictLine(const Comparison& c, const Rows& r) {
  std::ostringstream s;
  s << r.crossed.size() << " of " << (r.crossed.size() + r.within.size()) << " comparable figures moved beyond tolerance ("
    << r.worse << " worse, " << r.better << " better), " << r.notComparable.size() << " not comparable: "
    << (c.regressed() ? "B is worse than A." : "no regression.");
  return s.str();
}

const std::vector<std::string> kHeader{"figure", "A", "B", "change", "relative", "verdict"};
const std::vector<bool> kRight{false, true, true, true, true, false};

}  // namespace

Comparison compareResults(const RunResult& a, const RunResult& b, const CompareOptions& o) {
  Comparison c;
  c.aName = a.runId;
  c.bName = b.runId;
  for (const Figure& fa : a.figures) c.changes.push_back(change(&fa, find(b.figures, fa), o));
  for (const Figure& fb : b.figures)
    if (!find(a.figures, fb)) c.changes.push_back(change(nullptr, &fb, o));
  return c;
}

std::string renderComparisonText(const Comparison& c) {
  Rows r = rows(c);
  std::ostringstream out;
  out << "A: " << c.aName << "\nB: " << c.bName << "\n\n";
  // markdownTable's padding is what makes the text line up; the pipes double as
  // column rules in a terminal.
  if (!r.crossed.empty()) out << "Beyond tolerance:\n" << markdownTable(kHeader, r.crossed, kRight) << "\n";
  if (!r.within.empty()) out << "Within tolerance:\n" << markdownTable(kHeader, r.within, kRight) << "\n";
  if (!r.notComparable.empty())
    out << "Not comparable:\n" << markdownTable({"figure", "A", "B", "reason"}, r.notComparable, {false, true, true, false}) << "\n";
  out << verdictLine(c, r) << "\n";
  return out.str();
}

std::string renderComparisonMarkdown(const Comparison& c, std::string_view title) {
  Rows r = rows(c);
  std::ostringstream out;
  out << "## " << title << "\n\n";
  out << "A is " << c.aName << ", B is " << c.bName << ". " << verdictLine(c, r) << "\n\n";
  std::vector<std::vector<std::string>> all = r.crossed;
  all.insert(all.end(), r.within.begin(), r.within.end());
  if (!all.empty()) out << markdownTable(kHeader, all, kRight) << "\n";
  if (!r.notComparable.empty())
    out << "Not comparable:\n\n" << markdownTable({"figure", "A", "B", "reason"}, r.notComparable, {false, true, true, false})
        << "\n";
  return out.str();
}

}  // namespace cpscale::reports
