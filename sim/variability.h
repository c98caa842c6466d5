// Compute-speed variability of workers. A worker's compute time in an
// iteration (forward, backward, optimizer) is its nominal time multiplied by
//   slowdown(straggler) / node_speed(node) * noise(worker, iteration),
// where noise is lognormal with mean 1 and the given coefficient of
// variation, drawn from the worker's own seeded stream (one draw per
// iteration, so results do not depend on processing order).
#pragma once

#include <vector>

#include "common/json_reader.h"
#include "common/rng.h"
#include "model/variability_config.h"

namespace sparsefuse::sim {


class ComputeVariability {
 public:
  ComputeVariability(const model::VariabilityConfig& config, int workers, uint64_t seed);

  // Multiplier on worker W's compute time in its next iteration; call once per
  // worker per iteration, in iteration order.
  double next_scale(int worker);
  const std::vector<int>& stragglers() const { return stragglers_; }

 private:
  model::VariabilityConfig config_;
  std::vector<double> persistent_;  // straggler slowdown / node speed
  std::vector<Rng> noise_;
  std::vector<int> stragglers_;
};

}  // namespace sparsefuse::sim
