// A run's scrapes as its supervisor sees them: a round at each phase boundary, the
// controllers' settling, and the history read while the run goes on. Live, the scraper
// runs on a paced engine and a thread of its own (ScrapeLoop); in virtual time, on the
// run's one engine beside the workloads and the target (VirtualScrapes).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/simulator_impl.h"
#include "sim/metrics/scraper.h"

namespace cpscale::run {

// The run's scrapes as its supervisor sees them: a round at each phase boundary, the
// controllers' settling, and the history read while the run goes on.
class RunScrapes {
 public:
  virtual ~RunScrapes() = default;
  // Settling: from now on, counts the controller-manager's scrapes in a row whose
  // workqueues were all empty; settled once two were (five seconds or more of an idle
  // controller at the default interval), or at once when no controller-manager is scraped.
  virtual void startSettling() = 0;
  virtual bool controllersSettled() = 0;
  // A phase boundary: a round now, so counters have a value at the boundary itself,
  // and the schedule restarts from there.
  virtual void scrapeAtBoundary() = 0;
  // The time of the `n`th boundary round once it was answered (bounded wait), or none.
  virtual std::optional<engine::TimePoint> waitBoundary(std::size_t n,
                                                        engine::Duration limit = std::chrono::seconds(20)) = 0;
  // The scrapes between two times, while the run goes on.
  virtual std::vector<metrics::TargetScrapes> slice(engine::TimePoint from, engine::TimePoint to) = 0;
  // The run is over: no more rounds.
  virtual void finish() = 0;
  virtual const std::vector<metrics::TargetScrapes>& targets() const = 0;
  // When each boundary round was started, in order. Read after finish().
  virtual const std::vector<engine::TimePoint>& boundaries() const = 0;
};

// The scraper runs on its own paced engine and thread, so a slow /metrics never delays
// an actor, and the actors' engines never delay a scrape.
class ScrapeLoop final : public RunScrapes {
 public:
  ScrapeLoop(std::vector<metrics::ScrapeTarget> targets, engine::Duration interval,
             std::chrono::steady_clock::time_point origin);
  ~ScrapeLoop() { finish(); }

  void start();
  // Settling (any thread).
  void startSettling() override {
    idleScrapes_ = 0;
    settling_ = true;
  }
  bool controllersSettled() override { return !hasControllerManager_ || idleScrapes_.load() >= 2; }
  // On the scrape thread: after each new scrape of a controller-manager, whether its
  // workqueues (sum of workqueue_depth) were empty.
  void watchControllerQueues();
  // Runs the scrape engine while `busy` holds, for at most `limit` or until stopped.
  void runWhile(engine::Duration limit, const std::function<bool()>& busy);
  // Blocks until the first round was answered (or given up on).
  void waitFirstRound() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return firstRound_; });
  }
  // A phase boundary (any thread).
  void scrapeAtBoundary() override { restart_ = true; }
  // Waits (bounded) until the `n`th boundary round was answered; its time, or none.
  std::optional<engine::TimePoint> waitBoundary(std::size_t n, engine::Duration limit) override;
  // The scrapes between two times, while the loop runs (any thread).
  std::vector<metrics::TargetScrapes> slice(engine::TimePoint from, engine::TimePoint to) override {
    std::lock_guard data(dataMu_);
    return metrics::sliceTargets(scraper_.targets(), from, to);
  }
  // One last round (the end of the measured window), waits for it, then stops.
  void finish() override;
  const std::vector<metrics::TargetScrapes>& targets() const override { return scraper_.targets(); }
  const std::vector<engine::TimePoint>& boundaries() const override { return boundaries_; }

 private:
  engine::WallClock clock_;
  engine::PacedSimulator sim_;
  metrics::Scraper scraper_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> restart_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool firstRound_ = false;
  std::vector<engine::TimePoint> boundaries_;
  // Held by the scrape thread while it runs its engine; other threads take it to read
  // the scrapes mid-run.
  std::mutex dataMu_;
  bool boundaryPending_ = false;
  std::size_t boundariesAnswered_ = 0;
  std::atomic<bool> settling_{false};
  std::atomic<int> idleScrapes_{0};
  std::atomic<bool> hasControllerManager_{false};
  std::size_t seenControllerScrapes_ = 0;
};

// A virtual run's scrapes: the scraper runs on the run's one engine, beside the
// workloads and the target, in virtual time. Everything is on that engine's thread, so
// nothing waits: a boundary round is started at once and answered a few virtual
// milliseconds later, and the run's end waits for it (see the drain in the run session).
class VirtualScrapes final : public RunScrapes {
 public:
  VirtualScrapes(engine::Simulator& sim, std::vector<metrics::ScrapeTarget> targets, engine::Duration interval)
      : sim_(sim), scraper_(sim, std::move(targets), metrics::ScraperOptions{interval, {}, {}}) {}
  void start() { scraper_.start(); }
  // Whether every target has been asked and no scrape is in flight.
  bool idle() const {
    for (const auto& t : scraper_.targets())
      if (t.status.attempts == 0) return false;
    return scraper_.inFlight() == 0;
  }
  void startSettling() override {
    settling_ = true;
    settleFrom_ = sim_.now();
  }
  // As ScrapeLoop's: two scrapes in a row of the (modelled) controller-manager, taken
  // since settling began, whose workqueues were all empty; at once without one.
  bool controllersSettled() override;
  void scrapeAtBoundary() override {
    boundaries_.push_back(sim_.now());
    scraper_.stop();
    scraper_.start();
  }
  std::optional<engine::TimePoint> waitBoundary(std::size_t n, engine::Duration) override {
    return n >= 1 && n <= boundaries_.size() ? std::optional(boundaries_[n - 1]) : std::nullopt;
  }
  std::vector<metrics::TargetScrapes> slice(engine::TimePoint from, engine::TimePoint to) override {
    return metrics::sliceTargets(scraper_.targets(), from, to);
  }
  void finish() override { scraper_.stop(); }
  const std::vector<metrics::TargetScrapes>& targets() const override { return scraper_.targets(); }
  const std::vector<engine::TimePoint>& boundaries() const override { return boundaries_; }

 private:
  engine::Simulator& sim_;
  metrics::Scraper scraper_;
  std::vector<engine::TimePoint> boundaries_;
  bool settling_ = false;
  engine::TimePoint settleFrom_{};
};

}  // namespace cpscale::run
