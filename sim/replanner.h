// Re-planning of adaptive schemes ("replan_every": K): this component owns
// the measurements of the current window — each collective's size and time,
// each tensor's ready offset, compression totals — and hands them to the
// scheme every K iterations, after which the executor asks for fresh
// worker policies.
#pragma once

#include "policy/adaptive.h"
#include "policy/scheme.h"
#include "sim/backward_stage.h"
#include "sim/collective_stage.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

class Replanner {
 public:
  Replanner(policy::Scheme& scheme, int workers) : scheme_(scheme), workers_(workers), every_(scheme.replan_every()) {}

  bool active() const { return every_ > 0; }
  void record(const IterationCollectives& collectives);
  // After iteration IT: re-plans when a window ends and says so (the caller
  // then replaces its worker policies).
  bool replan_after(int it, BackwardStage& backward, WorkerExecutor& executor);

 private:
  policy::Scheme& scheme_;
  const int workers_;
  const int every_;
  policy::Measurements window_;
};

}  // namespace sparsefuse::sim
