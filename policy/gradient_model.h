// What a policy knows about the model: the gradient tensors (those with a
// gradient, in backward order), their sizes and their nominal ready times.
#pragma once

#include <string>
#include <vector>

#include "common/time.h"
#include "common/trace.h"

namespace sparsefuse::policy {

struct GradientModel {
  std::vector<std::string> names;
  std::vector<int64_t> elements;
  std::vector<TimeNs> ready_ns;  // nominal, from backward start (no noise)
  TimeNs backward_ns = 0;
  int64_t bytes_per_element = 4;  // fp32 gradients

  int size() const { return int(elements.size()); }
  int64_t bytes(int tensor) const { return elements[tensor] * bytes_per_element; }

  // Keeps the tensors that have a gradient; COMPUTE_SCALE multiplies times
  // (e.g. batch_per_worker / trace batch size).
  static GradientModel from_trace(const Trace& trace, double compute_scale);
};

}  // namespace sparsefuse::policy
