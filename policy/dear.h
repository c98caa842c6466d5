// DeAR (docs/baseline-systems.md#dense-fusion-and-scheduling-baselines): each fused group's allreduce is decoupled into a
// reduce-scatter, flushed during backward as soon as the group's gradients
// are complete, and an all-gather run in the NEXT iteration's forward: at the
// start of the iteration every worker launches group 0's all-gather; the
// forward of group i waits for group i's all-gather, launches group i+1's,
// applies the optimizer update to group i's parameters, then runs group i's
// forward (policy/scheme.h ForwardPlan).
//
// Groups are consecutive tensors in forward order (input side first), closed
// when the next tensor would bring the group to THRESHOLD bytes or more (a
// tensor at least that large is a group of its own). DeAR groups modules; we
// group tensors. Each group's buffer is padded to a multiple of p elements.
#pragma once

#include <memory>
#include <vector>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct DearOptions {
  int64_t fusion_threshold_bytes = 25ll << 20;  // DeAR's THRESHOLD default, 25 MB (taken as MiB)
};

class DearScheme : public Scheme {
 public:
  DearScheme(const GradientModel& model, const CostEstimator& cost, DearOptions options);
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override;
  const ForwardPlan* forward_plan() const override { return &plan_; }
  nlohmann::json describe() const override;
  // Groups in forward order, as [first, end) ranges of the backward order.
  const std::vector<Bucket>& reduce_scatters() const { return reduce_scatters_; }

 private:
  std::vector<Bucket> reduce_scatters_;  // forward order
  std::vector<int> closed_by_;           // tensor -> group it completes in backward, or -1
  ForwardPlan plan_;
};

}  // namespace sparsefuse::policy
