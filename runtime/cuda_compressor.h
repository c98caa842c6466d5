// The runtime's compression on a CUDA device (`sparsefuse run --device
// cuda`): the same requests as Compressor, run by the kernels of kernels/cuda
// (top-k, fused EF top-k, random-k, ADTopk, DGC, Gaussiank, RedSync, SIDCo).
// Three streams, ordered by events: the range's gradient (and, for the fused
// EF top-k, its residual) is uploaded on the compute stream, standing in for
// backward writing it; the compression stream waits for that event, selects,
// and its work is timed with CUDA events (last_compression_ms); the selection
// comes back to the host, where the exchange packs it and the communication
// stream (NcclCommunicator's) moves it. Error feedback for the threshold and
// random methods adds residual + gradient on the host (the same fp32 add as
// the CPU path) and zeroes the sent entries there; fixed-k alignment is the
// CPU's align_to_count. Exact kernels select exactly what the CPU kernels do;
// the estimators' thresholds may differ from the CPU's in their last bits.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_kernels.h"
#include "runtime/compressor.h"

namespace sparsefuse::runtime {

class CudaCompressor : public Compressor {
 public:
  // On DEVICE (made current on the calling thread, which must be the one
  // that compresses). Throws CudaError without a device.
  CudaCompressor(const ModelLayout& layout, int device);
  ~CudaCompressor() override;
  CudaCompressor(const CudaCompressor&) = delete;
  CudaCompressor& operator=(const CudaCompressor&) = delete;

  using Compressor::compress;
  void compress(const policy::CompressionRequest& request, const float* grad, float* residual,
                const SelectionKey& key, kernels::Selection& out) override;

  // The device-resident path (runtime/resident_payloads.h): GRAD and
  // RESIDUAL are the whole model's flat arrays in device memory. Selects as
  // compress() does, with error feedback on the device (the same fp32 add and
  // clear), writes the sent values over the gradient at the selected
  // positions (the gradient is the send buffer, as on the host) and copies
  // the selected indices, relative to the range start, to SENT_INDICES
  // (device, room for the request's elements). Returns the count. Fixed-k
  // alignment of a threshold method is host code: std::logic_error.
  int64_t compress_resident(const policy::CompressionRequest& request, float* grad, float* residual,
                            const SelectionKey& key, int32_t* sent_indices);
  // Where the selections and compress_resident's writes are ordered.
  cudaStream_t compression_stream() const { return compression_; }

  float last_compression_ms() const { return last_ms_; }

 private:
  // A selection in device memory: values_/indices_, or the last estimator's own buffers.
  struct DeviceView {
    const float* values = nullptr;
    int32_t* indices = nullptr;
    int64_t count = 0;
  };
  // The unaligned selection of the device array X (n = request.elements).
  DeviceView select_on_device(const policy::CompressionRequest& request, const float* x, const SelectionKey& key);
  DeviceView estimated(kernels::cuda::DeviceEstimate estimate);
  kernels::Selection download(const DeviceView& view);
  void make_room(const policy::CompressionRequest& request);  // values_/indices_ for its selection
  void stop_timing();  // records stop_, waits for the compression stream, sets last_ms_

  cudaStream_t compute_ = nullptr, compression_ = nullptr;
  cudaEvent_t uploaded_ = nullptr, start_ = nullptr, stop_ = nullptr;
  float last_ms_ = 0.0f;
  kernels::cuda::Workspace workspace_;
  kernels::cuda::DeviceBuffer<float> x_, residual_, values_;
  kernels::cuda::DeviceBuffer<int32_t> indices_;
  kernels::cuda::DeviceSelection estimate_;
};

}  // namespace sparsefuse::runtime
