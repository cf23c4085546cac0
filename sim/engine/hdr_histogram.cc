#include "sim/engine/hdr_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "sim/common/error.h"

namespace cpscale::engine {

// Index layout as in HdrHistogram with unit magnitude 0: bucket 0 holds 0..2047 one by
// one; bucket b >= 1 holds [1024 << b, 2048 << b) in steps of 1 << b, its lower half
// being covered by bucket b - 1, so only the upper 1024 cells are stored.
std::size_t HdrHistogram::indexOf(std::uint64_t value) {
  const int bucket = 64 - kSubBucketHalfMagnitude - 1 - std::countl_zero(value | kSubBucketMask);
  const std::uint64_t sub = value >> bucket;
  return (static_cast<std::size_t>(bucket) << kSubBucketHalfMagnitude) + sub;
}

std::uint64_t HdrHistogram::valueAt(std::size_t index) {
  std::int64_t bucket = static_cast<std::int64_t>(index >> kSubBucketHalfMagnitude) - 1;
  std::uint64_t sub = (index & (kSubBucketHalf - 1)) + kSubBucketHalf;
  if (bucket < 0) {
    sub -= kSubBucketHalf;
    bucket = 0;
  }
  return sub << bucket;
}

std::uint64_t HdrHistogram::lowestEquivalent(std::uint64_t value) { return valueAt(indexOf(value)); }

std::uint64_t HdrHistogram::highestEquivalent(std::uint64_t value) {
  const int bucket = 64 - kSubBucketHalfMagnitude - 1 - std::countl_zero(value | kSubBucketMask);
  return lowestEquivalent(value) + (std::uint64_t{1} << bucket) - 1;
}

HdrHistogram::HdrHistogram(std::uint64_t highestTrackable) : highest_(highestTrackable) {
  if (highestTrackable < 2 * kSubBucketHalf) {
    throw ConfigError("HdrHistogram", "highestTrackable", "must be at least 2048");
  }
  cells_ = indexOf(highestTrackable) + 1;
}

void HdrHistogram::record(std::uint64_t value, std::uint64_t times) {
  if (times == 0) return;
  if (value > highest_) {
    value = highest_;
    saturated_ += times;
  }
  if (counts_.empty()) counts_.assign(cells_, 0);
  counts_[indexOf(value)] += times;
  total_ += times;
  sum_ += static_cast<double>(value) * static_cast<double>(times);
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void HdrHistogram::combine(const Statistic& other) {
  const auto* h = dynamic_cast<const HdrHistogram*>(&other);
  if (h == nullptr) throw std::invalid_argument("HdrHistogram::combine: not an HdrHistogram");
  merge(*h);
}

void HdrHistogram::merge(const HdrHistogram& other) {
  if (other.highest_ != highest_) {
    throw std::invalid_argument("HdrHistogram::merge: different highestTrackable");
  }
  if (other.total_ == 0) return;
  if (counts_.empty()) counts_.assign(cells_, 0);
  for (std::size_t i = 0; i < cells_; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  sum_ += other.sum_;
  saturated_ += other.saturated_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

HdrHistogram::Cells HdrHistogram::cells() const {
  Cells c;
  c.highest = highest_;
  for (std::size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i] != 0) c.counts.emplace_back(valueAt(i), counts_[i]);
  c.min = min();
  c.max = max_;
  c.saturated = saturated_;
  c.sum = sum_;
  return c;
}

HdrHistogram HdrHistogram::fromCells(const Cells& c) {
  HdrHistogram h(c.highest);
  std::uint64_t last = 0;
  for (const auto& [value, n] : c.counts) {
    if (value > c.highest) throw ConfigError("histogram", "counts", "a cell past the highest trackable value");
    if (h.total_ != 0 && value <= last) throw ConfigError("histogram", "counts", "cells out of order");
    if (n == 0) throw ConfigError("histogram", "counts", "an empty cell");
    last = value;
    h.record(value, n);
  }
  if (h.total_ == 0) return h;
  if (c.min > c.max || c.saturated > h.total_)
    throw ConfigError("histogram", "min", "min above max, or more saturated than recorded");
  h.min_ = c.min;
  h.max_ = c.max;
  h.saturated_ = c.saturated;
  h.sum_ = c.sum;
  return h;
}

std::uint64_t HdrHistogram::quantile(double q) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the sample at quantile q (nearest-rank definition, 1-based).
  const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < cells_; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      // The cell's upper edge, so a quantile never understates; clamped to what was seen.
      return std::clamp(highestEquivalent(valueAt(i)), min_, max_);
    }
  }
  return max_;
}

}  // namespace cpscale::engine
