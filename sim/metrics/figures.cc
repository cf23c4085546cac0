#include "sim/metrics/figures.h"

#include "sim/metrics/bytes_per_object.h"
#include "sim/metrics/controller_figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

namespace cpscale::metrics {

std::string_view toString(Source s) {
  switch (s) {
    case Source::kClient: return "client";
    case Source::kApiserver: return "apiserver";
    case Source::kEtcd: return "etcd";
    case Source::kControllerManager: return "kube-controller-manager";
    case Source::kScheduler: return "kube-scheduler";
    case Source::kModel: return "model";
  }
  return "client";
}

std::string_view toString(Window w) {
  switch (w) {
    case Window::kSteady: return "steady";
    case Window::kSetup: return "setup";
    case Window::kRun: return "run";
  }
  return "steady";
}

Figure Figure::measured(std::string name, Labels labels, double value, std::string unit, Source source,
                        TimeSeries overTime) {
  Figure f;
  f.name = std::move(name);
  f.labels = std::move(labels);
  f.value = value;
  f.unit = std::move(unit);
  f.source = source;
  f.overTime = std::move(overTime);
  return f;
}

Figure Figure::unavailable(std::string name, Labels labels, std::string unit, Source source, std::string reason) {
  Figure f;
  f.name = std::move(name);
  f.labels = std::move(labels);
  f.unit = std::move(unit);
  f.source = source;
  f.unavailableReason = std::move(reason);
  return f;
}

const Figure* findFigure(std::span<const Figure> figures, std::string_view name, const Labels& labels) {
  for (const Figure& f : figures) {
    if (f.name != name) continue;
    bool all = std::all_of(labels.begin(), labels.end(), [&](const Label& l) {
      return std::any_of(f.labels.begin(), f.labels.end(), [&](const Label& m) { return m == l; });
    });
    if (all) return &f;
  }
  return nullptr;
}

bool isWriteVerb(std::string_view verb) {
  return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "APPLY" || verb == "DELETE" ||
         verb == "DELETECOLLECTION";
}

std::string roleName(TargetRole r) { return r == TargetRole::kApiserver ? "kube-apiserver" : std::string(toString(r)); }

std::vector<const TargetScrapes*> ofRole(std::span<const TargetScrapes> targets, TargetRole role) {
  std::vector<const TargetScrapes*> out;
  for (const TargetScrapes& t : targets) {
    if (t.info.role == role) out.push_back(&t);
  }
  return out;
}

std::string tooFewScrapes(const TargetScrapes& t, std::size_t needed) {
  std::string s = roleName(t.info.role) + " " + t.info.name;
  if (t.history.scrapes() == 0) {
    if (t.status.attempts == 0) return s + " was never scraped";
    return s + " never answered a scrape (" + std::to_string(t.status.failures) +
           " failed; last error: " + t.status.lastError + ")";
  }
  return s + " answered " + std::to_string(t.history.scrapes()) + " scrape(s); this figure needs " +
         std::to_string(needed);
}

std::string whyNoRoleData(const std::vector<const TargetScrapes*>& ts, TargetRole role, std::size_t needed) {
  if (ts.empty()) {
    switch (role) {
      case TargetRole::kApiserver: return "no kube-apiserver target was scraped";
      case TargetRole::kEtcd: return "no etcd target was scraped (etcd of a user's cluster is usually not reachable)";
      case TargetRole::kControllerManager:
        return "no kube-controller-manager was scraped (a user's cluster: its controller-manager is not reachable, "
               "or the profile turned it off)";
      case TargetRole::kScheduler:
        return "no kube-scheduler was scraped (a user's cluster: its scheduler is not reachable, or the profile "
               "turned it off)";
    }
  }
  std::string why;
  for (const TargetScrapes* t : ts) {
    if (t->history.scrapes() >= needed) return {};
    why += (why.empty() ? "" : "; ") + tooFewScrapes(*t, needed);
  }
  return why;
}

namespace {

constexpr std::string_view kRequestTotal = "apiserver_request_total";
constexpr std::string_view kDurationBucket = "apiserver_request_duration_seconds_bucket";
constexpr std::string_view kHeap = "go_memstats_heap_inuse_bytes";
constexpr std::string_view kRss = "process_resident_memory_bytes";
constexpr std::string_view kResourceObjects = "apiserver_resource_objects";
constexpr std::string_view kStorageObjects = "apiserver_storage_objects";
constexpr std::string_view kSizeEstimate = "apiserver_resource_size_estimate_bytes";
constexpr std::string_view kProposals = "etcd_server_proposals_committed_total";
constexpr std::string_view kLeaseResource = "coordination.k8s.io/leases";
constexpr std::string_view kCpu = "process_cpu_seconds_total";
constexpr std::string_view kGoroutines = "go_goroutines";
constexpr std::string_view kInitEvents = "apiserver_init_events_total";
constexpr std::string_view kTerminatedWatchers = "apiserver_terminated_watchers_total";
constexpr std::string_view kFsync = "etcd_disk_wal_fsync_duration_seconds";
constexpr std::string_view kFsyncSum = "etcd_disk_wal_fsync_duration_seconds_sum";
constexpr std::string_view kFsyncCount = "etcd_disk_wal_fsync_duration_seconds_count";

Labels withLabel(Labels labels, std::string_view name, std::string_view value) {
  labels.push_back(Label{std::string(name), std::string(value)});
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  return labels;
}

// The scraped window of targets with at least two scrapes: earliest to latest scrape.
std::optional<std::pair<engine::TimePoint, engine::TimePoint>> windowOf(const std::vector<const TargetScrapes*>& ts) {
  std::optional<std::pair<engine::TimePoint, engine::TimePoint>> w;
  for (const TargetScrapes* t : ts) {
    const ScrapeHistory& h = t->history;
    if (h.scrapes() < 2) continue;
    engine::TimePoint a = h.time(0), b = h.time(h.scrapes() - 1);
    if (!w) w = std::make_pair(a, b);
    w->first = std::min(w->first, a);
    w->second = std::max(w->second, b);
  }
  return w;
}

std::string resourceOf(const Labels& l) {
  std::string r(labelValue(l, "resource"));
  std::string_view sub = labelValue(l, "subresource");
  if (!sub.empty()) r += "/" + std::string(sub);
  return r;
}

using RequestKey = std::tuple<std::string, std::string, std::string>;  // group, resource, verb

// Writes of apiserver_request_total across the apiservers. The headline counts only
// those that reached storage: a 409 conflict, a 429 from priority and fairness or a
// 422 never changed anything, and counting them would make a struggling server look
// busier than a healthy one.
struct WriteData {
  std::map<RequestKey, std::vector<TimeSeries>> byKey;  // 2xx
  std::vector<TimeSeries> all;                          // 2xx
  std::vector<TimeSeries> leases;                       // 2xx
  std::map<std::string, std::vector<TimeSeries>> byClass;
  std::map<std::string, std::vector<TimeSeries>> rejectedByCode;  // any known code but 2xx
  std::vector<TimeSeries> rejected;
  std::optional<std::pair<engine::TimePoint, engine::TimePoint>> window;
  std::string unavailable;  // why there is no write data at all
};

bool isLongRunningVerb(std::string_view verb) { return verb == "WATCH" || verb == "WATCHLIST" || verb == "CONNECT"; }

// A write that reached storage: a write verb, not a dry run, answered 2xx.
bool isStoredWrite(const Labels& l) {
  return isWriteVerb(labelValue(l, "verb")) && labelValue(l, "dry_run").empty() &&
         statusClass(labelValue(l, "code")) == "2xx";
}

WriteData collectWrites(std::span<const TargetScrapes> targets) {
  WriteData d;
  auto apis = ofRole(targets, TargetRole::kApiserver);
  d.unavailable = whyNoRoleData(apis, TargetRole::kApiserver, 2);
  if (!d.unavailable.empty()) return d;
  bool exposed = false;
  for (const TargetScrapes* t : apis) {
    const ScrapeHistory& h = t->history;
    if (h.scrapes() < 2) continue;
    exposed = exposed || h.hasFamily(kRequestTotal);
    for (ScrapeHistory::SeriesId id : h.seriesNamed(kRequestTotal)) {
      const Labels& l = h.key(id).labels;
      std::string_view verb = labelValue(l, "verb");
      if (!isWriteVerb(verb) || !labelValue(l, "dry_run").empty()) continue;
      TimeSeries c = h.counter(id);
      std::string_view code = labelValue(l, "code");
      std::string cls = statusClass(code);
      d.byClass[cls].push_back(c);
      if (cls != "2xx") {
        if (cls != "unknown") {
          d.rejected.push_back(c);
          d.rejectedByCode[std::string(code)].push_back(std::move(c));
        }
        continue;
      }
      std::string group(labelValue(l, "group"));
      std::string resource = resourceOf(l);
      if (group + "/" + resource == kLeaseResource) d.leases.push_back(c);
      d.all.push_back(c);
      d.byKey[{group, resource, std::string(verb)}].push_back(std::move(c));
    }
  }
  if (!exposed) {
    d.unavailable = std::string(kRequestTotal) + " is not exposed by any kube-apiserver target";
    return d;
  }
  d.window = windowOf(apis);
  return d;
}

double sumTotals(const std::vector<TimeSeries>& counters) {
  double s = 0;
  for (const TimeSeries& c : counters) s += totalIncrease(c);
  return s;
}

}  // namespace

std::string statusClass(std::string_view code) {
  bool digits = code.size() == 3 && std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || code[0] < '1' || code[0] > '5') return "unknown";
  return std::string(1, code[0]) + "xx";
}

std::vector<Figure> writeFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  WriteData d = collectWrites(targets);
  if (!d.unavailable.empty()) {
    out.push_back(Figure::unavailable("write_qps", {}, "1/s", Source::kApiserver, d.unavailable));
    out.push_back(Figure::unavailable("write_requests", {}, "count", Source::kApiserver, d.unavailable));
    out.push_back(Figure::unavailable("write_qps_by_class", {}, "1/s", Source::kApiserver, d.unavailable));
    out.push_back(Figure::unavailable("rejected_write_qps", {}, "1/s", Source::kApiserver, d.unavailable));
    out.push_back(Figure::unavailable("rejected_write_requests", {}, "count", Source::kApiserver, d.unavailable));
    return out;
  }
  double span = seconds(d.window->second - d.window->first);
  auto add = [&](Labels labels, const std::vector<TimeSeries>& counters) {
    double total = sumTotals(counters);
    out.push_back(
        Figure::measured("write_qps", labels, total / span, "1/s", Source::kApiserver, sumCounterRates(counters)));
    out.push_back(Figure::measured("write_requests", std::move(labels), total, "count", Source::kApiserver));
  };
  add({}, d.all);
  for (const auto& [key, counters] : d.byKey) {
    const auto& [group, resource, verb] = key;
    add(sortedLabels({{"group", group}, {"resource", resource}, {"verb", verb}}), counters);
  }
  // A class no series of which exists had no writes: apiservers create a series on its
  // first increment, so 0 is measured, not assumed.
  for (const char* cls : {"2xx", "3xx", "4xx", "5xx"}) d.byClass.try_emplace(cls);
  for (const auto& [cls, counters] : d.byClass) {
    out.push_back(Figure::measured("write_qps_by_class", sortedLabels({{"code_class", cls}}),
                                   sumTotals(counters) / span, "1/s", Source::kApiserver, sumCounterRates(counters)));
  }
  double rejected = sumTotals(d.rejected);
  out.push_back(Figure::measured("rejected_write_qps", {}, rejected / span, "1/s", Source::kApiserver,
                                 sumCounterRates(d.rejected)));
  out.push_back(Figure::measured("rejected_write_requests", {}, rejected, "count", Source::kApiserver));
  for (const auto& [code, counters] : d.rejectedByCode) {
    out.push_back(Figure::measured("rejected_write_requests", sortedLabels({{"code", code}}), sumTotals(counters),
                                   "count", Source::kApiserver));
  }
  return out;
}

std::vector<Figure> apiserverRequestFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  auto apis = ofRole(targets, TargetRole::kApiserver);
  if (apis.empty()) {
    std::string why = whyNoRoleData(apis, TargetRole::kApiserver, 2);
    out.push_back(Figure::unavailable("apiserver_requests", {}, "count", Source::kApiserver, why));
    out.push_back(Figure::unavailable("apiserver_request_qps", {}, "1/s", Source::kApiserver, why));
    out.push_back(Figure::unavailable("apiserver_write_qps", {}, "1/s", Source::kApiserver, why));
    return out;
  }
  // One window for every replica, the one write_qps uses: the replicas' rates add up.
  auto window = windowOf(apis);
  for (const TargetScrapes* t : apis) {
    const ScrapeHistory& h = t->history;
    Labels self = sortedLabels({{"apiserver", t->info.name}});
    std::string why = h.scrapes() < 2               ? tooFewScrapes(*t, 2)
                      : !h.hasFamily(kRequestTotal) ? std::string(kRequestTotal) + " is not exposed by " + t->info.name
                                                    : "";
    if (!why.empty()) {
      out.push_back(Figure::unavailable("apiserver_requests", self, "count", Source::kApiserver, why));
      out.push_back(Figure::unavailable("apiserver_request_qps", self, "1/s", Source::kApiserver, why));
      out.push_back(Figure::unavailable("apiserver_write_qps", self, "1/s", Source::kApiserver, why));
      out.push_back(Figure::unavailable("apiserver_long_running_requests", self, "count", Source::kApiserver, why));
      continue;
    }
    std::vector<TimeSeries> requests, writes, longRunning;
    for (ScrapeHistory::SeriesId id : h.seriesNamed(kRequestTotal)) {
      const Labels& l = h.key(id).labels;
      TimeSeries c = h.counter(id);
      if (isLongRunningVerb(labelValue(l, "verb"))) {
        longRunning.push_back(std::move(c));
        continue;
      }
      if (isStoredWrite(l)) writes.push_back(c);
      requests.push_back(std::move(c));
    }
    double span = seconds(window->second - window->first);
    double total = sumTotals(requests);
    out.push_back(Figure::measured("apiserver_requests", self, total, "count", Source::kApiserver));
    out.push_back(Figure::measured("apiserver_request_qps", self, total / span, "1/s", Source::kApiserver,
                                   sumCounterRates(requests)));
    out.push_back(Figure::measured("apiserver_write_qps", self, sumTotals(writes) / span, "1/s", Source::kApiserver,
                                   sumCounterRates(writes)));
    out.push_back(
        Figure::measured("apiserver_long_running_requests", self, sumTotals(longRunning), "count", Source::kApiserver));
  }
  return out;
}

std::vector<Figure> leaseShareFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  WriteData d = collectWrites(targets);
  if (!d.unavailable.empty()) {
    out.push_back(Figure::unavailable("lease_write_share", {}, "ratio", Source::kApiserver, d.unavailable));
  } else {
    double all = sumTotals(d.all);
    if (all == 0) {
      out.push_back(Figure::unavailable("lease_write_share", {}, "ratio", Source::kApiserver,
                                        "no write requests were counted in the scraped window"));
    } else {
      TimeSeries overTime = ratio(sumCounterRates(d.leases), sumCounterRates(d.all));
      out.push_back(Figure::measured("lease_write_share", {}, sumTotals(d.leases) / all, "ratio", Source::kApiserver,
                                     std::move(overTime)));
    }
  }

  // etcd level: only when leases have an etcd cluster of their own can its proposals
  // be told apart from everything else's.
  const std::string name = "etcd_lease_proposal_share";
  auto etcds = ofRole(targets, TargetRole::kEtcd);
  std::string why = whyNoRoleData(etcds, TargetRole::kEtcd, 2);
  if (!why.empty()) {
    out.push_back(Figure::unavailable(name, {}, "ratio", Source::kEtcd, why));
    return out;
  }
  // One representative member per cluster: the one with most scrapes.
  std::map<std::string, const TargetScrapes*> clusters;
  for (const TargetScrapes* t : etcds) {
    std::string c = t->info.etcdCluster.empty() ? t->info.name : t->info.etcdCluster;
    auto [it, inserted] = clusters.try_emplace(c, t);
    if (!inserted && t->history.scrapes() > it->second->history.scrapes()) it->second = t;
  }
  std::vector<TimeSeries> leaseCounters, allCounters;
  // What the lease etcd(s) hold besides leases (partitioned-storage puts events there
  // too): named in a label, so the share is never mistaken for leases alone.
  std::set<std::string> alongside;
  for (const auto& [cluster, t] : clusters) {
    const auto& res = t->info.etcdResources;
    bool holdsLeases = std::find(res.begin(), res.end(), kLeaseResource) != res.end();
    if (holdsLeases)
      for (const auto& r : res)
        if (r != kLeaseResource) alongside.insert(r);
    if (t->history.scrapes() < 2) {
      out.push_back(Figure::unavailable(name, {}, "ratio", Source::kEtcd,
                                        "etcd cluster " + cluster + ": " + tooFewScrapes(*t, 2)));
      return out;
    }
    const auto& ids = t->history.seriesNamed(kProposals);
    if (ids.empty()) {
      out.push_back(Figure::unavailable(name, {}, "ratio", Source::kEtcd,
                                        std::string(kProposals) + " is not exposed by etcd " + t->info.name));
      return out;
    }
    TimeSeries c = t->history.counter(ids.front());
    if (holdsLeases) leaseCounters.push_back(c);
    allCounters.push_back(std::move(c));
  }
  if (leaseCounters.empty()) {
    out.push_back(Figure::unavailable(name, {}, "ratio", Source::kEtcd,
                                      "no etcd cluster of its own holds coordination.k8s.io/leases, so lease "
                                      "proposals cannot be told apart from other writes"));
    return out;
  }
  double all = sumTotals(allCounters);
  if (all == 0) {
    out.push_back(Figure::unavailable(name, {}, "ratio", Source::kEtcd, "etcd committed no proposals in the window"));
    return out;
  }
  Labels labels;
  if (!alongside.empty()) {
    std::string with;
    for (const auto& r : alongside) with += (with.empty() ? "" : ",") + r;
    labels.push_back({"with", with});
  }
  out.push_back(Figure::measured(name, labels, sumTotals(leaseCounters) / all, "ratio", Source::kEtcd,
                                 ratio(sumCounterRates(leaseCounters), sumCounterRates(allCounters))));
  return out;
}

namespace {

// The first series of a gauge family, or why there is none.
struct GaugeOrWhy {
  TimeSeries series;
  std::string why;
};
GaugeOrWhy firstGauge(const TargetScrapes& t, std::string_view name) {
  if (t.history.scrapes() == 0) return {{}, tooFewScrapes(t, 1)};
  const auto& ids = t.history.seriesNamed(name);
  if (ids.empty()) return {{}, std::string(name) + " is not exposed by " + roleName(t.info.role) + " " + t.info.name};
  TimeSeries g = t.history.gauge(ids.front());
  // A series seen before the window but in none of its scrapes (a saturated apiserver
  // answered them without it, or not at all): nothing to read, not a value of 0.
  if (g.values.empty())
    return {{}, std::string(name) + " had no sample in the window from " + roleName(t.info.role) + " " + t.info.name};
  return {std::move(g), {}};
}

double peakOf(const TimeSeries& s) { return *std::max_element(s.values.begin(), s.values.end()); }

// Every time any target answered a scrape: the scrape rounds, against which a replica's
// missed scrapes are counted.
std::vector<engine::TimePoint> roundsOf(std::span<const TargetScrapes> targets) {
  std::vector<engine::TimePoint> rounds;
  for (const TargetScrapes& t : targets)
    for (std::size_t r = 0; r < t.history.scrapes(); ++r) rounds.push_back(t.history.time(r));
  std::sort(rounds.begin(), rounds.end());
  rounds.erase(std::unique(rounds.begin(), rounds.end()), rounds.end());
  return rounds;
}

std::string runSeconds(engine::TimePoint t) {
  std::ostringstream s;
  s.precision(12);
  s << seconds(t.time_since_epoch()) << "s";
  return s.str();
}

// Per-target last value and peak of one gauge, and their total across targets
// (unavailable unless every target has it: a total missing a replica is wrong). A
// target that stopped answering (missed staleAfter rounds by the last one) drops out
// of the total from then on, and its own figures say since when.
void gaugePerTargetAndTotal(std::vector<Figure>& out, const std::vector<const TargetScrapes*>& ts,
                            std::string_view metric, const std::string& figure, const std::string& unit, Source source,
                            const std::string& targetLabel, std::span<const engine::TimePoint> rounds,
                            std::size_t staleAfter) {
  std::vector<TimeSeries> all;
  std::string totalWhy;
  for (const TargetScrapes* t : ts) {
    Labels l = sortedLabels({{targetLabel, t->info.name}});
    GaugeOrWhy g = firstGauge(*t, metric);
    if (!g.why.empty()) {
      out.push_back(Figure::unavailable(figure, l, unit, source, g.why));
      out.push_back(Figure::unavailable(figure + "_peak", l, unit, source, g.why));
      totalWhy += (totalWhy.empty() ? "" : "; ") + g.why;
      continue;
    }
    if (staleAfter > 0 && !rounds.empty() && missedBefore(g.series, rounds, rounds.back()) >= staleAfter) {
      auto firstMissed = std::upper_bound(rounds.begin(), rounds.end(), g.series.times.back());
      l = withLabel(std::move(l), "stopped_answering_at", runSeconds(*firstMissed));
    }
    double peak = peakOf(g.series);
    out.push_back(Figure::measured(figure, l, g.series.values.back(), unit, source, g.series));
    out.push_back(Figure::measured(figure + "_peak", l, peak, unit, source));
    all.push_back(std::move(g.series));
  }
  std::string total = figure + "_all_replicas";
  if (ts.empty())
    totalWhy = "no " + std::string(source == Source::kEtcd ? "etcd" : "kube-apiserver") + " target was scraped";
  if (!totalWhy.empty()) {
    out.push_back(Figure::unavailable(total, {}, unit, source, totalWhy));
    out.push_back(Figure::unavailable(total + "_peak", {}, unit, source, totalWhy));
    return;
  }
  TimeSeries sum = sumGauges(all, staleAfter, rounds);
  out.push_back(Figure::measured(total, {}, sum.values.back(), unit, source, sum));
  out.push_back(Figure::measured(total + "_peak", {}, peakOf(sum), unit, source));
}

// The watch cache's and the readers' families, each series a figure of its own per
// replica: gauges as they are, counters as rates (<name>_per_second). Open watches
// (apiserver_longrunning_requests{verb="WATCH"}) and the objects LISTs return are what
// the cost model's fan-out and LIST terms are fitted against.
bool isWatchFamilySample(std::string_view n) {
  return n.starts_with("apiserver_watch_cache_") || n == "watch_cache_capacity" ||
         n == "apiserver_watch_events_total" || n.starts_with("apiserver_watch_events_sizes") ||
         n == "apiserver_longrunning_requests" || n == "apiserver_cache_list_returned_objects_total" ||
         n == "apiserver_storage_list_returned_objects_total" || n == kInitEvents || n == kTerminatedWatchers;
}

// Counts over the window, per resource: the objects new watches were sent as their
// initial events (watch_init_events: a relist storm is this, all at once) and the
// watchers closed for not keeping up (watchers_terminated), as the upstream 5,000-node
// test reports them per run.
void watchCountFigures(std::vector<Figure>& out, const TargetScrapes& t) {
  const ScrapeHistory& h = t.history;
  for (const auto& [family, figure] :
       {std::pair{kInitEvents, "watch_init_events"}, std::pair{kTerminatedWatchers, "watchers_terminated"}}) {
    if (h.scrapes() < 2) continue;  // the _per_second figures say why
    for (ScrapeHistory::SeriesId id : h.seriesNamed(family)) {
      TimeSeries c = h.counter(id);
      const double n = totalIncrease(c);  // before c is moved into the figure
      out.push_back(Figure::measured(figure, withLabel(h.key(id).labels, "apiserver", t.info.name), n, "count",
                                     Source::kApiserver, std::move(c)));
    }
  }
}

// The events each resource's watch cache holds (watch_cache_events): its ring replayed
// from the capacity gauge and the events-received counter at each scrape. The ring
// keeps every event until it is full, then the newest `capacity`, so
//   held = min(capacity, held at the scrape before + events received since);
// at the first scrape (or after a restart) the counter's running total is every
// event the cache took in: held = min(capacity, total). That is exact while the ring
// has not yet dropped anything, and once it is full; between a doubling and the ring
// filling again it is an upper bound.
void watchCacheEventsHeld(std::vector<Figure>& out, const TargetScrapes& t) {
  const ScrapeHistory& h = t.history;
  const auto& received = h.seriesNamed("apiserver_watch_cache_events_received_total");
  for (ScrapeHistory::SeriesId cap : h.seriesNamed("watch_cache_capacity")) {
    const Labels& l = h.key(cap).labels;
    auto rid =
        std::find_if(received.begin(), received.end(), [&](ScrapeHistory::SeriesId r) { return h.key(r).labels == l; });
    TimeSeries held;
    std::optional<double> total;
    double n = 0;
    for (std::size_t k = 0; k < h.scrapes(); ++k) {
      const std::optional<double> c = h.value(k, cap);
      if (!c) continue;
      // A resource that has not received an event has no counter series yet.
      const double r = rid == received.end() ? 0.0 : h.value(k, *rid).value_or(0);
      n = !total || r < *total ? r : n + (r - *total);
      n = std::min(n, *c);
      total = r;
      held.times.push_back(h.time(k));
      held.values.push_back(n);
    }
    if (held.values.empty()) continue;
    const double last = held.values.back();
    out.push_back(Figure::measured("watch_cache_events", withLabel(l, "apiserver", t.info.name), last, "events",
                                   Source::kApiserver, std::move(held)));
  }
}

// kube-apiserver's own estimate of what each resource's objects take in storage
// (apiserver_resource_size_estimate_bytes, refreshed with the object counts), and that
// over the object count: what one object of a kind costs in etcd, built-in or custom,
// without a ramp. (The heap an object costs is bytes_per_object, fitted on a ramp.)
void storedBytesFigures(std::vector<Figure>& out, const TargetScrapes& t) {
  const ScrapeHistory& h = t.history;
  const auto& sizes = h.seriesNamed(kSizeEstimate);
  if (sizes.empty()) {
    out.push_back(Figure::unavailable("stored_bytes_per_object", sortedLabels({{"apiserver", t.info.name}}), "bytes",
                                      Source::kApiserver,
                                      std::string(kSizeEstimate) + " is not served by " + t.info.name));
    return;
  }
  std::map<std::pair<std::string, std::string>, double> objects;
  for (ScrapeHistory::SeriesId id : h.seriesNamed(kResourceObjects)) {
    const TimeSeries g = h.gauge(id);
    if (!g.values.empty()) objects[objectKind(h.key(id))] = g.values.back();
  }
  for (ScrapeHistory::SeriesId id : sizes) {
    const SeriesKey& k = h.key(id);
    const std::pair<std::string, std::string> kind{std::string(labelValue(k.labels, "group")),
                                                   std::string(labelValue(k.labels, "resource"))};
    TimeSeries g = h.gauge(id);
    auto n = objects.find(kind);
    // No object of the kind: nothing a per-object cost could be told from.
    if (g.values.empty() || n == objects.end() || n->second <= 0) continue;
    const Labels l = sortedLabels({{"apiserver", t.info.name}, {"group", kind.first}, {"resource", kind.second}});
    const double bytes = g.values.back();
    out.push_back(Figure::measured("stored_bytes", l, bytes, "bytes", Source::kApiserver, std::move(g)));
    out.push_back(Figure::measured("stored_bytes_per_object", l, bytes / n->second, "bytes", Source::kApiserver));
  }
}

void watchCacheFigures(std::vector<Figure>& out, const TargetScrapes& t) {
  const ScrapeHistory& h = t.history;
  // Histograms (e.g. apiserver_watch_events_sizes): the mean over the window from the
  // increase of _sum over the increase of _count, per label set.
  std::map<std::pair<std::string, Labels>, std::pair<double, double>, std::less<>> means;
  for (ScrapeHistory::SeriesId id = 0; id < h.seriesCount(); ++id) {
    const SeriesKey& k = h.key(id);
    if (!isWatchFamilySample(k.name)) continue;
    Labels l = withLabel(k.labels, "apiserver", t.info.name);
    auto endsWith = [&](std::string_view s) { return k.name.size() > s.size() && k.name.ends_with(s); };
    if (endsWith("_bucket")) continue;
    if (endsWith("_sum") || endsWith("_count")) {
      std::string fam = k.name.substr(0, k.name.rfind('_'));
      if (h.familyType(fam) == MetricType::kHistogram || h.familyType(fam) == MetricType::kSummary) {
        if (h.scrapes() < 2) continue;
        auto& m = means[{fam + "_mean", l}];
        (endsWith("_sum") ? m.first : m.second) += totalIncrease(h.counter(id));
        continue;
      }
    }
    if (h.familyType(k.name) == MetricType::kCounter) {
      if (h.scrapes() < 2) {
        out.push_back(Figure::unavailable(k.name + "_per_second", l, "1/s", Source::kApiserver, tooFewScrapes(t, 2)));
        continue;
      }
      TimeSeries c = h.counter(id);
      double span = seconds(h.time(h.scrapes() - 1) - h.time(0));
      out.push_back(Figure::measured(k.name + "_per_second", l, totalIncrease(c) / span, "1/s", Source::kApiserver,
                                     counterRates(c)));
    } else {
      TimeSeries g = h.gauge(id);
      out.push_back(Figure::measured(k.name, l, g.values.back(), "", Source::kApiserver, g));
    }
  }
  for (auto& [key, m] : means) {
    if (m.second > 0) {
      out.push_back(Figure::measured(key.first, key.second, m.first / m.second, "", Source::kApiserver));
    }
  }
  watchCacheEventsHeld(out, t);
}

}  // namespace

std::vector<Figure> apiserverMemoryFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas) {
  std::vector<Figure> out;
  auto apis = ofRole(targets, TargetRole::kApiserver);
  std::vector<engine::TimePoint> rounds = roundsOf(targets);
  gaugePerTargetAndTotal(out, apis, kHeap, "apiserver_heap_inuse_bytes", "bytes", Source::kApiserver, "apiserver",
                         rounds, replicas.staleAfterMissedScrapes);
  // The heap after a forced GC is in the scrapes only where the scraper read the
  // target's heap profile (the local plane): elsewhere one figure says so.
  const bool afterGc = std::any_of(apis.begin(), apis.end(), [](const TargetScrapes* t) {
    return !t->history.seriesNamed(kHeapInuseAfterGc).empty();
  });
  if (afterGc) {
    gaugePerTargetAndTotal(out, apis, kHeapInuseAfterGc, "apiserver_heap_inuse_after_gc_bytes", "bytes",
                           Source::kApiserver, "apiserver", rounds, replicas.staleAfterMissedScrapes);
  } else {
    out.push_back(Figure::unavailable("apiserver_heap_inuse_after_gc_bytes", {}, "bytes", Source::kApiserver,
                                      apis.empty() ? "no kube-apiserver target was scraped"
                                                   : "the heap after a forced GC is read from a kube-apiserver's heap "
                                                     "profile, which cpscale fetches only from the local plane"));
  }
  gaugePerTargetAndTotal(out, apis, kRss, "apiserver_rss_bytes", "bytes", Source::kApiserver, "apiserver", rounds,
                         replicas.staleAfterMissedScrapes);
  gaugePerTargetAndTotal(out, apis, kGoroutines, "apiserver_goroutines", "goroutines", Source::kApiserver, "apiserver",
                         rounds, replicas.staleAfterMissedScrapes);
  for (const TargetScrapes* t : apis) {
    const ScrapeHistory& h = t->history;
    Labels self = sortedLabels({{"apiserver", t->info.name}});
    if (h.scrapes() == 0) {
      out.push_back(
          Figure::unavailable("apiserver_objects", self, "objects", Source::kApiserver, tooFewScrapes(*t, 1)));
      continue;
    }
    std::string_view metric = objectCountMetric(h);
    const auto& ids = h.seriesNamed(metric);
    if (ids.empty()) {
      out.push_back(Figure::unavailable(
          "apiserver_objects", self, "objects", Source::kApiserver,
          "neither apiserver_resource_objects nor apiserver_storage_objects is exposed by " + t->info.name));
    }
    std::vector<TimeSeries> perResource;
    for (ScrapeHistory::SeriesId id : ids) {
      auto [group, resource] = objectKind(h.key(id));
      TimeSeries g = h.gauge(id);
      out.push_back(Figure::measured(
          "apiserver_objects", sortedLabels({{"apiserver", t->info.name}, {"group", group}, {"resource", resource}}),
          g.values.back(), "objects", Source::kApiserver, g));
      perResource.push_back(std::move(g));
    }
    if (!ids.empty()) {
      TimeSeries sum = sumGauges(perResource);
      out.push_back(
          Figure::measured("apiserver_objects_total", self, sum.values.back(), "objects", Source::kApiserver, sum));
    }
    storedBytesFigures(out, *t);
    watchCacheFigures(out, *t);
    watchCountFigures(out, *t);
  }
  return out;
}

std::vector<Figure> etcdFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas) {
  std::vector<Figure> out;
  auto etcds = ofRole(targets, TargetRole::kEtcd);
  struct Rate {
    std::string_view metric, figure;
  };
  const Rate rates[] = {{kProposals, "etcd_proposals_committed_per_second"},
                        {"etcd_debugging_lease_renewed_total", "etcd_lease_renewals_per_second"}};
  struct Gauge {
    std::string_view metric, figure, unit;
  };
  const Gauge gauges[] = {{"etcd_mvcc_db_total_size_in_bytes", "etcd_db_total_size_bytes", "bytes"},
                          {"etcd_mvcc_db_total_size_in_use_in_bytes", "etcd_db_total_size_in_use_bytes", "bytes"},
                          {"etcd_debugging_mvcc_keys_total", "etcd_keys", "count"},
                          {"etcd_server_quota_backend_bytes", "etcd_quota_backend_bytes", "bytes"},
                          {"etcd_server_has_leader", "etcd_has_leader", ""}};
  if (etcds.empty()) {
    std::string why = whyNoRoleData(etcds, TargetRole::kEtcd, 1);
    for (const Rate& r : rates)
      out.push_back(Figure::unavailable(std::string(r.figure), {}, "1/s", Source::kEtcd, why));
    out.push_back(Figure::unavailable("etcd_lease_renewals", {}, "count", Source::kEtcd, why));
    out.push_back(Figure::unavailable("etcd_wal_fsync_seconds_mean", {}, "s", Source::kEtcd, why));
    for (const Gauge& g : gauges) {
      out.push_back(Figure::unavailable(std::string(g.figure), {}, std::string(g.unit), Source::kEtcd, why));
    }
    return out;
  }
  std::vector<engine::TimePoint> rounds = roundsOf(targets);
  for (const TargetScrapes* t : etcds) {
    const ScrapeHistory& h = t->history;
    std::string cluster = t->info.etcdCluster.empty() ? t->info.name : t->info.etcdCluster;
    Labels self = sortedLabels({{"etcd", t->info.name}, {"cluster", cluster}});
    for (const Rate& r : rates) {
      std::string figure(r.figure);
      const auto& ids = h.seriesNamed(r.metric);
      std::string why = h.scrapes() < 2 ? tooFewScrapes(*t, 2)
                        : ids.empty()   ? std::string(r.metric) + " is not exposed by etcd " + t->info.name
                                        : "";
      bool renewals = r.metric == "etcd_debugging_lease_renewed_total";
      if (!why.empty()) {
        out.push_back(Figure::unavailable(figure, self, "1/s", Source::kEtcd, why));
        if (renewals) out.push_back(Figure::unavailable("etcd_lease_renewals", self, "count", Source::kEtcd, why));
        continue;
      }
      TimeSeries c = h.counter(ids.front());
      double total = totalIncrease(c);
      out.push_back(Figure::measured(figure, self, total / seconds(h.time(h.scrapes() - 1) - h.time(0)), "1/s",
                                     Source::kEtcd, counterRates(c)));
      if (renewals) out.push_back(Figure::measured("etcd_lease_renewals", self, total, "count", Source::kEtcd));
    }
    {
      // Mean WAL fsync over the window: increase of the histogram's _sum over its _count.
      const auto& sums = h.seriesNamed(kFsyncSum);
      const auto& counts = h.seriesNamed(kFsyncCount);
      std::string why = h.scrapes() < 2 ? tooFewScrapes(*t, 2)
                        : sums.empty() || counts.empty()
                            ? std::string(kFsync) + " is not exposed by etcd " + t->info.name
                            : "";
      double n = why.empty() ? totalIncrease(h.counter(counts.front())) : 0;
      if (why.empty() && n <= 0) why = "etcd " + t->info.name + " did not fsync its WAL in the window";
      if (!why.empty())
        out.push_back(Figure::unavailable("etcd_wal_fsync_seconds_mean", self, "s", Source::kEtcd, why));
      else
        out.push_back(Figure::measured("etcd_wal_fsync_seconds_mean", self, totalIncrease(h.counter(sums.front())) / n,
                                       "s", Source::kEtcd));
    }
  }
  for (const Gauge& g : gauges) {
    gaugePerTargetAndTotal(out, etcds, g.metric, std::string(g.figure), std::string(g.unit), Source::kEtcd, "etcd",
                           rounds, replicas.staleAfterMissedScrapes);
    // A sum across etcd members or clusters of these is not a figure anyone reads.
    std::erase_if(out, [&](const Figure& f) { return f.name.starts_with(std::string(g.figure) + "_all_replicas"); });
  }
  return out;
}

namespace {

// One role's CPU per target and in total (see cpuFigures).
void cpuOfRole(std::vector<Figure>& out, std::span<const TargetScrapes> targets, TargetRole role, Source source,
               const std::string& figure) {
  auto ts = ofRole(targets, role);
  const std::string total = figure + "_all_replicas";
  if (ts.empty()) {
    std::string why = whyNoRoleData(ts, role, 2);
    out.push_back(Figure::unavailable(figure, {}, "cores", source, why));
    out.push_back(Figure::unavailable(total, {}, "cores", source, why));
    return;
  }
  std::vector<TimeSeries> counters;
  std::string totalWhy;
  for (const TargetScrapes* t : ts) {
    const ScrapeHistory& h = t->history;
    std::string cluster = t->info.etcdCluster.empty() ? t->info.name : t->info.etcdCluster;
    Labels self = role == TargetRole::kEtcd ? sortedLabels({{"etcd", t->info.name}, {"cluster", cluster}})
                                            : sortedLabels({{"apiserver", t->info.name}});
    const auto& ids = h.seriesNamed(kCpu);
    std::string why = h.scrapes() < 2 ? tooFewScrapes(*t, 2)
                      : ids.empty()   ? std::string(kCpu) + " is not exposed by " + roleName(role) + " " + t->info.name
                                      : "";
    if (!why.empty()) {
      out.push_back(Figure::unavailable(figure, self, "cores", source, why));
      totalWhy += (totalWhy.empty() ? "" : "; ") + why;
      continue;
    }
    TimeSeries c = h.counter(ids.front());
    const double span = seconds(h.time(h.scrapes() - 1) - h.time(0));
    out.push_back(Figure::measured(figure, self, totalIncrease(c) / span, "cores", source, counterRates(c)));
    counters.push_back(std::move(c));
  }
  if (!totalWhy.empty()) {
    out.push_back(Figure::unavailable(total, {}, "cores", source, totalWhy));
    return;
  }
  auto window = windowOf(ts);
  out.push_back(Figure::measured(total, {}, sumTotals(counters) / seconds(window->second - window->first), "cores",
                                 source, sumCounterRates(counters)));
}

}  // namespace

std::vector<Figure> cpuFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  cpuOfRole(out, targets, TargetRole::kApiserver, Source::kApiserver, "apiserver_cpu_cores");
  cpuOfRole(out, targets, TargetRole::kEtcd, Source::kEtcd, "etcd_cpu_cores");
  return out;
}

std::vector<Figure> serverLatencyFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  auto apis = ofRole(targets, TargetRole::kApiserver);
  std::string why = whyNoRoleData(apis, TargetRole::kApiserver, 2);
  if (!why.empty()) {
    out.push_back(Figure::unavailable("server_latency_p99", {}, "s", Source::kApiserver, why));
    return out;
  }
  std::map<RequestKey, std::map<double, double>> buckets;  // key -> le -> increase
  for (const TargetScrapes* t : apis) {
    const ScrapeHistory& h = t->history;
    if (h.scrapes() < 2) continue;
    for (ScrapeHistory::SeriesId id : h.seriesNamed(kDurationBucket)) {
      const Labels& l = h.key(id).labels;
      std::string_view verb = labelValue(l, "verb");
      // A watch's "duration" is how long it stayed open, not a latency.
      if (verb == "WATCH" || verb == "WATCHLIST" || verb == "CONNECT") continue;
      double le;
      std::string_view leText = labelValue(l, "le");
      if (leText == "+Inf")
        le = HUGE_VAL;
      else
        le = std::strtod(std::string(leText).c_str(), nullptr);
      buckets[{std::string(labelValue(l, "group")), resourceOf(l), std::string(verb)}][le] +=
          totalIncrease(h.counter(id));
    }
  }
  if (buckets.empty()) {
    out.push_back(
        Figure::unavailable("server_latency_p99", {}, "s", Source::kApiserver,
                            "apiserver_request_duration_seconds is not exposed by any kube-apiserver target"));
  }
  const std::pair<const char*, double> quantiles[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99.9", 0.999}};
  for (const auto& [key, byLe] : buckets) {
    std::vector<Bucket> bs;
    for (const auto& [le, count] : byLe) bs.push_back(Bucket{le, count});
    if (bs.empty() || bs.back().cumulativeCount <= 0) continue;  // no requests of this kind in the window
    const auto& [group, resource, verb] = key;
    Labels l = sortedLabels({{"group", group}, {"resource", resource}, {"verb", verb}});
    for (const auto& [suffix, q] : quantiles) {
      double v = histogramQuantile(q, bs);
      std::string name = std::string("server_latency_") + suffix;
      if (std::isnan(v))
        out.push_back(Figure::unavailable(name, l, "s", Source::kApiserver, "buckets are not cumulative up to +Inf"));
      else
        out.push_back(Figure::measured(name, l, v, "s", Source::kApiserver));
    }
    // The max is only known to within a bucket: report the bucket's upper bound.
    double total = bs.back().cumulativeCount;
    auto top = std::find_if(bs.begin(), bs.end(), [&](const Bucket& b) { return b.cumulativeCount >= total; });
    if (std::isinf(top->upperBound)) {
      out.push_back(Figure::unavailable("server_latency_max", l, "s", Source::kApiserver,
                                        "the slowest request exceeded the highest finite bucket bound"));
    } else {
      out.push_back(Figure::measured("server_latency_max", l, top->upperBound, "s", Source::kApiserver));
    }
  }
  return out;
}

std::vector<Figure> scrapeHealthFigures(std::span<const TargetScrapes> targets) {
  std::vector<Figure> out;
  for (const TargetScrapes& t : targets) {
    Labels l = sortedLabels({{"target", t.info.name}, {"role", toString(t.info.role)}});
    out.push_back(
        Figure::measured("scrape_attempts", l, static_cast<double>(t.status.attempts), "count", Source::kClient));
    out.push_back(
        Figure::measured("scrape_failures", l, static_cast<double>(t.status.failures), "count", Source::kClient));
    out.push_back(
        Figure::measured("scrape_overruns", l, static_cast<double>(t.status.overruns), "count", Source::kClient));
    if (t.history.scrapes() == 0) {
      out.push_back(Figure::unavailable("scrape_successes", l, "count", Source::kClient, tooFewScrapes(t, 1)));
    } else {
      out.push_back(
          Figure::measured("scrape_successes", l, static_cast<double>(t.history.scrapes()), "count", Source::kClient));
    }
  }
  return out;
}

std::vector<Figure> serverWindowFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas) {
  std::vector<Figure> out;
  auto append = [&](std::vector<Figure> v) { std::move(v.begin(), v.end(), std::back_inserter(out)); };
  append(writeFigures(targets));
  append(apiserverRequestFigures(targets));
  append(leaseShareFigures(targets));
  append(apiserverMemoryFigures(targets, replicas));
  append(cpuFigures(targets));
  append(etcdFigures(targets, replicas));
  append(controllerFigures(targets));
  append(serverLatencyFigures(targets));
  return out;
}

std::vector<Figure> allFigures(std::span<const TargetScrapes> targets, const ReplicaOptions& replicas) {
  std::vector<Figure> out = serverWindowFigures(targets, replicas);
  auto append = [&](std::vector<Figure> v) { std::move(v.begin(), v.end(), std::back_inserter(out)); };
  append(bytesPerObjectFigures(targets));
  append(scrapeHealthFigures(targets));
  return out;
}

Labels sortedLabels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  Labels out;
  for (auto& [k, v] : kv) out.push_back(Label{std::string(k), std::string(v)});
  std::sort(out.begin(), out.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  return out;
}

std::string_view objectCountMetric(const ScrapeHistory& h) {
  return h.seriesNamed(kResourceObjects).empty() ? kStorageObjects : kResourceObjects;
}

std::pair<std::string, std::string> objectKind(const SeriesKey& k) {
  std::string resource(labelValue(k.labels, "resource"));
  if (k.name == kResourceObjects) return {std::string(labelValue(k.labels, "group")), resource};
  auto dot = resource.find('.');
  if (dot == std::string::npos) return {"", resource};
  return {resource.substr(dot + 1), resource.substr(0, dot)};
}

}  // namespace cpscale::metrics
