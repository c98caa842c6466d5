// Shared types and error reporting for the sparsefuse compression kernels.
//
// Conventions that hold for every kernel (CPU and CUDA alike):
//  - Tensors are flat fp32 arrays of n elements, 0 <= n <= 2^31 - 1: indices are
//    int32 (the 8-byte (value, index) pair every seed system sends), so a larger
//    n is rejected with std::invalid_argument.
//  - A selection is a list of (value, index) pairs in strictly ascending index
//    order; values are the signed input values g[index], never |g|.
//  - Magnitude order uses the bit pattern of |x| (key = bits(x) & 0x7FFFFFFF), which
//    for finite floats is the same order as |x|; -0.0 and +0.0 have the same key.
//  - Ties: among entries with equal key, the smaller index wins.
//  - Non-finite input (NaN, +Inf, -Inf) to a selecting kernel (top-k, ADTopk,
//    EF top-k, the threshold estimators) raises NonFiniteError naming the first
//    (smallest) offending index; nothing is selected or dropped silently.
//    Pure data-movement kernels (random-k gather, pack, unpack) copy values
//    through unchanged and do not inspect them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparsefuse::kernels {

// Largest tensor a kernel accepts: indices are int32.
inline constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

// Thrown when a selecting kernel meets NaN or +-Inf. index() is the smallest
// offending position (in the tensor the kernel was given; for the fused EF
// kernel it is the position in acc = residual + grad).
class NonFiniteError : public std::runtime_error {
 public:
  NonFiniteError(const std::string& kernel, int64_t index, float value);
  int64_t index() const { return index_; }
  float value() const { return value_; }

 private:
  int64_t index_;
  float value_;
};

// A sparse selection: values[j] belongs to indices[j]; indices ascending.
struct Selection {
  std::vector<float> values;
  std::vector<int32_t> indices;
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
  void resize(int64_t m) {
    values.resize(static_cast<size_t>(m));
    indices.resize(static_cast<size_t>(m));
  }
};

// The key whose unsigned order is the order of |x| for finite x.
inline uint32_t abs_key(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u & 0x7FFFFFFFu;
}
// Keys at or above this are NaN or +-Inf.
inline constexpr uint32_t kNonFiniteKey = 0x7F800000u;

// Argument checks shared by the kernels: throw std::invalid_argument naming
// the kernel and the argument.
void check_size(const char* kernel, int64_t n);
void check_count(const char* kernel, int64_t k);
void check_density(const char* kernel, double rho);

// Writes back and drops every cache line of [P, P + BYTES) from every level
// of the hierarchy (clflush on x86, dc civac on Arm): what a whole iteration
// of other traffic does to a buffer written once an iteration, without
// sweeping hundreds of MiB (which would disturb other processes measured
// beside this one). For the profiler and the runtime's benchmarks.
void flush_from_caches(const void* p, size_t bytes);

// Reads and writes one word of every cache line of BUFFER: dirty lines
// evicted, and the TLB filled with its pages (what a layer's backward leaves
// behind, with BUFFER a few times the last-level cache per core).
void sweep_caches(std::vector<uint64_t>& buffer);

// k for a density, as every compressor in docs/baseline-systems.md#compressors defines it:
// max(1, floor(rho * n)), clamped to n (and 0 when n == 0).
int64_t k_for_density(int64_t n, double rho);

// Returns the smallest index i with a non-finite g[i], or -1.
int64_t first_nonfinite(const float* g, int64_t n);
// Throws NonFiniteError for the first non-finite entry, if any.
void require_finite(const char* kernel, const float* g, int64_t n);

}  // namespace sparsefuse::kernels
