// Baselines for bench_cuda (not part of the kernels' API).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"

namespace sparsefuse::kernels::cuda::baseline {

// Sort-based top-k as a compressor without a select would do it: keys = |g|,
// payload = iota, cub::DeviceRadixSort::SortPairsDescending over all n, then the
// first k (value gathered from g). Output indices are in magnitude order, not
// index order, and ties follow the stable sort (smaller index first). Scratch is
// owned by the Baseline object so the timed call does not allocate.
class SortTopk {
 public:
  explicit SortTopk(int64_t n);
  ~SortTopk();
  SortTopk(const SortTopk&) = delete;
  SortTopk& operator=(const SortTopk&) = delete;
  void run(const float* g, int64_t k, float* values, int32_t* indices, cudaStream_t stream);

 private:
  int64_t n_;
  float* keys_in_ = nullptr;
  float* keys_out_ = nullptr;
  int32_t* idx_in_ = nullptr;
  int32_t* idx_out_ = nullptr;
  void* temp_ = nullptr;
  size_t temp_bytes_ = 0;
};

}  // namespace sparsefuse::kernels::cuda::baseline
