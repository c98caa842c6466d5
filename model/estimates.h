// The simulator's answers to a policy's cost questions (policy::CostEstimator):
// collective times from the network model, compression times from the
// compression cost curves.
#pragma once

#include "policy/cost_estimator.h"
#include "model/compression_cost.h"
#include "model/network.h"

namespace sparsefuse::model {

class CostModelEstimator : public policy::CostEstimator {
 public:
  CostModelEstimator(const NetworkModel& network, const CompressionCost& compression)
      : network_(network), compression_(compression) {}

  int workers() const override { return network_.workers(); }
  TimeNs collective_ns(Collective c, int64_t bytes_per_worker) const override {
    return network_.collective_ns(c, bytes_per_worker);
  }
  TimeNs coordination_ns() const override { return network_.coordination_ns(); }
  // What the simulator will charge an inline call: its curve, plus its entry
  // cost where calls come right after compute (compression.calls), plus the
  // runtime's bookkeeping per request (a GPU profile's request_bookkeeping).
  TimeNs compression_ns(policy::Sparsifier s, int64_t elements, double density) const override {
    return compression_.gpu_ns(s, elements, density) + compression_.entry_ns(s, false, elements, density) +
           compression_.request_bookkeeping_ns();
  }
  TimeNs cpu_compression_ns(policy::Sparsifier s, int64_t elements, double density) const override {
    return compression_.cpu_ns(s, elements, density);
  }

 private:
  const NetworkModel& network_;
  const CompressionCost& compression_;
};

}  // namespace sparsefuse::model
