// The figures a report shows, derived from scrapes (and, in client_figures.h, from the
// generator's own histograms). Every figure names its source, and one that cannot be
// measured carries no number at all, only the reason: nothing here is filled in from
// configuration or defaulted to 0.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/metrics/prometheus_text.h"
#include "sim/metrics/scrape_history.h"
#include "sim/metrics/time_series.h"

namespace cpscale::metrics {

enum class Source { kClient, kApiserver, kEtcd, kControllerManager, kScheduler, kModel };
// "client", "apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "model".
std::string_view toString(Source s);

// The part of the run a figure describes. kSteady: the measured steady-state window
// (`duration`, after setup), which the headline and the gates read; kSetup: the
// setup/ramp phase (registration, population creation, watchers syncing), where
// bytes_per_object is fitted; kRun: the whole run (scrape health, generator totals).
enum class Window { kSteady, kSetup, kRun };
std::string_view toString(Window w);  // "steady" | "setup" | "run"

struct Figure {
  std::string name;             // e.g. "write_qps", "apiserver_heap_inuse_bytes"
  Labels labels;                // e.g. {group, resource, verb} or {apiserver}; sorted by name
  std::optional<double> value;  // nullopt: unavailable
  std::string unit;             // "1/s", "bytes", "ratio", "s", "objects", "count"
  Source source = Source::kApiserver;
  Window window = Window::kSteady;
  std::string unavailableReason;  // set exactly when !value
  TimeSeries overTime;            // empty for a figure that is one number

  bool available() const { return value.has_value(); }
  static Figure measured(std::string name, Labels labels, double value, std::string unit, Source source,
                         TimeSeries overTime = {});
  static Figure unavailable(std::string name, Labels labels, std::string unit, Source source, std::string reason);
};

// The first figure with this name whose labels include every given (name, value);
// nullptr if none. For tests and renderers.
const Figure* findFigure(std::span<const Figure> figures, std::string_view name, const Labels& labels = {});

// Verbs of apiserver_request_total that change state. APPLY is how the apiserver
// reports a server-side-apply PATCH, so it is a write too.
bool isWriteVerb(std::string_view verb);

// The class of an HTTP status code as apiserver_request_total's `code` label holds it:
// "2xx" for "201"; "unknown" for a missing or malformed code.
std::string statusClass(std::string_view code);

// write_qps{group,resource,verb} (mean over the scraped window, with the rate over
// time) and write_requests{...} (count), summed across every apiserver, from
// apiserver_request_total deltas; resource includes the subresource ("nodes/status").
// Only writes that reached storage count: code 2xx, not dry-run. Also write_qps{} and
// write_requests{} over all of them. Beside them, every write by status class:
// write_qps_by_class{code_class} (2xx, 3xx, 4xx, 5xx always, others when seen; with the
// rate over time), and the writes the apiserver answered with another code:
// rejected_write_qps{} (over time too), rejected_write_requests{} and
// rejected_write_requests{code} per code.
std::vector<Figure> writeFigures(std::span<const TargetScrapes> targets);

// Per apiserver, from its apiserver_request_total deltas, so a report can show how the
// load spreads over the replicas: apiserver_requests{apiserver} (every request but the
// long-running WATCH/WATCHLIST/CONNECT, reads included, any code),
// apiserver_request_qps{apiserver} and apiserver_write_qps{apiserver} (writes as in
// write_qps: 2xx, not dry-run), per second over the window of all apiservers (so the
// replicas' write rates add up to write_qps{}) and over time, and
// apiserver_long_running_requests{apiserver} (WATCH/WATCHLIST/CONNECT requests that
// ended in the window).
std::vector<Figure> apiserverRequestFigures(std::span<const TargetScrapes> targets);

// lease_write_share: writes to coordination.k8s.io/leases over all writes (both as in
// write_qps: 2xx, not dry-run), over the window and over time (apiserver source).
// etcd_lease_proposal_share: proposals committed by etcd clusters that hold only
// leases over proposals of all clusters; unavailable unless leases have an etcd of
// their own and every cluster answered.
std::vector<Figure> leaseShareFigures(std::span<const TargetScrapes> targets);

// How figures summed across replicas treat a replica that stops answering.
struct ReplicaOptions {
  // A replica that missed this many scrape rounds in a row (rounds in which another
  // target answered) drops out of the _all_replicas sums from the last of them on,
  // and its own figures get a stopped_answering_at label (the run time of the first
  // round it missed, "45s"). 0: never drop one (its last value carries forward).
  std::size_t staleAfterMissedScrapes = 2;
};

// Per apiserver: heap in use (go_memstats_heap_inuse_bytes), the heap in use right
// after a forced GC where the scraper read it from the heap profile
// (apiserver_heap_inuse_after_gc_bytes, cpscale_heap_inuse_after_gc_bytes: the local
// plane; otherwise one unavailable figure says so) and RSS
// (process_resident_memory_bytes), last value and peak, over time; their totals across
// apiserver replicas (without the replicas that stopped answering, see
// ReplicaOptions); objects per (group, resource) (apiserver_resource_objects, or
// the deprecated apiserver_storage_objects when it is all there is); watch-cache
// capacity and event rates (apiserver_watch_cache_*, watch_cache_capacity,
// apiserver_watch_events_total).
std::vector<Figure> apiserverMemoryFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas = {});

// (Then bytesPerObjectFigures, in sim/metrics/bytes_per_object.h.)

// Per kube-apiserver and etcd member, the CPU its process used, in cores: the rate of
// process_cpu_seconds_total over the window (and per scrape interval over time):
// apiserver_cpu_cores{apiserver} and etcd_cpu_cores{etcd, cluster}, with their sums
// apiserver_cpu_cores_all_replicas{} and etcd_cpu_cores_all_replicas{} over the
// window of all the role's targets (unavailable unless every target's is measured).
// A role without targets (a user's etcd), a target with fewer than two scrapes or
// without the family: unavailable, with the reason.
std::vector<Figure> cpuFigures(std::span<const TargetScrapes> targets);

// Per etcd member: proposals committed per second, db size and in-use size (last and
// peak), keys, lease renewals per second and in total, has_leader, and the mean WAL
// fsync over the window (etcd_wal_fsync_seconds_mean, from
// etcd_disk_wal_fsync_duration_seconds' _sum and _count). Without an etcd
// target (a user's cluster whose etcd is not reachable) each figure is present but
// unavailable, with that reason.
std::vector<Figure> etcdFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas = {});

// Server-side latency per (group, resource, verb) from apiserver_request_duration_seconds
// buckets: the increase of each bucket over the window, summed across apiservers, then
// histogramQuantile for p50/p90/p99/p99.9, and max as the upper bound of the highest
// bucket that received an observation. Names: server_latency_p50, ... , _max (s).
std::vector<Figure> serverLatencyFigures(std::span<const TargetScrapes> targets);

// Scrape health per target: scrape_attempts, scrape_failures, and (as an unavailable
// figure carrying the reason) scrape_last_error when the target never answered.
std::vector<Figure> scrapeHealthFigures(std::span<const TargetScrapes> targets);

// The servers' figures of one window of scrapes (a run's steady window, a capacity
// step), in this order: writes, apiserver requests, lease share, apiserver memory, CPU,
// etcd, the controllers' (controller_figures.h) and server latency. The run adds the
// client's figures of the same window (sim/run).
std::vector<Figure> serverWindowFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas = {});
// A whole history's: serverWindowFigures, then bytes_per_object (bytes_per_object.h)
// over every scrape and scrape health.
std::vector<Figure> allFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas = {});

// Building blocks the figure files share.
// The targets of one role, in the order given.
std::vector<const TargetScrapes*> ofRole(std::span<const TargetScrapes> targets, TargetRole role);
// How a report names a role's process: "kube-apiserver", "etcd", "kube-controller-manager", ...
std::string roleName(TargetRole r);
// Why a target gave fewer than `needed` scrapes, in words a report can show.
std::string tooFewScrapes(const TargetScrapes& t, std::size_t needed);
// Empty when at least one of `ts` (the targets of `role`) has `needed` scrapes;
// otherwise why not, naming the role when no target of it was scraped at all.
std::string whyNoRoleData(const std::vector<const TargetScrapes*>& ts, TargetRole role, std::size_t needed);
// Labels from (name, value) pairs, sorted by name as every figure keeps them.
Labels sortedLabels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv);
// The object-count family a target exposes: apiserver_resource_objects, or the
// deprecated apiserver_storage_objects when it is all there is.
std::string_view objectCountMetric(const ScrapeHistory& h);
// (group, resource) of an object-count series: apiserver_resource_objects has both
// labels; the deprecated apiserver_storage_objects has resource="leases.coordination.k8s.io".
std::pair<std::string, std::string> objectKind(const SeriesKey& k);

}  // namespace cpscale::metrics
