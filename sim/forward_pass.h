// The forward pass stage by stage, for schemes whose forward waits on
// communication (policy::ForwardPlan: DeAR, ByteScheduler).
//
// Per-tensor forward times come from the trace ("forward_ns" of each
// tensor). The forward time of a tensor without gradient goes to the
// gradient tensor that runs just before it in forward order (or, if none
// does, to the start of the forward); forward time the tensors do not
// account for runs at the start of the forward, before any stage. A trace
// without per-tensor forward times has its forward split over the gradient
// tensors by elements. The optimizer time is split over the gradient tensors
// by elements, and a stage applies its tensors' share just before its
// forward (DeAR's inline per-module update; ByteScheduler's per-parameter
// update before the lock is released).
#pragma once

#include <functional>
#include <vector>

#include "common/trace.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"
#include "sim/intervals.h"
#include "model/network.h"
#include "sim/timeline.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

struct ForwardTimes {
  TimeNs lead_ns = 0;                 // before the first stage
  std::vector<TimeNs> tensor_ns;      // per gradient tensor (backward order)
  std::vector<TimeNs> optimizer_ns;   // per gradient tensor
};

// Nominal times, multiplied by COMPUTE_SCALE.
ForwardTimes forward_times(const Trace& trace, const policy::GradientModel& model, double compute_scale);

// Per worker and iteration, what the gated forward spent.
struct ForwardStats {
  TimeNs compute = 0, optimizer = 0, exposed = 0, wait = 0;
};

class GatedForward {
 public:
  GatedForward(const policy::ForwardPlan& plan, const ForwardTimes& times);

  // What the previous iteration left: per tensor, the end of the last
  // collective covering it (ByteScheduler's gates); the covered time of its
  // collectives; when its last collective ended.
  struct Previous {
    const std::vector<TimeNs>* covering_done = nullptr;
    const CoveredTime* communicating = nullptr;
    TimeNs comm_done = 0;
  };

  // Runs every worker's forward from STREAMS[w].start and sets
  // backward_start. FIRST: there is no previous iteration (no gates, no
  // update). DEFERRED_COST prices a stage's deferred collective alone on the
  // network. Timeline spans go to TIMELINE for the workers it wants.
  void run(int iteration, bool first, const Previous& previous, std::vector<WorkerStreams>& streams,
           const std::function<model::CollectiveCost(const policy::Bucket&)>& deferred_cost, std::vector<ForwardStats>& stats,
           Timeline* timeline);

  // The deferred collectives of the last run (stage order): start and end.
  const std::vector<Interval>& deferred() const { return deferred_; }
  int stages() const { return int(plan_.stages.size()); }

 private:
  const policy::ForwardPlan& plan_;
  TimeNs lead_ns_;
  std::vector<TimeNs> stage_forward_, stage_optimizer_;
  std::vector<TimeNs> clock_, stage_start_, compute_, optimizer_, exposed_, wait_;
  std::vector<double> scale_;
  std::vector<Interval> deferred_;
};

}  // namespace sparsefuse::sim
