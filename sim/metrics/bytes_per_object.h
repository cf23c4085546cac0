// What one more resident object costs a kube-apiserver's heap: the least-squares slope
// of heap in use against the object count over a population ramp, for the whole
// population and per kind of object (one ramp per kind, marked by the dormant
// workload). A slope is only shown when the ramp and the fit can carry it: otherwise
// the figure is unavailable with the reason and the numbers behind it, never a number
// that merely looks precise.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/scrape_history.h"

namespace cpscale::metrics {

// Heap in use right after a forced garbage collection, as the Scraper records it from
// the target's heap profile (ScrapeTarget::heapProfilePath) into the same scrape row
// as /metrics. Without it the fit reads go_memstats_heap_inuse_bytes, which also holds
// whatever garbage the last collection left.
inline constexpr std::string_view kHeapInuseAfterGc = "cpscale_heap_inuse_after_gc_bytes";
inline constexpr std::string_view kHeapInuse = "go_memstats_heap_inuse_bytes";

struct BytesPerObjectOptions {
  // Fewer scrapes than this make the fit meaningless (and at least 3 are needed for a
  // confidence interval: the t distribution has n - 2 degrees of freedom).
  std::size_t minPoints = 5;
  // The ramp must add at least minRampObjects objects AND at least minRampFraction of
  // the count at the end of the window. Below the first, the heap the ramp adds (500
  // ConfigMaps of 2 KiB: ~2 MB) drowns in the heap's own noise; below the second, a
  // small ramp on a large resident population measures the population's noise, not
  // the ramp (a 112-object ramp once gave 111 KB per object).
  double minRampObjects = 500;
  double minRampFraction = 0.2;
  // A fit explaining less of the heap's variance than this is not a per-object cost
  // (a fit at r2 0.02 once gave -4.6 KiB per object).
  double minR2 = 0.9;
  // Of the slope's two-sided confidence interval (Student's t, n - 2 degrees of freedom).
  double confidence = 0.95;
  // The population ramp: only scrapes within [from, to] are used when set.
  std::optional<engine::TimePoint> from;
  std::optional<engine::TimePoint> to;
};

// Per apiserver, the fit of heap in use (post-GC when the scrapes carry it in enough
// points, else go_memstats_heap_inuse_bytes; label `heap` names which) against the
// total object count (apiserver_resource_objects, or the deprecated
// apiserver_storage_objects), labels {apiserver, heap}:
//   bytes_per_object (slope), bytes_per_object_ci_low/_ci_high (its confidence
//   interval), heap_base_bytes (intercept): unavailable, with the reason and numbers,
//   for too few points, an object count that did not change, a ramp below
//   minRampObjects / minRampFraction, or r2 below minR2;
//   bytes_per_object_r2 and bytes_per_object_points: measured whenever a line could be
//   fitted, so a rejected fit still shows why.
// Plus bytes_per_object_all_replicas (no labels): the sum of the slopes, what one more
// object costs the control plane when every replica caches it; unavailable unless
// every replica's slope is.
std::vector<Figure> bytesPerObjectFigures(std::span<const TargetScrapes> targets,
                                          const BytesPerObjectOptions& options = {});

// One kind's creation ramp: within [start, end] the population grew by objects of this
// (group, resource) only (the dormant workload creates kinds one after the other and
// marks each as the phase "ramp/<workload>/<kind>").
struct KindRamp {
  std::string workload;
  std::string group;     // "" for the core group
  std::string resource;  // "configmaps", "widgets"
  engine::TimePoint start{};
  engine::TimePoint end{};
  // "configmaps", "op0.dormant.cpscale.io/widgets": the `kind` label of the figures.
  std::string kind() const;
};

// The phase name the dormant workload marks a kind's ramp with:
// "ramp/<workload>/configmaps", "ramp/<workload>/op0.dormant.cpscale.io/widgets".
std::string kindRampPhase(std::string_view workload, std::string_view group, std::string_view resource);
// The ramp a phase of that form describes; nullopt for any other phase name (the
// whole-population "ramp/<workload>", "setup", ...).
std::optional<KindRamp> kindRampFromPhase(std::string_view phase, engine::TimePoint start, engine::TimePoint end);

// Per ramp and apiserver, the fit of heap in use against that kind's object count
// (apiserver_resource_objects{group, resource}) over the scrapes within the ramp,
// labels {apiserver, heap, kind, workload}: bytes_per_object, _ci_low, _ci_high,
// _r2, _points, with the same rules as bytesPerObjectFigures (the ramp fraction is of
// the kind's own count). A ramp with fewer than minPoints scrapes is unavailable with
// the advice to lower the workload's createQps or shorten the scrape interval.
std::vector<Figure> bytesPerKindFigures(std::span<const TargetScrapes> targets, std::span<const KindRamp> ramps,
                                        const BytesPerObjectOptions& options = {});

}  // namespace cpscale::metrics
