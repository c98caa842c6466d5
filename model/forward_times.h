// The forward pass split by gradient tensor, for schemes whose forward waits
// on communication (policy::ForwardPlan: DeAR, ByteScheduler), as both
// executors replay it: the simulator's gated forward (sim/forward_pass.h)
// and the runtime's (runtime/engine.h).
//
// Per-tensor forward times come from the trace ("forward_ns" of each
// tensor). The forward time of a tensor without gradient goes to the
// gradient tensor that runs just before it in forward order (or, if none
// does, to the start of the forward); forward time the tensors do not
// account for runs at the start of the forward, before any stage. A trace
// without per-tensor forward times has its forward split over the gradient
// tensors by elements. The optimizer time (Trace::optimizer_phase_ns: with
// the runtime's write-back of the averages where the trace measured it, which
// the runtime does per stage too) is split over the gradient tensors
// by elements, and a stage applies its tensors' share just before its
// forward (DeAR's inline per-module update; ByteScheduler's per-parameter
// update before the lock is released).
#pragma once

#include <vector>

#include "common/time.h"
#include "common/trace.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::model {

struct ForwardTimes {
  TimeNs lead_ns = 0;                 // before the first stage
  std::vector<TimeNs> tensor_ns;      // per gradient tensor (backward order)
  std::vector<TimeNs> optimizer_ns;   // per gradient tensor
};

// Nominal times, multiplied by COMPUTE_SCALE.
ForwardTimes forward_times(const Trace& trace, const policy::GradientModel& model, double compute_scale);

// What one stage of a forward plan runs: its tensors' forward and their
// share of the optimizer, summed.
struct StageTimes {
  TimeNs forward = 0, optimizer = 0;
};
std::vector<StageTimes> stage_times(const policy::ForwardPlan& plan, const ForwardTimes& times);

}  // namespace sparsefuse::model
