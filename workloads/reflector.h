// One list-then-watch loop as client-go's reflector runs it, for the workloads'
// informer stand-ins: a paginated LIST, then a WATCH from the list's resourceVersion
// with bookmarks and a timeout drawn from [t, 2t) (so streams do not all end together).
// With `watchList` (client-go's WatchListClient, on by default since client-go 1.35, so
// in every 1.36 kubelet and kube-proxy) the LIST is a streaming list instead: a WATCH
// with sendInitialEvents=true and resourceVersionMatch=NotOlderThan whose ADDED events
// up to the bookmark annotated k8s.io/initial-events-end are the list; the same stream
// then goes on as the watch. A server that refuses it (4xx) gets paginated LISTs from
// then on, as client-go falls back.
// When the server ends the stream it watches again from the last event or bookmark; on
// 410 Gone it lists again; after any other failure it backs off first, as client-go's
// reflector does: 800 ms doubling up to 30 s, each delay drawn from [d, 2d), back to
// 800 ms after 2 minutes without one. The watch is a stream (HttpRequest::stream): it
// holds no open-loop request slot.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/engine/random.h"
#include "sim/engine/scheduler.h"
#include "sim/kube/api_client.h"
#include "workloads/call_tracker.h"

namespace cpscale::workloads {

struct ReflectorOptions {
  kube::ResourceRef collection;
  // Selectors and extra parameters sent with every LIST and WATCH (labelSelector,
  // fieldSelector, extra); the paging and watch fields are the reflector's own.
  kube::ListOptions selector;
  std::int64_t pageSize = 500;
  engine::Duration timeout = std::chrono::minutes(5);
  bool watchList = false;  // list through a streaming list (see the top of this header)
  // The parts of each watched object the handlers read (kube::WatchProjection), besides
  // what the reflector reads itself; empty: every event's whole object. LIST pages are
  // always whole.
  kube::WatchProjection keep;
};

struct ReflectorCounts {
  std::uint64_t lists = 0;    // full LISTs started (pages not counted)
  std::uint64_t relists = 0;  // of which after 410 Gone or asked for (relist())
  std::uint64_t watches = 0;  // WATCH streams opened
  std::uint64_t events = 0;   // ADDED/MODIFIED/DELETED received
  std::uint64_t bookmarks = 0;
  std::uint64_t expired = 0;        // streams ended by 410 Gone
  std::uint64_t errors = 0;         // failed LISTs and streams that ended in error
  std::uint64_t listed = 0;         // items of the current (or last) full LIST
  std::uint64_t objectsListed = 0;  // items of every LIST page (or streaming list) so far
  std::uint64_t backoffs = 0;       // waits before trying again after a failure
};

// client-go's reflector backoff (tools/cache/reflector.go, defaultBackoff*).
struct ReflectorBackoff {
  static constexpr engine::Duration kInitial = std::chrono::milliseconds(800);
  static constexpr engine::Duration kCap = std::chrono::seconds(30);
  static constexpr engine::Duration kReset = std::chrono::minutes(2);

  // The wait before the next try at `now`, drawn with `u` in [0, 1).
  engine::Duration next(engine::TimePoint now, double u) {
    if (!started_ || now - last_ > kReset) step_ = kInitial;
    started_ = true;
    last_ = now;
    const engine::Duration d = step_;
    step_ = std::min(step_ * 2, kCap);
    return d + std::chrono::duration_cast<engine::Duration>(d * u);
  }

 private:
  engine::Duration step_ = kInitial;
  engine::TimePoint last_{};
  bool started_ = false;
};

class Reflector {
 public:
  // Every item of every LIST page, as the informer's store would take it.
  using ItemHandler = std::function<void(const nlohmann::json& object)>;
  // ADDED, MODIFIED and DELETED events (bookmarks and errors are the reflector's).
  using EventHandler = std::function<void(const kube::WatchEvent& event)>;
  // Each time a full LIST completed, before its WATCH opens; `first`: the sync.
  using ListedHandler = std::function<void(bool first)>;
  // An outage ended: the stream, synced before, failed at `lost` (its WATCH or LIST
  // errored, or the server said 410) and was watching again at `restored` (its relist
  // done, or its resumed watch's first event or bookmark in). A server restart under
  // a fleet's streams is an outage of each.
  using RecoveredHandler = std::function<void(engine::TimePoint lost, engine::TimePoint restored)>;

  // LISTs go through `calls` and backoffs through `timers`, so the owner's cancelAll()
  // ends them; the watch is the reflector's own and stop() ends it. `rng` draws the
  // watch timeouts. All must outlive the reflector.
  Reflector(CallTracker& calls, EventTracker& timers, engine::Scheduler& sched, engine::RandomStream& rng,
            ReflectorOptions options);
  ~Reflector() { stop(); }
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void onItem(ItemHandler h) { onItem_ = std::move(h); }
  void onEvent(EventHandler h) { onEvent_ = std::move(h); }
  void onListed(ListedHandler h) { onListed_ = std::move(h); }
  void onRecovered(RecoveredHandler h) { onRecovered_ = std::move(h); }

  // Starts the first LIST.
  void start();
  // No request after this; the open watch is cancelled.
  void stop();
  // Drops the watch and lists everything again, as a restarted informer does (client-go
  // starts every informer with a full LIST). Nothing when a LIST is already under way
  // or the first has not finished.
  void relist();

  bool synced() const { return synced_; }
  // Since when the stream has been in an outage (see RecoveredHandler); nullopt while
  // it watches, before it first synced, and once stopped.
  std::optional<engine::TimePoint> lostSince() const { return lostAt_; }
  const ReflectorCounts& counts() const { return counts_; }
  // The last failure, described; empty if none.
  const std::string& lastError() const { return lastError_; }

 private:
  void list();
  void watch();
  void backoff(void (Reflector::*next)());
  void onWatchEvent(const kube::WatchEvent& ev);
  void onWatchClosed(const kube::ApiResult& r);
  void listed(bool viaStream);
  void lost();
  void restored();

  CallTracker& calls_;
  EventTracker& timers_;
  engine::Scheduler& sched_;
  engine::RandomStream& rng_;
  ReflectorOptions options_;
  ItemHandler onItem_;
  EventHandler onEvent_;
  ListedHandler onListed_;
  RecoveredHandler onRecovered_;
  std::optional<engine::TimePoint> lostAt_;
  std::string rv_;
  std::string continueToken_;
  kube::CallId watch_ = 0;
  bool gone_ = false;       // the stream said 410: list again when it closes
  bool listing_ = false;    // a LIST (any of its pages) or a streaming list is under way
  bool streaming_ = false;  // the open watch is a streaming list not yet at its end bookmark
  bool watchList_ = false;  // streaming lists (options_.watchList until the server refused one)
  bool synced_ = false;
  bool stopped_ = false;
  std::string lastError_;
  ReflectorCounts counts_;
  ReflectorBackoff backoff_;
};

}  // namespace cpscale::workloads
