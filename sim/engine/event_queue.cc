#include "sim/engine/event_queue.h"

#include <algorithm>
#include <utility>

#include "sim/common/error.h"

namespace cpscale::engine {

EventQueue::EventQueue(EventQueueOptions options)
    : widthLog2_(options.bucketWidthLog2),
      bucketCount_(std::int64_t{1} << std::clamp(options.bucketCountLog2, 0, 30)),
      bucketMask_(bucketCount_ - 1) {
  if (options.bucketWidthLog2 < 0 || options.bucketWidthLog2 > 40) {
    throw ConfigError("EventQueue", "bucketWidthLog2", "must be in [0, 40]");
  }
  if (options.bucketCountLog2 < 1 || options.bucketCountLog2 > 20) {
    throw ConfigError("EventQueue", "bucketCountLog2", "must be in [1, 20]");
  }
  buckets_.assign(static_cast<std::size_t>(bucketCount_), nullptr);
}

EventQueue::~EventQueue() {
  auto release = [](Chunk* c) {
    while (c != nullptr) delete std::exchange(c, c->next);
  };
  for (Chunk* head : buckets_) release(head);
  release(freeChunks_);
}

void EventQueue::appendToBucket(std::int64_t bucket, const QueuedEvent& e) {
  Chunk*& head = buckets_[static_cast<std::size_t>(bucket & bucketMask_)];
  if (head == nullptr || head->used == kChunkEntries) {
    Chunk* c = freeChunks_;
    if (c != nullptr) {
      freeChunks_ = c->next;
      c->used = 0;
    } else {
      c = new Chunk;
      ++chunks_;
    }
    c->next = head;
    head = c;
  }
  head->entries[head->used++] = e;
  ++inBuckets_;
}

void EventQueue::push(const QueuedEvent& e) {
  const std::int64_t b = bucketOf(e.time);
  if (b <= current_) {
    late_.push_back(e);
    std::push_heap(late_.begin(), late_.end(), later);
  } else if (b < current_ + bucketCount_) {
    appendToBucket(b, e);
  } else {
    far_.push_back(e);
    std::push_heap(far_.begin(), far_.end(), later);
  }
  ++size_;
}

const QueuedEvent& EventQueue::topSlow() {
  if (!runHasNext() && late_.empty()) refill();
  return nextFromRun() ? run_[runPos_] : late_.front();
}

void EventQueue::popSlow() {
  if (!runHasNext() && late_.empty()) refill();
  if (nextFromRun()) {
    ++runPos_;
  } else {
    std::pop_heap(late_.begin(), late_.end(), later);
    late_.pop_back();
  }
  --size_;
}

// Moves overflow events that the calendar now reaches into their buckets.
void EventQueue::admitOverflow() {
  while (!far_.empty() && bucketOf(far_.front().time) < current_ + bucketCount_) {
    const QueuedEvent e = far_.front();
    std::pop_heap(far_.begin(), far_.end(), later);
    far_.pop_back();
    appendToBucket(bucketOf(e.time), e);
  }
}

// Precondition: the run and the late heap are exhausted and size_ > 0.
void EventQueue::refill() {
  if (inBuckets_ == 0) {
    // Nothing within the horizon: jump straight to the earliest overflow event.
    current_ = bucketOf(far_.front().time);
  } else {
    // The next non-empty bucket lies within the horizon, before any overflow event.
    do {
      ++current_;
    } while (buckets_[static_cast<std::size_t>(current_ & bucketMask_)] == nullptr);
  }
  admitOverflow();
  run_.clear();
  runPos_ = 0;
  Chunk*& head = buckets_[static_cast<std::size_t>(current_ & bucketMask_)];
  while (head != nullptr) {
    Chunk* c = std::exchange(head, head->next);
    run_.insert(run_.end(), c->entries, c->entries + c->used);
    inBuckets_ -= c->used;
    c->next = freeChunks_;
    freeChunks_ = c;
  }
  sortRun();
}

// Every entry of the run lies in bucket current_ (or, after a jump over an empty
// calendar, in the one bucket admitted), so its time is bucketStart + an offset of
// widthLog2_ bits. Runs under 64 entries take a comparison sort; large ones a stable LSD radix
// sort on the offset, 8 bits a pass (passes where every entry has the same digit are
// skipped), after which only equal times can be out of order: each such group is put
// in sequence order. The result is the same (time, seq) order std::sort would give.
void EventQueue::sortRun() {
  const std::size_t n = run_.size();
  if (n < 64) {
    std::sort(run_.begin(), run_.end(), [](const QueuedEvent& a, const QueuedEvent& b) { return later(b, a); });
    return;
  }
  const std::int64_t base = current_ << widthLog2_;
  // One read pass builds every digit's histogram (a bucket's offsets have widthLog2_
  // <= 40 bits: at most 5 digits).
  constexpr int kMaxDigits = 5;
  const int digits = (widthLog2_ + 7) / 8;
  std::uint32_t count[kMaxDigits][256] = {};
  for (const QueuedEvent& e : run_) {
    const auto offset = static_cast<std::uint64_t>(e.time - base);
    for (int d = 0; d < digits; ++d) ++count[d][(offset >> (8 * d)) & 0xff];
  }
  scratch_.resize(n);
  QueuedEvent* src = run_.data();
  QueuedEvent* dst = scratch_.data();
  for (int d = 0; d < digits; ++d) {
    std::uint32_t* c = count[d];
    if (c[(static_cast<std::uint64_t>(src[0].time - base) >> (8 * d)) & 0xff] == n) continue;
    std::uint32_t sum = 0;
    for (int i = 0; i < 256; ++i) sum += std::exchange(c[i], sum);
    for (std::size_t i = 0; i < n; ++i) {
      dst[c[(static_cast<std::uint64_t>(src[i].time - base) >> (8 * d)) & 0xff]++] = src[i];
    }
    std::swap(src, dst);
  }
  if (src != run_.data()) run_.swap(scratch_);  // an odd number of passes ended there
  // Equal times keep their bucket order, which is not always sequence order (chunks
  // are stacked newest first, overflow events join late): sort each such group by seq.
  QueuedEvent* r = run_.data();
  for (std::size_t i = 1; i < n; ++i) {
    if (r[i].time != r[i - 1].time) continue;
    std::size_t j = i + 1;
    while (j < n && r[j].time == r[i].time) ++j;
    std::sort(r + i - 1, r + j, [](const QueuedEvent& a, const QueuedEvent& b) { return a.seq < b.seq; });
    i = j;
  }
}

std::size_t EventQueue::memoryBytes() const {
  return (run_.capacity() + scratch_.capacity() + late_.capacity() + far_.capacity()) * sizeof(QueuedEvent) +
         buckets_.capacity() * sizeof(Chunk*) + chunks_ * sizeof(Chunk);
}

}  // namespace cpscale::engine
