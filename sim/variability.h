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

namespace sparsefuse::sim {

struct VariabilityConfig {
  double compute_cv = 0.0;
  std::vector<int> straggler_ranks;  // explicit ranks, or
  int straggler_count = 0;           // this many ranks drawn from the seed
  double straggler_slowdown = 1.0;
  int workers_per_node = 1;
  std::vector<double> node_speed_factors;  // indexed by node id modulo its length

  static VariabilityConfig parse(const JsonNode& node, int workers);
  Json to_json() const;
};

class ComputeVariability {
 public:
  ComputeVariability(const VariabilityConfig& config, int workers, uint64_t seed);

  // Multiplier on worker W's compute time in its next iteration; call once per
  // worker per iteration, in iteration order.
  double next_scale(int worker);
  const std::vector<int>& stragglers() const { return stragglers_; }

 private:
  VariabilityConfig config_;
  std::vector<double> persistent_;  // straggler slowdown / node speed
  std::vector<Rng> noise_;
  std::vector<int> stragglers_;
};

}  // namespace sparsefuse::sim
