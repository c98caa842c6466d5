// The scheme a scenario asks for, planned as every executor must plan it:
// from the scenario's trace (scaled to its batch), network model and
// compression costs, which also answer the policies' start-up cost questions.
// The simulator and the runtime both build one, so a real run executes
// exactly the plan that was simulated ("one policy, two executors").
#pragma once

#include <memory>

#include "common/time.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"
#include "model/compression_cost.h"
#include "model/estimates.h"
#include "model/network.h"
#include "model/scenario.h"

namespace sparsefuse::model {

struct ScenarioPlan {
  explicit ScenarioPlan(const Scenario& scenario);
  // The scheme keeps references to the members: the plan stays where it was built.
  ScenarioPlan(const ScenarioPlan&) = delete;
  ScenarioPlan& operator=(const ScenarioPlan&) = delete;

  const policy::GradientModel model;  // backward timing scaled to the scenario's batch, as these:
  const TimeNs forward_ns, optimizer_ns;  // optimizer: Trace::optimizer_phase_ns (the runtime's write-back included)
  const std::unique_ptr<NetworkModel> network;
  const CompressionCost compression;
  const CostModelEstimator estimates;

  const policy::Scheme& scheme() const { return *scheme_; }
  // Only an executor that re-plans an adaptive scheme needs it mutable.
  policy::Scheme& scheme() { return *scheme_; }

 private:
  const std::unique_ptr<policy::Scheme> scheme_;
};

}  // namespace sparsefuse::model
