#include "runtime/cuda_compressor.h"

#include <algorithm>

namespace sparsefuse::runtime {

using kernels::cuda::check;
using policy::Sparsifier;

CudaCompressor::CudaCompressor(const ModelLayout& layout, int device) : Compressor(layout) {
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate(compute)");
  check(cudaStreamCreateWithFlags(&compression_, cudaStreamNonBlocking), "cudaStreamCreate(compression)");
  check(cudaEventCreateWithFlags(&uploaded_, cudaEventDisableTiming), "cudaEventCreate");
  check(cudaEventCreate(&start_), "cudaEventCreate");
  check(cudaEventCreate(&stop_), "cudaEventCreate");
}

CudaCompressor::~CudaCompressor() {
  for (cudaEvent_t e : {uploaded_, start_, stop_}) {
    if (e) cudaEventDestroy(e);
  }
  for (cudaStream_t s : {compute_, compression_}) {
    if (s) cudaStreamDestroy(s);
  }
}

kernels::Selection CudaCompressor::download(int64_t count) {
  kernels::Selection out;
  out.resize(count);
  if (count == 0) return out;
  check(cudaMemcpyAsync(out.values.data(), values_.data(), size_t(count) * sizeof(float), cudaMemcpyDeviceToHost,
                        compression_),
        "cudaMemcpyAsync(selected values)");
  check(cudaMemcpyAsync(out.indices.data(), indices_.data(), size_t(count) * sizeof(int32_t), cudaMemcpyDeviceToHost,
                        compression_),
        "cudaMemcpyAsync(selected indices)");
  check(cudaStreamSynchronize(compression_), "cudaStreamSynchronize(compression)");
  return out;
}

kernels::Selection CudaCompressor::select_on_device(const policy::CompressionRequest& r, const SelectionKey& key) {
  namespace cuda = kernels::cuda;
  const int64_t n = r.elements;
  const float* x = x_.data();
  switch (r.sparsifier) {
    case Sparsifier::kTopk:
      return download(cuda::topk_abs(x, n, r.expected_count, values_.data(), indices_.data(), workspace_, compression_));
    case Sparsifier::kRandomk: {
      const kernels::RandomkKey shared{key.seed, uint64_t(r.first_tensor), uint64_t(key.iteration)};
      return download(cuda::randomk(x, n, r.expected_count, shared, values_.data(), indices_.data(), workspace_,
                                    compression_));
    }
    case Sparsifier::kAdtopk:
    case Sparsifier::kAdtopkI: {  // tensor by tensor, indices shifted into the range
      const int64_t base = layout().offset[r.first_tensor];
      int64_t count = 0;
      std::vector<int64_t> at, made;
      for (int t = r.first_tensor; t < r.end_tensor; ++t) {
        at.push_back(layout().offset[t] - base);
        made.push_back(cuda::adtopk(x + at.back(), layout().shape[t], r.density, values_.data() + count,
                                    indices_.data() + count, workspace_, compression_));
        count += made.back();
      }
      kernels::Selection out = download(count);
      for (size_t t = 0, j = 0; t < at.size(); ++t) {
        for (int64_t e = 0; e < made[t]; ++e) out.indices[j++] += int32_t(at[t]);
      }
      return out;
    }
    case Sparsifier::kDgc:
      return cuda::to_host(
          cuda::dgc(x, n, r.density, dgc_stream(key, r.first_tensor), workspace_, compression_).selection);
    case Sparsifier::kGaussiank:
      return cuda::to_host(cuda::gaussiank(x, n, r.density, workspace_, compression_).selection);
    case Sparsifier::kRedsync: return cuda::to_host(cuda::redsync(x, n, r.density, workspace_, compression_).selection);
    case Sparsifier::kSidco:
      return cuda::to_host(
          cuda::sidco(x, n, r.density, kernels::SidcoFit::kExponential, 1, workspace_, compression_).selection);
  }
  return {};
}

kernels::Selection CudaCompressor::compress(const policy::CompressionRequest& r, const float* grad, float* residual,
                                            const SelectionKey& key) {
  check_request(r);
  const int64_t base = layout().offset[r.first_tensor], n = r.elements;
  const bool fused = r.error_feedback && r.sparsifier == Sparsifier::kTopk;
  float* acc = residual + base;
  const float* host_x = grad + base;
  if (r.error_feedback && !fused) {  // acc = residual + grad, as the CPU path adds it
    for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + host_x[i];
    host_x = acc;
  }
  // Room for the selection: ADTopk's count is per row, the others' at most k.
  const bool adtopk = r.sparsifier == Sparsifier::kAdtopk || r.sparsifier == Sparsifier::kAdtopkI;
  const int64_t room = std::max<int64_t>(adtopk ? n : std::min(r.expected_count, n), 1);
  if (x_.size() < n) x_.resize(n);
  if (values_.size() < room) values_.resize(room), indices_.resize(room);
  check(cudaMemcpyAsync(x_.data(), host_x, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, compute_),
        "cudaMemcpyAsync(gradient)");
  if (fused) {
    if (residual_.size() < n) residual_.resize(n);
    check(cudaMemcpyAsync(residual_.data(), acc, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, compute_),
          "cudaMemcpyAsync(residual)");
  }
  check(cudaEventRecord(uploaded_, compute_), "cudaEventRecord(uploaded)");
  check(cudaStreamWaitEvent(compression_, uploaded_, 0), "cudaStreamWaitEvent(compression after compute)");
  check(cudaEventRecord(start_, compression_), "cudaEventRecord");
  kernels::Selection selection;
  if (fused) {
    selection = download(kernels::cuda::ef_topk(residual_.data(), x_.data(), n, r.expected_count, values_.data(),
                                                indices_.data(), workspace_, compression_));
    check(cudaMemcpyAsync(acc, residual_.data(), size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, compression_),
          "cudaMemcpyAsync(residual back)");
  } else {
    selection = select_on_device(r, key);
  }
  check(cudaEventRecord(stop_, compression_), "cudaEventRecord");
  check(cudaStreamSynchronize(compression_), "cudaStreamSynchronize(compression)");
  check(cudaEventElapsedTime(&last_ms_, start_, stop_), "cudaEventElapsedTime");
  const bool threshold = r.sparsifier == Sparsifier::kDgc || r.sparsifier == Sparsifier::kGaussiank ||
                         r.sparsifier == Sparsifier::kRedsync || r.sparsifier == Sparsifier::kSidco;
  if (threshold && r.align_to_expected) selection = align_to_count(std::move(selection), host_x, n, r.expected_count);
  if (r.error_feedback && !fused) {
    for (auto index : selection.indices) acc[index] = 0.0f;
  }
  return selection;
}

}  // namespace sparsefuse::runtime
