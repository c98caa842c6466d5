// Cupcake (docs/baseline-systems.md#compression-systems): compression of fused buffers. The gradients
// (backward order) are split into F fusion buffers, initially equal-count;
// each buffer is compressed once (with error feedback) and allgathered. With
// SEARCH, every split point in turn is moved by a binary search that compares
// the modelled time at index mid and mid + 1 (Cupcake compares measured
// communication time over training iterations; we use the planning timeline
// of policy/timeline_model.h instead), keeping the better side.
#pragma once

#include <memory>
#include <vector>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct CupcakeOptions {
  Sparsifier sparsifier = Sparsifier::kTopk;
  double density = 0.01;
  int fusion_num = 2;  // F; 0 = layer-wise (one buffer per tensor)
  bool search = true;
  bool error_feedback = true;
  double memory_gbytes_per_s = 900;
};

// The split points (buffer starts after the first) Cupcake settles on.
std::vector<int> cupcake_splits(const GradientModel& model, const CostEstimator& cost, const CupcakeOptions& options);

std::unique_ptr<Scheme> make_cupcake_scheme(const GradientModel& model, const CostEstimator& cost,
                                            const CupcakeOptions& options);

}  // namespace sparsefuse::policy
