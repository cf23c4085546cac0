#include "sim/run/run_progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "sim/common/duration.h"

namespace cpscale::run {
using namespace std::chrono_literals;

kube::RequestId CountingTransport::submit(kube::HttpRequest req, kube::ResponseHandler done) {
  counters_.sent.fetch_add(1, std::memory_order_relaxed);
  // A retry keeps its call's scheduled time: the wait since is the client's backoff.
  if (req.intendedAt && req.attempt == 1) {
    std::int64_t lag = (clock_.now() - *req.intendedAt).count();
    std::int64_t seen = counters_.maxLagNs.load(std::memory_order_relaxed);
    while (lag > seen && !counters_.maxLagNs.compare_exchange_weak(seen, lag, std::memory_order_relaxed)) {
    }
  }
  bool write = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
  bool stream = static_cast<bool>(req.onBodyChunk);
  return inner_->submit(std::move(req), [this, write, stream, done = std::move(done)](kube::HttpResponse resp) {
    counters_.completed.fetch_add(1, std::memory_order_relaxed);
    bool ok = resp.ok() && resp.status >= 200 && resp.status < 300;
    if (ok && write) counters_.writes.fetch_add(1, std::memory_order_relaxed);
    // A watch ends when it is cancelled at the end of a run: not an error.
    if (!ok && !(stream && resp.outcome == kube::TransportOutcome::kAborted))
      counters_.errors.fetch_add(1, std::memory_order_relaxed);
    done(std::move(resp));
  });
}

ProgressReporter::ProgressReporter(RunCounters& counters, engine::Duration total, bool enabled)
    : counters_(counters), total_(total), enabled_(enabled), tty_(::isatty(STDERR_FILENO)) {}

void ProgressReporter::start() {
  if (!enabled_) return;
  thread_ = std::thread([this] { loop(); });
}

void ProgressReporter::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (tty_) std::cerr << "\n";
}

void ProgressReporter::loop() {
  auto start = std::chrono::steady_clock::now();
  std::uint64_t lastWrites = 0;
  auto last = start;
  auto period = tty_ ? 1s : 10s;
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return done_; })) {
    auto now = std::chrono::steady_clock::now();
    std::uint64_t writes = counters_.writes.load();
    double secs = std::chrono::duration<double>(now - last).count();
    double qps = secs > 0 ? static_cast<double>(writes - lastWrites) / secs : 0;
    lastWrites = writes;
    last = now;
    double lagMs = static_cast<double>(counters_.maxLagNs.exchange(0)) / 1e6;
    auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - start);
    char line[256];
    const bool steady = counters_.phase.load() == 1;
    if (steady && !steadySince_) steadySince_ = now;
    if (steady) elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - *steadySince_);
    std::snprintf(line, sizeof line, "[%s %s/%s] writes %.0f/s  requests %llu  errors %llu  lag max %.1f ms",
                  steady ? "steady" : "setup", formatDuration(elapsed).c_str(),
                  steady ? formatDuration(std::chrono::duration_cast<std::chrono::seconds>(total_)).c_str() : "?", qps,
                  static_cast<unsigned long long>(counters_.completed.load()),
                  static_cast<unsigned long long>(counters_.errors.load()), lagMs);
    if (tty_)
      std::cerr << "\r\033[K" << line << std::flush;
    else
      std::cerr << "cpscale: " << line << "\n";
  }
}

}  // namespace cpscale::run
