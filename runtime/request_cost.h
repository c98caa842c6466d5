#pragma once
// What the engine's compression of a one-tensor bucket costs on a GPU, as it
// records it for result.json. Measured on one rank, NCCL on one GPU,
// device-resident payloads, over one-dimensional tensors, each its own
// bucket. Two schemes serve `sparsefuse profile-kernels --device cuda`:
//   topk-layerwise (error feedback): `compress_resident` (the selection
//     kernel, the scatter of the sent values, the index copy, the event and
//     the stream synchronisation) and the flush's fill (the index copies and
//     the pack);
//   ADTopk without error feedback: a one-dimensional tensor is sent dense as
//     pairs, so the flush's fill alone (an index iota and the pack).
// The profile subtracts its own kernel times at the same size and density:
// the second gives its flush_bookkeeping (per packed flush), the first less
// that its request_bookkeeping (per inline compression request), which the
// simulator charges (docs/simulator-model.md, "Request bookkeeping on a GPU").
#include <cstdint>

#include "common/json_reader.h"

namespace sparsefuse::runtime {

struct RequestCostOptions {
  int64_t elements = 1000;  // per tensor
  double density = 0.01;
  int modules = 16;         // each makes a weight and a bias ready: 2 x modules buckets
  int iterations = 5;       // measured, after one warm-up; the last one's buckets are kept
  Json scheme = "topk-layerwise";  // the scenario's "scheme"
};

// The median over the buckets of the compression the engine recorded, in us.
// Throws std::invalid_argument for elements, modules or iterations < 1 or a
// density outside (0, 1]; kernels::cuda::CudaError without a usable device.
double measure_resident_compression_us(const RequestCostOptions& options);

}  // namespace sparsefuse::runtime
