// Pack, unpack (per-rank counts and equal slices) and the streaming-copy
// bandwidth probe on CUDA.
#include <algorithm>
#include <climits>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/internal.h"
#include "kernels/pack.h"
#include "kernels/rng.h"

namespace sparsefuse::kernels::cuda {
namespace {

constexpr int kThreads = detail::kElementwiseThreads;
using detail::elementwise_grid;

// Entry j belongs to tensor t with seg[t] <= j < seg[t+1] (binary search over
// the T+1 segment starts). tables = [seg (T+1) | offsets (T+1)].
__global__ void pack_kernel(const float* buffer, const int64_t* tables, int num_tensors,
                            const int32_t* local, int64_t total, float* out_values,
                            int32_t* out_indices, unsigned long long* bad) {
  const int64_t* seg = tables;
  const int64_t* offsets = tables + num_tensors + 1;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total; j += stride) {
    int lo = 0, hi = num_tensors;  // invariant: seg[lo] <= j < seg[hi]
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (seg[mid] <= j) lo = mid; else hi = mid;
    }
    const int64_t l = local[j];
    const int64_t size = offsets[lo + 1] - offsets[lo];
    if (l < 0 || l >= size) {
      atomicMin(bad, static_cast<unsigned long long>(j));
      continue;
    }
    const int64_t idx = offsets[lo] + l;
    out_indices[j] = static_cast<int32_t>(idx);
    out_values[j] = buffer[idx];
  }
}

__global__ void scatter_add_kernel(const float* values, const int32_t* indices, int64_t begin,
                                   int64_t end, int64_t n, float* dense, unsigned long long* bad) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < end; j += stride) {
    const int32_t i = indices[j];
    if (i < 0 || i >= n) {
      atomicMin(bad, static_cast<unsigned long long>(j));
      continue;
    }
    atomicAdd(&dense[i], values[j]);
  }
}

// Equal slices, step 1 for slice r: last[idx] = max over the slice's entries of
// ((r + 1) << 32 | position in slice). Later slices carry larger tags, so the
// array never needs clearing between slices.
__global__ void last_writer_kernel(const int32_t* indices, int64_t begin, int64_t m, int r,
                                   int64_t n, unsigned long long* last, unsigned long long* bad) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < m; q += stride) {
    const int32_t i = indices[begin + q];
    if (i < 0 || i >= n) {
      atomicMin(bad, static_cast<unsigned long long>(begin + q));
      continue;
    }
    atomicMax(&last[i], (static_cast<unsigned long long>(r + 1) << 32) | static_cast<unsigned long long>(q));
  }
}

// Step 2: the last writer of each index adds its value; every other entry of the
// slice is a lost contribution.
__global__ void slice_apply_kernel(const float* values, const int32_t* indices, int64_t begin,
                                   int64_t m, int r, int64_t n, const unsigned long long* last,
                                   float* dense, unsigned long long* lost) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned int my_lost = 0;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < m; q += stride) {
    const int32_t i = indices[begin + q];
    if (i < 0 || i >= n) continue;
    const unsigned long long tag =
        (static_cast<unsigned long long>(r + 1) << 32) | static_cast<unsigned long long>(q);
    if (last[i] == tag) dense[i] += values[begin + q];  // one writer per index: no race
    else ++my_lost;
  }
  if (my_lost) atomicAdd(lost, static_cast<unsigned long long>(my_lost));
}

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n4) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride)
    dst[i] = src[i];
}

__global__ void fill_normal_kernel(float* d, int64_t n, uint64_t seed, float scale) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const uint64_t base = mix64(seed ^ 0x6A09E667F3BCC909ull);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t h1 = mix64(base + 2 * static_cast<uint64_t>(i) * kGolden64);
    const uint64_t h2 = mix64(base + (2 * static_cast<uint64_t>(i) + 1) * kGolden64);
    const float u1 = (static_cast<float>(h1 >> 40) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]
    const float u2 = static_cast<float>(h2 >> 40) * (1.0f / 16777216.0f);
    d[i] = scale * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

unsigned long long* counters(Workspace& ws, cudaStream_t stream) {
  // [0] first bad position (ULLONG_MAX = none), [1] lost count
  auto* c = static_cast<unsigned long long*>(ws.device(detail::kSlotTmp, 2 * sizeof(unsigned long long)));
  check(cudaMemsetAsync(c, 0xFF, sizeof(unsigned long long), stream), "memset");
  check(cudaMemsetAsync(c + 1, 0, sizeof(unsigned long long), stream), "memset");
  return c;
}

void read_counters(unsigned long long* dev, unsigned long long* host, Workspace& ws, cudaStream_t stream) {
  auto* h = static_cast<unsigned long long*>(ws.pinned(2 * sizeof(unsigned long long)));
  check(cudaMemcpyAsync(h, dev, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream), "read");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  host[0] = h[0];
  host[1] = h[1];
}

[[noreturn]] void bad_index(const char* kernel, const int32_t* indices, unsigned long long pos,
                            int64_t limit) {
  int32_t idx = 0;
  check(cudaMemcpy(&idx, indices + pos, sizeof idx, cudaMemcpyDeviceToHost), "read index");
  throw std::out_of_range(std::string(kernel) + ": index " + std::to_string(idx) + " at stream position " +
                          std::to_string(pos) + " outside [0, " + std::to_string(limit) + ")");
}

}  // namespace

int64_t pack(const float* buffer, const std::vector<int64_t>& offsets, const int32_t* local_indices,
             const std::vector<int64_t>& counts, float* out_values, int32_t* out_indices,
             Workspace& ws, cudaStream_t stream) {
  const int64_t total = check_pack_layout(offsets, counts);
  if (total == 0) return 0;
  const int num_tensors = static_cast<int>(counts.size());
  const size_t table_bytes = 2 * (counts.size() + 1) * sizeof(int64_t);
  auto* host = static_cast<int64_t*>(ws.pinned(table_bytes));
  host[0] = 0;
  for (int t = 0; t < num_tensors; ++t) host[t + 1] = host[t] + counts[t];
  std::copy(offsets.begin(), offsets.end(), host + num_tensors + 1);
  auto* tables = static_cast<int64_t*>(ws.device(detail::kSlotTables, table_bytes));
  check(cudaMemcpyAsync(tables, host, table_bytes, cudaMemcpyHostToDevice, stream), "upload tables");
  unsigned long long* c = counters(ws, stream);
  pack_kernel<<<elementwise_grid(total), kThreads, 0, stream>>>(buffer, tables, num_tensors, local_indices,
                                                        total, out_values, out_indices, c);
  check(cudaGetLastError(), "pack_kernel");
  unsigned long long h[2];
  read_counters(c, h, ws, stream);
  if (h[0] != ULLONG_MAX) {
    // (the pinned table was reused by read_counters: locate the tensor from counts)
    const int64_t pos = static_cast<int64_t>(h[0]);
    int t = 0;
    int64_t end = counts[0];  // tensor t's entries end here in the stream
    while (t + 1 < num_tensors && pos >= end) end += counts[++t];
    bad_index("pack", local_indices, h[0], offsets[t + 1] - offsets[t]);
  }
  return total;
}

void unpack(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
            int64_t n, float* dense, Workspace& ws, cudaStream_t stream, bool deterministic) {
  check_size("unpack", n);
  if (counts.empty()) throw std::invalid_argument("unpack: no workers");
  const int64_t total = total_count("unpack", counts);
  unsigned long long* c = counters(ws, stream);
  if (n) check(cudaMemsetAsync(dense, 0, n * sizeof(float), stream), "zero dense");
  if (deterministic) {
    int64_t begin = 0;
    for (const int64_t cnt : counts) {  // rank order
      if (cnt > 0)
        scatter_add_kernel<<<elementwise_grid(cnt), kThreads, 0, stream>>>(values, indices, begin, begin + cnt,
                                                                           n, dense, c);
      begin += cnt;
    }
  } else if (total > 0) {
    scatter_add_kernel<<<elementwise_grid(total), kThreads, 0, stream>>>(values, indices, 0, total, n, dense,
                                                                         c);
  }
  check(cudaGetLastError(), "scatter_add_kernel");
  average(dense, n, static_cast<int>(counts.size()), dense, stream);  // kernels::average's bits
  unsigned long long h[2];
  read_counters(c, h, ws, stream);
  if (h[0] != ULLONG_MAX) bad_index("unpack", indices, h[0], n);
}

int64_t unpack_equal_slices(const float* values, const int32_t* indices, int64_t len, int P,
                            int64_t n, float* dense, Workspace& ws, cudaStream_t stream) {
  check_size("unpack_equal_slices", n);
  if (P < 1) throw std::invalid_argument("unpack_equal_slices: P must be >= 1");
  if (len < 0) throw std::invalid_argument("unpack_equal_slices: negative length");
  const int64_t m = len / P;
  unsigned long long* c = counters(ws, stream);
  if (n) check(cudaMemsetAsync(dense, 0, n * sizeof(float), stream), "zero dense");
  if (m > 0) {
    auto* last = static_cast<unsigned long long*>(ws.device(detail::kSlotLast, n * sizeof(unsigned long long)));
    check(cudaMemsetAsync(last, 0, n * sizeof(unsigned long long), stream), "zero last");
    for (int r = 0; r < P; ++r) {
      const int64_t begin = static_cast<int64_t>(r) * m;
      last_writer_kernel<<<elementwise_grid(m), kThreads, 0, stream>>>(indices, begin, m, r, n, last, c);
      slice_apply_kernel<<<elementwise_grid(m), kThreads, 0, stream>>>(values, indices, begin, m, r, n, last,
                                                               dense, c + 1);
    }
    check(cudaGetLastError(), "equal slices kernels");
  }
  average(dense, n, P, dense, stream);  // kernels::average's bits
  unsigned long long h[2];
  read_counters(c, h, ws, stream);
  if (h[0] != ULLONG_MAX) bad_index("unpack_equal_slices", indices, h[0], n);
  return static_cast<int64_t>(h[1]) + (len - m * P);
}

double measure_copy_bandwidth(size_t bytes, int reps, Workspace& ws) {
  const int64_t n4 = static_cast<int64_t>(bytes / 16);
  if (n4 == 0 || reps < 1) throw std::invalid_argument("measure_copy_bandwidth: too small");
  auto* buf = static_cast<float4*>(ws.device(detail::kSlotBench, 2 * n4 * sizeof(float4)));
  check(cudaMemset(buf, 0, 2 * n4 * sizeof(float4)), "memset");
  const int grid = ws.sm_count() * 8;
  const double us = median_event_time_us(
      [&] {
        copy_kernel<<<grid, kThreads>>>(buf, buf + n4, n4);
        check(cudaGetLastError(), "copy_kernel");
      },
      reps);
  return 2.0 * static_cast<double>(n4) * 16.0 / (us * 1e-6);
}

void fill_normal(float* d, int64_t n, uint64_t seed, float scale, cudaStream_t stream) {
  if (n <= 0) return;
  fill_normal_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(d, n, seed, scale);
  check(cudaGetLastError(), "fill_normal_kernel");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace sparsefuse::kernels::cuda
