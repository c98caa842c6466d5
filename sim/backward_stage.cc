#include "sim/backward_stage.h"

#include <cmath>
#include <stdexcept>

namespace sparsefuse::sim {

BackwardStage::BackwardStage(const model::Scenario& scenario, const model::ScenarioPlan& plan,
                             policy::Coordinator* coordinator,
                             std::vector<std::unique_ptr<policy::WorkerPolicy>>& policies)
    : plan_(plan),
      tensors_(plan.model.size()),
      cpu_threads_(scenario.compression.cpu_threads),
      measure_ready_(plan.scheme().replan_every() > 0),
      coordinator_(coordinator),
      policies_(policies) {
  if (coordinator_) ready_.resize(size_t(scenario.workers) * tensors_);
  if (measure_ready_) ready_sum_.assign(tensors_, 0.0);
}

void BackwardStage::run_worker(int w, int it, bool gated, WorkerStreams& s, WorkerExecutor& executor) {
  if (!gated) s.backward_start = s.start + scaled_ns(plan_.forward_ns, s.scale);
  s.clock = s.side_free = s.backward_start;
  s.cpu_free.assign(size_t(cpu_threads_), s.backward_start);
  s.inline_compression = 0;
  s.inline_jobs.clear();
  s.async_jobs.clear();
  executor.bind(w, it, s, w == 0);
  // Locals, not members: the loop calls opaque virtual functions, after which
  // members would be reloaded through `this` (measurably slower at 1024
  // workers x 393 tensors x 100 iterations).
  const TimeNs* ready_offsets = plan_.model.ready_ns.data();
  const double scale = s.scale;
  policy::Coordinator* const coordinator = coordinator_;
  policy::WorkerPolicy* const policy = coordinator ? nullptr : policies_[w].get();
  TimeNs* const ready = coordinator ? ready_.data() + size_t(w) * tensors_ : nullptr;
  double* const ready_sum = measure_ready_ ? ready_sum_.data() : nullptr;
  const TimeNs backward_start = s.backward_start;
  const int tensors = tensors_;
  TimeNs previous = 0;
  for (int t = 0; t < tensors; ++t) {
    TimeNs now = scaled_ns(ready_offsets[t], scale);
    TimeNs at = executor.run_backward(now - previous);
    previous = now;
    if (coordinator) {
      ready[t] = at;
      coordinator->report_ready(w, t, at);
    } else {
      if (t == 0) policy->begin_iteration(it);
      policy->on_tensor_ready(t, at, executor);
    }
    if (ready_sum) ready_sum[t] += double(at - backward_start);
  }
  s.backward_end = executor.run_backward(scaled_ns(plan_.model.backward_ns, scale) - previous);
}

std::vector<double> BackwardStage::take_ready_sums() {
  std::vector<double> sums(ready_sum_.size(), 0.0);
  sums.swap(ready_sum_);
  return sums;
}

}  // namespace sparsefuse::sim
