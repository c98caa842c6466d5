#include "kernels/cuda/baseline.h"

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/internal.h"

namespace sparsefuse::kernels::cuda::baseline {
namespace {

__global__ void abs_iota_kernel(const float* g, int64_t n, float* keys, int32_t* idx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    keys[i] = fabsf(g[i]);
    idx[i] = static_cast<int32_t>(i);
  }
}

__global__ void take_kernel(const float* g, const int32_t* sorted_idx, int64_t k, float* values,
                            int32_t* indices) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const int32_t i = sorted_idx[j];
    indices[j] = i;
    values[j] = g[i];
  }
}


}  // namespace

SortTopk::SortTopk(int64_t n) : n_(n) {
  check(cudaMalloc(&keys_in_, n * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&keys_out_, n * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&idx_in_, n * sizeof(int32_t)), "cudaMalloc");
  check(cudaMalloc(&idx_out_, n * sizeof(int32_t)), "cudaMalloc");
  check(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes_, keys_in_, keys_out_, idx_in_,
                                                  idx_out_, n_),
        "SortPairsDescending(size)");
  check(cudaMalloc(&temp_, temp_bytes_), "cudaMalloc");
}

SortTopk::~SortTopk() {
  cudaFree(keys_in_);
  cudaFree(keys_out_);
  cudaFree(idx_in_);
  cudaFree(idx_out_);
  cudaFree(temp_);
}

void SortTopk::run(const float* g, int64_t k, float* values, int32_t* indices, cudaStream_t stream) {
  abs_iota_kernel<<<detail::elementwise_grid(n_), detail::kElementwiseThreads, 0, stream>>>(g, n_, keys_in_, idx_in_);
  check(cub::DeviceRadixSort::SortPairsDescending(temp_, temp_bytes_, keys_in_, keys_out_, idx_in_,
                                                  idx_out_, n_, 0, 32, stream),
        "SortPairsDescending");
  take_kernel<<<detail::elementwise_grid(k), detail::kElementwiseThreads, 0, stream>>>(g, idx_out_, k, values, indices);
  check(cudaGetLastError(), "take_kernel");
}

}  // namespace sparsefuse::kernels::cuda::baseline
