#include "model/plan.h"

#include "policy/presets.h"
#include "model/nccl_network.h"

namespace sparsefuse::model {

namespace {

// The trace's in-situ flush measurements, per gradient tensor in the
// model's order (GradientModel::from_trace keeps the tensors with one).
InSituFlush in_situ_flush(const Trace& trace) {
  InSituFlush in_situ{trace.flush_bookkeeping_us, {}};
  for (const TraceTensor& t : trace.tensors) {
    if (t.has_grad) in_situ.tensor_flush_us.push_back(t.in_situ_flush_us);
  }
  return in_situ;
}

}  // namespace

ScenarioPlan::ScenarioPlan(const Scenario& s)
    : model(policy::GradientModel::from_trace(s.trace, s.compute_scale())),
      forward_ns(scaled_ns(s.trace.forward_ns, s.compute_scale())),
      optimizer_ns(s.trace.optimizer_phase_ns(s.compute_scale())),
      network(make_network_model(s.network, s.topology, s.workers, s.base_dir())),
      compression(s.compression, s.base_dir(), s.file, in_situ_flush(s.trace)),
      estimates(*network, compression),
      scheme_(policy::build_scheme(s.scheme, model, estimates)) {}

}  // namespace sparsefuse::model
