// Seeded random streams, one per actor: the same (run seed, actor id) always yields
// the same draws, whichever worker thread or order the actor runs in. This is what
// makes two runs with one seed bit-for-bit identical.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "sim/engine/clock.h"
#include "sim/engine/stable_hash.h"

namespace cpscale::engine {

// splitmix64 (Steele, Lea, Flood 2014): one 64-bit word of state. Used to seed the
// larger generator and, where 8 bytes per stream matter (timer jitter), on its own.
class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t seed = 0) : state_(seed) {}
  constexpr std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  constexpr std::uint64_t state() const { return state_; }

 private:
  std::uint64_t state_;
};

// Mixes a run seed and an actor id into an independent stream seed.
constexpr std::uint64_t streamSeed(std::uint64_t runSeed, std::uint64_t actorId) {
  SplitMix64 m(runSeed ^ (actorId * 0xd1342543de82ef95ULL));
  m.next();
  return m.next();
}
inline std::uint64_t streamSeed(std::uint64_t runSeed, std::string_view actorId) {
  return streamSeed(runSeed, fnv1a64(actorId));
}

// Uniform double in [0, 1) from the top 53 bits.
constexpr double toUnitInterval(std::uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

// xoshiro256** (Blackman, Vigna 2018) with the distributions actors need. 32 bytes,
// ~1 ns per draw. Satisfies UniformRandomBitGenerator so <random> can use it too.
class RandomStream {
 public:
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }

  explicit RandomStream(std::uint64_t seed) {
    SplitMix64 m(seed);
    for (auto& w : s_) w = m.next();
  }
  RandomStream(std::uint64_t runSeed, std::string_view actorId) : RandomStream(streamSeed(runSeed, actorId)) {}

  result_type operator()() { return next(); }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // [0, 1)
  double uniform() { return toUnitInterval(next()); }
  // [lo, hi)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Integer in [0, n) without modulo bias worth caring about (Lemire's multiply-shift).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // [lo, hi): e.g. a start offset that spreads actors over one period.
  Duration uniformDuration(Duration lo, Duration hi) {
    if (hi <= lo) return lo;
    return lo + Duration{static_cast<Duration::rep>(below(static_cast<std::uint64_t>((hi - lo).count())))};
  }
  // Exponential with the given mean; 1 - u keeps the log argument in (0, 1].
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }
  // Gap to the next arrival of a Poisson process with `ratePerSecond` arrivals.
  Duration interArrival(double ratePerSecond) {
    return Duration{static_cast<Duration::rep>(std::llround(exponential(1e9 / ratePerSecond)))};
  }
  // Standard normal (Box-Muller; the second variate is discarded to stay stateless).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Lognormal from the underlying normal's mu and sigma (object sizes).
  double lognormal(double mu, double sigma) { return std::exp(mu + sigma * normal()); }
  // Poisson count with the given mean: Knuth's product for small means, a rounded
  // normal approximation above 64 where the product method gets slow.
  std::uint64_t poisson(double mean) {
    if (mean <= 0) return 0;
    if (mean > 64) {
      const double x = std::round(mean + std::sqrt(mean) * normal());
      return x < 0 ? 0 : static_cast<std::uint64_t>(x);
    }
    const double limit = std::exp(-mean);
    std::uint64_t k = 0;
    double p = uniform();
    while (p > limit) {
      ++k;
      p *= uniform();
    }
    return k;
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace cpscale::engine
