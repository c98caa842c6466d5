// A scheme whose plan is a fixed list of buffers, each with its own route:
// dense allreduce, selection + allgather of (value, index) pairs, or a sparse
// allreduce (policy/bucket.h SparseAllreduce). The baselines that decide per
// buffer or per tensor at start-up (HiPress, Espresso, Cupcake, Ok-Topk,
// SparDL, gTop-k, shared-seed random-k) are plans of this one scheme: they
// differ in how the plan is made (policy/compression_baselines.h), not in how a
// worker carries it out. A buffer is acted on when its last tensor is ready.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "policy/compression.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

enum class Route { kDense, kAllgather, kSparseAllreduce };

struct PlannedBuffer {
  int first = 0, end = 0;  // tensors, backward order
  Route route = Route::kDense;
  Placement placement = Placement::kGpuInline;  // where an allgather route's selection runs
  SparseAllreduce algorithm = SparseAllreduce::kNone;
  int partitions = 1;  // CaSync: SeCoPa's K
};

struct PlannedOptions {
  Sparsifier sparsifier = Sparsifier::kTopk;
  double density = 0.01;
  bool error_feedback = true;  // fused residual update with every local selection
  // Ok-Topk: the exact top-k threshold is recomputed every EXACT_EVERY
  // iterations (other iterations reuse it: one compare pass, costed inside
  // the collective), the regions every REPARTITION_EVERY (0 = never).
  int exact_every = 128;
  int repartition_every = 64;
};

class PlannedScheme : public Scheme {
 public:
  // DESCRIPTION is merged into describe(); BUFFERS must cover every tensor once, in order.
  PlannedScheme(const GradientModel& model, PlannedOptions options, std::vector<PlannedBuffer> buffers,
                nlohmann::json description = nlohmann::json::object());
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override;
  nlohmann::json describe() const override;
  const std::vector<PlannedBuffer>& buffers() const { return buffers_; }
  const PlannedOptions& options() const { return options_; }

 private:
  PlannedOptions options_;
  std::vector<PlannedBuffer> buffers_;
  std::vector<Bucket> dense_;   // each buffer as a dense allreduce
  std::vector<int64_t> k_;      // each buffer's selection count
  std::vector<int> closed_by_;  // tensor -> buffer it completes, or -1
  nlohmann::json description_;
};

}  // namespace sparsefuse::policy
