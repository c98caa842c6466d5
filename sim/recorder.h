// Recording: what the simulator reports of the measured iterations. It owns
// the per-iteration breakdown of every worker's time (forward, backward,
// compression, exposed communication, sync wait, optimizer), bytes on the
// wire, the equal-slices receiver's losses, per-bucket statistics of the
// last iteration, and the timeline spans of the workers a timeline wants.
#pragma once

#include <vector>

#include "model/result.h"
#include "sim/collective_stage.h"
#include "sim/forward_pass.h"
#include "sim/timeline.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

class Recorder {
 public:
  Recorder(int workers, Timeline* timeline) : workers_(workers), timeline_(timeline) {}

  // Call once per measured iteration, before its workers; LAST: the final one,
  // whose buckets are reported.
  void begin_iteration(const IterationCollectives& collectives, bool last);
  // Worker W's finished iteration. FORWARD: its gated-forward statistics, or null.
  void add_worker(int w, const WorkerStreams& s, const FlushRecord& record, const IterationCollectives& collectives,
                  const ForwardStats* forward);
  void end_iteration(TimeNs iteration_ns, const FlushRecord& record, const IterationCollectives& collectives);
  // Worker W's spans of iteration IT, if the timeline wants them (any iteration).
  void timeline_spans(int w, int it, const WorkerStreams& s, const FlushRecord& record,
                      const IterationCollectives& collectives, bool gated) const;
  // Means per worker and measured iteration into RESULT.
  void finish(int iterations, model::RunResult& result) const;

 private:
  TimeNs exposed_compression(const WorkerStreams& s, const IterationCollectives& collectives, TimeNs lo, TimeNs hi);

  const int workers_;
  Timeline* const timeline_;
  bool last_ = false;
  model::Breakdown sum_;  // nanoseconds, summed over workers and iterations
  double bytes_sum_ = 0, lost_sum_ = 0;
  std::vector<TimeNs> iteration_ns_;
  std::vector<model::BucketRecord> buckets_;
  // Per operation of the current iteration.
  std::vector<double> wait_, compress_time_, sent_, per_sent_element_;
  std::vector<Interval> scratch_, jobs_;
};

}  // namespace sparsefuse::sim
