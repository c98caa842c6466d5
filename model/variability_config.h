// How workers' compute speed varies, as a scenario states it: lognormal
// per-iteration noise, persistent stragglers and per-node speed classes. The
// simulator draws from it (sim/variability.h); the runtime only records it.
#pragma once

#include <vector>

#include "common/json_reader.h"

namespace sparsefuse::model {

struct VariabilityConfig {
  double compute_cv = 0.0;
  std::vector<int> straggler_ranks;  // explicit ranks, or
  int straggler_count = 0;           // this many ranks drawn from the seed
  double straggler_slowdown = 1.0;
  int workers_per_node = 1;
  std::vector<double> node_speed_factors;  // indexed by node id modulo its length

  // MEASURED_CV: the trace's measured iteration spread, which "compute_cv":
  // "trace" selects (0: none measured).
  static VariabilityConfig parse(const JsonNode& node, int workers, double measured_cv = 0);
  Json to_json() const;
};

}  // namespace sparsefuse::model
