#include "sim/load/open_loop_driver.h"

#include <algorithm>
#include <utility>

#include "sim/common/error.h"

namespace cpscale::load {

OpenLoopDriver::OpenLoopDriver(kube::Transport& inner, engine::Clock& clock, DriverOptions options)
    : inner_(inner), clock_(clock), options_(options) {
  if (options.maxInFlight == 0) throw ConfigError("OpenLoopDriver", "maxInFlight", "must be > 0");
  if (options.connections == 0) throw ConfigError("OpenLoopDriver", "connections", "must be > 0");
  if (options.maxInFlightPerConnection == 0) {
    throw ConfigError("OpenLoopDriver", "maxInFlightPerConnection", "must be > 0");
  }
  if (!(options.lagQuantile > 0 && options.lagQuantile <= 1)) {
    throw ConfigError("OpenLoopDriver", "lagQuantile", "must be in (0, 1]");
  }
  if (options.lagThreshold <= Duration{0}) {
    throw ConfigError("OpenLoopDriver", "lagThreshold", "must be > 0");
  }
  bound_ = std::min(options.maxInFlight, options.connections * options.maxInFlightPerConnection);
}

OpenLoopDriver::~OpenLoopDriver() = default;

kube::RequestId OpenLoopDriver::submit(kube::HttpRequest req, kube::ResponseHandler done) {
  if (req.stream) return openStream(std::move(req), std::move(done));
  const kube::RequestId id = nextId_++;
  const TimePoint submitted = clock_.now();
  if (!req.intendedAt) req.intendedAt = submitted;
  // FIFO: a request never overtakes one that is already waiting.
  if (admitted_ < bound_ && queue_.empty()) {
    send(id, std::move(req), std::move(done), submitted);
  } else {
    queue_.push_back(Waiting{id, std::move(req), std::move(done), submitted});
  }
  return id;
}

kube::RequestId OpenLoopDriver::openStream(kube::HttpRequest req, kube::ResponseHandler done) {
  // Never queued behind requests and never holding a slot: a watch that waited for an
  // in-flight slot, or held one, would stall every request queued after it.
  const kube::RequestId id = nextId_++;
  ++streamStats_.opened;
  // Registered before the inner submit, whose handler may in principle run at once.
  streams_[id] = 0;
  streamStats_.peakOpen = std::max(streamStats_.peakOpen, streams_.size());
  if (req.onBodyChunk)
    req.onBodyChunk = [this, sink = std::move(req.onBodyChunk)](std::string_view chunk) {
      streamStats_.bytes += chunk.size();
      return sink(chunk);
    };
  kube::RequestId inner = inner_.submit(std::move(req), [this, id, done = std::move(done)](kube::HttpResponse resp) {
    streams_.erase(id);
    ++streamStats_.closed;
    const bool refused = resp.ok() && (resp.status < 200 || resp.status >= 300);
    if ((!resp.ok() && resp.outcome != kube::TransportOutcome::kAborted) || refused) ++streamStats_.failed;
    done(std::move(resp));
  });
  if (auto it = streams_.find(id); it != streams_.end()) it->second = inner;
  return id;
}

void OpenLoopDriver::send(kube::RequestId id, kube::HttpRequest req, kube::ResponseHandler done, TimePoint submitted) {
  const TimePoint now = clock_.now();
  const TimePoint intended = *req.intendedAt;
  if (req.attempt > 1) {
    // A retry keeps its call's scheduled time, so its latency covers the stall; the
    // time since then is the client's own backoff, not the generator running late.
    statsFor(intended).recordRetry(req.retryReason, req.retryWait);
    inWindow(intended, [&](RequestStats& w) { w.recordRetry(req.retryReason, req.retryWait); });
  } else {
    statsFor(intended).recordSend(std::max(Duration{0}, submitted - intended), now - submitted);
    inWindow(intended,
             [&](RequestStats& w) { w.recordSend(std::max(Duration{0}, submitted - intended), now - submitted); });
  }
  Flight& f = flights_[id];
  f.intended = intended;
  f.sent = now;
  f.resource = req.statsResource.empty() ? "unknown" : req.statsResource;
  f.verb = req.statsVerb.empty() ? req.method : req.statsVerb;
  ++admitted_;
  f.innerId = inner_.submit(std::move(req), [this, id, done = std::move(done)](kube::HttpResponse resp) {
    const TimePoint end = clock_.now();
    auto it = flights_.find(id);
    Flight flight = std::move(it->second);
    flights_.erase(it);
    --admitted_;
    // A request its caller cancelled (a watch closed at the end of a run) says nothing
    // about the server: it is neither a latency nor an error.
    if (resp.outcome != kube::TransportOutcome::kAborted) {
      RequestStats& stats = statsFor(flight.intended);
      const RequestKey key{std::move(flight.resource), std::move(flight.verb), classifyStatus(resp.ok(), resp.status)};
      const int status = resp.ok() ? resp.status : 0;
      stats.recordStatus(status);
      stats.recordLatency(key, end - flight.intended, end - flight.sent);
      inWindow(flight.intended, [&](RequestStats& w) {
        w.recordStatus(status);
        w.recordLatency(key, end - flight.intended, end - flight.sent);
      });
    }
    done(std::move(resp));
    admitWaiting();
  });
}

void OpenLoopDriver::admitWaiting() {
  // A handler run by send() cannot complete synchronously, but guard anyway so a
  // transport that does cannot recurse without bound.
  if (admitting_) return;
  admitting_ = true;
  while (admitted_ < bound_ && !queue_.empty()) {
    Waiting w = std::move(queue_.front());
    queue_.pop_front();
    send(w.id, std::move(w.req), std::move(w.done), w.submitted);
  }
  admitting_ = false;
}

void OpenLoopDriver::cancel(kube::RequestId id) {
  if (auto it = streams_.find(id); it != streams_.end()) {
    inner_.cancel(it->second);
    return;
  }
  if (auto it = flights_.find(id); it != flights_.end()) {
    inner_.cancel(it->second.innerId);
    return;
  }
  auto it = std::find_if(queue_.begin(), queue_.end(), [id](const Waiting& w) { return w.id == id; });
  if (it == queue_.end()) return;
  Waiting w = std::move(*it);
  queue_.erase(it);
  kube::HttpResponse aborted;
  aborted.outcome = kube::TransportOutcome::kAborted;
  aborted.detail = "cancelled while waiting for an in-flight slot";
  w.done(std::move(aborted));
}

void OpenLoopDriver::beginWindow(std::size_t index, TimePoint start) {
  if (index >= kMaxWindows) return;
  windowStartNs_[index].store(start.time_since_epoch().count(), std::memory_order_relaxed);
  std::size_t n = windows_.load();
  while (n < index + 1 && !windows_.compare_exchange_weak(n, index + 1)) {
  }
}

int OpenLoopDriver::windowOf(TimePoint intended) const {
  const std::size_t n = windows_.load(std::memory_order_acquire);
  const std::int64_t t = intended.time_since_epoch().count();
  for (std::size_t i = n; i-- > 0;)
    if (windowStartNs_[i].load(std::memory_order_relaxed) <= t) return static_cast<int>(i);
  return -1;
}

RequestStats OpenLoopDriver::windowStats(std::size_t index) const {
  std::lock_guard lock(windowMu_);
  return index < kMaxWindows ? windowStats_[index] : RequestStats{};
}

}  // namespace cpscale::load
