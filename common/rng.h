// Portable, seeded randomness. std:: distributions differ between standard
// libraries, so every draw here is computed from raw 64-bit output with our
// own transforms: the same seed gives the same numbers everywhere.
#pragma once

#include <cmath>
#include <cstdint>

namespace sparsefuse {

// splitmix64: used to expand seeds and to derive independent stream seeds.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Mixes a scenario seed with a stream id (e.g. worker rank, purpose tag) so that
// each entity draws from its own reproducible stream.
inline uint64_t stream_seed(uint64_t seed, uint64_t stream) {
  uint64_t s = seed ^ (stream * 0xD1B54A32D192ED03ull);
  splitmix64(s);
  return splitmix64(s);
}

// xoshiro256** (Blackman & Vigna).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& word : state_) word = splitmix64(s);
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, bound) (bound > 0), by rejection to avoid modulo bias.
  uint64_t below(uint64_t bound) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do x = next(); while (x >= limit);
    return x % bound;
  }

  // Standard normal by Box-Muller (one value per call; simple and portable).
  double normal() {
    double u1 = 1.0 - uniform();  // (0, 1]
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // Lognormal with mean 1 and coefficient of variation CV (CV = 0 gives 1).
  double lognormal_mean_one(double cv) {
    if (cv <= 0) return 1.0;
    double sigma2 = std::log1p(cv * cv);
    return std::exp(std::sqrt(sigma2) * normal() - 0.5 * sigma2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace sparsefuse
