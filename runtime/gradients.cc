#include "runtime/gradients.h"

#include <algorithm>
#include <stdexcept>

#include "common/rng.h"
#include "kernels/synthetic.h"

namespace sparsefuse::runtime {

ModelLayout ModelLayout::from(const Trace& trace, const policy::GradientModel& model) {
  ModelLayout layout;
  layout.offset.push_back(0);
  for (int t = 0; t < model.size(); ++t) {
    const TraceTensor& tensor = trace.tensors.at(size_t(model.inventory_index.at(size_t(t))));
    if (tensor.elements != model.elements[t]) throw std::logic_error("trace and gradient model disagree on " + tensor.name);
    layout.shape.push_back(tensor.shape);
    layout.offset.push_back(layout.offset.back() + model.elements[t]);
  }
  return layout;
}

void synthetic_gradient(uint64_t seed, int rank, int iteration, const policy::GradientModel& model,
                        const ModelLayout& layout, float* out) {
  const uint64_t per_step = stream_seed(stream_seed(seed, uint64_t(rank)), uint64_t(iteration));
  for (int t = 0; t < layout.tensors(); ++t) {
    const std::vector<float> g =
        kernels::gaussian_gradient(model.elements[t], stream_seed(per_step, uint64_t(t)), model.grad_rms[t]);
    std::copy(g.begin(), g.end(), out + layout.offset[t]);
  }
}

}  // namespace sparsefuse::runtime
