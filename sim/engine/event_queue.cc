#include "sim/engine/event_queue.h"

#include <algorithm>
#include <utility>

#include "sim/common/error.h"

namespace cpscale::engine {

EventQueue::EventQueue(EventQueueOptions options)
    : widthLog2_(options.bucketWidthLog2),
      bucketCount_(std::int64_t{1} << options.bucketCountLog2),
      bucketMask_(bucketCount_ - 1) {
  if (options.bucketWidthLog2 < 0 || options.bucketWidthLog2 > 40) {
    throw ConfigError("EventQueue", "bucketWidthLog2", "must be in [0, 40]");
  }
  if (options.bucketCountLog2 < 1 || options.bucketCountLog2 > 20) {
    throw ConfigError("EventQueue", "bucketCountLog2", "must be in [1, 20]");
  }
  buckets_.resize(static_cast<std::size_t>(bucketCount_));
}

void EventQueue::push(const QueuedEvent& e) {
  const std::int64_t b = bucketOf(e.time);
  if (b <= current_) {
    near_.push_back(e);
    std::push_heap(near_.begin(), near_.end(), later);
  } else if (b < current_ + bucketCount_) {
    buckets_[static_cast<std::size_t>(b & bucketMask_)].push_back(e);
    ++inBuckets_;
  } else {
    far_.push_back(e);
    std::push_heap(far_.begin(), far_.end(), later);
  }
  ++size_;
}

const QueuedEvent& EventQueue::top() {
  if (near_.empty()) refill();
  return near_.front();
}

void EventQueue::pop() {
  if (near_.empty()) refill();
  std::pop_heap(near_.begin(), near_.end(), later);
  near_.pop_back();
  --size_;
}

// Moves overflow events that the calendar now reaches into their buckets.
void EventQueue::admitOverflow() {
  while (!far_.empty() && bucketOf(far_.front().time) < current_ + bucketCount_) {
    const QueuedEvent e = far_.front();
    std::pop_heap(far_.begin(), far_.end(), later);
    far_.pop_back();
    buckets_[static_cast<std::size_t>(bucketOf(e.time) & bucketMask_)].push_back(e);
    ++inBuckets_;
  }
}

// Precondition: near_ is empty and size_ > 0.
void EventQueue::refill() {
  if (inBuckets_ == 0) {
    // Nothing within the horizon: jump straight to the earliest overflow event.
    current_ = bucketOf(far_.front().time);
  } else {
    // The next non-empty bucket lies within the horizon, before any overflow event.
    do {
      ++current_;
    } while (buckets_[static_cast<std::size_t>(current_ & bucketMask_)].empty());
  }
  admitOverflow();
  auto& bucket = buckets_[static_cast<std::size_t>(current_ & bucketMask_)];
  inBuckets_ -= bucket.size();
  near_.swap(bucket);  // the bucket inherits near_'s empty storage for reuse
  std::make_heap(near_.begin(), near_.end(), later);
}

std::size_t EventQueue::memoryBytes() const {
  std::size_t bytes = (near_.capacity() + far_.capacity()) * sizeof(QueuedEvent) +
                      buckets_.capacity() * sizeof(std::vector<QueuedEvent>);
  for (const auto& b : buckets_) bytes += b.capacity() * sizeof(QueuedEvent);
  return bytes;
}

}  // namespace cpscale::engine
