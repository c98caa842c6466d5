// Stage 1 of a simulated iteration: each worker replays its own streams. It
// owns a worker's forward (when not gated), its backward tensor by tensor at
// the trace's ready offsets scaled by this iteration's variability, and
// handing each ready tensor to the worker's policy (which compresses and
// flushes through the WorkerExecutor) or, for coordinated schemes, reporting
// it to the coordinator. Workers interact only through collectives, so each
// worker's streams run without the global event queue.
#pragma once

#include <memory>
#include <vector>

#include "model/plan.h"
#include "model/scenario.h"
#include "policy/scheme.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

class BackwardStage {
 public:
  // Exactly one of COORDINATOR and POLICIES is used: the scheme's coordinator
  // if it has one, else one policy per worker.
  BackwardStage(const model::Scenario& scenario, const model::ScenarioPlan& plan, policy::Coordinator* coordinator,
                std::vector<std::unique_ptr<policy::WorkerPolicy>>& policies);

  // Worker W's iteration IT from S.start (S.backward_start already set when
  // GATED). Ready times of coordinated schemes go to ready_at(w, t).
  void run_worker(int w, int it, bool gated, WorkerStreams& s, WorkerExecutor& executor);

  // When worker W's tensor T was ready in the last iteration (coordinated schemes).
  TimeNs ready_at(int w, int t) const { return ready_[size_t(w) * tensors_ + t]; }
  // Per tensor: the sum over workers of its ready offset from backward start,
  // since the last take (adaptive schemes' measurements).
  std::vector<double> take_ready_sums();
  // The sums so far, and setting them back (a repeated pass, sim/simulator.cc).
  const std::vector<double>& ready_sums() const { return ready_sum_; }
  void set_ready_sums(const std::vector<double>& sums) { ready_sum_ = sums; }

 private:
  const model::ScenarioPlan& plan_;
  const int tensors_;
  const int cpu_threads_;
  const bool measure_ready_;
  policy::Coordinator* const coordinator_;
  std::vector<std::unique_ptr<policy::WorkerPolicy>>& policies_;
  std::vector<TimeNs> ready_;  // coordinated schemes: ready_[w * tensors + t]
  std::vector<double> ready_sum_;
};

}  // namespace sparsefuse::sim
