// The cheap analytic timeline the compression baselines plan with (Espresso's
// "simulated iteration time", Cupcake's modelled communication time): one
// backward stream on which inline compression delays later gradients, CPU
// threads for offloaded compression, one FIFO communication stream, then
// serial decompression of each gathered buffer. Costs are the executor's
// estimates (policy/cost_estimator.h); decompression, which the estimator
// does not offer, is a memory pass at a planner knob's bandwidth (the
// simulator's own default, 900 GB/s).
#pragma once

#include <vector>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/planned_scheme.h"

namespace sparsefuse::policy {

// Point-to-point alpha (ns) and beta (ns per byte) as the estimator's ring
// allgather implies them: T(m) = (p-1) alpha + (p-1) m beta.
struct LinkEstimate {
  double alpha_ns = 0;
  double ns_per_byte = 0;
};
LinkEstimate infer_link(const CostEstimator& cost);

// Zero-fill ELEMENTS and scatter-add PAIRS (value, index) pairs, as memory
// traffic at GBYTES_PER_S: (4 n + 8 pairs) bytes.
double decompression_estimate_ns(int64_t elements, int64_t pairs, double gbytes_per_s);

// One buffer under its route, nominal (no noise), from backward start.
struct BufferTiming {
  TimeNs ready = 0;        // its last gradient
  TimeNs gpu_ns = 0;       // inline selection on the compute stream
  TimeNs cpu_ns = 0;       // selection on a CPU thread (copies included)
  TimeNs comm_ns = 0;      // its collective
  TimeNs decompress_ns = 0;
};

class TimelineModel {
 public:
  TimelineModel(const GradientModel& model, const CostEstimator& cost, Sparsifier sparsifier, double density,
                double memory_gbytes_per_s, int cpu_threads, bool error_feedback);
  // Route kSparseAllreduce is not modelled here; PLACEMENT is where an
  // allgather route's selection runs (inline on the GPU or a CPU thread).
  BufferTiming timing(int first, int end, Route route, Placement placement = Placement::kGpuInline) const;
  // Backward start to the end of the last decompression or of backward.
  TimeNs iteration_ns(const std::vector<BufferTiming>& buffers) const;
  TimeNs iteration_ns(const std::vector<PlannedBuffer>& buffers) const;
  // False when the estimator has no CPU cost curves.
  bool cpu_available() const { return cpu_available_; }

 private:
  const GradientModel& model_;
  const CostEstimator& cost_;
  Sparsifier sparsifier_;
  double density_, memory_gbytes_per_s_;
  int cpu_threads_;
  bool error_feedback_;
  bool cpu_available_ = true;
};

}  // namespace sparsefuse::policy
