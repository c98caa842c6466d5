// Espresso (docs/baseline-systems.md#compression-systems): a per-tensor compression strategy chosen
// offline from a timeline model. Algorithm 1: visit tensors by size,
// largest first (ties: closer to the output first); for each, try every
// option with the others fixed and keep the one that minimises the modelled
// iteration time (policy/timeline_model.h). Options on our flat network:
// dense allreduce, GPU compression (inline, competing with backward) +
// allgather, CPU compression (offload threads) + allgather.
//
// Simplified: no hierarchical / two-level or divisible (reduce-scatter,
// alltoall) options — the flat network has no intra-/inter-machine phases;
// no bubble pruning (every tensor is tried, so the greedy result is at least
// as good); Algorithm 2's exhaustive CPU-offload enumeration is replaced by
// the CPU option inside the same greedy pass; the CPU option is dropped when
// the executor has no CPU cost curves.
#pragma once

#include <memory>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct EspressoOptions {
  Sparsifier sparsifier = Sparsifier::kDgc;
  double density = 0.01;
  bool error_feedback = true;
  bool cpu_offload = true;
  int cpu_threads = 4;               // of the model; the executor's pool is the scenario's
  double memory_gbytes_per_s = 900;  // decompression in the model
};

std::unique_ptr<Scheme> make_espresso_scheme(const GradientModel& model, const CostEstimator& cost,
                                             const EspressoOptions& options);

}  // namespace sparsefuse::policy
