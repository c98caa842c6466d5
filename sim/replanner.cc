#include "sim/replanner.h"

#include <cmath>

namespace sparsefuse::sim {

void Replanner::record(const IterationCollectives& c) {
  if (!active()) return;
  for (size_t k = 0; k < c.ops.size(); ++k) {
    window_.collectives[c.ops[k].bucket.collective].push_back({c.contributions[k].max, c.ops[k].end - c.ops[k].start});
  }
}

bool Replanner::replan_after(int it, BackwardStage& backward, WorkerExecutor& executor) {
  if (!active() || (it + 1) % every_ != 0) return false;
  const std::vector<double> ready_sums = backward.take_ready_sums();
  window_.workers = workers_;
  window_.ready_ns.resize(ready_sums.size());
  for (size_t t = 0; t < ready_sums.size(); ++t) {
    window_.ready_ns[t] = TimeNs(std::llround(ready_sums[t] / (double(workers_) * every_)));
  }
  window_.compressed_elements = executor.compressed_elements;
  window_.compression_ns = executor.compression_ns;
  scheme_.replan(window_);
  window_ = {};
  executor.compressed_elements = executor.compression_ns = 0;
  return true;
}

}  // namespace sparsefuse::sim
