#include "workloads/reflector.h"

#include <utility>

namespace cpscale::workloads {

namespace {

// After a failed LIST or an unexpected watch end: client-go's reflector backs off
// before trying again instead of hammering the server.
constexpr engine::Duration kWatchBackoff = std::chrono::seconds(1);

}  // namespace

Reflector::Reflector(CallTracker& calls, EventTracker& timers, engine::Scheduler& sched, engine::RandomStream& rng,
                     ReflectorOptions options)
    : calls_(calls), timers_(timers), sched_(sched), rng_(rng), options_(std::move(options)) {}

void Reflector::start() { list(); }

void Reflector::stop() {
  stopped_ = true;
  if (watch_ != 0) calls_.api().cancel(std::exchange(watch_, 0));
}

void Reflector::relist() {
  if (stopped_ || listing_ || !synced_) return;
  if (watch_ != 0) calls_.api().cancel(std::exchange(watch_, 0));
  ++counts_.relists;
  list();
}

void Reflector::backoff(void (Reflector::*next)()) {
  timers_.at(sched_.now() + kWatchBackoff, [this, next] { (this->*next)(); });
}

void Reflector::list() {
  if (stopped_) return;
  kube::ListOptions o = options_.selector;
  o.limit = options_.pageSize;
  o.continueToken = continueToken_;
  if (continueToken_.empty()) {
    ++counts_.lists;
    counts_.listed = 0;
  }
  listing_ = true;
  auto req = kube::ApiRequest::list(options_.collection, o);
  req.intendedAt = sched_.now();
  calls_.call(std::move(req), [this](kube::ApiResult r) {
    if (stopped_) return;
    if (!r.ok()) {
      ++counts_.errors;
      lastError_ = r.describe();
      // An expired continue token means the snapshot is gone: start over.
      continueToken_.clear();
      backoff(&Reflector::list);  // still listing: relist() waits for it
      return;
    }
    if (auto items = r.body.find("items"); items != r.body.end() && items->is_array()) {
      counts_.listed += items->size();
      counts_.objectsListed += items->size();
      if (onItem_) {
        for (const auto& item : *items) onItem_(item);
      }
    }
    std::string cont = r.body.value("/metadata/continue"_json_pointer, std::string());
    if (!cont.empty()) {
      continueToken_ = std::move(cont);
      list();
      return;
    }
    continueToken_.clear();
    listing_ = false;
    rv_ = r.body.value("/metadata/resourceVersion"_json_pointer, std::string());
    const bool first = !synced_;
    synced_ = true;
    if (onListed_) onListed_(first);
    watch();
  });
}

void Reflector::watch() {
  if (stopped_) return;
  kube::ListOptions o = options_.selector;
  o.resourceVersion = rv_;
  o.allowWatchBookmarks = true;
  const double base = std::chrono::duration<double>(options_.timeout).count();
  o.timeoutSeconds = static_cast<std::int64_t>(base * (1 + rng_.uniform()));
  ++counts_.watches;
  gone_ = false;
  watch_ = calls_.api().watch(
      options_.collection, o,
      [this](kube::WatchEvent&& ev) {
        if (ev.type == kube::WatchEventType::kError) {
          if (ev.object.value("code", 0) == 410) gone_ = true;
          return;
        }
        std::string rv = ev.object.value("/metadata/resourceVersion"_json_pointer, std::string());
        if (!rv.empty()) rv_ = std::move(rv);
        if (ev.type == kube::WatchEventType::kBookmark) {
          ++counts_.bookmarks;
          return;
        }
        ++counts_.events;
        if (onEvent_) onEvent_(ev);
      },
      [this](const kube::ApiResult& r) {
        watch_ = 0;
        if (stopped_ || r.outcome == kube::TransportOutcome::kAborted) return;
        if (gone_ || r.gone()) {
          // The resourceVersion fell out of the watch cache's window: list again.
          ++counts_.expired;
          ++counts_.relists;
          list();
          return;
        }
        if (r.outcome == kube::TransportOutcome::kOk && r.status == 200) {
          watch();  // the server's timeout: resume from the last event or bookmark
          return;
        }
        ++counts_.errors;
        lastError_ = r.describe();
        backoff(&Reflector::watch);
      });
}

}  // namespace cpscale::workloads
