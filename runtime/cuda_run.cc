#include "runtime/cuda_run.h"

#include <memory>

#include "runtime/cuda_compressor.h"
#include "runtime/resident_payloads.h"

namespace sparsefuse::runtime {

void use_cuda(RunOptions& run, int device, bool device_payloads) {
  run.transport = "nccl";
  run.device = "cuda";
  run.make_compressor = [device](const ModelLayout& layout) {
    return std::make_unique<CudaCompressor>(layout, device);
  };
  run.make_plane = nullptr;
  if (device_payloads) {
    run.make_plane = [device](const ModelLayout& layout) {
      return std::make_unique<ResidentPayloads>(layout, device);
    };
  }
}

}  // namespace sparsefuse::runtime
