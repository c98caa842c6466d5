#include "policy/gradient_model.h"

#include <cmath>

namespace sparsefuse::policy {

GradientModel GradientModel::from_trace(const Trace& trace, double compute_scale) {
  GradientModel model;
  model.model = trace.model;
  for (size_t i = 0; i < trace.tensors.size(); ++i) {
    const auto& tensor = trace.tensors[i];
    model.inventory_elements.push_back(tensor.elements);
    model.inventory_has_grad.push_back(tensor.has_grad);
    if (!tensor.has_grad) continue;
    model.inventory_index.push_back(int(i));
    model.names.push_back(tensor.name);
    model.elements.push_back(tensor.elements);
    model.row_length.push_back(tensor.shape.size() >= 2 ? tensor.shape[1] : 0);
    // Default magnitude model: every tensor's gradient has the same L2 norm,
    // so the per-element RMS is 1/sqrt(n) (smaller elements in bigger tensors).
    model.grad_rms.push_back(tensor.grad_rms > 0 ? tensor.grad_rms : 1.0 / std::sqrt(double(tensor.elements)));
    model.ready_ns.push_back(TimeNs(std::llround(double(tensor.ready_ns) * compute_scale)));
  }
  model.backward_ns = TimeNs(std::llround(double(trace.backward_ns) * compute_scale));
  return model;
}

}  // namespace sparsefuse::policy
