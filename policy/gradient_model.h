// What a policy knows about the model: the gradient tensors (those with a
// gradient, in backward order), their sizes and their nominal ready times.
#pragma once

#include <string>
#include <vector>

#include "common/time.h"
#include "common/trace.h"

namespace sparsefuse::policy {

struct GradientModel {
  std::string model;  // the trace's model name
  std::vector<std::string> names;
  std::vector<int64_t> elements;
  std::vector<int64_t> row_length;  // dimension 1 of the shape (ADTopk rows); 0 for 1-D tensors
  std::vector<double> grad_rms;     // per-element gradient RMS (trace statistics or the default model)
  std::vector<TimeNs> ready_ns;     // nominal, from backward start (no noise)
  TimeNs backward_ns = 0;
  int64_t bytes_per_element = 4;  // fp32 gradients

  // Every tensor of the trace, gradient or not (the seed partition routine
  // counts the BERT pooler, which gets no gradient), and for each gradient
  // tensor its position in that inventory.
  std::vector<int64_t> inventory_elements;
  std::vector<bool> inventory_has_grad;
  std::vector<int> inventory_index;

  int size() const { return int(elements.size()); }
  int64_t bytes(int tensor) const { return elements[tensor] * bytes_per_element; }

  // Keeps the tensors that have a gradient; COMPUTE_SCALE multiplies times
  // (e.g. batch_per_worker / trace batch size).
  static GradientModel from_trace(const Trace& trace, double compute_scale);
};

}  // namespace sparsefuse::policy
