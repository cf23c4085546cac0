#include "sim/metrics/scraper.h"

#include <algorithm>
#include <array>
#include <set>

#include "sim/common/error.h"
#include "sim/metrics/bytes_per_object.h"

namespace cpscale::metrics {

bool isFigureFamily(std::string_view family) {
  static constexpr std::string_view kExact[] = {
      "apiserver_request_total",
      "apiserver_request_duration_seconds",
      "apiserver_resource_objects",
      "apiserver_storage_objects",
      "apiserver_storage_size_bytes",
      // What each resource's objects take in storage, by kube-apiserver's own estimate.
      "apiserver_resource_size_estimate_bytes",
      "apiserver_watch_events_total",
      "apiserver_watch_events_sizes",
      // Open watches per resource (the plane's own informers and everyone else's), and
      // the objects LISTs returned, from the watch cache or from etcd.
      "apiserver_longrunning_requests",
      "apiserver_cache_list_returned_objects_total",
      // The objects each new watch was sent as its initial events (a relist storm's
      // load), and the watchers the watch cache closed for not keeping up.
      "apiserver_init_events_total",
      "apiserver_terminated_watchers_total",
      // Each open watch holds goroutines: past a few thousand nodes the Go scheduler is
      // what binds (kubernetes/perf-tests#4264).
      "go_goroutines",
      "apiserver_storage_list_returned_objects_total",
      "etcd_server_quota_backend_bytes",
      "apiserver_current_inflight_requests",
      "apiserver_flowcontrol_rejected_requests_total",
      "watch_cache_capacity",
      "process_resident_memory_bytes",
      "process_cpu_seconds_total",
      "process_start_time_seconds",
      "go_memstats_heap_inuse_bytes",
      "etcd_server_proposals_committed_total",
      "etcd_server_proposals_applied_total",
      "etcd_server_proposals_failed_total",
      "etcd_server_proposals_pending",
      "etcd_server_has_leader",
      "etcd_server_leader_changes_seen_total",
      "etcd_mvcc_db_total_size_in_bytes",
      "etcd_mvcc_db_total_size_in_use_in_bytes",
      "etcd_debugging_mvcc_keys_total",
      "etcd_debugging_lease_renewed_total",
      "etcd_mvcc_put_total",
      "etcd_disk_wal_fsync_duration_seconds",
      // Which etcd member answered, when the scrape goes through a load balancer.
      "etcd_server_id",
      // kube-controller-manager and kube-scheduler (controller_figures.h).
      "workqueue_depth",
      "workqueue_adds_total",
      "node_collector_evictions_total",
      "node_collector_unhealthy_nodes_in_zone",
      "taint_eviction_controller_pod_deletions_total",
      "scheduler_pending_pods",
      "scheduler_schedule_attempts_total",
      "leader_election_master_status",
  };
  if (std::find(std::begin(kExact), std::end(kExact), family) != std::end(kExact)) return true;
  // The only kube-apiserver families naming the replica (label apiserver_id_hash),
  // exposed when it runs with an authentication, authorization or encryption config
  // file: a handful of series that tell replicas behind a load balancer apart.
  for (std::string_view p : {"apiserver_authentication_config_controller_",
                             "apiserver_authorization_config_controller_", "apiserver_encryption_config_controller_"}) {
    if (family.starts_with(p)) return true;
  }
  return family.starts_with("apiserver_watch_cache_");
}

namespace {
// A status body may be long and multi-line (an HTML error page from a proxy).
std::string firstLine(std::string_view s, std::size_t max = 200) {
  s = s.substr(0, std::min(s.find('\n'), max));
  return std::string(s);
}

// The request every scrape of a slot path makes: a GET with the scraper's timeout.
kube::HttpRequest get(const std::string& path, engine::Duration timeout, std::string statsResource) {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = path;
  req.timeout = timeout;
  req.statsResource = std::move(statsResource);
  req.statsVerb = "GET";
  return req;
}
}  // namespace

std::optional<double> heapInuseFromProfile(std::string_view text) {
  // Written by runtime/pprof's writeHeapInternal as
  //   "\n# runtime.MemStats\n# Alloc = %d\n ... # HeapInuse = %d\n ..."
  // after the sampled records; only that block has lines of this shape.
  const auto block = text.find("# runtime.MemStats");
  if (block == std::string_view::npos) return std::nullopt;
  constexpr std::string_view kKey = "\n# HeapInuse = ";
  const auto at = text.find(kKey, block);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + kKey.size();
  double v = 0;
  std::size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) v = v * 10 + (text[i] - '0');
  if (digits == 0 || (i < text.size() && text[i] != '\n' && text[i] != '\r')) return std::nullopt;
  return v;
}

Scraper::Scraper(engine::Scheduler& scheduler, std::vector<ScrapeTarget> targets, ScraperOptions options)
    : scheduler_(scheduler), options_(std::move(options)), self_(std::make_shared<Scraper*>(this)) {
  if (options_.interval <= engine::Duration::zero()) throw ConfigError("scraper", "interval", "must be positive");
  if (options_.timeout < engine::Duration::zero()) throw ConfigError("scraper", "timeout", "must not be negative");
  if (options_.timeout == engine::Duration::zero()) options_.timeout = options_.interval;
  if (!options_.keep) options_.keep = isFigureFamily;
  std::set<std::string> names;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    ScrapeTarget& t = targets[i];
    std::string where = "scrape target " + std::to_string(i);
    if (t.info.name.empty()) throw ConfigError(where, "name", "is empty");
    if (!t.transport) throw ConfigError(where + " (" + t.info.name + ")", "transport", "is not set");
    if (!names.insert(t.info.name).second) throw ConfigError(where, "name", "'" + t.info.name + "' is used twice");
    if (t.path.empty() || t.path.front() != '/') throw ConfigError(where, "path", "must start with '/'");
    if (!t.heapProfilePath.empty() && t.heapProfilePath.front() != '/') {
      throw ConfigError(where, "heapProfilePath", "must start with '/'");
    }
    data_.push_back(TargetScrapes{std::move(t.info), {}, {}});
    slots_.push_back(Slot{std::move(t.transport), std::move(t.path), std::move(t.heapProfilePath), false, 0, {}});
    heap_.emplace_back();
  }
}

Scraper::~Scraper() {
  stop();
  self_.reset();  // handlers that still run see the scraper gone
  for (Slot& s : slots_) {
    if (s.busy && s.request != 0) s.transport->cancel(s.request);
  }
}

void Scraper::start() {
  stop();
  nextRoundAt_ = scheduler_.now();
  nextRound_ = scheduler_.scheduleAt(nextRoundAt_, [this] { round(); });
}

void Scraper::stop() {
  if (nextRound_ != 0) scheduler_.cancel(nextRound_);
  nextRound_ = 0;
}

void Scraper::round() {
  // The next round is due an interval after this one was *scheduled*, so a late
  // round (paced engine behind) does not shift the grid the rates are computed on.
  engine::TimePoint at = nextRoundAt_;
  nextRoundAt_ = at + options_.interval;
  nextRound_ = scheduler_.scheduleAt(nextRoundAt_, [this] { round(); });
  for (std::size_t i = 0; i < slots_.size(); ++i) scrapeTarget(i, at);
}

void Scraper::scrapeNow() {
  engine::TimePoint at = scheduler_.now();
  for (std::size_t i = 0; i < slots_.size(); ++i) scrapeTarget(i, at);
}

void Scraper::scrapeTarget(std::size_t index, engine::TimePoint roundAt) {
  Slot& slot = slots_[index];
  TargetStatus& status = data_[index].status;
  if (slot.busy) {
    ++status.overruns;
    return;
  }
  ScrapeHistory& history = data_[index].history;
  if (history.scrapes() > 0 && roundAt <= history.time(history.scrapes() - 1)) return;  // scraped at this instant
  ++status.attempts;
  kube::HttpRequest req = get(slot.path, options_.timeout, "metrics");
  // Ask for the 0.0.4 text format explicitly: servers may otherwise negotiate
  // OpenMetrics or protobuf.
  req.headers.push_back({"Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1"});
  slot.busy = true;
  std::weak_ptr<Scraper*> weak = self_;
  slot.request = slot.transport->submit(std::move(req), [weak, index, roundAt](kube::HttpResponse resp) {
    if (auto self = weak.lock()) (*self)->onResponse(index, roundAt, std::move(resp));
  });
}

void Scraper::onResponse(std::size_t index, engine::TimePoint roundAt, kube::HttpResponse response) {
  Slot& slot = slots_[index];
  TargetScrapes& target = data_[index];
  slot.busy = false;
  slot.request = 0;
  auto failed = [&](std::string why) {
    ++target.status.failures;
    target.status.lastError = std::move(why);
    target.status.lastFailureAt = scheduler_.now();
  };
  if (!response.ok()) {
    std::string why(kube::toString(response.outcome));
    if (!response.detail.empty()) why += ": " + firstLine(response.detail);
    return failed(std::move(why));
  }
  if (response.status != 200) {
    std::string why = "HTTP " + std::to_string(response.status);
    if (!response.body.empty()) why += ": " + firstLine(response.body);
    return failed(std::move(why));
  }
  ParseResult parsed = parsePrometheusText(response.body, options_.keep);
  if (!parsed.ok()) return failed("malformed exposition: " + parsed.error->describe());
  if (target.history.scrapes() > 0 && roundAt <= target.history.time(target.history.scrapes() - 1)) {
    return failed("scrape answered out of order");  // cannot happen while one is in flight
  }
  if (slot.heapProfilePath.empty()) return record(index, roundAt, parsed.families);
  // The slot stays busy until the heap profile is in, so the row is recorded whole and
  // a round that finds it busy counts as an overrun, as a slow /metrics would.
  slot.pending = std::move(parsed.families);
  slot.busy = true;
  ++heap_[index].attempts;
  std::weak_ptr<Scraper*> weak = self_;
  slot.request = slot.transport->submit(get(slot.heapProfilePath, options_.timeout, "debug/pprof/heap"),
                                        [weak, index, roundAt](kube::HttpResponse resp) {
                                          if (auto self = weak.lock())
                                            (*self)->onHeapProfile(index, roundAt, std::move(resp));
                                        });
}

void Scraper::onHeapProfile(std::size_t index, engine::TimePoint roundAt, kube::HttpResponse response) {
  Slot& slot = slots_[index];
  slot.busy = false;
  slot.request = 0;
  FamilyMap families = std::move(slot.pending);
  slot.pending.clear();
  HeapProfileStatus& hs = heap_[index];
  std::optional<double> inuse;
  if (!response.ok()) {
    hs.lastError = std::string(kube::toString(response.outcome));
    if (!response.detail.empty()) hs.lastError += ": " + firstLine(response.detail);
  } else if (response.status != 200) {
    hs.lastError = "HTTP " + std::to_string(response.status);
    if (!response.body.empty()) hs.lastError += ": " + firstLine(response.body);
  } else if (!(inuse = heapInuseFromProfile(response.body))) {
    hs.lastError = "no \"# HeapInuse = N\" line in the heap profile (was it asked for with debug=1?)";
  }
  if (inuse) {
    MetricFamily f;
    f.name = std::string(kHeapInuseAfterGc);
    f.type = MetricType::kGauge;
    f.help = "HeapInuse from " + slot.heapProfilePath + ", read right after a forced GC (cpscale)";
    f.samples.push_back(Sample{f.name, {}, *inuse, std::nullopt});
    families.insert_or_assign(f.name, std::move(f));
  } else {
    ++hs.failures;
  }
  record(index, roundAt, families);
}

void Scraper::record(std::size_t index, engine::TimePoint roundAt, const FamilyMap& families) {
  TargetScrapes& target = data_[index];
  target.history.record(roundAt, families);
  ++target.status.successes;
  target.status.lastSuccessAt = scheduler_.now();
}

std::size_t Scraper::pollTransports() {
  std::size_t handled = 0;
  std::vector<kube::Transport*> polled;
  for (Slot& s : slots_) {
    if (!s.busy) continue;
    kube::Transport* t = s.transport.get();
    if (std::find(polled.begin(), polled.end(), t) != polled.end()) continue;
    polled.push_back(t);
    handled += t->poll(engine::Duration::zero());
  }
  return handled;
}

std::size_t Scraper::inFlight() const {
  return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; }));
}

}  // namespace cpscale::metrics
