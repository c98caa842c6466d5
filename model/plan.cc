#include "model/plan.h"

#include <cmath>

#include "policy/presets.h"
#include "model/nccl_network.h"

namespace sparsefuse::model {

namespace {

TimeNs batch_scaled(TimeNs ns, double scale) { return TimeNs(std::llround(double(ns) * scale)); }

}  // namespace

ScenarioPlan::ScenarioPlan(const Scenario& s)
    : model(policy::GradientModel::from_trace(s.trace, s.compute_scale())),
      forward_ns(batch_scaled(s.trace.forward_ns, s.compute_scale())),
      optimizer_ns(batch_scaled(s.trace.optimizer_ns, s.compute_scale())),
      network(make_network_model(s.network, s.topology, s.workers, s.base_dir())),
      compression(s.compression, s.base_dir(), s.file, s.trace.flush_bookkeeping_us),
      estimates(*network, compression),
      scheme_(policy::build_scheme(s.scheme, model, estimates)) {}

}  // namespace sparsefuse::model
