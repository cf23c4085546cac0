#include "workloads/reflector.h"

#include <utility>

#include <nlohmann/json.hpp>

namespace cpscale::workloads {

namespace {

// The annotation on the bookmark that ends a streaming list's initial events.
constexpr const char* kInitialEventsEnd = "k8s.io/initial-events-end";

bool endsInitialEvents(const nlohmann::json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return false;
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return false;
  auto v = ann->find(kInitialEventsEnd);
  return v != ann->end() && v->is_string() && v->get_ref<const std::string&>() == "true";
}

}  // namespace

Reflector::Reflector(CallTracker& calls, EventTracker& timers, engine::Scheduler& sched, engine::RandomStream& rng,
                     ReflectorOptions options)
    : calls_(calls),
      timers_(timers),
      sched_(sched),
      rng_(rng),
      options_(std::move(options)),
      watchList_(options_.watchList) {
  if (!options_.keep.empty()) {
    // What the reflector itself reads of an event.
    for (const char* p : {"/metadata/resourceVersion", "/metadata/annotations/k8s.io~1initial-events-end", "/code"})
      options_.keep.emplace_back(p);
  }
}

void Reflector::start() { list(); }

void Reflector::stop() {
  stopped_ = true;
  lostAt_.reset();  // its owner ended it: not an outage
  if (watch_ != 0) calls_.api().cancel(std::exchange(watch_, 0));
}

void Reflector::relist() {
  if (stopped_ || listing_ || !synced_) return;
  if (watch_ != 0) calls_.api().cancel(std::exchange(watch_, 0));
  ++counts_.relists;
  list();
}

void Reflector::backoff(void (Reflector::*next)()) {
  ++counts_.backoffs;
  timers_.at(sched_.now() + backoff_.next(sched_.now(), rng_.uniform()), [this, next] { (this->*next)(); });
}

void Reflector::list() {
  if (stopped_) return;
  if (continueToken_.empty()) {
    ++counts_.lists;
    counts_.listed = 0;
  }
  listing_ = true;
  if (watchList_) {
    streaming_ = true;
    watch();
    return;
  }
  kube::ListOptions o = options_.selector;
  o.limit = options_.pageSize;
  o.continueToken = continueToken_;
  auto req = kube::ApiRequest::list(options_.collection, o);
  req.intendedAt = sched_.now();
  calls_.call(std::move(req), [this](kube::ApiResult r) {
    if (stopped_) return;
    if (!r.ok()) {
      ++counts_.errors;
      lastError_ = r.describe();
      lost();
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
    rv_ = r.body.value("/metadata/resourceVersion"_json_pointer, std::string());
    listed(false);
  });
}

// A full LIST (or a streaming list's initial events) is in: the informer is synced.
void Reflector::listed(bool viaStream) {
  listing_ = false;
  streaming_ = false;
  const bool first = !synced_;
  synced_ = true;
  restored();
  if (onListed_) onListed_(first);
  if (!viaStream) watch();
}

// A streaming list starts from the last resourceVersion seen ("" the first time or
// after 410: the newest state); a plain watch resumes from it.
void Reflector::watch() {
  if (stopped_) return;
  kube::ListOptions o = options_.selector;
  o.resourceVersion = rv_;
  o.allowWatchBookmarks = true;
  if (streaming_) {
    o.resourceVersionMatch = "NotOlderThan";
    o.extra.emplace_back("sendInitialEvents", "true");
  }
  const double base = std::chrono::duration<double>(options_.timeout).count();
  o.timeoutSeconds = static_cast<std::int64_t>(base * (1 + rng_.uniform()));
  ++counts_.watches;
  gone_ = false;
  watch_ = calls_.api().watch(
      options_.collection, o, [this](const kube::WatchEvent& ev) { onWatchEvent(ev); },
      [this](const kube::ApiResult& r) { onWatchClosed(r); }, options_.keep);
}

void Reflector::onWatchEvent(const kube::WatchEvent& ev) {
  if (ev.type == kube::WatchEventType::kError) {
    if (ev.object.value("code", 0) == 410) gone_ = true;
    return;
  }
  if (streaming_) {
    // The streaming list's initial state, as a LIST's items, up to the bookmark that
    // ends it and gives the list's resourceVersion.
    if (ev.type == kube::WatchEventType::kBookmark) {
      ++counts_.bookmarks;
      if (!endsInitialEvents(ev.object)) return;
      rv_ = ev.object.value("/metadata/resourceVersion"_json_pointer, std::string());
      listed(true);
      return;
    }
    ++counts_.listed;
    ++counts_.objectsListed;
    if (onItem_) onItem_(ev.object);
    return;
  }
  restored();  // a resumed watch delivers again
  std::string rv = ev.object.value("/metadata/resourceVersion"_json_pointer, std::string());
  if (!rv.empty()) rv_ = std::move(rv);
  if (ev.type == kube::WatchEventType::kBookmark) {
    ++counts_.bookmarks;
    return;
  }
  ++counts_.events;
  if (onEvent_) onEvent_(ev);
}

void Reflector::onWatchClosed(const kube::ApiResult& r) {
  watch_ = 0;
  if (stopped_ || r.outcome == kube::TransportOutcome::kAborted) return;
  if (gone_ || r.gone()) {
    // The resourceVersion fell out of the watch cache's window: list again, from the
    // newest state, after client-go's backoff.
    ++counts_.expired;
    ++counts_.relists;
    lost();
    rv_.clear();
    listing_ = true;  // relist() waits for it
    backoff(&Reflector::list);
    return;
  }
  if (streaming_ && r.outcome == kube::TransportOutcome::kOk && r.status >= 400 && r.status < 500 && r.status != 429) {
    // The server does not take streaming lists: paginated LISTs from now on.
    watchList_ = false;
    streaming_ = false;
    ++counts_.errors;
    lost();
    lastError_ = r.describe();
    list();
    return;
  }
  if (r.outcome == kube::TransportOutcome::kOk && r.status == 200 && !streaming_) {
    watch();  // the server's timeout: resume from the last event or bookmark
    return;
  }
  ++counts_.errors;
  lost();
  lastError_ = r.ok() ? "the stream ended before its initial events did" : r.describe();
  // A streaming list cut short starts over; a watch resumes from where it was.
  backoff(streaming_ ? &Reflector::list : &Reflector::watch);
}

void Reflector::lost() {
  if (synced_ && !lostAt_) lostAt_ = sched_.now();
}

void Reflector::restored() {
  if (!lostAt_) return;
  const engine::TimePoint lost = *std::exchange(lostAt_, std::nullopt);
  if (onRecovered_) onRecovered_(lost, sched_.now());
}

}  // namespace cpscale::workloads
