#include "kernels/common.h"

#include <cmath>
#include <cstdio>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sparsefuse::kernels {
namespace {

std::string describe(float v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "+inf" : "-inf";
}

}  // namespace

NonFiniteError::NonFiniteError(const std::string& kernel, int64_t index, float value)
    : std::runtime_error(kernel + ": non-finite input (" + describe(value) + ") at index " +
                         std::to_string(index)),
      index_(index),
      value_(value) {}

void check_size(const char* kernel, int64_t n) {
  if (n < 0 || n > kMaxElements) {
    throw std::invalid_argument(std::string(kernel) + ": n = " + std::to_string(n) +
                                " outside [0, 2^31 - 1] (indices are int32)");
  }
}

void check_count(const char* kernel, int64_t k) {
  if (k < 0) {
    throw std::invalid_argument(std::string(kernel) + ": k = " + std::to_string(k) +
                                " is negative");
  }
}

void check_density(const char* kernel, double rho) {
  if (!(rho > 0.0 && rho <= 1.0)) {
    throw std::invalid_argument(std::string(kernel) + ": density " + std::to_string(rho) +
                                " outside (0, 1]");
  }
}

int64_t k_for_density(int64_t n, double rho) {
  if (n <= 0) return 0;
  const double k = std::floor(rho * static_cast<double>(n));
  if (k < 1.0) return 1;
  if (k >= static_cast<double>(n)) return n;
  return static_cast<int64_t>(k);
}

int64_t first_nonfinite(const float* g, int64_t n) {
  // Blocked so that the common all-finite case is a branch-free OR per block.
  constexpr int64_t kBlock = 1024;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = b + kBlock < n ? b + kBlock : n;
    uint32_t bad = 0;
    for (int64_t i = b; i < e; ++i) bad |= static_cast<uint32_t>(abs_key(g[i]) >= kNonFiniteKey);
    if (bad) {
      for (int64_t i = b; i < e; ++i)
        if (abs_key(g[i]) >= kNonFiniteKey) return i;
    }
  }
  return -1;
}

void require_finite(const char* kernel, const float* g, int64_t n) {
  const int64_t bad = first_nonfinite(g, n);
  if (bad >= 0) throw NonFiniteError(kernel, bad, g[bad]);
}

void flush_from_caches(const void* p, size_t bytes) {
  constexpr uintptr_t kLine = 64;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t line = reinterpret_cast<uintptr_t>(p) & ~(kLine - 1); line < end; line += kLine) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_clflush(reinterpret_cast<const void*>(line));
#elif defined(__aarch64__)
    asm volatile("dc civac, %0" : : "r"(line) : "memory");
#else
#error "flush_from_caches: no cache-line flush for this architecture"
#endif
  }
#if defined(__x86_64__) || defined(__i386__)
  _mm_mfence();
#elif defined(__aarch64__)
  asm volatile("dsb ish" : : : "memory");
#endif
}

void sweep_caches(std::vector<uint64_t>& buffer) {
  for (size_t i = 0; i < buffer.size(); i += 8) buffer[i] += 1;
}

}  // namespace sparsefuse::kernels
