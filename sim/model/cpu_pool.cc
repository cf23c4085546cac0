#include "sim/model/cpu_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cpscale::model {

double erlangC(double c, double a) {
  if (a <= 0) return 0;
  const int n = std::max(1, static_cast<int>(std::lround(c)));
  if (a >= n) return 1;
  // Erlang B by its stable recursion, then C = B / (1 - rho (1 - B)).
  double b = 1;
  for (int k = 1; k <= n; ++k) b = a * b / (k + a * b);
  const double rho = a / n;
  return b / (1 - rho * (1 - b));
}

double meanWait(double c, double a, double serviceTime) {
  if (a >= c) return std::numeric_limits<double>::infinity();
  return erlangC(c, a) * serviceTime / (c - a);
}

CpuPool::CpuPool(CpuPoolOptions options)
    : options_(options),
      rng_(options.seed),
      slice_(std::max<std::int64_t>(1, options.window.count() / std::max(1, options.buckets))),
      demand_(static_cast<std::size_t>(std::max(1, options.buckets)), 0.0),
      requests_(demand_.size(), 0.0) {}

double CpuPool::windowSeconds() const {
  const std::int64_t now = last_.time_since_epoch().count();
  const std::int64_t full = slice_ * static_cast<std::int64_t>(demand_.size() - 1) + (now - current_ * slice_);
  const std::int64_t since = origin_ ? (last_ - *origin_).count() : 0;
  return static_cast<double>(std::max(slice_, std::min(full, since))) * 1e-9;
}

void CpuPool::advance(engine::TimePoint t) {
  if (!origin_) {
    origin_ = t;
    last_ = t;
    current_ = t.time_since_epoch().count() / slice_;
  }
  if (t < last_) t = last_;
  const double dt = std::chrono::duration<double>(t - last_).count();
  if (dt > 0) {
    // The fluid backlog integrates the windowed overload since the last look.
    const double a = options_.idleCores + demandSum_ / windowSeconds();
    backlog_ = std::max(0.0, backlog_ + (a - options_.cores) * dt);
  }
  last_ = t;
  const std::int64_t s = t.time_since_epoch().count() / slice_;
  if (s <= current_) return;
  const auto n = static_cast<std::int64_t>(demand_.size());
  for (std::int64_t k = std::max(current_ + 1, s - n + 1); k <= s; ++k) {
    demand_[static_cast<std::size_t>(k % n)] = 0;
    requests_[static_cast<std::size_t>(k % n)] = 0;
  }
  current_ = s;
  // Summed afresh rather than subtracted, so rounding never accumulates.
  demandSum_ = 0;
  requestSum_ = 0;
  for (std::size_t i = 0; i < demand_.size(); ++i) {
    demandSum_ += demand_[i];
    requestSum_ += requests_[i];
  }
}

double CpuPool::offeredLoad(engine::TimePoint t) {
  advance(t);
  return options_.idleCores + demandSum_ / windowSeconds();
}

double CpuPool::meanServiceTime(engine::TimePoint t) {
  advance(t);
  return requestSum_ > 0 ? demandSum_ / requestSum_ : 0;
}

double CpuPool::backlog(engine::TimePoint t) {
  advance(t);
  return backlog_;
}

void CpuPool::charge(engine::TimePoint t, double coreSeconds) {
  advance(t);
  const auto i = static_cast<std::size_t>(current_ % static_cast<std::int64_t>(demand_.size()));
  demand_[i] += coreSeconds;
  demandSum_ += coreSeconds;
  charged_ += coreSeconds;
}

double CpuPool::arrive(engine::TimePoint t, double coreSeconds, double requests) {
  advance(t);
  const double c = options_.cores;
  const double a = options_.idleCores + demandSum_ / windowSeconds();
  // The service time of the requests seen in the window; the first ones have only
  // their own.
  const double s = requestSum_ > 0 ? demandSum_ / requestSum_ : coreSeconds / std::max(requests, 1e-12);
  double wait = backlog_ / c;
  const double u = rng_.uniform();  // drawn on every arrival: one draw per call keeps runs aligned
  if (a > 0 && s > 0) {
    const double rho = std::min(a / c, options_.maxUtilization);
    if (u < erlangC(c, rho * std::max(1.0, std::round(c)))) {
      const double mean = s / (c * (1 - rho));
      wait += rng_.exponential(mean);
    }
  }
  const auto i = static_cast<std::size_t>(current_ % static_cast<std::int64_t>(demand_.size()));
  demand_[i] += coreSeconds;
  requests_[i] += requests;
  demandSum_ += coreSeconds;
  requestSum_ += requests;
  charged_ += coreSeconds;
  return wait;
}

}  // namespace cpscale::model
