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

  kernels::Selection compress(const policy::CompressionRequest& request, const float* grad, float* residual,
                              const SelectionKey& key) override;

  float last_compression_ms() const { return last_ms_; }

 private:
  // The unaligned selection of the device array X_ (n = request.elements), on the host.
  kernels::Selection select_on_device(const policy::CompressionRequest& request, const SelectionKey& key);
  kernels::Selection download(int64_t count);

  cudaStream_t compute_ = nullptr, compression_ = nullptr;
  cudaEvent_t uploaded_ = nullptr, start_ = nullptr, stop_ = nullptr;
  float last_ms_ = 0.0f;
  kernels::cuda::Workspace workspace_;
  kernels::cuda::DeviceBuffer<float> x_, residual_, values_;
  kernels::cuda::DeviceBuffer<int32_t> indices_;
};

}  // namespace sparsefuse::runtime
