#include "runtime/cuda_compressor.h"

#include <algorithm>
#include <stdexcept>

#include "policy/sparsifier.h"

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

kernels::Selection CudaCompressor::download(const DeviceView& view) {
  kernels::Selection out;
  out.resize(view.count);
  if (view.count == 0) return out;
  check(cudaMemcpyAsync(out.values.data(), view.values, size_t(view.count) * sizeof(float), cudaMemcpyDeviceToHost,
                        compression_),
        "cudaMemcpyAsync(selected values)");
  check(cudaMemcpyAsync(out.indices.data(), view.indices, size_t(view.count) * sizeof(int32_t),
                        cudaMemcpyDeviceToHost, compression_),
        "cudaMemcpyAsync(selected indices)");
  check(cudaStreamSynchronize(compression_), "cudaStreamSynchronize(compression)");
  return out;
}

CudaCompressor::DeviceView CudaCompressor::estimated(kernels::cuda::DeviceEstimate estimate) {
  estimate_ = std::move(estimate.selection);
  return {estimate_.values.data(), estimate_.indices.data(), estimate_.size};
}

CudaCompressor::DeviceView CudaCompressor::select_on_device(const policy::CompressionRequest& r, const float* x,
                                                            const SelectionKey& key) {
  namespace cuda = kernels::cuda;
  const int64_t n = r.elements;
  switch (r.sparsifier) {
    case Sparsifier::kTopk:
      return {values_.data(), indices_.data(),
              cuda::topk_abs(x, n, r.expected_count, values_.data(), indices_.data(), workspace_, compression_)};
    case Sparsifier::kRandomk: {
      const kernels::RandomkKey shared{key.seed, uint64_t(r.first_tensor), uint64_t(key.iteration)};
      return {values_.data(), indices_.data(),
              cuda::randomk(x, n, r.expected_count, shared, values_.data(), indices_.data(), workspace_, compression_)};
    }
    case Sparsifier::kAdtopk:
    case Sparsifier::kAdtopkI: {  // tensor by tensor, indices shifted into the range
      const int64_t base = layout().offset[r.first_tensor];
      int64_t count = 0;
      for (int t = r.first_tensor; t < r.end_tensor; ++t) {
        const int64_t at = layout().offset[t] - base;
        const int64_t made = cuda::adtopk(x + at, layout().shape[t], r.density, values_.data() + count,
                                          indices_.data() + count, workspace_, compression_);
        cuda::shift_indices(indices_.data() + count, made, int32_t(at), compression_);
        count += made;
      }
      return {values_.data(), indices_.data(), count};
    }
    case Sparsifier::kDgc:
      return estimated(cuda::dgc(x, n, r.density, dgc_stream(key, r.first_tensor), workspace_, compression_));
    case Sparsifier::kGaussiank: return estimated(cuda::gaussiank(x, n, r.density, workspace_, compression_));
    case Sparsifier::kRedsync: return estimated(cuda::redsync(x, n, r.density, workspace_, compression_));
    case Sparsifier::kSidco:
      return estimated(cuda::sidco(x, n, r.density, kernels::SidcoFit::kExponential, 1, workspace_, compression_));
  }
  return {};
}

void CudaCompressor::make_room(const policy::CompressionRequest& r) {
  // ADTopk's count is per row, the others' at most k.
  const bool adtopk = r.sparsifier == Sparsifier::kAdtopk || r.sparsifier == Sparsifier::kAdtopkI;
  const int64_t room = std::max<int64_t>(adtopk ? r.elements : std::min(r.expected_count, r.elements), 1);
  if (values_.size() < room) values_.resize(room), indices_.resize(room);
}

void CudaCompressor::stop_timing() {
  check(cudaEventRecord(stop_, compression_), "cudaEventRecord");
  check(cudaStreamSynchronize(compression_), "cudaStreamSynchronize(compression)");
  check(cudaEventElapsedTime(&last_ms_, start_, stop_), "cudaEventElapsedTime");
}

void CudaCompressor::compress(const policy::CompressionRequest& r, const float* grad, float* residual,
                              const SelectionKey& key, kernels::Selection& out) {
  check_request(r);
  const int64_t base = layout().offset[r.first_tensor], n = r.elements;
  const bool fused = r.error_feedback && r.sparsifier == Sparsifier::kTopk;
  float* acc = residual + base;
  const float* host_x = grad + base;
  if (r.error_feedback && !fused) {  // acc = residual + grad, as the CPU path adds it
    for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + host_x[i];
    host_x = acc;
  }
  make_room(r);
  if (x_.size() < n) x_.resize(n);
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
    selection = download({values_.data(), indices_.data(),
                          kernels::cuda::ef_topk(residual_.data(), x_.data(), n, r.expected_count, values_.data(),
                                                 indices_.data(), workspace_, compression_)});
    check(cudaMemcpyAsync(acc, residual_.data(), size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, compression_),
          "cudaMemcpyAsync(residual back)");
  } else {
    selection = download(select_on_device(r, x_.data(), key));
  }
  stop_timing();
  if (policy::threshold_sparsifier(r.sparsifier) && r.align_to_expected) {
    selection = align_to_count(std::move(selection), host_x, n, r.expected_count);
  }
  if (r.error_feedback && !fused) {
    for (auto index : selection.indices) acc[index] = 0.0f;
  }
  out = std::move(selection);
}

int64_t CudaCompressor::compress_resident(const policy::CompressionRequest& r, float* grad, float* residual,
                                          const SelectionKey& key, int32_t* sent_indices) {
  check_request(r);
  if (policy::threshold_sparsifier(r.sparsifier) && r.align_to_expected) {
    throw std::logic_error("fixed-k alignment of a threshold method runs on the host (align_to_count), not resident");
  }
  const int64_t base = layout().offset[r.first_tensor], n = r.elements;
  const bool fused = r.error_feedback && r.sparsifier == Sparsifier::kTopk;
  float* x = grad + base;
  float* acc = residual + base;
  make_room(r);
  check(cudaEventRecord(start_, compression_), "cudaEventRecord");
  DeviceView sent;
  if (fused) {
    sent = {values_.data(), indices_.data(),
            kernels::cuda::ef_topk(acc, x, n, r.expected_count, values_.data(), indices_.data(), workspace_,
                                   compression_)};
  } else {
    if (r.error_feedback) kernels::cuda::add_into(acc, x, n, compression_);  // acc = residual + grad
    sent = select_on_device(r, r.error_feedback ? acc : x, key);
    if (r.error_feedback) kernels::cuda::zero_at(acc, sent.indices, sent.count, compression_);
  }
  // The gradient becomes the send buffer, as on the host (RankEngine::write_sent).
  kernels::cuda::scatter_values(x, sent.indices, sent.values, sent.count, compression_);
  if (sent.count > 0) {
    check(cudaMemcpyAsync(sent_indices, sent.indices, size_t(sent.count) * sizeof(int32_t), cudaMemcpyDeviceToDevice,
                          compression_),
          "cudaMemcpyAsync(sent indices)");
  }
  stop_timing();
  return sent.count;
}

}  // namespace sparsefuse::runtime
