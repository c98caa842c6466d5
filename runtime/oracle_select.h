// The --check oracle's own selections: deliberately naive (sort-based), and
// written without any of the kernels the engine compresses with, so that a
// bug in a kernel cannot hide itself in the check. Conventions they restate
// (and the engine's kernels must follow):
//  - magnitude order is the order of key(x) = bits(x) & 0x7FFFFFFF (|x| for
//    finite x; +0 and -0 tie);
//  - among equal keys the smaller index wins;
//  - a selection is a list of local indices, strictly ascending.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsefuse::runtime::oracle {

uint32_t magnitude_key(float x);

// The min(k, n) largest magnitudes of X[0..n): every index sorted by (key
// descending, index ascending) with std::sort, the first min(k, n) kept.
std::vector<int32_t> sorted_topk(const float* x, int64_t n, int64_t k);

// Shared-seed random-k: the min(k, n) largest priorities PRIORITY[i] (ties to
// the smaller index), by the same sort.
std::vector<int32_t> sorted_randomk(const std::vector<uint32_t>& priority, int64_t k);

// ADTopk over one tensor of SHAPE: a tensor of rank < 2 keeps everything;
// otherwise, viewed as (d0, d1, R = the product of the other dims), every row
// (i0, r) — the d1 elements i0*d1*R + j*R + r — keeps its
// max(1, floor(d1 * density)) (at most d1) largest magnitudes, smaller j
// winning ties. Flat indices, ascending.
std::vector<int32_t> sorted_adtopk(const float* x, const std::vector<int64_t>& shape, double density);

// What a threshold sparsifier's selection S of X[0..n) must satisfy, without
// re-running its estimator (whose threshold depends on sampling and
// floating-point statistics the oracle does not reproduce). With m the
// smallest key in S:
//  - kExactSet (strict-threshold methods: Gaussiank, RedSync, SIDCo): S is
//    exactly {i : key(x_i) >= m};
//  - kPrefix (DGC): S is either the first |S| indices, in index order, of
//    {i : key(x_i) >= m} (select >= threshold, truncate to the first k), or,
//    when |S| == k, a top-k set (every key > m selected: its exact branch);
//  - kTopSet (any threshold method aligned to k): |S| == min(k, n) and every
//    key > m is selected, except for DGC, whose prefix may be padded with
//    larger entries: only the count is checked.
// Returns "" or what is wrong, naming the local index.
enum class ThresholdRule { kExactSet, kPrefix, kTopSet, kCountOnly };
std::string check_threshold_selection(ThresholdRule rule, const float* x, int64_t n, int64_t k,
                                      const std::vector<int32_t>& selected);

}  // namespace sparsefuse::runtime::oracle
