// Internal launch wrappers shared by the CUDA kernel files and the host-side
// estimator backend. Not part of the public API.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"

namespace sparsefuse::kernels::cuda::detail {

// Workspace slots (see Workspace::device).
enum Slot : int {
  kSlotScratch = 0,   // select state, counters, one 4096-bin histogram
  kSlotList = 1,      // radix-select candidate list
  kSlotTies = 2,      // radix-select tie list
  kSlotCubTemp = 3,   // CUB temporary storage
  kSlotStats = 4,     // reduction outputs
  kSlotSample = 5,    // DGC sample
  kSlotFlags = 6,     // ADTopk flags
  kSlotTables = 7,    // pack tables
  kSlotLast = 8,      // unpack_equal_slices last-writer array
  kSlotBench = 9,     // bandwidth measurement
  kSlotTmp = 10,      // short-lived per-call temporaries
};

struct RawStats {
  double sum;
  double sum_abs;
  double sum_sq;
  unsigned long long count;
  unsigned int min_bits;  // bits of min |g| (fp32, non-negative)
  unsigned int max_bits;
  int nonfinite;
  int pad;
};

// Over |g| > above (all elements when all == true).
RawStats abs_stats(const float* g, int64_t n, float above, bool all, Workspace& ws,
                   cudaStream_t stream);
// Sum over all i of ln(|g_i| * scale + eps), in double.
double sum_log(const float* g, int64_t n, double scale, double eps, Workspace& ws,
               cudaStream_t stream);
// Smallest i with non-finite g[i], or -1.
int64_t first_nonfinite(const float* g, int64_t n, Workspace& ws, cudaStream_t stream);
// Throws NonFiniteError if g has a NaN/Inf.
void require_finite(const char* kernel, const float* g, int64_t n, Workspace& ws,
                    cudaStream_t stream);

void gather(const float* src, const int32_t* idx, int64_t m, float* out, cudaStream_t stream);
void gather_strided(const float* src, int64_t start, int64_t stride, int64_t m, float* out,
                    cudaStream_t stream);
// out[j] = outer[inner[j]]
void map_indices(const int32_t* outer, const int32_t* inner, int64_t m, int32_t* out,
                 cudaStream_t stream);
void iota(int32_t* out, int64_t n, cudaStream_t stream);

// Element-wise grid-stride launches (pack, unpack, the resident helpers):
// kElementwiseThreads per block, ceil(m / kElementwiseThreads) blocks, 1 to 65535.
constexpr int kElementwiseThreads = 256;
inline int elementwise_grid(int64_t m) {
  const int64_t blocks = (m + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<int>(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

// Blocks for a grid-stride kernel: ceil(work_items / items_per_block), capped
// at 8 blocks per SM, at least 1.
int launch_grid(int64_t work_items, int items_per_block, Workspace& ws);

}  // namespace sparsefuse::kernels::cuda::detail
