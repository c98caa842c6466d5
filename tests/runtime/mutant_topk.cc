// Test only: a broken top-k for the mutation check of --check. Linked (with
// alwayslink) into //tools/cli:sparsefuse_mutant_topk alone; a static
// initializer installs it as the compressor's top-k. It is an off-by-one of
// the selection: of the k + 1 largest magnitudes it keeps the (k+1)-th
// instead of the k-th, so the count stays k and only one element is wrong.
#include <algorithm>

#include "kernels/topk.h"
#include "runtime/compressor.h"

namespace sparsefuse::runtime {
namespace {

kernels::Selection mutant_topk(const float* data, int64_t n, int64_t k) {
  if (k <= 0 || k >= n) return kernels::topk_abs(data, n, k);
  kernels::Selection wide = kernels::topk_abs(data, n, k + 1);
  // The k-th largest of the k + 1 (ties: the larger index is the smaller).
  size_t kth = 0, smallest = 0;
  auto below = [&](size_t a, size_t b) {
    const uint32_t ka = kernels::abs_key(wide.values[a]), kb = kernels::abs_key(wide.values[b]);
    return ka != kb ? ka < kb : wide.indices[a] > wide.indices[b];
  };
  for (size_t j = 1; j < wide.indices.size(); ++j) smallest = below(j, smallest) ? j : smallest;
  kth = smallest == 0 ? 1 : 0;
  for (size_t j = 0; j < wide.indices.size(); ++j) {
    if (j != smallest && below(j, kth)) kth = j;
  }
  wide.values.erase(wide.values.begin() + long(kth));
  wide.indices.erase(wide.indices.begin() + long(kth));
  return wide;
}

const bool installed = [] {
  topk_override = &mutant_topk;
  return true;
}();

}  // namespace
}  // namespace sparsefuse::runtime
