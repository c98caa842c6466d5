// Element-wise helpers of the runtime's device-resident payload path
// (runtime/resident_payloads.h): error feedback's add and clear, writing the
// sent values over the gradient, shifting indices, the average. Unlike the
// selection kernels they only enqueue on `stream` and return: the caller
// orders them with the work around them.
#include <stdexcept>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/internal.h"

namespace sparsefuse::kernels::cuda {
namespace {

constexpr int kThreads = detail::kElementwiseThreads;
using detail::elementwise_grid;

__global__ void add_into_kernel(float* acc, const float* x, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc[i] = acc[i] + x[i];
}

__global__ void scatter_kernel(float* dst, const int32_t* indices, const float* values, int64_t m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride)
    dst[indices[j]] = values ? values[j] : 0.0f;
}

__global__ void shift_kernel(int32_t* indices, int64_t m, int32_t by) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride)
    indices[j] += by;
}

__global__ void scale_kernel(const float* sum, int64_t n, float factor, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = sum[i] * factor;
}

__global__ void divide_kernel(const float* sum, int64_t n, float p, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = sum[i] / p;  // IEEE division (no fast-math)
}

void launched(const char* what) { check(cudaGetLastError(), what); }

}  // namespace

void add_into(float* acc, const float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  add_into_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(acc, x, n);
  launched("add_into");
}

void scatter_values(float* dst, const int32_t* indices, const float* values, int64_t m, cudaStream_t stream) {
  if (m <= 0) return;
  scatter_kernel<<<elementwise_grid(m), kThreads, 0, stream>>>(dst, indices, values, m);
  launched("scatter_values");
}

void zero_at(float* dst, const int32_t* indices, int64_t m, cudaStream_t stream) {
  scatter_values(dst, indices, nullptr, m, stream);
}

void shift_indices(int32_t* indices, int64_t m, int32_t by, cudaStream_t stream) {
  if (m <= 0 || by == 0) return;
  shift_kernel<<<elementwise_grid(m), kThreads, 0, stream>>>(indices, m, by);
  launched("shift_indices");
}

void iota_indices(int32_t* out, int64_t n, cudaStream_t stream) { detail::iota(out, n, stream); }

void average(const float* sum, int64_t n, int P, float* out, cudaStream_t stream) {
  if (P < 1) throw std::invalid_argument("average: P must be >= 1");
  if (n <= 0) return;
  // The CPU's kernels::average bit for bit: for P = 2^k the multiplication by
  // the exact 2^-k, otherwise the division.
  if ((P & (P - 1)) == 0) {
    scale_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(sum, n, 1.0f / static_cast<float>(P), out);
  } else {
    divide_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(sum, n, static_cast<float>(P), out);
  }
  launched("average");
}

}  // namespace sparsefuse::kernels::cuda
