// Where each gradient tensor lives in a rank's flat gradient, and the
// synthetic gradients the runtime trains on. A gradient is a pure function
// of (seed, rank, iteration, tensor), so any rank — and the --check
// reference — can recompute every other rank's gradient exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "common/trace.h"
#include "policy/gradient_model.h"

namespace sparsefuse::runtime {

struct ModelLayout {
  std::vector<int64_t> offset;              // per gradient tensor (backward order), plus the total at the end
  std::vector<std::vector<int64_t>> shape;  // per gradient tensor, from the trace (ADTopk's rows)

  int tensors() const { return int(shape.size()); }
  int64_t total() const { return offset.back(); }
  int64_t elements(int first, int end) const { return offset[end] - offset[first]; }

  static ModelLayout from(const Trace& trace, const policy::GradientModel& model);
};

// Fills OUT (layout.total() floats) with RANK's gradient of ITERATION: tensor
// t is N(0, grad_rms[t]^2) per element from its own xoshiro256** stream, so
// the result does not depend on THREADS, the threads drawing the tensors
// (<= 0: the hardware's, at most 16; a 110 M-parameter model takes seconds
// on one core).
void synthetic_gradient(uint64_t seed, int rank, int iteration, const policy::GradientModel& model,
                        const ModelLayout& layout, float* out, int threads = 0);

}  // namespace sparsefuse::runtime
