// Polls /metrics of every kube-apiserver and etcd of the target on the engine's
// timeline and keeps what the figures need. All targets of a round are requested at
// once through their (asynchronous) transports, so a slow target delays nobody; a
// failed scrape is counted with its error and never stops the run.
//
//   metrics::Scraper scraper(sim, {{apiInfo, apiTransport}, {etcdInfo, etcdTransport}});
//   scraper.start();             // first round now, then every interval
//   ... run ...
//   scraper.scrapeNow();         // a final round at the end of the measured window
//   auto figs = metrics::allFigures(scraper.targets());
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/scheduler.h"
#include "sim/kube/transport.h"
#include "sim/metrics/prometheus_text.h"
#include "sim/metrics/scrape_history.h"

namespace cpscale::metrics {

struct ScrapeTarget {
  TargetInfo info;
  // Bound to the target's server with its credentials; may be shared with the load
  // generator ("the same authenticated transport"). Whoever drives the engine must
  // poll it (see Scraper::pollTransports).
  std::shared_ptr<kube::Transport> transport;
  std::string path = "/metrics";
  // Optional heap profile fetched right after each successful /metrics response, e.g.
  // "/debug/pprof/heap?gc=1&debug=1" on a kube-apiserver (profiling is on by default):
  // gc=1 collects garbage first, so its "# HeapInuse = N" line is the heap the objects
  // really hold. Recorded in the same scrape row as the synthetic gauge
  // cpscale_heap_inuse_after_gc_bytes; a failed fetch is counted (heapProfileStatus)
  // and the scrape kept without it. Empty: off.
  std::string heapProfilePath = {};
};

// Outcomes of a target's heap profile fetches (ScrapeTarget::heapProfilePath).
struct HeapProfileStatus {
  std::uint64_t attempts = 0;
  std::uint64_t failures = 0;
  std::string lastError;
};

// HeapInuse from the "# runtime.MemStats" block that Go's runtime/pprof appends to a
// heap profile written with debug=1 ("# HeapInuse = 123456"); nullopt when absent.
std::optional<double> heapInuseFromProfile(std::string_view debugText);

struct ScraperOptions {
  engine::Duration interval = std::chrono::seconds(5);
  // Per request; 0 means the interval, so a hung target is given up before the next
  // round would have asked it again.
  engine::Duration timeout{0};
  // Which families are stored. Default: those the figures read (isFigureFamily).
  FamilyFilter keep;
};

// The families the figures read; everything else in a scrape is dropped at parse time
// so a long run's memory grows with these only.
bool isFigureFamily(std::string_view family);

class Scraper {
 public:
  // Throws ConfigError for an interval or timeout <= 0 (timeout: < 0), a target
  // without a name or transport, or two targets with one name.
  Scraper(engine::Scheduler& scheduler, std::vector<ScrapeTarget> targets, ScraperOptions options = {});
  // Cancels the next round and drops in-flight scrapes.
  ~Scraper();
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  // Starts a round now and then one every interval until stop().
  void start();
  void stop();
  bool running() const { return nextRound_ != 0; }
  // One round now, outside the schedule: e.g. the last sample of a measured window.
  void scrapeNow();

  // Polls, without waiting, every transport with a scrape in flight; returns the
  // handlers run. For the engine's idle hook when the transports are the scraper's own.
  std::size_t pollTransports();
  std::size_t inFlight() const;

  // In the order given at construction.
  const std::vector<TargetScrapes>& targets() const { return data_; }
  // Parallel to targets(); all zero for a target without heapProfilePath.
  const std::vector<HeapProfileStatus>& heapProfileStatus() const { return heap_; }
  const ScraperOptions& options() const { return options_; }

 private:
  struct Slot {
    std::shared_ptr<kube::Transport> transport;
    std::string path;
    std::string heapProfilePath;
    bool busy = false;
    kube::RequestId request = 0;
    // A parsed /metrics body waiting for the heap profile to complete its row.
    FamilyMap pending;
  };
  void round();
  void scrapeTarget(std::size_t index, engine::TimePoint roundAt);
  void onResponse(std::size_t index, engine::TimePoint roundAt, kube::HttpResponse response);
  void onHeapProfile(std::size_t index, engine::TimePoint roundAt, kube::HttpResponse response);
  void record(std::size_t index, engine::TimePoint roundAt, const FamilyMap& families);

  engine::Scheduler& scheduler_;
  ScraperOptions options_;
  std::vector<TargetScrapes> data_;
  std::vector<Slot> slots_;
  std::vector<HeapProfileStatus> heap_;
  engine::EventId nextRound_ = 0;
  engine::TimePoint nextRoundAt_{};
  // Response handlers hold a weak reference: a transport outliving the scraper (it
  // may be shared) can still run a handler after the scraper is gone.
  std::shared_ptr<Scraper*> self_;
};

}  // namespace cpscale::metrics
