// Sparse-allreduce baselines (baselines.md §1.2, §3.5, §3.6, §4.3): the
// gradients are fused by one of SparseScheme's partition rules (default: the
// whole model in one buffer, as the reference code sparsifies the flattened
// gradient after backward [recall]), each buffer selects k = density x n
// elements, and the buffer is synchronised by the named sparse allreduce,
// costed in sim/sparse_collectives.h:
//  - gtopk: exact local top-k, then gTop-k's tree (top-k of 2k per round);
//  - spardl: exact local top-k, then Spar-Reduce-Scatter + Spar-All-Gather;
//  - oktopk: threshold-reuse selection (an exact top-k every EXACT_EVERY
//    iterations), split-and-reduce, balance, allgatherv; periodic repartition;
//  - randomk-shared: random-k with a shared seed, the k values allreduced.
#pragma once

#include <memory>
#include <vector>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/planned_scheme.h"
#include "policy/preset.h"
#include "policy/sparse_scheme.h"

namespace sparsefuse::policy {

// PARTITION's partition rule picks the buffers (its placement and sparsifier
// are ignored); PLANNED says how each buffer selects.
std::unique_ptr<Scheme> make_sparse_allreduce_scheme(const GradientModel& model, const CostEstimator& cost,
                                                     SparseAllreduce algorithm, const SparseOptions& partition,
                                                     const PlannedOptions& planned);

// The knobs every sparse-allreduce preset has (one buffer by default); Ok-Topk
// adds "exact_every" and "repartition_every".
std::vector<Knob> sparse_allreduce_knobs();

// The builder of a sparse-allreduce preset running ALGORITHM.
std::unique_ptr<Scheme> build_sparse_allreduce(SparseAllreduce algorithm, const Knobs& knobs,
                                               const GradientModel& model, const CostEstimator& cost);
template <SparseAllreduce kAlgorithm>
std::unique_ptr<Scheme> build_sparse_allreduce_preset(const Knobs& k, const GradientModel& model,
                                                      const CostEstimator& cost) {
  return build_sparse_allreduce(kAlgorithm, k, model, cost);
}

}  // namespace sparsefuse::policy
