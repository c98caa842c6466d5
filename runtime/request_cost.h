#pragma once
// What the engine's compression of a one-tensor bucket costs on a GPU, as it
// records it for result.json: `compress_resident` (the selection kernel, the
// scatter of the sent values, the index copy, the event and the stream
// synchronisation) and the flush's fill (the index copies and the pack).
// Measured on one rank, NCCL on one GPU, device-resident payloads, the
// topk-layerwise preset with error feedback over one-dimensional tensors.
// `sparsefuse profile-kernels --device cuda` subtracts the profile's ef_topk
// and pack times at the same size and density and records the rest as the
// profile's request_bookkeeping, which the simulator charges per inline
// compression request (docs/simulator-model.md, "Request bookkeeping on a GPU").
#include <cstdint>

namespace sparsefuse::runtime {

struct RequestCostOptions {
  int64_t elements = 1000;  // per tensor
  double density = 0.01;
  int modules = 16;         // each makes a weight and a bias ready: 2 x modules buckets
  int iterations = 5;       // measured, after one warm-up; the last one's buckets are kept
};

// The median over the buckets of the compression the engine recorded, in us.
// Throws std::invalid_argument for elements, modules or iterations < 1 or a
// density outside (0, 1]; kernels::cuda::CudaError without a usable device.
double measure_resident_compression_us(const RequestCostOptions& options);

}  // namespace sparsefuse::runtime
