#include "sim/load/worker_pool.h"

#include <exception>
#include <thread>

#include "sim/common/error.h"

namespace cpscale::load {

WorkerPool::WorkerPool(WorkerOptions options, TransportFactory transports)
    : options_(options), wallClock_(options.wallOrigin.value_or(std::chrono::steady_clock::now())) {
  if (options.workers == 0) throw ConfigError("WorkerPool", "workers", "must be > 0");
  if (options.simulator && (options.workers != 1 || options.mode != engine::SimulatorMode::kVirtual ||
                            options.simulator->mode() != engine::SimulatorMode::kVirtual))
    throw ConfigError("WorkerPool", "simulator", "a given engine serves one virtual worker only");
  for (std::size_t i = 0; i < options.workers; ++i) {
    auto w = std::make_unique<Worker>();
    w->index_ = i;
    w->workers_ = options.workers;
    w->seed_ = engine::streamSeed(options.seed, i);
    if (options.simulator) {
      w->sim_ = options.simulator;
    } else if (options.mode == engine::SimulatorMode::kVirtual) {
      w->sim_ = std::make_unique<engine::VirtualSimulator>();
    } else {
      w->sim_ = std::make_unique<engine::PacedSimulator>(wallClock_);
    }
    if (transports) {
      w->transport_ = transports(*w);
      if (!w->transport_) throw ConfigError("WorkerPool", "transports", "factory returned no transport");
      w->driver_ = std::make_unique<OpenLoopDriver>(*w->transport_, w->sim_->clock(), options.driver);
      if (options.mode == engine::SimulatorMode::kPaced) {
        OpenLoopDriver* d = w->driver_.get();
        engine::Clock* clock = &w->sim_->clock();
        w->sim_->setIdleHook([d, clock](TimePoint deadline) { d->poll(deadline - clock->now()); });
      }
    }
    workers_.push_back(std::move(w));
  }
}

WorkerPool::~WorkerPool() = default;

void WorkerPool::runOne(Worker& w, const WorkerSetup& setup, TimePoint end) {
  setup(w);
  engine::Simulator& sim = *w.sim_;
  sim.runUntil(end);
  if (w.driver_ == nullptr || w.driver_->inFlight() == 0) return;
  // Live responses still in flight are collected (up to `drain`) so the last requests'
  // latencies are not lost; no more events run, so actors send nothing new. A virtual
  // run stops at `end` exactly: its replies are events too, and running them would let
  // the actors go on and make results depend on the number of workers.
  if (options_.mode == engine::SimulatorMode::kVirtual) return;
  const TimePoint deadline = sim.clock().now() + options_.drain;
  while (w.driver_->inFlight() > 0 && sim.clock().now() < deadline) {
    w.driver_->poll(std::min<Duration>(deadline - sim.clock().now(), std::chrono::milliseconds(100)));
  }
}

void WorkerPool::run(const WorkerSetup& setup, TimePoint end) {
  if (workers_.size() == 1) {
    runOne(*workers_[0], setup, end);
    return;
  }
  std::vector<std::exception_ptr> errors(workers_.size());
  std::vector<std::thread> threads;
  threads.reserve(workers_.size());
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    threads.emplace_back([this, i, &setup, &errors, end] {
      try {
        runOne(*workers_[i], setup, end);
      } catch (...) {
        errors[i] = std::current_exception();
        stop();  // one failed worker ends the run for all
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void WorkerPool::stop() {
  for (auto& w : workers_) {
    w->sim_->stop();
    if (w->transport_) w->transport_->wakeup();
  }
}

void WorkerPool::beginWindow(std::size_t index, TimePoint start) {
  for (auto& w : workers_)
    if (w->driver_) w->driver_->beginWindow(index, start);
}

RequestStats WorkerPool::windowStats(std::size_t index) const {
  RequestStats all;
  for (const auto& w : workers_)
    if (w->driver_) all.merge(w->driver_->windowStats(index));
  return all;
}

RequestStats WorkerPool::requestStats() const {
  RequestStats all;
  for (const auto& w : workers_) {
    if (w->driver_) all.merge(w->driver_->stats());
  }
  return all;
}

RequestStats WorkerPool::setupRequestStats() const {
  RequestStats all;
  for (const auto& w : workers_) {
    if (w->driver_) all.merge(w->driver_->setupStats());
  }
  return all;
}

StreamStats WorkerPool::streamStats() const {
  StreamStats all;
  for (const auto& w : workers_) {
    if (w->driver_) all.merge(w->driver_->streamStats());
  }
  return all;
}

void WorkerPool::setSteadyStart(TimePoint t) {
  for (auto& w : workers_) {
    if (w->driver_) w->driver_->setSteadyStart(t);
  }
}

std::uint64_t WorkerPool::eventsRun() const {
  std::uint64_t n = 0;
  for (const auto& w : workers_) n += w->sim_->stats().eventsRun;
  return n;
}

GeneratorLimit WorkerPool::limit() const {
  return generatorLimit(requestStats(), options_.driver.lagQuantile, options_.driver.lagThreshold);
}

}  // namespace cpscale::load
