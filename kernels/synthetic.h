// Deterministic synthetic gradients for tests, benchmarks and the profiler
// (host only; built on xoshiro256**, no std:: distributions).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/rng.h"

namespace sparsefuse::kernels {

// One Box-Muller draw (the cosine branch) of N(0, 1).
inline double standard_normal(Xoshiro256& rng) {
  const double u1 = (static_cast<double>(rng.next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// OUT[0..n) = scale * N(0, 1), both Box-Muller branches used (one log per pair).
inline void gaussian_fill(float* out, int64_t n, uint64_t seed, double scale) {
  Xoshiro256 rng(seed);
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = (static_cast<double>(rng.next() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
    const double r = scale * std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
}

// gaussian_fill into a new vector.
inline std::vector<float> gaussian_gradient(int64_t n, uint64_t seed, double scale) {
  std::vector<float> v(static_cast<size_t>(n));
  gaussian_fill(v.data(), n, seed, scale);
  return v;
}

}  // namespace sparsefuse::kernels
