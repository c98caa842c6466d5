// Exact selection kernels on the CPU: magnitude top-k, fused error feedback +
// top-k, random-k with a shared seed, ADTopk per-row top-k and threshold
// compaction. These are the reference implementations the CUDA kernels
// (kernels/cuda/cuda_kernels.h) are tested against; both follow the
// conventions in kernels/common.h (ascending int32 indices, signed values,
// smaller index wins a tie, NonFiniteError for NaN/Inf).
//
// Algorithm (topk_abs, ef_topk, randomk): radix select on a 31-bit key, not a
// sort. Digits are 11/10/10 bits, most significant first.
//   pass 1 (reads all n): histogram of key bits [30:20] (2048 bins); the bucket
//           holding the k-th largest key is found by a descending scan. The NaN/Inf
//           check is free: those keys land exactly in bins >= 0x7F8.
//   pass 2 (reads all n): order-preserving compaction of every index whose key
//           is at or above the chosen bucket (count known exactly from pass 1).
//   finish (touches only that candidate list): histograms of bits [19:10] and
//           [9:0] over the bucket's members give the exact k-th key T and how
//           many entries equal to T are taken; a last in-order filter keeps
//           key > T and the first (smallest-index) entries with key == T.
// Cost: two reads of the input plus O(k + bucket) work.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common.h"

namespace sparsefuse::kernels {

// Scratch reused between calls (optional; a call without one allocates its own).
struct TopkWorkspace {
  std::vector<int32_t> candidates;
};

// Exact top-k by magnitude. Writes m = min(k, n) pairs to values/indices (each
// must hold m entries) in ascending index order and returns m. k == 0 returns
// 0; k >= n returns every element. Throws NonFiniteError if any g[i] is NaN or
// +-Inf (checked for every k, including k == 0), std::invalid_argument for
// n outside [0, 2^31-1] or k < 0.
int64_t topk_abs(const float* g, int64_t n, int64_t k, float* values, int32_t* indices,
                 TopkWorkspace* ws = nullptr);
Selection topk_abs(const float* g, int64_t n, int64_t k);

// The key (bits of |x|) of the k-th largest magnitude among x[0..n), 1 <= k <= n.
// Throws NonFiniteError like topk_abs.
uint32_t kth_largest_abs_key(const float* x, int64_t n, int64_t k);

// Error feedback fused with selection. For every i: acc[i] = residual[i] + grad[i]
// (one fp32 add). Selects the top-k of |acc| exactly as topk_abs would on acc,
// writes values[j] = acc[indices[j]], and leaves residual = acc with the selected
// entries set to +0.0. Hence, bit for bit, sent + residual == acc for every
// element. On NonFiniteError (index into acc) residual already holds acc and
// nothing was selected: no gradient mass is lost.
int64_t ef_topk(float* residual, const float* grad, int64_t n, int64_t k, float* values,
                int32_t* indices, TopkWorkspace* ws = nullptr);
Selection ef_topk(float* residual, const float* grad, int64_t n, int64_t k);

// Random-k with a shared seed. Element i gets the counter-based priority
// randomk_key(randomk_stream(seed, tensor_id, step), i) (kernels/rng.h: 31 bits of
// splitmix64 of a counter); the k elements with the largest priorities are kept,
// a priority tie going to the smaller index. Distinctness is by construction
// (each index has one priority and is kept or not), the set is a uniform k-subset
// up to those 31-bit ties, and every worker with the same (seed, tensor_id, step)
// gets the same indices with no communication. Selection is the same radix select
// as topk_abs on the priorities; values are gathered from g unchanged (random-k does
// not inspect values). k >= n keeps everything.
struct RandomkKey {
  uint64_t seed = 0;
  uint64_t tensor_id = 0;
  uint64_t step = 0;
};
int64_t randomk(const float* g, int64_t n, int64_t k, const RandomkKey& key, float* values,
                int32_t* indices, TopkWorkspace* ws = nullptr);
Selection randomk(const float* g, int64_t n, int64_t k, const RandomkKey& key);
std::vector<int32_t> randomk_indices(int64_t n, int64_t k, const RandomkKey& key);

// ADTopk (docs/seed-systems.md#adtopk-all-dimension-top-k-interleaving-partial-and-hybrid): view the tensor as (d0, d1, rest...) with R = product of
// the remaining dims; for every "row" (i0, i_rest) - the d1 elements
// i0*d1*R + j*R + i_rest, j in [0, d1) - keep the k1 = max(1, floor(d1 * rho))
// (at most d1) largest |g|, smaller j winning ties. Returns flat indices into the
// tensor, ascending over the whole tensor, d0 * R * k1 of them. Tensors with fewer
// than 2 dims are not compressed: every element is returned. Non-finite input
// raises NonFiniteError (any rank).
Selection adtopk(const float* g, const std::vector<int64_t>& shape, double rho);

// The ADTopk view of a shape (validated: non-negative dims, n <= 2^31 - 1,
// rho in (0, 1]). compress is false for rank < 2 or n == 0 (everything kept).
struct AdtopkGeometry {
  int64_t n = 0;     // elements
  int64_t d0 = 1, d1 = 1, rest = 1;
  int64_t k1 = 0;    // per-row count (when compress)
  bool compress = false;
  int64_t rows() const { return d0 * rest; }
  int64_t count() const { return compress ? rows() * k1 : n; }  // total selected
};
AdtopkGeometry adtopk_geometry(const std::vector<int64_t>& shape, double rho);
int64_t adtopk_count(const std::vector<int64_t>& shape, double rho);

// Threshold compaction ("pack given a threshold"): every i with |g[i]| > thr
// (strict) or |g[i]| >= thr (!strict), in ascending order, stopping after `limit`
// entries (limit < 0: no limit). Comparisons are in fp32 on |g[i]|. Does not
// check for NaN (the estimators check their input first).
Selection select_abs_threshold(const float* g, int64_t n, float thr, bool strict,
                               int64_t limit = -1);
int64_t count_abs_threshold(const float* g, int64_t n, float thr, bool strict);

}  // namespace sparsefuse::kernels
