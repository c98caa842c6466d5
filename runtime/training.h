// A real training loop under the runtime: the same RankEngine, policies,
// kernels and communication thread as `sparsefuse run`, with gradients that
// a framework (PyTorch, through the C API in runtime/capi/) hands over as
// backward produces them, instead of synthetic ones on a replayed clock.
//
// Per iteration the framework calls begin_iteration (the forward starts),
// backward_started (optional: otherwise the first gradient marks it),
// tensor_ready for every gradient tensor as it is accumulated (in any
// order: the session copies it into the engine's flat gradient and reports
// tensors to the policy in the trace's backward order, holding back one
// that arrives before its predecessors), wait (after backward: every tensor
// reported, the buckets' results in, the averaged gradients copied out), and
// end_iteration after its optimizer step (an adaptive scheme re-plans there,
// as under `sparsefuse run`). finish() reduces the measured
// iterations over ranks into result.json's schema.
//
// A scheme with a forward plan (DeAR, ByteScheduler: stages() > 0) updates
// inside the next forward instead, stage by stage as the simulator's gated
// forward does (sim/forward_pass.h). In each forward, before backward,
// every stage in order: open_stage(g) waits for what the stage needs (DeAR:
// its all-gather; ByteScheduler: the previous iteration's collectives
// covering its tensors) and writes the previous iteration's averages of its
// tensors; the caller applies them to those parameters and calls
// stage_updated() (timed as optimizer). wait() then takes no outputs and
// no optimizer step follows backward. After the last iteration complete()
// writes every tensor's last average (the final update); finish() does it,
// discarding them, if the caller did not.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/plan.h"
#include "model/scenario.h"
#include "runtime/comm_thread.h"
#include "runtime/driver.h"
#include "runtime/engine.h"
#include "runtime/gradients.h"
#include "runtime/replanner.h"
#include "runtime/statistics.h"

namespace sparsefuse::runtime {

class TrainingSession {
 public:
  // SCENARIO's scheme is planned as for `sparsefuse run` (plan_for_runtime:
  // InputError for a worker count other than comm.size() or a scheme the
  // runtime cannot execute). The first scenario.warmup_iterations iterations
  // are not measured.
  TrainingSession(model::Scenario scenario, CommThread& comm, RunOptions options);

  int tensors() const { return layout_.tensors(); }
  const std::string& name(int tensor) const { return planned_->model.names.at(size_t(tensor)); }
  int64_t elements(int tensor) const { return layout_.elements(tensor, tensor + 1); }
  int iterations_done() const { return done_; }

  // Each throws std::invalid_argument for a bad tensor, element count or
  // call order (the caller's mistake), std::runtime_error / CommTimeout
  // from the collectives.
  void begin_iteration();
  void backward_started();
  void tensor_ready(int tensor, const float* data, int64_t elements);
  // OUTPUTS[t] (tensors() pointers, elements(t) floats each) receive the
  // averaged gradient of tensor t.
  void wait(float* const* outputs, int count);
  void end_iteration();

  // Forward stages of a scheme that updates inside the forward (0: none);
  // stage G covers tensors [first, end) (backward order).
  int stages() const;
  std::pair<int, int> stage_tensors(int g) const;
  // OUTPUTS: one pointer per tensor of stage G, in tensor order. Returns
  // whether they were written (the first iteration has nothing to apply).
  bool open_stage(int g, float* const* outputs, int count);
  void stage_updated();
  // After the last iteration: OUTPUTS (tensors() pointers, or none with
  // COUNT 0 to discard) receive each tensor's last average. Collective.
  void complete(float* const* outputs, int count);

  // The last finished iteration's buckets, in flush order.
  const std::vector<std::unique_ptr<BucketExchange>>& buckets() const { return engine_->exchanges(); }

  // Collective: every rank calls it once, after at least one measured
  // iteration; the result's scenario records that many iterations.
  RunOutcome finish();

 private:
  model::Scenario scenario_;
  CommThread& comm_;
  RunOptions options_;
  std::unique_ptr<model::ScenarioPlan> planned_;
  ModelLayout layout_;
  std::unique_ptr<RankEngine> engine_;
  RuntimeReplanner replanner_;  // "replan_every": after end_iteration, from this run's measurements
  enum class Phase { kIdle, kForward, kBackward, kWaited, kCompleted };
  void expect(Phase phase, const char* call) const;
  // Agrees on iteration IT's exchanges (engine_->exchanges()) and counts them with TIMES.
  void settle(int it, const IterationTimes& times);
  Phase phase_ = Phase::kIdle;
  int next_stage_ = 0;           // the forward stage open_stage expects next
  bool stage_open_ = false;      // open_stage returned; stage_updated not yet called
  IterationTimes unsettled_;     // a lagging scheme's last iteration, settled in the next forward
  std::vector<char> ready_;
  RankTotals totals_;
  int done_ = 0;
  std::chrono::steady_clock::time_point wall_start_;
};

}  // namespace sparsefuse::runtime
