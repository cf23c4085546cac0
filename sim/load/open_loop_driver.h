// The open-loop request driver: a Transport decorator between the actors' ApiClient and
// the real (or fake) transport. Actors submit at their scheduled time and never wait for
// a response before their next send; the driver sends at once unless the in-flight
// bound is reached, in which case requests wait in FIFO order with their scheduled time
// kept. Each request's latency is recorded from its scheduled time and from its actual
// send, per (resource, verb, outcome), so a generator that falls behind cannot hide
// server stalls (coordinated omission), and its lag is reported rather than mistaken
// for server latency.
//
// Streams (HttpRequest::stream: watches) are not requests of the open loop: one may
// stay open for the whole run, so it is sent at once, takes no in-flight slot and has
// no latency; it is counted in StreamStats instead.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>

#include "sim/engine/clock.h"
#include "sim/kube/transport.h"
#include "sim/load/request_stats.h"

namespace cpscale::load {

struct DriverOptions {
  // Requests in flight across all connections; watch streams are not counted.
  std::size_t maxInFlight = 4096;
  // Connections the wrapped transport uses (to each apiserver replica) and HTTP/2
  // streams allowed on each; the driver admits at most connections *
  // maxInFlightPerConnection as well. Spreading requests over connections and
  // replicas is the transport's job, and so is keeping watches off these connections.
  std::size_t connections = 1;
  std::size_t maxInFlightPerConnection = 256;
  // The run is generator-limited when this quantile of schedule lag exceeds lagThreshold.
  double lagQuantile = 0.99;
  Duration lagThreshold = std::chrono::milliseconds(50);
};

// Watch streams that went through a driver. Mergeable across workers.
struct StreamStats {
  std::uint64_t opened = 0;
  std::uint64_t closed = 0;  // ended in any way, cancels included
  // Ended by a transport failure or refused (non-2xx), cancels excepted.
  std::uint64_t failed = 0;
  std::size_t peakOpen = 0;  // most open at once (summed over workers when merged)
  std::uint64_t bytes = 0;   // body bytes the streams delivered (watch events, as sent)

  void merge(const StreamStats& o) {
    opened += o.opened;
    closed += o.closed;
    failed += o.failed;
    peakOpen += o.peakOpen;
    bytes += o.bytes;
  }
};

class OpenLoopDriver final : public kube::Transport {
 public:
  // `clock` gives actual send and completion times (the wall clock live). Throws
  // ConfigError naming the field for a zero bound or a bad lag quantile/threshold.
  OpenLoopDriver(kube::Transport& inner, engine::Clock& clock, DriverOptions options = {});
  ~OpenLoopDriver() override;

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override;
  // A queued request completes at once with kAborted; one in flight is cancelled below.
  void cancel(kube::RequestId id) override;
  std::size_t poll(Duration maxWait) override { return inner_.poll(maxWait); }
  // Requests submitted and not yet completed, queued ones included; streams excepted.
  std::size_t inFlight() const override { return admitted_ + queue_.size(); }
  void wakeup() override { inner_.wakeup(); }
  const std::string& server() const override { return inner_.server(); }

  std::size_t admitted() const { return admitted_; }
  std::size_t queued() const { return queue_.size(); }
  std::size_t bound() const { return bound_; }
  // The measured window starts at `t`: requests scheduled before it are counted in
  // setupStats(), the rest in stats(). Any thread may set it; a request is attributed
  // by its scheduled time, so one scheduled after the boundary can never land in setup.
  // Unset, everything is counted in stats().
  void setSteadyStart(TimePoint t) { steadyStartNs_.store(t.time_since_epoch().count(), std::memory_order_relaxed); }
  const RequestStats& stats() const { return stats_; }
  const RequestStats& setupStats() const { return setupStats_; }
  // Numbered windows inside the run (a capacity search's steps and the growth between
  // them), counted besides stats()/setupStats(): a request belongs to the window with
  // the latest start at or before its scheduled time, and to none before the first.
  // Any thread may begin one (index < kMaxWindows, starts in increasing order);
  // windowStats() copies under a lock, so another thread may read a window that ended
  // while the worker goes on. Without windows a request pays one atomic load.
  static constexpr std::size_t kMaxWindows = 64;
  void beginWindow(std::size_t index, TimePoint start);
  RequestStats windowStats(std::size_t index) const;
  // Streams open now.
  std::size_t streamsOpen() const { return streams_.size(); }
  const StreamStats& streamStats() const { return streamStats_; }
  GeneratorLimit limit() const { return generatorLimit(stats_, options_.lagQuantile, options_.lagThreshold); }

 private:
  struct Flight {
    kube::RequestId innerId = 0;
    TimePoint intended;
    TimePoint sent;
    std::string resource;
    std::string verb;
  };
  struct Waiting {
    kube::RequestId id;
    kube::HttpRequest req;
    kube::ResponseHandler done;
    TimePoint submitted;
  };

  kube::RequestId openStream(kube::HttpRequest req, kube::ResponseHandler done);
  void send(kube::RequestId id, kube::HttpRequest req, kube::ResponseHandler done, TimePoint submitted);
  void admitWaiting();

  kube::Transport& inner_;
  engine::Clock& clock_;
  DriverOptions options_;
  std::size_t bound_;
  std::size_t admitted_ = 0;
  kube::RequestId nextId_ = 1;
  std::deque<Waiting> queue_;
  std::unordered_map<kube::RequestId, Flight> flights_;
  bool admitting_ = false;
  RequestStats& statsFor(TimePoint intended) {
    return intended.time_since_epoch().count() >= steadyStartNs_.load(std::memory_order_relaxed) ? stats_ : setupStats_;
  }

  // The window `intended` belongs to, or -1.
  int windowOf(TimePoint intended) const;
  template <class F>
  void inWindow(TimePoint intended, F record) {
    if (int w = windowOf(intended); w >= 0) {
      std::lock_guard lock(windowMu_);
      record(windowStats_[static_cast<std::size_t>(w)]);
    }
  }

  RequestStats stats_;
  RequestStats setupStats_;
  std::array<std::atomic<std::int64_t>, kMaxWindows> windowStartNs_{};
  std::atomic<std::size_t> windows_{0};
  mutable std::mutex windowMu_;
  std::vector<RequestStats> windowStats_ = std::vector<RequestStats>(kMaxWindows);
  std::atomic<std::int64_t> steadyStartNs_{std::numeric_limits<std::int64_t>::min()};
  std::unordered_map<kube::RequestId, kube::RequestId> streams_;  // driver id -> inner id
  StreamStats streamStats_;
};

}  // namespace cpscale::load
