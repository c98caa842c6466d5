#include "runtime/training.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace sparsefuse::runtime {

namespace {

EngineConfig engine_config(const model::Scenario& s, const RunOptions& options) {
  EngineConfig config;
  config.seed = s.seed;
  config.timeout = options.timeout;
  config.cpu_threads = s.compression.cpu_threads;
  return config;  // forward, backward and optimizer are the framework's own: nothing is replayed
}

}  // namespace

TrainingSession::TrainingSession(model::Scenario scenario, CommThread& comm, RunOptions options)
    : scenario_(std::move(scenario)), comm_(comm), options_(std::move(options)),
      planned_(plan_for_runtime(scenario_, comm.size(), RuntimeMode::kTraining)), layout_(ModelLayout::from(scenario_.trace, planned_->model)),
      engine_(std::make_unique<RankEngine>(planned_->model, layout_, planned_->scheme(), comm,
                                           engine_config(scenario_, options_))),
      replanner_(planned_->scheme()),
      ready_(size_t(layout_.tensors()), 0), wall_start_(std::chrono::steady_clock::now()) {}

void TrainingSession::expect(Phase phase, const char* call) const {
  static const char* const names[] = {"between iterations", "in the forward pass", "in the backward pass",
                                      "after wait"};
  if (phase_ != phase) {
    throw std::invalid_argument(fmt::format("{} called {} (iteration {}); expected {}", call, names[int(phase_)], done_,
                                            names[int(phase)]));
  }
}

void TrainingSession::begin_iteration() {
  expect(Phase::kIdle, "begin_iteration");
  engine_->begin_iteration(done_);
  std::fill(ready_.begin(), ready_.end(), 0);
  phase_ = Phase::kForward;
}

void TrainingSession::backward_started() {
  expect(Phase::kForward, "backward_started");
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
  if (count != tensors()) {
    throw std::invalid_argument(fmt::format("wait: expected {} output tensors, got {}", tensors(), count));
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

void TrainingSession::end_iteration() {
  expect(Phase::kWaited, "end_iteration");
  const IterationTimes times = engine_->end_iteration();
  agree_after_iteration(comm_, options_, done_, engine_->exchanges(), false);
  if (done_ >= scenario_.warmup_iterations) totals_.add(times, engine_->exchanges());
  replanner_.after_iteration(done_, *engine_, comm_, options_.timeout);
  ++done_;
  phase_ = Phase::kIdle;
}

RunOutcome TrainingSession::finish() {
  expect(Phase::kIdle, "finish");
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
