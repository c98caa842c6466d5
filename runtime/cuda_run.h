#pragma once
// A run's CUDA side (--device cuda): NCCL as the transport named in
// result.json, CudaCompressor on DEVICE, and with DEVICE_PAYLOADS the
// device-resident payload plane (ResidentPayloads; the driver uses it where
// resident_refusal accepts the scheme). Shared by `sparsefuse run`, the
// GPU's request-cost measurement and the GPU tests.
#include "runtime/driver.h"

namespace sparsefuse::runtime {

void use_cuda(RunOptions& run, int device, bool device_payloads);

}  // namespace sparsefuse::runtime
