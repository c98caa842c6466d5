// Threshold estimators (approximate-count sparsifiers) on the CPU, each in the
// exact variant named below. They share their decision logic with the CUDA
// versions (kernels/estimators_impl.h, instantiated on a CPU and a CUDA
// backend), so a CUDA estimator follows the same steps; only the order of the
// floating-point reductions differs.
//
// Common rules:
//  - k = max(1, floor(rho * n)) (docs/baseline-systems.md#compressors); rho in (0, 1].
//  - The input is checked first: NaN/Inf raise NonFiniteError (first index).
//  - If k >= n every element is returned (iterations = 0).
//  - Thresholds are computed in double and rounded once to fp32; every
//    comparison is |g[i]| (fp32) against that fp32 threshold, so a returned
//    selection is exactly select_abs_threshold(g, n, threshold, strict)
//    (truncated to k for DGC).
//  - The selection is in ascending index order with values g[i].
#pragma once

#include <cstdint>

#include "kernels/common.h"

namespace sparsefuse::kernels {

template <class Sel>
struct EstimateT {
  Sel selection;
  float threshold = 0.0f;  // the fp32 threshold of the final comparison (|g| units)
  bool strict = false;     // final comparison was |g| > threshold (else >=)
  int iterations = 0;      // counting passes evaluated (SIDCo: stages run)
  bool exact = false;      // DGC only: the result came from an exact top-k step
};
using Estimate = EstimateT<Selection>;

// DGC sampling threshold (docs/baseline-systems.md#compressors, synxlin/deep-gradient-compression
// `_sparsify`; docs/seed-systems.md#threshold-sparsifiers-and-their-counts):
//  1. If n <= ceil(2/rho): no sampling; exact top-k (exact = true, threshold 0).
//  2. m = min(n, max(ceil(0.01 n), ceil(2/rho))) samples taken with a stride:
//     s0 = floor(n/m); stride = s0 if s0 <= 32, else the largest 32j+1 <= s0;
//     start uniform in [0, stride) from xoshiro256**(seed); sample j is
//     g[start + j*stride].
//  3. threshold = the ceil(rho*m)-th largest |sample| (at least the 1st).
//  4. Up to 10 counting passes of nnz = #{|g| >= thr}:
//       nnz > 1.3k -> exact top-k of the selected subset (the "hierarchical"
//                     resample step; exact = true), done;
//       nnz < 0.8k -> thr *= 0.8 and count again (unless this was the 10th);
//       otherwise  -> stop.
//  5. Select |g| >= thr and truncate to the first k entries in index order
//     (DGC truncates its ascending nonzero list, it does not keep the largest).
// Count: never more than k; at least 0.8k unless 10 passes did not get there.
Estimate dgc(const float* g, int64_t n, double rho, uint64_t seed);

// Gaussiank (docs/baseline-systems.md#compressors, hclhkbu/GaussianK-SGD `GaussianCompressor`,
// the original loop count and factors as in docs/seed-systems.md#threshold-sparsifiers-and-their-counts):
//  mu, sigma = mean and sample (n-1) standard deviation of the signed g;
//  thr = mu + sigma * |Phi^-1(rho/2)|; nnz = #{|g| > thr} (strict);
//  up to 3 adjustments: nnz < 2k/3 -> thr *= 0.5; nnz > 4k/3 -> thr *= 1.5;
//  each adjustment is followed by a recount; the last counted threshold is used.
// Band: [2k/3, 4k/3] when reached within 3 adjustments; otherwise the 4th count.
Estimate gaussiank(const float* g, int64_t n, double rho);

// RedSync threshold binary search (docs/baseline-systems.md#compressors, docs/seed-systems.md#threshold-sparsifiers-and-their-counts: the
// [0, 1] start of families F/A, no trimmed top-k):
//  mu = mean |g|, M = max |g|; lo = 0, hi = 1;
//  repeat: r = (lo+hi)/2, thr = mu + r (M - mu), nnz = #{|g| > thr};
//    stop if k < nnz < 2k; if nnz < k/2 then hi = r else lo = r (the reference
//    raises the threshold also for k/2 <= nnz <= k); stop once hi - lo <= 0.2.
//  The last probe's selection is returned (at most 3 probes).
// Band: (k, 2k) when a probe hits it; no band is enforced otherwise.
Estimate redsync(const float* g, int64_t n, double rho);

// SIDCo (docs/baseline-systems.md#compressors, sands-lab/SIDCo): thresholds fitted on
// x = |g| / ||g||_2, final selection |g| > thr * ||g||_2 (strict).
//  kExponential:  every stage thr = -mean * ln(ratio)          (SIDCo-E)
//  kGPareto:      every stage the generalised-Pareto moment fit (SIDCo-P):
//                 c = (mean^2/var - 1)/2, s = mean (mean^2/var + 1)/2,
//                 thr = s (1 - ratio^c) / c   (-s ln ratio when c == 0)
//  kGammaGPareto: first stage a gamma fit (SIDCo-GP): t = ln mean - mean(ln(x + 1e-10)),
//                 shape a = (3 - t + sqrt((t-3)^2 + 24 t)) / (12 t), scale mean/a,
//                 thr = scale * P^-1(a, 1 - ratio); later stages the Pareto fit.
//  Stages: with stages == 1 or rho >= 0.25 one stage at ratio rho. Otherwise
//  stage 1 targets FIRST_RATIO = 0.25 on all x; stage i >= 2 keeps the entries
//  above the previous threshold, subtracts their minimum, refits (variance is
//  shift invariant) and targets (rho/0.25)^(1/(stages-1)); the threshold is that
//  minimum plus the fitted one. Mean/variance are population moments.
// The reference corrects its count only across iterations (sidco_adapt_stages);
// a single call has no band.
enum class SidcoFit { kExponential, kGammaGPareto, kGPareto };
Estimate sidco(const float* g, int64_t n, double rho, SidcoFit fit = SidcoFit::kExponential,
               int stages = 1);

// SIDCo's stage adaptation (run every UPDATE_ITER = 5 iterations by the caller):
// mean_ratio = mean over those iterations of achieved / target density.
// > 1.2 drops a stage, < 0.8 adds one; the result stays in
// [1, ceil(ln(rho) / ln(1/2))].
int sidco_adapt_stages(int stages, double mean_ratio, double rho);

}  // namespace sparsefuse::kernels
