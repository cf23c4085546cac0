// Scale in one process: N engine loops on N threads. Each worker owns a Simulator, a
// transport made by the factory and an OpenLoopDriver around it, and the actors whose
// id hashes to it (FNV-1a, so the split is the same on every run and machine). Workers
// share nothing while running; their statistics are merged after they stop. With one
// worker everything runs on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/engine/simulator_impl.h"
#include "sim/engine/stable_hash.h"
#include "sim/load/open_loop_driver.h"
#include "sim/load/request_stats.h"
#include "sim/load/worker.h"

namespace cpscale::load {

struct WorkerOptions {
  std::size_t workers = 1;
  engine::SimulatorMode mode = engine::SimulatorMode::kVirtual;
  std::uint64_t seed = 0;
  DriverOptions driver{};
  // Paced mode: after the end time, how long to keep polling for responses still in
  // flight (actors no longer run). Virtual runs end at the end time.
  Duration drain = std::chrono::seconds(10);
  // Paced mode: the origin of the workers' timeline, so another clock (the scraper's)
  // can share it. Default: when the pool is constructed.
  std::optional<std::chrono::steady_clock::time_point> wallOrigin = std::nullopt;
  // Virtual mode with one worker: run on this engine instead of a new one, e.g. one a
  // model target already answers on (its setup calls ran on it before the pool existed).
  std::shared_ptr<engine::Simulator> simulator = nullptr;
};

// Makes a worker's own transport (each worker has its own connections). Called on the
// constructing thread once the worker's simulator exists, so a fake transport can
// deliver its replies as that simulator's events.
using TransportFactory = std::function<kube::TransportPtr(Worker& worker)>;
// Creates the worker's actors and schedules their first events. Runs on the worker's
// thread; what it creates must outlive run(), e.g. owned by a per-worker container.
using WorkerSetup = std::function<void(Worker&)>;

class WorkerPool {
 public:
  // Throws ConfigError("workers") for zero workers and DriverOptions' errors.
  explicit WorkerPool(WorkerOptions options, TransportFactory transports = nullptr);
  ~WorkerPool();

  // Runs setup, then every worker's simulator until `end`; paced runs then collect the
  // responses still in flight.
  // Rethrows the first exception a worker threw, after all workers stopped.
  void run(const WorkerSetup& setup, TimePoint end);
  // Asks every worker to stop after its current event (any thread).
  void stop();

  std::size_t size() const { return workers_.size(); }
  Worker& worker(std::size_t i) { return *workers_[i]; }
  // The measured window starts at `t` on the workers' timeline (any thread): see
  // OpenLoopDriver::setSteadyStart.
  void setSteadyStart(TimePoint t);
  // OpenLoopDriver::beginWindow on every worker (any thread), and the window's
  // statistics of all workers merged (any thread, also while running).
  void beginWindow(std::size_t index, TimePoint start);
  RequestStats windowStats(std::size_t index) const;
  const engine::Clock& clock() const { return wallClock_; }
  // Statistics of all workers in the measured window, merged. Call after run().
  RequestStats requestStats() const;
  // The same for requests scheduled before the measured window (setup).
  RequestStats setupRequestStats() const;
  // Watch streams of all workers, merged (they are not in requestStats()).
  StreamStats streamStats() const;
  std::uint64_t eventsRun() const;
  GeneratorLimit limit() const;

 private:
  void runOne(Worker& w, const WorkerSetup& setup, TimePoint end);

  WorkerOptions options_;
  engine::WallClock wallClock_;  // one origin for every paced worker, so timelines agree
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace cpscale::load
