#include "sim/metrics/bytes_per_object.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include <boost/math/distributions/students_t.hpp>

namespace cpscale::metrics {

namespace {

std::string num(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The (object count, heap) pairs of one target over a window, from one heap source.
struct Points {
  std::vector<double> x, y;
  std::string_view heap;  // the heap sample used
};

// Rows within [from, to] that have a heap value and at least one object-count value,
// x summed over `objIds`. Prefers heap after GC when it is in at least `minPoints` of
// those rows: mixing the two sources would fit the difference between them.
Points collect(const ScrapeHistory& h, const std::vector<ScrapeHistory::SeriesId>& objIds,
               std::optional<engine::TimePoint> from, std::optional<engine::TimePoint> to, std::size_t minPoints) {
  auto gather = [&](std::string_view heapName) {
    Points p;
    p.heap = heapName;
    const auto& heapIds = h.seriesNamed(heapName);
    if (heapIds.empty()) return p;
    for (std::size_t r = 0; r < h.scrapes(); ++r) {
      if ((from && h.time(r) < *from) || (to && h.time(r) > *to)) continue;
      auto heap = h.value(r, heapIds.front());
      if (!heap) continue;
      double objects = 0;
      bool any = false;
      for (auto id : objIds) {
        if (auto v = h.value(r, id)) {
          objects += *v;
          any = true;
        }
      }
      if (!any) continue;
      p.x.push_back(objects);
      p.y.push_back(*heap);
    }
    return p;
  };
  Points afterGc = gather(kHeapInuseAfterGc);
  if (!afterGc.x.empty() && afterGc.x.size() >= minPoints) return afterGc;
  return gather(kHeapInuse);
}

// A fitted slope with its confidence interval, or why it cannot be trusted. `line` is
// set whenever a line could be fitted at all (r2 and n are then worth showing).
struct Estimate {
  std::optional<LinearFit> line;
  double ciLow = 0, ciHigh = 0;
  std::string why;  // empty: the slope is trustworthy
};

Estimate estimate(const Points& p, const BytesPerObjectOptions& o, const std::string& who) {
  Estimate e;
  const std::size_t needed = std::max<std::size_t>(o.minPoints, 3);
  if (p.x.size() < needed) {
    e.why = who + ": " + std::to_string(p.x.size()) +
            " scrape(s) with both heap and object counts in the window; the fit needs " + std::to_string(needed);
    return e;
  }
  e.line = fitLine(p.x, p.y);
  if (!e.line) {
    e.why = who + ": the object count did not change in the window, so there is no population ramp to fit";
    return e;
  }
  const auto [lo, hi] = std::minmax_element(p.x.begin(), p.x.end());
  const double added = *hi - *lo;
  const double final = p.x.back();
  if (added < o.minRampObjects || added < o.minRampFraction * final) {
    e.why = who + ": the ramp added " + num(added) + " objects (" + num(*lo) + " to " + num(*hi) +
            "); a per-object cost needs at least " + num(o.minRampObjects) + " added and at least " +
            num(100 * o.minRampFraction) + "% of the final count (" + num(final) + ")";
    return e;
  }
  if (e.line->r2 < o.minR2) {
    e.why = who + ": the fit explains too little of the heap's variation (r2 " + num(e.line->r2, 2) + " < " +
            num(o.minR2, 2) + " over " + std::to_string(p.x.size()) + " points; the slope would be " +
            num(e.line->slope) + " bytes/object)" +
            (p.heap == kHeapInuse ? "; heap after GC (scrape target heapProfilePath) removes most garbage noise" : "");
    return e;
  }
  // The slope's standard error from the residuals, with n - 2 degrees of freedom.
  const auto n = static_cast<double>(p.x.size());
  double mx = 0;
  for (double v : p.x) mx += v;
  mx /= n;
  double sxx = 0, ssres = 0;
  for (std::size_t i = 0; i < p.x.size(); ++i) {
    sxx += (p.x[i] - mx) * (p.x[i] - mx);
    const double r = p.y[i] - (e.line->slope * p.x[i] + e.line->intercept);
    ssres += r * r;
  }
  const double se = std::sqrt(ssres / (n - 2) / sxx);
  boost::math::students_t dist(n - 2);
  const double t = boost::math::quantile(boost::math::complement(dist, (1 - o.confidence) / 2));
  e.ciLow = e.line->slope - t * se;
  e.ciHigh = e.line->slope + t * se;
  return e;
}

// The figures of one estimate, named bytes_per_object*, with `labels` (plus heap).
void emit(std::vector<Figure>& out, const Estimate& e, const Points& p, Labels labels, Window window, bool withBase) {
  labels.push_back(Label{"heap", std::string(p.heap)});
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  auto add = [&](Figure f) {
    f.window = window;
    out.push_back(std::move(f));
  };
  if (e.why.empty()) {
    add(Figure::measured("bytes_per_object", labels, e.line->slope, "bytes", Source::kApiserver));
    add(Figure::measured("bytes_per_object_ci_low", labels, e.ciLow, "bytes", Source::kApiserver));
    add(Figure::measured("bytes_per_object_ci_high", labels, e.ciHigh, "bytes", Source::kApiserver));
    if (withBase) add(Figure::measured("heap_base_bytes", labels, e.line->intercept, "bytes", Source::kApiserver));
  } else {
    for (const char* n : {"bytes_per_object", "bytes_per_object_ci_low", "bytes_per_object_ci_high"}) {
      add(Figure::unavailable(n, labels, "bytes", Source::kApiserver, e.why));
    }
    if (withBase) add(Figure::unavailable("heap_base_bytes", labels, "bytes", Source::kApiserver, e.why));
  }
  if (e.line) {
    add(Figure::measured("bytes_per_object_r2", labels, e.line->r2, "ratio", Source::kApiserver));
    add(Figure::measured("bytes_per_object_points", labels, static_cast<double>(e.line->points), "count",
                         Source::kApiserver));
  } else {
    add(Figure::unavailable("bytes_per_object_r2", labels, "ratio", Source::kApiserver, e.why));
    add(Figure::measured("bytes_per_object_points", labels, static_cast<double>(p.x.size()), "count",
                         Source::kApiserver));
  }
}

std::string unscraped(const TargetScrapes& t) {
  if (t.status.attempts == 0) return "kube-apiserver " + t.info.name + " was never scraped";
  return "kube-apiserver " + t.info.name + " never answered a scrape (" + std::to_string(t.status.failures) +
         " failed; last error: " + t.status.lastError + ")";
}

}  // namespace

std::vector<Figure> bytesPerObjectFigures(std::span<const TargetScrapes> targets,
                                          const BytesPerObjectOptions& options) {
  std::vector<Figure> out;
  const Window window = options.from || options.to ? Window::kSetup : Window::kRun;
  std::string allWhy;
  double allSlope = 0;
  bool anyApiserver = false;
  for (const TargetScrapes& t : targets) {
    if (t.info.role != TargetRole::kApiserver) continue;
    anyApiserver = true;
    const ScrapeHistory& h = t.history;
    const std::string who = "kube-apiserver " + t.info.name;
    Labels self = sortedLabels({{"apiserver", t.info.name}});
    const auto& objIds = h.seriesNamed(objectCountMetric(h));
    Points p = collect(h, objIds, options.from, options.to, options.minPoints);
    Estimate e;
    if (h.scrapes() == 0) {
      e.why = unscraped(t);
    } else if (h.seriesNamed(kHeapInuse).empty() && h.seriesNamed(kHeapInuseAfterGc).empty()) {
      e.why = std::string(kHeapInuse) + " is not exposed by " + who;
    } else if (objIds.empty()) {
      e.why = "apiserver_resource_objects is not exposed by " + who;
    } else {
      e = estimate(p, options, who);
    }
    emit(out, e, p, self, window, true);
    if (e.why.empty()) {
      allSlope += e.line->slope;
    } else {
      allWhy += (allWhy.empty() ? "" : "; ") + e.why;
    }
  }
  if (!anyApiserver) allWhy = "no kube-apiserver target was scraped";
  // What one more object costs the whole control plane: every replica caches it.
  Figure all = allWhy.empty()
                   ? Figure::measured("bytes_per_object_all_replicas", {}, allSlope, "bytes", Source::kApiserver)
                   : Figure::unavailable("bytes_per_object_all_replicas", {}, "bytes", Source::kApiserver, allWhy);
  all.window = window;
  out.push_back(std::move(all));
  return out;
}

std::string KindRamp::kind() const { return group.empty() ? resource : group + "/" + resource; }

std::string kindRampPhase(std::string_view workload, std::string_view group, std::string_view resource) {
  std::string s = "ramp/" + std::string(workload) + "/";
  if (!group.empty()) s += std::string(group) + "/";
  return s + std::string(resource);
}

std::optional<KindRamp> kindRampFromPhase(std::string_view phase, engine::TimePoint start, engine::TimePoint end) {
  constexpr std::string_view kPrefix = "ramp/";
  if (!phase.starts_with(kPrefix)) return std::nullopt;
  phase.remove_prefix(kPrefix.size());
  const auto slash = phase.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;  // "ramp/<workload>": the whole population
  KindRamp r;
  r.workload = std::string(phase.substr(0, slash));
  std::string_view kind = phase.substr(slash + 1);
  const auto last = kind.rfind('/');
  if (last == std::string_view::npos) {
    r.resource = std::string(kind);
  } else {
    r.group = std::string(kind.substr(0, last));
    r.resource = std::string(kind.substr(last + 1));
  }
  if (r.resource.empty() || (last != std::string_view::npos && r.group.empty())) return std::nullopt;
  r.start = start;
  r.end = end;
  return r;
}

std::vector<Figure> bytesPerKindFigures(std::span<const TargetScrapes> targets, std::span<const KindRamp> ramps,
                                        const BytesPerObjectOptions& options) {
  std::vector<Figure> out;
  for (const KindRamp& ramp : ramps) {
    for (const TargetScrapes& t : targets) {
      if (t.info.role != TargetRole::kApiserver) continue;
      const ScrapeHistory& h = t.history;
      const std::string who = "kube-apiserver " + t.info.name + ", ramp of " + ramp.kind();
      Labels self = sortedLabels({{"apiserver", t.info.name}, {"kind", ramp.kind()}, {"workload", ramp.workload}});
      std::vector<ScrapeHistory::SeriesId> objIds;
      for (auto id : h.seriesNamed(objectCountMetric(h))) {
        if (objectKind(h.key(id)) == std::make_pair(ramp.group, ramp.resource)) objIds.push_back(id);
      }
      Points p = collect(h, objIds, ramp.start, ramp.end, options.minPoints);
      Estimate e;
      const std::size_t needed = std::max<std::size_t>(options.minPoints, 3);
      if (h.scrapes() == 0) {
        e.why = unscraped(t);
      } else if (h.seriesNamed(kHeapInuse).empty() && h.seriesNamed(kHeapInuseAfterGc).empty()) {
        e.why = std::string(kHeapInuse) + " is not exposed by kube-apiserver " + t.info.name;
      } else if (objIds.empty()) {
        e.why = who + ": apiserver_resource_objects has no series for " + ramp.kind();
      } else if (p.x.size() < needed) {
        e.why = who + ": the ramp lasted " + num(seconds(ramp.end - ramp.start), 1) + " s and holds " +
                std::to_string(p.x.size()) + " scrape(s); the fit needs " + std::to_string(needed) +
                ": lower the workload's createQps or shorten the scrape interval so each kind's ramp spans more "
                "scrapes";
      } else {
        e = estimate(p, options, who);
      }
      emit(out, e, p, self, Window::kSetup, false);
    }
  }
  return out;
}

}  // namespace cpscale::metrics
