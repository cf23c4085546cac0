// A std::allocator that asks for transparent huge pages on large blocks. The engine's
// slot tables are read at random addresses once per event; at 10^6 timers they span
// thousands of 4 KiB pages, and without huge pages a TLB miss (a nested page walk on
// a VM) costs as much as the cache miss that prefetching hides. The hint is advisory:
// with THP disabled, or in `madvise` mode without support, nothing changes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace cpscale::engine {

template <class T>
struct HugePageHintAllocator {
  using value_type = T;
  // Below this a block covers too few 2 MiB pages to matter.
  static constexpr std::size_t kMinBytes = std::size_t{4} << 20;
  static constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

  HugePageHintAllocator() = default;
  template <class U>
  HugePageHintAllocator(const HugePageHintAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    void* p = ::operator new(bytes);
    if (bytes >= kMinBytes) {
      // Only whole huge pages inside the block: the advice must not reach memory the
      // allocator hands to anyone else.
      const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
      const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHugePage - 1);
      if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }

  template <class U>
  bool operator==(const HugePageHintAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace cpscale::engine
