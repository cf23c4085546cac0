// Everything scraped from one target over a run, and what is known about the target:
// the input of every apiserver, etcd and controller figure. Stored column-wise (a table of series,
// one row of doubles per scrape) so an hour of 5 s scrapes of a few thousand series
// costs tens of MB, not a copy of every parsed sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/metrics/prometheus_text.h"
#include "sim/metrics/time_series.h"

namespace cpscale::metrics {

enum class TargetRole { kApiserver, kEtcd, kControllerManager, kScheduler };
// "apiserver", "etcd", "kube-controller-manager", "kube-scheduler".
std::string_view toString(TargetRole r);

// What a target is, independent of how it is reached.
struct TargetInfo {
  std::string name;  // kube-apiserver-0, etcd-main, kube-controller-manager, ...
  TargetRole role = TargetRole::kApiserver;
  // etcd only: the etcd cluster the member belongs to. Members of one cluster report
  // the same committed proposals, so figures take one member per cluster, never a sum.
  std::string etcdCluster;
  // etcd only: the resources routed to this cluster by --etcd-servers-overrides, as
  // "group/resource" ("coordination.k8s.io/leases", "/events"); empty for the main
  // etcd holding everything else.
  std::vector<std::string> etcdResources;
};

// Scrape outcomes of one target. A failure is counted, never fatal.
struct TargetStatus {
  std::uint64_t attempts = 0;
  std::uint64_t successes = 0;
  std::uint64_t failures = 0;
  // Rounds skipped because the previous scrape of the target was still in flight.
  std::uint64_t overruns = 0;
  std::string lastError;  // never contains credentials
  std::optional<engine::TimePoint> lastSuccessAt;
  std::optional<engine::TimePoint> lastFailureAt;
};

// Which server process answered one scrape, as far as its exposition tells.
struct ScrapeIdentity {
  // process_start_time_seconds: a new value is a new process, whose counters began at 0.
  std::optional<double> startTime;
  // The replica behind a load balancer: the apiserver_id_hash label a kube-apiserver
  // puts on its config-controller series (present only with an authentication,
  // authorization or encryption config file), or etcd_server_id's server_id. Empty
  // when the exposition names none.
  std::string replica;
  // process_cpu_seconds_total: it only grows within one process, so a start time that
  // moves while it grows on is the host's clock being set, not a restart.
  std::optional<double> cpuSeconds;
  bool operator==(const ScrapeIdentity&) const = default;
};

// The server processes behind a history's scrapes, and which of them started within
// it (its counters began at 0 after the previous scrape, so its first reading is an
// increase), as opposed to a replica first reached through a load balancer (its first
// reading is a baseline). Within one replica a new start time is a restart. Without a
// replica identity, start times that alternate (A, B, A) are replicas behind a load
// balancer, not restarts: a restart of one of them is then taken as a baseline too (one
// interval of its counts is lost rather than a whole lifetime counted). A start time
// that moves once for good while the process' CPU time grows on across the move is the
// host's wall clock being stepped (process_start_time_seconds is the kernel's boot time,
// which a clock step moves, plus the process' start tick): the same process.
struct ScrapeProcesses {
  std::vector<std::size_t> ofScrape;  // process index per scrape
  std::vector<bool> startedWithin;    // per process, in order of first appearance
  std::vector<std::size_t> firstScrape;
  std::size_t count() const { return startedWithin.size(); }
};

struct SeriesKey {
  std::string name;  // sample name, e.g. apiserver_request_duration_seconds_bucket
  Labels labels;
};

class ScrapeHistory {
 public:
  using SeriesId = std::size_t;

  // Appends one successful scrape taken at `at` (later than the previous one).
  void record(engine::TimePoint at, const FamilyMap& families);

  std::size_t scrapes() const { return times_.size(); }
  engine::TimePoint time(std::size_t scrape) const { return times_[scrape]; }
  std::size_t seriesCount() const { return keys_.size(); }
  const SeriesKey& key(SeriesId id) const { return keys_[id]; }
  // nullopt when the series was not in that scrape.
  std::optional<double> value(std::size_t scrape, SeriesId id) const;
  // Series with this sample name, in order of first appearance.
  const std::vector<SeriesId>& seriesNamed(std::string_view name) const;
  bool hasFamily(std::string_view family) const { return types_.contains(family); }
  // kUntyped for a family never seen.
  MetricType familyType(std::string_view family) const;

  // The scrapes that held the series, as a gauge.
  TimeSeries gauge(SeriesId id) const;
  // As a counter, made continuous: each value is the increase since the first scrape
  // that held the series, so counterIncreases()/counterRates() over it need no reset
  // handling of their own. Increases are taken per server process (see processes()):
  // a process that started within the history counts from 0 even when its first
  // value is above the last one of its predecessor; within a process, a drop is a
  // reset as in Prometheus' increase(). A scrape that did not hold the series,
  // directly before one that did, reads its running total there, and the first value
  // after it counts from 0, because apiservers create a series on its first increment.
  TimeSeries counter(SeriesId id) const;

  // Per scrape, what identified the answering process.
  const ScrapeIdentity& identity(std::size_t scrape) const { return identities_[scrape]; }
  const ScrapeProcesses& processes() const { return processes_; }

  // The scrapes taken within [from, to] (both included), with every series key kept:
  // the input of figures over one phase of the run. A counter's increase over a slice
  // starts from its value in the slice's first scrape, so a phase boundary needs a
  // scrape at the boundary itself (the runner takes one there).
  ScrapeHistory slice(engine::TimePoint from, engine::TimePoint to) const;

  // Heap bytes held, for keeping an eye on long runs.
  std::size_t memoryBytes() const;

 private:
  static std::string canonical(std::string_view name, const Labels& labels);

  std::vector<SeriesKey> keys_;
  std::unordered_map<std::string, SeriesId> index_;
  std::map<std::string, std::vector<SeriesId>, std::less<>> byName_;
  std::map<std::string, MetricType, std::less<>> types_;
  std::vector<engine::TimePoint> times_;
  std::vector<ScrapeIdentity> identities_;  // one per scrape
  // Kept up to date by record() and slice(): every counter() reads it. A scrape from
  // the same process as the one before only extends it; anything else recomputes it.
  ScrapeProcesses processes_;
  ScrapeIdentity lastFilled_;  // the last scrape's identity with gaps filled from its neighbours
  void recomputeProcesses();
  // The start times per scrape with each one that only the host's clock moved taken as
  // the one before it.
  std::vector<std::optional<double>> foldClockSteps(const std::vector<std::optional<double>>& reported,
                                                    const std::vector<std::string>& replica) const;
  // rows_[scrape][series]; shorter rows and absent values are kAbsent.
  std::vector<std::vector<double>> rows_;
  // The series order of the last scrape: servers write series in a stable order, so
  // the next scrape usually matches it position by position without hashing.
  std::vector<SeriesId> lastOrder_;
};

// One target's identity, outcomes and data: what figures are computed from.
struct TargetScrapes {
  TargetInfo info;
  TargetStatus status;
  ScrapeHistory history;
};

// Every target's scrapes within [from, to]; identity and scrape outcomes are kept whole.
std::vector<TargetScrapes> sliceTargets(std::span<const TargetScrapes> targets, engine::TimePoint from,
                                        engine::TimePoint to);

}  // namespace cpscale::metrics
