// A mergeable summary of non-negative integer samples (latencies in ns, sizes in
// bytes). One per worker, combined at report time, so recording never takes a lock.
#pragma once

#include <cstdint>
#include <memory>

namespace cpscale::engine {

class Statistic {
 public:
  virtual ~Statistic() = default;
  virtual void addValue(std::uint64_t value) = 0;
  // Adds `other`'s samples into this one. Both must be the same implementation with the
  // same configuration; otherwise throws std::invalid_argument (a programming error).
  virtual void combine(const Statistic& other) = 0;
  virtual std::uint64_t count() const = 0;
  virtual std::uint64_t min() const = 0;  // 0 when empty
  virtual std::uint64_t max() const = 0;  // 0 when empty
  virtual double mean() const = 0;        // 0 when empty
  // `q` in [0, 1]; a value no sample exceeds for a fraction q of the samples. 0 when empty.
  virtual std::uint64_t quantile(double q) const = 0;
  virtual std::unique_ptr<Statistic> clone() const = 0;
};

using StatisticPtr = std::unique_ptr<Statistic>;

}  // namespace cpscale::engine
