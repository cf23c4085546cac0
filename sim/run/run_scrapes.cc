#include "sim/run/run_scrapes.h"

#include <algorithm>

namespace cpscale::run {
using namespace std::chrono_literals;

ScrapeLoop::ScrapeLoop(std::vector<metrics::ScrapeTarget> targets, engine::Duration interval,
                       std::chrono::steady_clock::time_point origin)
    : clock_(origin), sim_(clock_), scraper_(sim_, std::move(targets), metrics::ScraperOptions{interval, {}, {}}) {
  for (const auto& t : scraper_.targets())
    if (t.info.role == metrics::TargetRole::kControllerManager) hasControllerManager_ = true;
  sim_.setIdleHook([this](engine::TimePoint deadline) {
    scraper_.pollTransports();
    auto wait = std::min<engine::Duration>(deadline - clock_.now(), 20ms);
    if (wait.count() > 0) std::this_thread::sleep_for(wait);
  });
}

void ScrapeLoop::start() {
  thread_ = std::thread([this] {
    scraper_.start();
    // The first round is the baseline every counter's increase starts from: it must
    // be in before the load starts, or the first requests are never counted.
    runWhile(10s, [this] {
      for (const auto& t : scraper_.targets())
        if (t.status.attempts == 0) return true;
      return scraper_.inFlight() > 0;
    });
    {
      std::lock_guard lock(mu_);
      firstRound_ = true;
    }
    cv_.notify_all();
    while (!stopping_.load()) {
      std::unique_lock data(dataMu_);
      if (restart_.exchange(false)) {
        // A round still in flight would make the boundary round an overrun: let it
        // finish first (bounded), so every target has a scrape at the boundary.
        runWhile(5s, [this] { return scraper_.inFlight() > 0; });
        boundaries_.push_back(sim_.now());  // the round below is recorded at or just after this
        scraper_.stop();
        scraper_.start();
        boundaryPending_ = true;
      }
      sim_.runUntil(clock_.now() + 50ms);
      watchControllerQueues();
      if (boundaryPending_ && scraper_.inFlight() == 0) {
        boundaryPending_ = false;
        boundariesAnswered_ = boundaries_.size();
      }
    }
  });
}

void ScrapeLoop::watchControllerQueues() {
  for (std::size_t i = 0; i < scraper_.targets().size(); ++i) {
    const auto& t = scraper_.targets()[i];
    if (t.info.role != metrics::TargetRole::kControllerManager) continue;
    const std::size_t n = t.history.scrapes();
    if (n == seenControllerScrapes_) continue;
    seenControllerScrapes_ = n;
    double depth = 0;
    for (auto id : t.history.seriesNamed("workqueue_depth")) depth += t.history.value(n - 1, id).value_or(0);
    if (!settling_.load()) continue;
    if (depth == 0)
      ++idleScrapes_;
    else
      idleScrapes_ = 0;
  }
}

std::optional<engine::TimePoint> ScrapeLoop::waitBoundary(std::size_t n, engine::Duration limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline && !stopping_.load()) {
    {
      std::lock_guard data(dataMu_);
      if (boundariesAnswered_ >= n) return boundaries_[n - 1];
    }
    std::this_thread::sleep_for(10ms);
  }
  std::lock_guard data(dataMu_);
  return boundaries_.size() >= n ? std::optional(boundaries_[n - 1]) : std::nullopt;
}

void ScrapeLoop::finish() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  sim_.stop();
  thread_.join();
  scraper_.stop();
  scraper_.scrapeNow();
  auto deadline = clock_.now() + 15s;
  while (scraper_.inFlight() > 0 && clock_.now() < deadline) {
    scraper_.pollTransports();
    std::this_thread::sleep_for(10ms);
  }
}

void ScrapeLoop::runWhile(engine::Duration limit, const std::function<bool()>& busy) {
  const auto deadline = clock_.now() + limit;
  while (busy() && clock_.now() < deadline && !stopping_.load()) sim_.runUntil(clock_.now() + 5ms);
}

bool VirtualScrapes::controllersSettled() {
  if (!settling_) return false;
  for (const auto& t : scraper_.targets()) {
    if (t.info.role != metrics::TargetRole::kControllerManager) continue;
    int idle = 0;
    for (std::size_t n = t.history.scrapes(); n > 0 && idle < 2 && t.history.time(n - 1) >= settleFrom_; --n) {
      double depth = 0;
      for (auto id : t.history.seriesNamed("workqueue_depth")) depth += t.history.value(n - 1, id).value_or(0);
      if (depth != 0) break;
      ++idle;
    }
    if (idle < 2) return false;
  }
  return true;
}

}  // namespace cpscale::run
