// One list-then-watch loop as client-go's reflector runs it, for the workloads'
// informer stand-ins: a paginated LIST, then a WATCH from the list's resourceVersion
// with bookmarks and a timeout drawn from [t, 2t) (so streams do not all end together).
// When the server ends the stream it watches again from the last event or bookmark; on
// 410 Gone it lists again; after any other failure it backs off 1 s first. The watch is
// a stream (HttpRequest::stream): it holds no open-loop request slot.
#pragma once

#include <cstdint>
#include <functional>
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
  std::uint64_t objectsListed = 0;  // items of every LIST page so far
};

class Reflector {
 public:
  // Every item of every LIST page, as the informer's store would take it.
  using ItemHandler = std::function<void(const nlohmann::json& object)>;
  // ADDED, MODIFIED and DELETED events (bookmarks and errors are the reflector's).
  using EventHandler = std::function<void(const kube::WatchEvent& event)>;
  // Each time a full LIST completed, before its WATCH opens; `first`: the sync.
  using ListedHandler = std::function<void(bool first)>;

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

  // Starts the first LIST.
  void start();
  // No request after this; the open watch is cancelled.
  void stop();
  // Drops the watch and lists everything again, as a restarted informer does (client-go
  // starts every informer with a full LIST). Nothing when a LIST is already under way
  // or the first has not finished.
  void relist();

  bool synced() const { return synced_; }
  const ReflectorCounts& counts() const { return counts_; }
  // The last failure, described; empty if none.
  const std::string& lastError() const { return lastError_; }

 private:
  void list();
  void watch();
  void backoff(void (Reflector::*next)());

  CallTracker& calls_;
  EventTracker& timers_;
  engine::Scheduler& sched_;
  engine::RandomStream& rng_;
  ReflectorOptions options_;
  ItemHandler onItem_;
  EventHandler onEvent_;
  ListedHandler onListed_;
  std::string rv_;
  std::string continueToken_;
  kube::CallId watch_ = 0;
  bool gone_ = false;     // the stream said 410: list again when it closes
  bool listing_ = false;  // a LIST (any of its pages) is under way
  bool synced_ = false;
  bool stopped_ = false;
  std::string lastError_;
  ReflectorCounts counts_;
};

}  // namespace cpscale::workloads
