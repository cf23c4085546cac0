// The queueing part of the model: a pool of c cores that requests' CPU is charged to,
// and the wait a request sees there at the pool's current load.
//
// Load is measured, not configured: the pool keeps the CPU demand charged over a
// sliding window of virtual time (plus its idle cores) and from it the offered load
// a = demand rate (in cores), the utilization rho = a / c and the mean service time
// S = demand / requests. A request's wait is then
//   - while rho < 1: drawn from the M/M/c waiting time at that load: it waits with the
//     Erlang C probability C(c, a), and a waiting request waits Exp(c/S - lambda), i.e.
//     mean S / (c - a);
//   - plus a fluid backlog B (core-seconds) that grows by (a - c) dt while the windowed
//     demand exceeds the cores and drains at the spare capacity otherwise; every request
//     waits B / c behind it. This is what makes waits grow linearly with time once the
//     pool is saturated, as a real overloaded server's do (until timeouts cut them).
// Above rho = 1 the stochastic part keeps its value at `maxUtilization` and the backlog
// carries the overload.
//
// Deterministic: the only randomness is the pool's own seeded stream, drawn once per
// arrival in call order.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/random.h"

namespace cpscale::model {

// Erlang C: the probability that an arrival to an M/M/c queue with offered load
// a = lambda / mu (in servers) has to wait. c is rounded to the nearest whole number
// of servers (at least 1); 1 when a >= c, 0 when a <= 0.
double erlangC(double c, double a);
// The M/M/c mean wait in queue, C(c, a) * S / (c - a) for mean service time S;
// +infinity when a >= c.
double meanWait(double c, double a, double serviceTime);

struct CpuPoolOptions {
  double cores = 1;
  // CPU the processes on the pool burn with no load (core-seconds per second): counts
  // in the load like requests' CPU does.
  double idleCores = 0;
  // The sliding window load is measured over, in `buckets` slices.
  engine::Duration window = std::chrono::seconds(2);
  int buckets = 20;
  // Where the M/M/c part of the wait stops growing; the backlog takes over beyond.
  double maxUtilization = 0.98;
  std::uint64_t seed = 1;
};

class CpuPool {
 public:
  explicit CpuPool(CpuPoolOptions options);

  // A request (standing for `requests` identical ones when weighted) arriving at `t`
  // that needs `coreSeconds` of CPU in total. Returns the seconds it waits for a core
  // before being served. `t` must not go backwards between calls.
  double arrive(engine::TimePoint t, double coreSeconds, double requests = 1);
  // CPU charged without a request that waits for it (watch fan-out, background work).
  void charge(engine::TimePoint t, double coreSeconds);

  // The load at `t`: idle plus windowed demand, in cores.
  double offeredLoad(engine::TimePoint t);
  double utilization(engine::TimePoint t) { return offeredLoad(t) / options_.cores; }
  // Mean CPU per request over the window (seconds); 0 with no request in it.
  double meanServiceTime(engine::TimePoint t);
  // Core-seconds queued behind an overload at `t`.
  double backlog(engine::TimePoint t);
  // Everything charged since the start (requests and charge(), not idle).
  double chargedCoreSeconds() const { return charged_; }
  const CpuPoolOptions& options() const { return options_; }

 private:
  void advance(engine::TimePoint t);
  // The time the buckets cover at last_: the full buckets and the current one's part
  // (dividing by the whole window would see 2.5 % less load on average, which at high
  // utilization is a much larger error in the wait), and no more than has passed since
  // the first call.
  double windowSeconds() const;

  CpuPoolOptions options_;
  engine::RandomStream rng_;
  std::int64_t slice_;            // ns per bucket
  std::vector<double> demand_;    // core-seconds per bucket
  std::vector<double> requests_;  // arrivals per bucket
  double demandSum_ = 0;
  double requestSum_ = 0;
  std::int64_t current_ = 0;  // index of the bucket time is in (slice number)
  engine::TimePoint last_{};
  std::optional<engine::TimePoint> origin_;
  double backlog_ = 0;
  double charged_ = 0;
};

}  // namespace cpscale::model
