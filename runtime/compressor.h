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

// Test seam, null in every normal build: a replacement for the top-k
// selection (with error feedback it then runs unfused: acc = residual + grad,
// select, zero the sent entries). Only the testonly library
// //tests/runtime:mutant_topk sets it, from a static initializer, and only the
// testonly binary //tools/cli:sparsefuse_mutant_topk links that library: it
// shows that --check catches a broken top-k.
using TopkSelect = kernels::Selection (*)(const float* data, int64_t n, int64_t k);
extern TopkSelect topk_override;

// DGC's sample stream for a request over tensors from FIRST_TENSOR: depends
// on the rank, the iteration and the range (the same on CPU and CUDA).
uint64_t dgc_stream(const SelectionKey& key, int first_tensor);

// The CPU compressor; CudaCompressor (cuda_compressor.h) runs the same
// requests with the CUDA kernels.
class Compressor {
 public:
  explicit Compressor(const ModelLayout& layout) : layout_(layout) {}
  virtual ~Compressor() = default;

  // Selects from the range [offset(first), offset(end)) of GRAD (the whole
  // model's flat gradient). Indices are relative to the range start, values
  // are what is sent. With request.error_feedback, RESIDUAL (the same layout
  // as GRAD) first absorbs the gradient (acc = residual + grad, one fp32 add)
  // and is left holding acc minus what was sent: bit for bit, sent +
  // residual == acc on every element of the range. Throws std::logic_error
  // when the request's element count does not match its range. The
  // selection is written into OUT, whose capacity is reused: the engine keeps
  // one per request slot, so a steady iteration allocates nothing for it.
  virtual void compress(const policy::CompressionRequest& request, const float* grad, float* residual,
                        const SelectionKey& key, kernels::Selection& out);
  // The same, returning a new selection.
  kernels::Selection compress(const policy::CompressionRequest& request, const float* grad, float* residual,
                              const SelectionKey& key) {
    kernels::Selection out;
    compress(request, grad, residual, key, out);
    return out;
  }

 protected:
  // Throws std::logic_error when REQUEST's element count does not match its range.
  void check_request(const policy::CompressionRequest& request) const;
  const ModelLayout& layout() const { return layout_; }

 private:
  void select(const policy::CompressionRequest& request, const float* data, const SelectionKey& key,
              kernels::Selection& out);

  const ModelLayout& layout_;
  kernels::TopkWorkspace workspace_;
};

// Fixed-k alignment of a threshold method's selection from DATA[0..n): more
// than K entries keep the K largest magnitudes among them; fewer are padded
// with the largest-magnitude unselected entries. The result has min(K, n)
// entries in ascending index order.
kernels::Selection align_to_count(kernels::Selection selection, const float* data, int64_t n, int64_t k);

}  // namespace sparsefuse::runtime
