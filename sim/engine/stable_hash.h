// A hash that is the same on every machine, build and run (std::hash is not), for
// anything that must be reproducible: actor-to-worker sharding, RNG stream seeds.
#pragma once

#include <cstdint>
#include <string_view>

namespace cpscale::engine {

// 64-bit FNV-1a, the hash KEP-5866 shard ranges use as well.
constexpr std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace cpscale::engine
