// Asynchronous API calls an actor population has in flight, so that destroying the
// population cancels them and their handlers never run on freed actors.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/engine/scheduler.h"
#include "sim/kube/api_client.h"

namespace cpscale::workloads {

class CallTracker {
 public:
  explicit CallTracker(kube::ApiClient& api) : api_(api) {}
  ~CallTracker() { cancelAll(); }
  CallTracker(const CallTracker&) = delete;
  CallTracker& operator=(const CallTracker&) = delete;

  // Starts `request`; `done(ApiResult)` runs when it completes, unless cancelAll() came
  // first. Handlers never run inside callAsync (the ApiClient contract), so the id is
  // recorded before any handler can look for it.
  template <class Done>
  void call(kube::ApiRequest request, Done done) {
    // A slot per call in flight, reused once its call is done: no hashing and no
    // allocation per call, on the hot path of every renewal.
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(ids_.size());
      ids_.push_back(0);
    }
    kube::CallId id = api_.callAsync(std::move(request), [this, slot, d = std::move(done)](kube::ApiResult r) mutable {
      if (closing_) return;
      ids_[slot] = 0;
      free_.push_back(slot);
      d(std::move(r));
    });
    ids_[slot] = id;
  }
  // Cancels every call in flight; their handlers are not called. Later calls are refused.
  void cancelAll() {
    closing_ = true;
    std::vector<kube::CallId> ids;
    ids.reserve(inFlight());
    for (kube::CallId id : ids_)
      if (id != 0) ids.push_back(id);
    for (kube::CallId id : ids) api_.cancel(id);
    ids_.clear();
    free_.clear();
  }
  bool closing() const { return closing_; }
  std::size_t inFlight() const { return ids_.size() - free_.size(); }
  kube::ApiClient& api() { return api_; }

 private:
  kube::ApiClient& api_;
  std::vector<kube::CallId> ids_;    // by slot; 0: free
  std::vector<std::uint32_t> free_;  // slots of ids_ not in use
  bool closing_ = false;
};

}  // namespace cpscale::workloads

namespace cpscale::workloads {

// One-shot engine events a population has scheduled (registration retries, arrivals),
// cancelled together when the population stops.
class EventTracker {
 public:
  explicit EventTracker(engine::Scheduler& sched) : sched_(sched) {}
  ~EventTracker() { cancelAll(); }
  EventTracker(const EventTracker&) = delete;
  EventTracker& operator=(const EventTracker&) = delete;

  template <class Fn>
  void at(engine::TimePoint t, Fn fn) {
    if (closing_) return;
    std::uint64_t token = ++next_;
    engine::EventId id = sched_.scheduleAt(t, [this, token, f = std::move(fn)]() mutable {
      ids_.erase(token);
      f();
    });
    ids_.emplace(token, id);
  }
  void cancelAll() {
    closing_ = true;
    for (const auto& [token, id] : ids_) sched_.cancel(id);
    ids_.clear();
  }
  std::size_t pending() const { return ids_.size(); }

 private:
  engine::Scheduler& sched_;
  std::unordered_map<std::uint64_t, engine::EventId> ids_;
  std::uint64_t next_ = 0;
  bool closing_ = false;
};

}  // namespace cpscale::workloads
