// Portable randomness for the kernels. Every value is a pure function of 64-bit
// integers (no std:: distributions, whose output differs between standard
// libraries), and the counter-based functions compile for host and device so
// that the CPU and CUDA kernels draw exactly the same numbers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SF_HD __host__ __device__ __forceinline__
#else
#define SF_HD inline
#endif

namespace sparsefuse::kernels {

inline constexpr uint64_t kGolden64 = 0x9E3779B97F4A7C15ull;

// The splitmix64 output function: a bijective 64-bit mixer.
SF_HD uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Random-k stream: one 64-bit stream key per (seed, tensor id, step). Every
// worker that passes the same triple gets the same stream, hence the same
// indices.
SF_HD uint64_t randomk_stream(uint64_t seed, uint64_t tensor_id, uint64_t step) {
  uint64_t h = mix64(seed + kGolden64);
  h = mix64(h ^ (tensor_id * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
  h = mix64(h ^ (step * 0xAEF17502108EF2D9ull + 0x5851F42D4C957F2Dull));
  return h;
}

// The random priority of element i in a stream: 31 bits of splitmix64 of the
// counter (stream + (i + 1) * golden). Random-k keeps the k largest priorities.
SF_HD uint32_t randomk_key(uint64_t stream, uint64_t i) {
  return static_cast<uint32_t>(mix64(stream + (i + 1) * kGolden64) >> 33);
}

// xoshiro256** (Blackman & Vigna), seeded by splitmix64. Host only; used for
// the DGC sample start.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    uint64_t s = seed;
    for (auto& w : s_) {
      s += kGolden64;
      w = mix64(s);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, bound), bound > 0, without modulo bias (rejection).
  uint64_t below(uint64_t bound) {
    const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % bound);
    for (;;) {
      const uint64_t x = next();
      if (x < limit) return x % bound;
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace sparsefuse::kernels
