#include "runtime/gradients.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <thread>

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
                        const ModelLayout& layout, float* out, int threads) {
  const uint64_t per_step = stream_seed(stream_seed(seed, uint64_t(rank)), uint64_t(iteration));
  if (threads <= 0) threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  threads = std::min(threads, layout.tensors());
  // Every tensor has its own stream, so the tensors can be drawn on any
  // thread: the largest first, each to the thread with the fewest elements so far.
  std::vector<int> order(size_t(layout.tensors()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return model.elements[a] > model.elements[b]; });
  std::vector<std::vector<int>> share(size_t(std::max(threads, 1)));
  std::vector<int64_t> load(share.size(), 0);
  for (int t : order) {
    const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    share[least].push_back(t);
    load[least] += model.elements[t];
  }
  const auto draw = [&](const std::vector<int>& tensors) {
    for (int t : tensors) {
      kernels::gaussian_fill(out + layout.offset[t], model.elements[t], stream_seed(per_step, uint64_t(t)),
                             model.grad_rms[t]);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < share.size(); ++i) helpers.emplace_back(draw, std::cref(share[i]));
  draw(share[0]);
  for (std::thread& h : helpers) h.join();
}

}  // namespace sparsefuse::runtime
