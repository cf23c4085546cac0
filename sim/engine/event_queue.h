// The pending-event set of a Simulator, ordered by (time, sequence). A calendar of
// fixed-width time buckets: events due further out than the current bucket are
// appended to their bucket unsorted (in pooled chunks, so an idle bucket holds no
// memory), events past the calendar's horizon wait in an overflow heap. When time
// reaches a bucket, its events are sorted once into a run that is then consumed in
// order; events scheduled into the bucket already being consumed go to a small heap
// merged with the run. Consuming a sorted run front to back lets the engine see which
// events come next and prefetch their timers: with 10^6 timers that is what keeps
// cache misses off the critical path.
//
// Cost (n pending, k in the current bucket, f past the horizon):
//   push       O(1) into a later bucket; O(log h) into the current one (h late
//              arrivals, usually few); O(log f) past the horizon
//   top/pop    O(1) from the sorted run (or O(log h)); when a bucket is reached,
//              O(k) to sort it (k log k below 64 entries) plus a scan over empty
//              buckets in between (time only moves forward)
//   memory     32 B per entry + at most one partly filled 2 KiB chunk per bucket
// Ordering does not depend on the bucket geometry; only speed does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cpscale::engine {

// 32 bytes. `target`, `ref` and `gen` identify what to run; the queue does not
// interpret them. `target` lets the engine reach (and prefetch) what an event touches
// straight from the sorted run, without first loading a slot.
struct QueuedEvent {
  std::int64_t time;  // ns since the run's origin
  std::uint64_t seq;  // insertion order; breaks ties so equal times run FIFO
  void* target;
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
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  void push(const QueuedEvent& e);
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Earliest event; precondition !empty(). Non-const: may pull in the next bucket.
  // The common case (next event in the sorted run, no late arrivals) is inline.
  const QueuedEvent& top() {
    if (late_.empty() && runHasNext()) return run_[runPos_];
    return topSlow();
  }
  void pop() {
    if (late_.empty() && runHasNext()) {
      ++runPos_;
      --size_;
      return;
    }
    popSlow();
  }
  // An event due soon after top(), `ahead` places on in the current bucket's sorted
  // run, or nullptr. A hint for prefetching only: late arrivals may run before it.
  const QueuedEvent* peekAhead(std::size_t ahead) const {
    const std::size_t i = runPos_ + ahead;
    return i < run_.size() ? &run_[i] : nullptr;
  }
  // Bytes held by the queue (for memory accounting).
  std::size_t memoryBytes() const;

 private:
  static constexpr std::size_t kChunkEntries = 64;
  struct Chunk {
    QueuedEvent entries[kChunkEntries];
    std::uint32_t used = 0;
    Chunk* next = nullptr;
  };
  static bool later(const QueuedEvent& a, const QueuedEvent& b) {
    return a.time > b.time || (a.time == b.time && a.seq > b.seq);
  }
  std::int64_t bucketOf(std::int64_t time) const { return time >> widthLog2_; }
  bool runHasNext() const { return runPos_ < run_.size(); }
  // True when the next event is in the sorted run rather than the late heap.
  bool nextFromRun() const { return runHasNext() && (late_.empty() || later(late_.front(), run_[runPos_])); }
  const QueuedEvent& topSlow();
  void popSlow();
  void appendToBucket(std::int64_t bucket, const QueuedEvent& e);
  void refill();
  void sortRun();
  void admitOverflow();

  int widthLog2_;
  std::int64_t bucketCount_;
  std::int64_t bucketMask_;
  std::int64_t current_ = 0;          // absolute bucket being consumed (and all before)
  std::vector<QueuedEvent> run_;      // sorted events of bucket <= current_
  std::vector<QueuedEvent> scratch_;  // radix sort's second buffer
  std::size_t runPos_ = 0;
  std::vector<QueuedEvent> late_;  // heap: pushed into bucket <= current_ after sorting
  std::vector<Chunk*> buckets_;    // current_ < bucket < current_ + count
  std::vector<QueuedEvent> far_;   // heap: bucket >= current_ + count
  Chunk* freeChunks_ = nullptr;
  std::size_t chunks_ = 0;
  std::size_t inBuckets_ = 0;
  std::size_t size_ = 0;
};

}  // namespace cpscale::engine
