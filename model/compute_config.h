// How a worker's compute is slowed by its own communication, as a scenario
// states it. A collective kernel shares the GPU with the backward pass (SMs,
// memory bandwidth, PCIe), so backward kernels that run while one of the
// worker's collectives is in flight take (1 + comm_interference) times as
// long for the overlapped part. The simulator applies it (sim/worker.h,
// sim/simulator.cc); the runtime only records it.
#pragma once

#include "common/json_reader.h"

namespace sparsefuse::model {

struct ComputeConfig {
  // The average compute slowdown under overlapped communication measured on
  // 4 A100, H100, MI250 and MI210 GPUs training GPT and LLaMA models (Lee et
  // al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
  // Distributed Deep Learning", arXiv 2507.03114, 2025: 18.9 % on average,
  // 40.0 % at most). docs/simulator-model.md says why and where it applies.
  static constexpr double kMeasuredGpuSlowdown = 0.189;

  double comm_interference = 0;  // a fraction >= 0

  // GPU_CLUSTER: the scenario describes GPU nodes (it names a topology); the
  // measured slowdown is the default there, 0 elsewhere.
  static ComputeConfig parse(const JsonNode& node, bool gpu_cluster);
  Json to_json() const;
};

}  // namespace sparsefuse::model
