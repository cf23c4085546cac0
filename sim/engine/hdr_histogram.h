// HDR-style log-linear histogram (after Gil Tene's HdrHistogram): exponentially sized
// buckets, each split linearly into 1024 sub-buckets, so every recorded value is kept
// to within 1/1024 (~3 significant digits) from 1 ns to 60 s. Constant memory, O(1)
// record, exact merge by adding counts: what latency needs.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/statistic.h"

namespace cpscale::engine {

class HdrHistogram final : public Statistic {
 public:
  // Values above this are recorded as this and counted in saturated(): 60 s in ns.
  static constexpr std::uint64_t kDefaultHighest = 60'000'000'000ULL;

  // `highestTrackable` >= 2048; throws ConfigError otherwise.
  explicit HdrHistogram(std::uint64_t highestTrackable = kDefaultHighest);

  void addValue(std::uint64_t value) override { record(value, 1); }
  void record(std::uint64_t value, std::uint64_t times);
  void combine(const Statistic& other) override;
  void merge(const HdrHistogram& other);

  std::uint64_t count() const override { return total_; }
  std::uint64_t min() const override { return total_ ? min_ : 0; }
  std::uint64_t max() const override { return max_; }
  double mean() const override { return total_ ? sum_ / static_cast<double>(total_) : 0.0; }
  std::uint64_t quantile(double q) const override;
  std::unique_ptr<Statistic> clone() const override { return std::make_unique<HdrHistogram>(*this); }

  std::uint64_t highestTrackable() const { return highest_; }
  // Samples above highestTrackable(), recorded as highestTrackable().
  std::uint64_t saturated() const { return saturated_; }
  // Bytes of counters; 0 until the first sample (empty cells cost nothing).
  std::size_t memoryBytes() const { return counts_.capacity() * sizeof(std::uint64_t); }

  // All a histogram holds, for storing it (a sharded run's result) and merging it
  // elsewhere: its non-empty cells as (the cell's lowest value, count), in order, and
  // its exact min, max, sum and saturated count.
  struct Cells {
    std::uint64_t highest = kDefaultHighest;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> counts;
    std::uint64_t min = 0, max = 0, saturated = 0;
    double sum = 0;
  };
  Cells cells() const;
  // The histogram `cells()` was taken from. Throws ConfigError("histogram", ...) when
  // the cells cannot be one's (a value past `highest`, cells out of order, min > max).
  static HdrHistogram fromCells(const Cells& cells);

  // Every value v in the same cell as `value` satisfies lowest <= v <= highest.
  static std::uint64_t lowestEquivalent(std::uint64_t value);
  static std::uint64_t highestEquivalent(std::uint64_t value);

 private:
  static constexpr int kSubBucketHalfMagnitude = 10;  // 1024 linear steps per octave
  static constexpr std::uint64_t kSubBucketHalf = 1ULL << kSubBucketHalfMagnitude;
  static constexpr std::uint64_t kSubBucketMask = (kSubBucketHalf << 1) - 1;

  static std::size_t indexOf(std::uint64_t value);
  static std::uint64_t valueAt(std::size_t index);

  std::uint64_t highest_;
  std::size_t cells_;
  std::vector<std::uint64_t> counts_;  // allocated on first record
  std::uint64_t total_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
  std::uint64_t saturated_ = 0;
  double sum_ = 0;
};

}  // namespace cpscale::engine
