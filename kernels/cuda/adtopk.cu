// ADTopk per-row top-k on CUDA. Rows of up to kWarpRowMax elements: one warp
// per row, the row held in registers (element j = 32 e + lane), a 31-step
// radix select over the key bits(|x|) counted with warp votes. Longer rows: one
// block per row, three shared-memory histogram levels (12/12/7 bits of the key).
// Either way the exact k1-th key T and the number of ties t to take are found,
// then the row is compacted in j order keeping key > T and the first t ties, so
// the result is identical to kernels::adtopk. A block per short row spent most
// of its time clearing 4096-bin histograms: rows of 4 ran 100 times slower per
// element than rows of 1000 on an H200 (profiles/h200-141gb-hbm3e.json).
#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <climits>
#include <limits>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/internal.h"

namespace sparsefuse::kernels::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr int kBins = 4096;
constexpr uint32_t kNonFinite = 0x7F800000u;

using RowScan = cub::BlockScan<uint32_t, kRowThreads>;

__device__ __forceinline__ uint32_t key_of(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

// Picks, from the shared histogram `hist` (nbins <= 4096), the bin of the
// s_need-th largest key; appends its `bits` to s_prefix and leaves in s_need
// how many to take from that bin.
__device__ void block_choose(const uint32_t* hist, int nbins, int bits,
                             typename RowScan::TempStorage& ts, uint32_t& s_prefix,
                             uint32_t& s_need) {
  constexpr int kItems = kBins / kRowThreads;
  const uint32_t need = s_need;
  const uint32_t prefix = s_prefix;
  uint32_t items[kItems];
  uint32_t incl[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int bin = nbins - 1 - (static_cast<int>(threadIdx.x) * kItems + j);
    items[j] = bin >= 0 ? hist[bin] : 0u;
  }
  RowScan(ts).InclusiveSum(items, incl);
  __syncthreads();  // all threads have read s_need / s_prefix
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint32_t excl = incl[j] - items[j];
    if (excl < need && need <= incl[j]) {
      const int bin = nbins - 1 - (static_cast<int>(threadIdx.x) * kItems + j);
      s_prefix = (prefix << bits) | static_cast<uint32_t>(bin);
      s_need = need - excl;
    }
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kRowThreads)
    adtopk_rows_kernel(const float* g, int64_t rows, int64_t d1, int64_t rest, int64_t k1,
                       float* out_values, int32_t* out_indices, uint8_t* flags,
                       unsigned long long* first_bad) {
  __shared__ typename RowScan::TempStorage ts;
  __shared__ uint32_t hist[kBins];
  __shared__ uint32_t s_prefix;
  __shared__ uint32_t s_need;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i0 = row / rest;
    const int64_t ir = row - i0 * rest;
    const int64_t base = i0 * d1 * rest + ir;
    if (threadIdx.x == 0) {
      s_prefix = 0;
      s_need = static_cast<uint32_t>(k1);
    }
    // Level 1: bits [30:19].
    for (int b = threadIdx.x; b < kBins; b += kRowThreads) hist[b] = 0;
    __syncthreads();
    for (int64_t j = threadIdx.x; j < d1; j += kRowThreads) {
      const int64_t flat = base + j * rest;
      const uint32_t key = key_of(g[flat]);
      if (key >= kNonFinite) atomicMin(first_bad, static_cast<unsigned long long>(flat));
      atomicAdd(&hist[key >> 19], 1u);
    }
    __syncthreads();
    block_choose(hist, kBins, 12, ts, s_prefix, s_need);
    // Level 2: bits [18:7] of keys whose top 12 bits match.
    for (int b = threadIdx.x; b < kBins; b += kRowThreads) hist[b] = 0;
    __syncthreads();
    {
      const uint32_t prefix = s_prefix;
      for (int64_t j = threadIdx.x; j < d1; j += kRowThreads) {
        const uint32_t key = key_of(g[base + j * rest]);
        if ((key >> 19) == prefix) atomicAdd(&hist[(key >> 7) & 0xFFFu], 1u);
      }
    }
    __syncthreads();
    block_choose(hist, kBins, 12, ts, s_prefix, s_need);
    // Level 3: bits [6:0].
    for (int b = threadIdx.x; b < kBins; b += kRowThreads) hist[b] = 0;
    __syncthreads();
    {
      const uint32_t prefix = s_prefix;
      for (int64_t j = threadIdx.x; j < d1; j += kRowThreads) {
        const uint32_t key = key_of(g[base + j * rest]);
        if ((key >> 7) == prefix) atomicAdd(&hist[key & 0x7Fu], 1u);
      }
    }
    __syncthreads();
    block_choose(hist, 128, 7, ts, s_prefix, s_need);
    const uint32_t t_key = s_prefix;  // exact k1-th key of the row
    const uint32_t ties = s_need;     // how many entries equal to t_key to take
    // In-order compaction.
    uint32_t carry_sel = 0;
    uint32_t carry_tie = 0;
    for (int64_t c = 0; c < d1; c += kRowThreads) {
      const int64_t j = c + threadIdx.x;
      const bool valid = j < d1;
      const int64_t flat = base + j * rest;
      const uint32_t key = valid ? key_of(g[flat]) : 0u;
      const uint32_t is_tie = (valid && key == t_key) ? 1u : 0u;
      uint32_t tie_rank, tie_total;
      RowScan(ts).ExclusiveSum(is_tie, tie_rank, tie_total);
      __syncthreads();
      const bool sel = valid && (key > t_key || (is_tie && carry_tie + tie_rank < ties));
      uint32_t pos, sel_total;
      RowScan(ts).ExclusiveSum(sel ? 1u : 0u, pos, sel_total);
      __syncthreads();
      if (sel) {
        if (flags) {
          flags[flat] = 1;
        } else {
          const int64_t w = row * k1 + carry_sel + pos;
          out_indices[w] = static_cast<int32_t>(flat);
          out_values[w] = g[flat];
        }
      }
      carry_sel += sel_total;
      carry_tie += tie_total;
    }
    __syncthreads();  // shared state is reset for the next row
  }
}

constexpr int kWarpRowMax = 256;

// One warp per row of d1 <= 32 E elements (grid-stride over rows by warp).
template <int E>
__global__ void __launch_bounds__(kRowThreads)
    adtopk_warp_rows_kernel(const float* g, int64_t rows, int64_t d1, int64_t rest, int64_t k1,
                            float* out_values, int32_t* out_indices, uint8_t* flags,
                            unsigned long long* first_bad) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const unsigned below = (1u << lane) - 1u;  // lanes before this one
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kRowThreads / 32);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (kRowThreads / 32) + threadIdx.x / 32; row < rows;
       row += warps) {
    const int64_t i0 = row / rest;
    const int64_t base = i0 * d1 * rest + (row - i0 * rest);
    uint32_t key[E];
    bool valid[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int64_t j = e * 32 + lane;
      valid[e] = j < d1;
      key[e] = valid[e] ? key_of(g[base + j * rest]) : 0u;
      if (valid[e] && key[e] >= kNonFinite) atomicMin(first_bad, static_cast<unsigned long long>(base + j * rest));
    }
    // Radix select, most significant bit first: `prefix` holds the bits of T
    // found so far, `need` how many of the keys sharing them still to take.
    uint32_t prefix = 0;
    uint32_t need = static_cast<uint32_t>(k1);
    for (int b = 30; b >= 0; --b) {
      const uint32_t want = (prefix | (1u << b)) >> b;
      uint32_t count = 0;
#pragma unroll
      for (int e = 0; e < E; ++e) count += __popc(__ballot_sync(kAll, valid[e] && (key[e] >> b) == want));
      if (count >= need) {
        prefix |= 1u << b;
      } else {
        need -= count;
      }
    }
    // In-order compaction: chunk e holds j in [32 e, 32 e + 32).
    uint32_t taken = 0, ties_seen = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const bool tie = valid[e] && key[e] == prefix;
      const unsigned tie_votes = __ballot_sync(kAll, tie);
      const bool sel = valid[e] && (key[e] > prefix || (tie && ties_seen + __popc(tie_votes & below) < need));
      const unsigned sel_votes = __ballot_sync(kAll, sel);
      if (sel) {
        const int64_t flat = base + (e * 32 + lane) * rest;
        if (flags) {
          flags[flat] = 1;
        } else {
          const int64_t w = row * k1 + taken + __popc(sel_votes & below);
          out_indices[w] = static_cast<int32_t>(flat);
          out_values[w] = g[flat];
        }
      }
      taken += __popc(sel_votes);
      ties_seen += __popc(tie_votes);
    }
  }
}

// Launches the row kernel for d1: the warp kernel with the fewest registers
// per lane that hold a row, else the block kernel.
void launch_rows(const float* g, int64_t rows, int64_t d1, int64_t rest, int64_t k1, float* values,
                 int32_t* indices, uint8_t* flags, unsigned long long* first_bad, int sm_count,
                 cudaStream_t stream) {
  const int64_t most_blocks = static_cast<int64_t>(sm_count) * 16;
  if (d1 > kWarpRowMax) {
    const int grid = static_cast<int>(std::min<int64_t>(rows, most_blocks));
    adtopk_rows_kernel<<<grid, kRowThreads, 0, stream>>>(g, rows, d1, rest, k1, values, indices, flags, first_bad);
    check(cudaGetLastError(), "adtopk_rows_kernel");
    return;
  }
  const int grid = static_cast<int>(std::min<int64_t>((rows + kRowThreads / 32 - 1) / (kRowThreads / 32), most_blocks));
  const auto launch = [&](auto kernel) {
    kernel<<<grid, kRowThreads, 0, stream>>>(g, rows, d1, rest, k1, values, indices, flags, first_bad);
  };
  if (d1 <= 32) {
    launch(adtopk_warp_rows_kernel<1>);
  } else if (d1 <= 64) {
    launch(adtopk_warp_rows_kernel<2>);
  } else if (d1 <= 128) {
    launch(adtopk_warp_rows_kernel<4>);
  } else {
    launch(adtopk_warp_rows_kernel<8>);
  }
  check(cudaGetLastError(), "adtopk_warp_rows_kernel");
}

}  // namespace

int64_t adtopk(const float* g, const std::vector<int64_t>& shape, double rho, float* values,
               int32_t* indices, Workspace& ws, cudaStream_t stream) {
  static constexpr char kName[] = "adtopk";
  const AdtopkGeometry geo = adtopk_geometry(shape, rho);  // validates shape and rho
  const int64_t n = geo.n;
  const int64_t count = geo.count();
  if (!geo.compress) {
    detail::require_finite(kName, g, n, ws, stream);
    detail::iota(indices, n, stream);
    if (n) check(cudaMemcpyAsync(values, g, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return n;
  }
  const int64_t d1 = geo.d1, rest = geo.rest, k1 = geo.k1;
  const int64_t rows = geo.rows();
  auto* first_bad = static_cast<unsigned long long*>(ws.device(detail::kSlotTmp, sizeof(unsigned long long) * 2));
  auto* num = reinterpret_cast<long long*>(first_bad + 1);
  check(cudaMemsetAsync(first_bad, 0xFF, sizeof(unsigned long long), stream), "memset");
  uint8_t* flags = nullptr;
  if (rest > 1) {
    flags = static_cast<uint8_t*>(ws.device(detail::kSlotFlags, static_cast<size_t>(n)));
    check(cudaMemsetAsync(flags, 0, static_cast<size_t>(n), stream), "memset flags");
  }
  launch_rows(g, rows, d1, rest, k1, values, indices, flags, first_bad, ws.sm_count(), stream);
  unsigned long long bad = 0;
  check(cudaMemcpyAsync(&bad, first_bad, sizeof bad, cudaMemcpyDeviceToHost, stream), "read");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (bad != ULLONG_MAX) {
    float v = std::numeric_limits<float>::quiet_NaN();
    check(cudaMemcpy(&v, g + bad, sizeof v, cudaMemcpyDeviceToHost), "read value");
    throw NonFiniteError(kName, static_cast<int64_t>(bad), v);
  }
  if (flags) {
    size_t bytes = 0;
    const thrust::counting_iterator<int32_t> it(0);
    check(cub::DeviceSelect::Flagged(nullptr, bytes, it, flags, indices, num, n, stream), "Flagged(size)");
    void* temp = ws.device(detail::kSlotCubTemp, bytes);
    check(cub::DeviceSelect::Flagged(temp, bytes, it, flags, indices, num, n, stream), "Flagged");
    detail::gather(g, indices, count, values, stream);
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return count;
}

}  // namespace sparsefuse::kernels::cuda
