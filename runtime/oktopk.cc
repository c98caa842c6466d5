#include "runtime/oktopk.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/topk.h"

namespace sparsefuse::runtime {

void OkTopkThresholds::remember_local(int first, const kernels::Selection& selection, bool error_feedback) {
  float smallest = std::numeric_limits<float>::infinity();
  for (float v : selection.values) smallest = std::min(smallest, std::fabs(v));
  local_[first] = {selection.values.empty() ? 0.0f : smallest, error_feedback};
}

kernels::Selection OkTopkThresholds::reuse_local(int first, const float* grad, float* residual, int64_t n) const {
  const auto it = local_.find(first);
  if (it == local_.end()) {
    throw std::logic_error(fmt::format("Ok-Topk: no exact iteration has set the threshold of the bucket at tensor {}",
                                       first));
  }
  if (!it->second.error_feedback) return kernels::select_abs_threshold(grad, n, it->second.threshold, false);
  for (int64_t i = 0; i < n; ++i) residual[i] = residual[i] + grad[i];
  kernels::Selection s = kernels::select_abs_threshold(residual, n, it->second.threshold, false);
  for (int32_t i : s.indices) residual[i] = 0.0f;
  return s;
}

}  // namespace sparsefuse::runtime
