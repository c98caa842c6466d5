#include "sim/backward_stage.h"

#include <algorithm>
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

void BackwardStage::reset_streams(WorkerStreams& s, bool gated) const {
  if (!gated) s.backward_start = s.start + scaled_ns(plan_.forward_ns, s.scale);
  s.clock = s.side_free = s.backward_start;
  s.cpu_free.assign(size_t(cpu_threads_), s.backward_start);
  s.inline_compression = 0;
  s.inline_jobs.clear();
  s.async_jobs.clear();
}

void BackwardStage::latest_ready_except(const std::vector<char>& replayed, std::vector<TimeNs>& latest) const {
  latest.assign(size_t(tensors_), -1);
  for (size_t w = 0; w < replayed.size(); ++w) {
    if (replayed[w]) continue;
    const TimeNs* ready = ready_.data() + w * tensors_;
    for (int t = 0; t < tensors_; ++t) latest[t] = std::max(latest[t], ready[t]);
  }
}

void BackwardStage::report_latest(int rank, const std::vector<TimeNs>& latest) const {
  for (int t = 0; t < tensors_; ++t) coordinator_->report_ready(rank, t, latest[t]);
}

// Walks the envelope from offset 0, where the latest backward start leads
// (of two that start together, the slower), to the trace's backward end:
// each step goes to the slower line that overtakes the leader first.
void BackwardStage::mark_latest(const std::vector<WorkerStreams>& streams, bool gated, std::vector<char>& late) const {
  std::vector<double> start(streams.size());
  for (size_t w = 0; w < streams.size(); ++w) {
    const WorkerStreams& s = streams[w];
    start[w] = double(gated ? s.backward_start : s.start + scaled_ns(plan_.forward_ns, s.scale));
  }
  size_t leader = 0;
  for (size_t w = 1; w < streams.size(); ++w) {
    const bool later = start[w] > start[leader] || (start[w] == start[leader] && streams[w].scale > streams[leader].scale);
    if (later) leader = w;
  }
  const double end = double(plan_.model.backward_ns);
  for (double x = 0;;) {
    late[leader] = 1;
    size_t next = leader;
    double next_x = end;
    for (size_t w = 0; w < streams.size(); ++w) {
      const double slower_by = streams[w].scale - streams[leader].scale;
      if (slower_by <= 0) continue;
      const double crossing = (start[leader] - start[w]) / slower_by;
      if (crossing >= x && crossing < next_x) next = w, next_x = crossing;
    }
    if (next == leader) return;
    leader = next;
    x = next_x;
  }
}

void mark_latest_per_column(const std::vector<TimeNs>& times, size_t columns, std::vector<char>& late) {
  if (columns == 0) return;
  std::vector<TimeNs> latest(times.begin(), times.begin() + ptrdiff_t(columns));
  std::vector<size_t> who(columns, 0);
  const size_t workers = times.size() / columns;
  for (size_t w = 1; w < workers; ++w) {
    const TimeNs* row = times.data() + w * columns;
    for (size_t c = 0; c < columns; ++c) {
      if (row[c] > latest[c]) latest[c] = row[c], who[c] = w;
    }
  }
  for (size_t w : who) late[w] = 1;
}

void BackwardStage::mark_last_ready(std::vector<char>& late) const {
  mark_latest_per_column(ready_, size_t(tensors_), late);
}

void BackwardStage::run_worker(int w, int it, bool gated, WorkerStreams& s, WorkerExecutor& executor) {
  reset_streams(s, gated);
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
