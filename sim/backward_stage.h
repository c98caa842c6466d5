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

// TIMES holds one row of COLUMNS per worker (worker-major); marks in LATE,
// per column, the worker with the latest time (the first of equals).
void mark_latest_per_column(const std::vector<TimeNs>& times, size_t columns, std::vector<char>& late);

class BackwardStage {
 public:
  // Exactly one of COORDINATOR and POLICIES is used: the scheme's coordinator
  // if it has one, else one policy per worker.
  BackwardStage(const model::Scenario& scenario, const model::ScenarioPlan& plan, policy::Coordinator* coordinator,
                std::vector<std::unique_ptr<policy::WorkerPolicy>>& policies);

  // Worker W's iteration IT from S.start (S.backward_start already set when
  // GATED). Ready times of coordinated schemes go to ready_at(w, t).
  void run_worker(int w, int it, bool gated, WorkerStreams& s, WorkerExecutor& executor);

  // S's streams at the start of its backward (from S.start unless GATED).
  void reset_streams(WorkerStreams& s, bool gated) const;
  // Per tensor, the latest ready time in the last replay of the workers not
  // marked in REPLAYED (a partial pass reports them without replaying them,
  // sim/simulator.cc), into LATEST; -1 where every worker is marked.
  void latest_ready_except(const std::vector<char>& replayed, std::vector<TimeNs>& latest) const;
  // Reports LATEST (latest_ready_except) to the coordinator as RANK's.
  void report_latest(int rank, const std::vector<TimeNs>& latest) const;
  // Marks in LATE the workers that would make some tensor ready last if no
  // kernel were slowed: each worker's ready times are a line in the trace's
  // offsets (its backward start plus the offset times its speed), and these
  // are the lines on the upper envelope. STREAMS: this iteration's starts and
  // speeds (backward starts if GATED).
  void mark_latest(const std::vector<WorkerStreams>& streams, bool gated, std::vector<char>& late) const;
  // Marks in LATE, per tensor, the worker whose copy was ready last in the
  // last replay (coordinated schemes).
  void mark_last_ready(std::vector<char>& late) const;

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
