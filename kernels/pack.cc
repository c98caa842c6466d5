#include "kernels/pack.h"

#include <algorithm>
#include <string>

namespace sparsefuse::kernels {
namespace {

[[noreturn]] void bad_index(const char* kernel, int64_t pos, int64_t idx, int64_t limit) {
  throw std::out_of_range(std::string(kernel) + ": index " + std::to_string(idx) +
                          " at stream position " + std::to_string(pos) + " outside [0, " +
                          std::to_string(limit) + ")");
}

}  // namespace

int64_t total_count(const char* kernel, const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (const int64_t c : counts) {
    if (c < 0) throw std::invalid_argument(std::string(kernel) + ": negative count");
    total += c;
  }
  return total;
}

int64_t check_pack_layout(const std::vector<int64_t>& offsets, const std::vector<int64_t>& counts) {
  if (offsets.size() != counts.size() + 1)
    throw std::invalid_argument("pack: offsets must have one more entry than counts");
  if (offsets.front() < 0 || offsets.back() > kMaxElements)
    throw std::invalid_argument("pack: offsets outside [0, 2^31 - 1]");
  for (size_t t = 0; t < counts.size(); ++t)
    if (offsets[t + 1] < offsets[t]) throw std::invalid_argument("pack: offsets decrease");
  return total_count("pack", counts);
}

int64_t pack(const float* buffer, const std::vector<int64_t>& offsets, const int32_t* local_indices,
             const std::vector<int64_t>& counts, float* out_values, int32_t* out_indices) {
  check_pack_layout(offsets, counts);
  int64_t j = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const int64_t base = offsets[t];
    const int64_t size = offsets[t + 1] - base;
    for (int64_t e = 0; e < counts[t]; ++e, ++j) {
      const int64_t local = local_indices[j];
      if (local < 0 || local >= size) bad_index("pack", j, local, size);
      const int64_t idx = base + local;
      out_indices[j] = static_cast<int32_t>(idx);
      out_values[j] = buffer[idx];
    }
  }
  return j;
}

Selection pack(const float* buffer, const std::vector<int64_t>& offsets,
               const int32_t* local_indices, const std::vector<int64_t>& counts) {
  Selection s;
  s.resize(check_pack_layout(offsets, counts));
  pack(buffer, offsets, local_indices, counts, s.values.data(), s.indices.data());
  return s;
}

void pack_dense(const float* buffer, int64_t n, float* out_values, int32_t* out_indices) {
  check_size("pack_dense", n);
  std::copy(buffer, buffer + n, out_values);
  for (int64_t j = 0; j < n; ++j) out_indices[j] = static_cast<int32_t>(j);
}

void unpack(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
            int64_t n, float* dense) {
  check_size("unpack", n);
  if (counts.empty()) throw std::invalid_argument("unpack: no workers");
  const int64_t total = total_count("unpack", counts);
  for (int64_t j = 0; j < total; ++j)
    if (indices[j] < 0 || indices[j] >= n) bad_index("unpack", j, indices[j], n);
  std::fill(dense, dense + n, 0.0f);
  // Rank order, then stream order: the order the CUDA kernel reproduces.
  for (int64_t j = 0; j < total; ++j) dense[indices[j]] += values[j];
  average(dense, n, static_cast<int>(counts.size()), dense);
}

int64_t unpack_equal_slices(const float* values, const int32_t* indices, int64_t len, int P,
                            int64_t n, float* dense) {
  check_size("unpack_equal_slices", n);
  if (P < 1) throw std::invalid_argument("unpack_equal_slices: P must be >= 1");
  if (len < 0) throw std::invalid_argument("unpack_equal_slices: negative length");
  const int64_t m = len / P;
  for (int64_t j = 0; j < m * P; ++j)
    if (indices[j] < 0 || indices[j] >= n) bad_index("unpack_equal_slices", j, indices[j], n);
  std::fill(dense, dense + n, 0.0f);
  int64_t lost = len - m * P;
  // Walk each slice backwards: the first visit of an index is its last write,
  // which lands; later visits (earlier entries) are overwritten in PyTorch.
  // mark[i] == r + 1 means index i was already written in slice r.
  std::vector<int32_t> mark(static_cast<size_t>(n), 0);
  for (int r = 0; r < P; ++r) {
    const int64_t begin = static_cast<int64_t>(r) * m;
    for (int64_t j = begin + m - 1; j >= begin; --j) {
      const int32_t i = indices[j];
      if (mark[i] == r + 1) {
        ++lost;
      } else {
        mark[i] = r + 1;
        dense[i] += values[j];
      }
    }
  }
  average(dense, n, P, dense);
  return lost;
}

void average(const float* sum, int64_t n, int P, float* out) {
  if (P < 1) throw std::invalid_argument("average: P must be >= 1");
  // A vector division costs about ten times a multiplication and makes this
  // pass compute-bound. For P = 2^k, 2^-k is exact and both operations are the
  // correctly rounded value of sum * 2^-k (subnormals included), so the
  // multiplication gives the division's bits; for any other P, 1/P is rounded
  // and only the division is exact.
  if ((P & (P - 1)) == 0) {
    const float reciprocal = 1.0f / static_cast<float>(P);
    for (int64_t i = 0; i < n; ++i) out[i] = sum[i] * reciprocal;
    return;
  }
  const float p = static_cast<float>(P);
  for (int64_t i = 0; i < n; ++i) out[i] = sum[i] / p;
}

}  // namespace sparsefuse::kernels
