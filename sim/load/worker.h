// One worker of a WorkerPool as its actors see it: its slot, simulator, driver and seed.
// Apart from the pool, so that a workload knows its place without the pool's machinery.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "sim/engine/stable_hash.h"
#include "sim/kube/transport.h"

namespace cpscale::engine {
class Simulator;
}

namespace cpscale::load {

class OpenLoopDriver;

// One engine loop's view, handed to the setup function on the worker's own thread.
class Worker {
 public:
  std::size_t index() const { return index_; }
  std::size_t workers() const { return workers_; }
  engine::Simulator& simulator() { return *sim_; }
  // The open-loop driver to hand to this worker's ApiClient; null without a transport
  // factory (pure model runs).
  OpenLoopDriver* driver() { return driver_.get(); }
  std::uint64_t seed() const { return seed_; }
  // Whether the actor with this id belongs to this worker.
  bool owns(std::string_view actorId) const { return shardOf(actorId, workers_) == index_; }
  static std::size_t shardOf(std::string_view actorId, std::size_t workers) {
    return static_cast<std::size_t>(engine::fnv1a64(actorId) % workers);
  }

 private:
  friend class WorkerPool;
  std::size_t index_ = 0;
  std::size_t workers_ = 1;
  std::uint64_t seed_ = 0;
  std::shared_ptr<engine::Simulator> sim_;
  kube::TransportPtr transport_;
  std::unique_ptr<OpenLoopDriver> driver_;
};

}  // namespace cpscale::load
