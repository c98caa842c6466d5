#include "policy/gradient_model.h"

#include <cmath>

namespace sparsefuse::policy {

GradientModel GradientModel::from_trace(const Trace& trace, double compute_scale) {
  GradientModel model;
  for (const auto& tensor : trace.tensors) {
    if (!tensor.has_grad) continue;
    model.names.push_back(tensor.name);
    model.elements.push_back(tensor.elements);
    model.ready_ns.push_back(TimeNs(std::llround(double(tensor.ready_ns) * compute_scale)));
  }
  model.backward_ns = TimeNs(std::llround(double(trace.backward_ns) * compute_scale));
  return model;
}

}  // namespace sparsefuse::policy
