// Runs a policy's CompressionRequest with the real CPU kernels (kernels/):
// the request's sparsifier over the request's tensor range, the fixed-k
// alignment when the request asks for it, and error feedback.
#pragma once

#include <cstdint>

#include "kernels/common.h"
#include "kernels/topk.h"
#include "policy/compression.h"
#include "runtime/gradients.h"

namespace sparsefuse::runtime {

// Where a selection's randomness comes from. Random-k uses (seed, first
// tensor, iteration) only, so every rank selects the same indices; DGC's
// sample start also depends on the rank.
struct SelectionKey {
  uint64_t seed = 0;
  int rank = 0;
  int iteration = 0;
};

class Compressor {
 public:
  explicit Compressor(const ModelLayout& layout) : layout_(layout) {}

  // Selects from the range [offset(first), offset(end)) of GRAD (the whole
  // model's flat gradient). Indices are relative to the range start, values
  // are what is sent. With request.error_feedback, RESIDUAL (the same layout
  // as GRAD) first absorbs the gradient (acc = residual + grad, one fp32 add)
  // and is left holding acc minus what was sent: bit for bit, sent +
  // residual == acc on every element of the range. Throws std::logic_error
  // when the request's element count does not match its range.
  kernels::Selection compress(const policy::CompressionRequest& request, const float* grad, float* residual,
                              const SelectionKey& key);

 private:
  kernels::Selection select(const policy::CompressionRequest& request, const float* data, const SelectionKey& key);

  const ModelLayout& layout_;
  kernels::TopkWorkspace workspace_;
};

// Fixed-k alignment of a threshold method's selection from DATA[0..n): more
// than K entries keep the K largest magnitudes among them; fewer are padded
// with the largest-magnitude unselected entries. The result has min(K, n)
// entries in ascending index order.
kernels::Selection align_to_count(kernels::Selection selection, const float* data, int64_t n, int64_t k);

}  // namespace sparsefuse::runtime
