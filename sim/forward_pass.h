// The forward pass stage by stage, for schemes whose forward waits on
// communication (policy::ForwardPlan: DeAR, ByteScheduler).
//
// Per-tensor forward and optimizer times: model/forward_times.h.
#pragma once

#include <functional>
#include <vector>

#include "policy/gradient_model.h"
#include "policy/scheme.h"
#include "sim/intervals.h"
#include "model/forward_times.h"
#include "model/network.h"
#include "sim/timeline.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

using model::ForwardTimes;
using model::forward_times;

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
  std::vector<model::StageTimes> stage_times_;
  std::vector<TimeNs> clock_, stage_start_, compute_, optimizer_, exposed_, wait_;
  std::vector<double> scale_;
  std::vector<Interval> deferred_;
};

}  // namespace sparsefuse::sim
