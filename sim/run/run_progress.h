// Live counters of a run, shared between the engine workers (which count) and the
// progress reporter (which reads, on a thread of its own): a Transport decorator under each worker's
// open-loop driver counts sends, completions, errors and writes with relaxed atomics.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/engine/clock.h"
#include "sim/kube/transport.h"

namespace cpscale::run {

struct RunCounters {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> completed{0};
  std::atomic<std::uint64_t> writes{0};  // completed POST/PUT/PATCH/DELETE with a 2xx
  std::atomic<std::uint64_t> errors{0};  // non-2xx (watch streams excepted) or no response
  // Largest lag (ns) of a send behind its intended time since the reporter last read it.
  std::atomic<std::int64_t> maxLagNs{0};
  // 0: setup (registration, population creation, warmup); 1: the steady window.
  std::atomic<int> phase{0};
};

// Periodic progress: one rewritten line on a terminal, plain log lines otherwise.
class ProgressReporter {
 public:
  ProgressReporter(RunCounters& counters, engine::Duration total, bool enabled);
  ~ProgressReporter() { stop(); }
  // Starts the reporter's thread (when enabled); stop() joins it.
  void start();
  void stop();

 private:
  void loop();

  RunCounters& counters_;
  std::optional<std::chrono::steady_clock::time_point> steadySince_;
  engine::Duration total_;
  bool enabled_;
  bool tty_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

class CountingTransport final : public kube::Transport {
 public:
  CountingTransport(kube::TransportPtr inner, engine::Clock& clock, RunCounters& counters)
      : inner_(std::move(inner)), clock_(clock), counters_(counters) {}

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override;
  void cancel(kube::RequestId id) override { inner_->cancel(id); }
  std::size_t poll(engine::Duration maxWait) override { return inner_->poll(maxWait); }
  std::size_t inFlight() const override { return inner_->inFlight(); }
  void wakeup() override { inner_->wakeup(); }
  const std::string& server() const override { return inner_->server(); }

 private:
  kube::TransportPtr inner_;
  engine::Clock& clock_;
  RunCounters& counters_;
};

}  // namespace cpscale::run
