#include "sim/forward_pass.h"

#include <algorithm>
#include <cmath>

namespace sparsefuse::sim {

GatedForward::GatedForward(const policy::ForwardPlan& plan, const ForwardTimes& times)
    : plan_(plan), lead_ns_(times.lead_ns), stage_times_(model::stage_times(plan, times)) {}

void GatedForward::run(int iteration, bool first, const Previous& previous, std::vector<WorkerStreams>& streams,
                       const std::function<model::CollectiveCost(const policy::Bucket&)>& deferred_cost,
                       std::vector<ForwardStats>& stats, Timeline* timeline) {
  const int W = int(streams.size());
  // Per-worker state in flat arrays: the stage loop touches each once per stage.
  clock_.resize(W);
  stage_start_.resize(W);
  scale_.resize(W);
  compute_.assign(W, 0);
  optimizer_.assign(W, 0);
  exposed_.assign(W, 0);
  wait_.assign(W, 0);
  deferred_.clear();
  std::vector<char> traced(W, 0);
  bool any_traced = false;
  for (int w = 0; w < W; ++w) {
    const WorkerStreams& s = streams[w];
    scale_[w] = s.scale;
    TimeNs lead = scaled_ns(lead_ns_, s.scale);
    clock_[w] = s.start + lead;
    stage_start_[w] = s.start;  // DeAR launches the first all-gather when the iteration starts
    compute_[w] = lead;
    traced[w] = timeline && timeline->wants(w, iteration);
    any_traced |= bool(traced[w]);
    if (traced[w] && lead > 0) timeline->span(w, Timeline::kCompute, "forward", s.start, clock_[w]);
  }
  TimeNs deferred_free = previous.comm_done;
  for (size_t g = 0; g < plan_.stages.size(); ++g) {
    const policy::ForwardStage& stage = plan_.stages[g];
    TimeNs gate = 0, op_start = 0, op_end = 0, posted = 0;
    if (!first && plan_.wait_for_covering_collectives && previous.covering_done) {
      for (int t = stage.first_tensor; t < stage.end_tensor; ++t) gate = std::max(gate, (*previous.covering_done)[t]);
    }
    const bool deferred = !first && stage.has_deferred;
    if (deferred) {
      for (int w = 0; w < W; ++w) posted = std::max(posted, stage_start_[w]);
      op_start = std::max(posted, deferred_free);
      op_end = op_start + deferred_cost(stage.deferred).total();
      deferred_free = op_end;
      deferred_.emplace_back(op_start, op_end);
      gate = std::max(gate, op_end);
    }
    const double stage_optimizer = first ? 0.0 : double(stage_times_[g].optimizer);
    const double stage_forward = double(stage_times_[g].forward);
    for (int w = 0; w < W; ++w) {
      const TimeNs clock = clock_[w], ready = std::max(clock, gate);
      if (ready > clock) {
        TimeNs exposed = previous.communicating ? previous.communicating->within(clock, ready) : 0;
        if (deferred) exposed += std::max<TimeNs>(0, std::min(ready, op_end) - std::max(clock, op_start));
        exposed = std::min(exposed, ready - clock);
        exposed_[w] += exposed;
        wait_[w] += ready - clock - exposed;
      }
      // Round half up (times are non-negative); cheaper than llround here.
      const TimeNs optimizer = TimeNs(stage_optimizer * scale_[w] + 0.5);
      const TimeNs forward = TimeNs(stage_forward * scale_[w] + 0.5);
      if (any_traced && traced[w]) {
        if (deferred) {
          const std::string name(collective_name(stage.deferred.collective));
          Json args = {{"stage", g}, {"tensors", stage.deferred.tensors()}, {"bytes", stage.deferred.bytes_per_worker}};
          timeline->span(w, Timeline::kCommunication, "wait", stage_start_[w], op_start, args);
          timeline->span(w, Timeline::kCommunication, name, op_start, op_end, args);
        }
        if (optimizer > 0) timeline->span(w, Timeline::kCompute, "optimizer", ready, ready + optimizer);
        timeline->span(w, Timeline::kCompute, "forward", ready + optimizer, ready + optimizer + forward);
      }
      stage_start_[w] = ready;
      clock_[w] = ready + optimizer + forward;
      optimizer_[w] += optimizer;
      compute_[w] += forward;
    }
  }
  stats.resize(W);
  for (int w = 0; w < W; ++w) {
    streams[w].backward_start = clock_[w];
    stats[w] = {compute_[w], optimizer_[w], exposed_[w], wait_[w]};
  }
}

}  // namespace sparsefuse::sim
