#include "runtime/training.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "model/forward_times.h"

namespace sparsefuse::runtime {

namespace {

EngineConfig engine_config(const model::Scenario& s, const model::ScenarioPlan& planned, const RunOptions& options) {
  EngineConfig config;
  config.seed = s.seed;
  config.timeout = options.timeout;
  config.cpu_threads = s.compression.cpu_threads;
  // Forward, backward and optimizer are the framework's own: nothing is
  // replayed, but an engine with a forward plan keeps the stages' split.
  if (planned.scheme().forward_plan()) config.forward_split = model::forward_times(s.trace, planned.model, s.compute_scale());
  return config;
}

}  // namespace

TrainingSession::TrainingSession(model::Scenario scenario, CommThread& comm, RunOptions options)
    : scenario_(std::move(scenario)), comm_(comm), options_(std::move(options)),
      planned_(plan_for_runtime(scenario_, comm.size())), layout_(ModelLayout::from(scenario_.trace, planned_->model)),
      engine_(std::make_unique<RankEngine>(planned_->model, layout_, planned_->scheme(), comm,
                                           engine_config(scenario_, *planned_, options_))),
      replanner_(planned_->scheme()),
      ready_(size_t(layout_.tensors()), 0), wall_start_(std::chrono::steady_clock::now()) {
  // A lagging scheme's iteration is complete in the next forward, with
  // nothing in flight: agreed on and counted there, off the clock.
  if (engine_->lags_one_iteration()) engine_->set_settle_hook([this](int it) { settle(it, unsettled_); });
}

void TrainingSession::expect(Phase phase, const char* call) const {
  static const char* const names[] = {"between iterations", "in the forward pass", "in the backward pass",
                                      "after wait", "after complete"};
  if (phase_ != phase) {
    throw std::invalid_argument(fmt::format("{} called {} (iteration {}); expected {}", call, names[int(phase_)], done_,
                                            names[int(phase)]));
  }
}

void TrainingSession::begin_iteration() {
  expect(Phase::kIdle, "begin_iteration");
  engine_->begin_iteration(done_);
  std::fill(ready_.begin(), ready_.end(), 0);
  next_stage_ = 0;
  stage_open_ = false;
  phase_ = Phase::kForward;
}

int TrainingSession::stages() const {
  const policy::ForwardPlan* plan = engine_->forward_plan();
  return plan ? int(plan->stages.size()) : 0;
}

std::pair<int, int> TrainingSession::stage_tensors(int g) const {
  if (g < 0 || g >= stages()) {
    throw std::invalid_argument(fmt::format("stage {}: expected an index in [0, {})", g, stages()));
  }
  const policy::ForwardStage& stage = engine_->forward_plan()->stages[size_t(g)];
  return {stage.first_tensor, stage.end_tensor};
}

bool TrainingSession::open_stage(int g, float* const* outputs, int count) {
  expect(Phase::kForward, "open_stage");
  const auto [first, end] = stage_tensors(g);
  if (g != next_stage_) {
    throw std::invalid_argument(fmt::format("open_stage({}): expected stage {} (forward order)", g, next_stage_));
  }
  if (count != end - first) {
    throw std::invalid_argument(
        fmt::format("open_stage({}): expected {} output tensors (tensors [{}, {})), got {}", g, end - first, first,
                    end, count));
  }
  engine_->enter_stage(g);
  ++next_stage_;
  stage_open_ = true;
  if (done_ == 0) return false;  // nothing to apply before the first backward
  for (int t = first; t < end; ++t) engine_->average_into(t, outputs[t - first]);
  return true;
}

void TrainingSession::stage_updated() {
  expect(Phase::kForward, "stage_updated");
  if (!stage_open_) throw std::invalid_argument("stage_updated called without an open_stage before it");
  engine_->stage_updated();
  stage_open_ = false;
}

void TrainingSession::backward_started() {
  expect(Phase::kForward, "backward_started");
  if (next_stage_ != stages()) {
    throw std::invalid_argument(fmt::format("backward started with forward stage {} of {} never opened "
                                            "(open_stage, before backward, for every stage)",
                                            next_stage_, stages()));
  }
  if (stages() > 0) engine_->end_forward();
  engine_->backward_started();
  phase_ = Phase::kBackward;
}

void TrainingSession::tensor_ready(int tensor, const float* data, int64_t elements) {
  if (phase_ == Phase::kForward) backward_started();  // the first gradient marks backward's start
  expect(Phase::kBackward, "tensor_ready");
  if (tensor < 0 || tensor >= tensors()) {
    throw std::invalid_argument(fmt::format("tensor {}: expected an index in [0, {})", tensor, tensors()));
  }
  if (elements != this->elements(tensor)) {
    throw std::invalid_argument(fmt::format("tensor {} ({}): expected {} elements, got {}", tensor, name(tensor),
                                            this->elements(tensor), elements));
  }
  if (ready_[size_t(tensor)]) {
    throw std::invalid_argument(
        fmt::format("tensor {} ({}) reported ready twice in iteration {}", tensor, name(tensor), done_));
  }
  std::memcpy(engine_->gradient(tensor), data, size_t(elements) * sizeof(float));
  ready_[size_t(tensor)] = 1;
  // Report every tensor whose predecessors are all in, in backward order.
  while (engine_->next_tensor() < tensors() && ready_[size_t(engine_->next_tensor())]) {
    engine_->tensor_ready(engine_->next_tensor());
  }
}

void TrainingSession::wait(float* const* outputs, int count) {
  expect(Phase::kBackward, "wait");
  const int expected = stages() > 0 ? 0 : tensors();  // a gated scheme's averages come in the next forward
  if (count != expected) {
    throw std::invalid_argument(fmt::format("wait: expected {} output tensors, got {}", expected, count));
  }
  if (engine_->next_tensor() != tensors()) {
    const int missing = int(std::find(ready_.begin(), ready_.end(), 0) - ready_.begin());
    throw std::invalid_argument(fmt::format("wait: tensor {} ({}) was never reported ready in iteration {}", missing,
                                            name(missing), done_));
  }
  engine_->wait_for_buckets();
  // The division by the rank count of a sum left in the gradient happens in this copy.
  for (int t = 0; t < count; ++t) engine_->average_into(t, outputs[t]);
  phase_ = Phase::kWaited;
}

void TrainingSession::settle(int it, const IterationTimes& times) {
  agree_after_iteration(comm_, options_, it, engine_->exchanges(), false);
  if (it >= scenario_.warmup_iterations) totals_.add(times, engine_->exchanges());
}

void TrainingSession::end_iteration() {
  expect(Phase::kWaited, "end_iteration");
  const IterationTimes times = engine_->end_iteration();
  if (engine_->lags_one_iteration()) {
    unsettled_ = times;  // its collectives are still running
  } else {
    settle(done_, times);
  }
  replanner_.after_iteration(done_, *engine_, comm_, options_.timeout);
  ++done_;
  phase_ = Phase::kIdle;
}

void TrainingSession::complete(float* const* outputs, int count) {
  expect(Phase::kIdle, "complete");
  if (stages() == 0) throw std::invalid_argument("complete: the scheme updates after backward; nothing is deferred");
  if (done_ == 0) throw std::invalid_argument("complete: no iteration was done");
  if (count != 0 && count != tensors()) {
    throw std::invalid_argument(fmt::format("complete: expected {} output tensors (or none), got {}", tensors(), count));
  }
  engine_->complete_deferred();
  if (engine_->lags_one_iteration()) settle(done_ - 1, unsettled_);
  for (int t = 0; t < count; ++t) engine_->average_into(t, outputs[t]);
  phase_ = Phase::kCompleted;
}

RunOutcome TrainingSession::finish() {
  if (phase_ == Phase::kIdle && stages() > 0 && done_ > 0) complete(nullptr, 0);
  expect(stages() > 0 && done_ > 0 ? Phase::kCompleted : Phase::kIdle, "finish");
  const int measured = done_ - scenario_.warmup_iterations;
  if (measured < 1) {
    throw std::invalid_argument(fmt::format("finish: {} iterations done, {} of them warm-up; nothing was measured",
                                            done_, scenario_.warmup_iterations));
  }
  scenario_.iterations = measured;
  ExecutorInfo info;
  info.gradients = "real: the framework's gradients, handed over as backward accumulated them";
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  RunOutcome outcome = summarize_run(scenario_, *planned_, *engine_, totals_, comm_, options_, info);
  outcome.executor["name"] = "runtime-mpi (training)";
  return outcome;
}

}  // namespace sparsefuse::runtime
