// The pending-event set of a Simulator, ordered by (time, sequence). A calendar of
// fixed-width time buckets in front of two binary heaps: events due in the current
// bucket sit in a small heap that stays in cache, events further out within the
// calendar's horizon are appended to their bucket unsorted, and events past the
// horizon wait in an overflow heap. With 10^6 periodic timers the heap that is
// actually sifted holds only the few thousand entries of one bucket.
//
// Cost (n pending, c in the current bucket, f past the horizon):
//   push     O(1) into a bucket; O(log c) if due in the current bucket; O(log f) past
//            the horizon
//   top/pop  O(log c); plus, when the current bucket runs dry, O(k) to heapify the next
//            non-empty bucket of k entries and a scan over empty buckets in between
//            (amortized O(1) per event: time only moves forward)
// Ordering does not depend on the bucket width; only speed does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cpscale::engine {

// 24 bytes. `ref` and `gen` identify what to run; the queue does not interpret them.
struct QueuedEvent {
  std::int64_t time;  // ns since the run's origin
  std::uint64_t seq;  // insertion order; breaks ties so equal times run FIFO
  std::uint32_t ref;
  std::uint32_t gen;
};

struct EventQueueOptions {
  // log2 of the bucket width in ns: 2^24 ns ~ 16.8 ms.
  int bucketWidthLog2 = 24;
  // log2 of the number of buckets: 4096 buckets of 16.8 ms ~ a 69 s horizon, which
  // covers the 10 s lease and status periods of synthetic kubelets.
  int bucketCountLog2 = 12;
};

class EventQueue {
 public:
  explicit EventQueue(EventQueueOptions options = {});

  void push(const QueuedEvent& e);
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Earliest event; precondition !empty(). Non-const: may pull in the next bucket.
  const QueuedEvent& top();
  void pop();
  // Bytes held by the queue's containers (for memory accounting).
  std::size_t memoryBytes() const;

 private:
  static bool later(const QueuedEvent& a, const QueuedEvent& b) {
    return a.time > b.time || (a.time == b.time && a.seq > b.seq);
  }
  std::int64_t bucketOf(std::int64_t time) const { return time >> widthLog2_; }
  void refill();
  void admitOverflow();

  int widthLog2_;
  std::int64_t bucketCount_;
  std::int64_t bucketMask_;
  std::int64_t current_ = 0;  // absolute bucket number that `near_` covers (and all before)
  std::vector<QueuedEvent> near_;                  // heap: bucket <= current_
  std::vector<std::vector<QueuedEvent>> buckets_;  // current_ < bucket < current_ + count
  std::vector<QueuedEvent> far_;                   // heap: bucket >= current_ + count
  std::size_t inBuckets_ = 0;
  std::size_t size_ = 0;
};

}  // namespace cpscale::engine
