// The threshold estimators' decision logic, written once against a backend
// that supplies the data-parallel primitives. kernels/estimators.cc
// instantiates it on the CPU, kernels/cuda/estimators_cuda.cc on CUDA. The
// documentation of each variant is in kernels/estimators.h.
//
// Backend B provides:
//   using Sel = ...;                           selection type
//   int64_t n() const;
//   void require_finite(const char* kernel);   NonFiniteError on NaN/Inf
//   AbsStats stats(float above);               over |g| > above; above < 0: all
//                                              elements, and .nonfinite is valid
//   double mean_log(double scale, double eps); mean over all i of ln(|g_i| scale + eps)
//   int64_t count(float thr, bool strict);     #{|g| > thr} or #{|g| >= thr}
//   Sel select(float thr, bool strict, int64_t limit);   ascending, first `limit` (<0: all)
//   Sel topk(int64_t k);                        exact topk_abs of the whole tensor
//   Sel topk_within(Sel s, int64_t k);          exact top-k of |values| among s, ascending
//   Sel all();                                  every element
//   float sample_kth(int64_t start, int64_t stride, int64_t m, int64_t kth);
//                                              kth largest |g[start + j stride]|, j < m
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/common.h"
#include "kernels/estimators.h"
#include "kernels/rng.h"
#include "kernels/stats_math.h"

namespace sparsefuse::kernels::detail {

struct AbsStats {
  int64_t count = 0;
  double sum = 0.0;      // of signed g
  double sum_abs = 0.0;  // of |g|
  double sum_sq = 0.0;   // of g^2
  double min_abs = 0.0;  // of |g| (0 when count == 0)
  double max_abs = 0.0;
  bool nonfinite = false;
};

inline float to_threshold(double t) { return static_cast<float>(t); }

template <class B>
EstimateT<typename B::Sel> all_of(B& b) {
  EstimateT<typename B::Sel> e;
  e.selection = b.all();
  return e;
}

template <class B>
EstimateT<typename B::Sel> dgc_impl(B& b, double rho, uint64_t seed) {
  static constexpr char kName[] = "dgc";
  check_density(kName, rho);
  const int64_t n = b.n();
  b.require_finite(kName);
  const int64_t k = k_for_density(n, rho);
  if (k >= n) return all_of(b);
  EstimateT<typename B::Sel> e;
  const int64_t small = static_cast<int64_t>(std::ceil(2.0 / rho));
  if (n <= small) {
    e.selection = b.topk(k);
    e.exact = true;
    return e;
  }
  const int64_t m = std::min<int64_t>(
      n, std::max<int64_t>(static_cast<int64_t>(std::ceil(0.01 * static_cast<double>(n))), small));
  const int64_t s0 = std::max<int64_t>(1, n / m);
  const int64_t stride = s0 <= 32 ? s0 : 32 * ((s0 - 1) / 32) + 1;
  Xoshiro256 rng(seed);
  const int64_t start = static_cast<int64_t>(rng.below(static_cast<uint64_t>(stride)));
  const int64_t ks = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(rho * static_cast<double>(m))));
  float thr = b.sample_kth(start, stride, m, std::min(ks, m));
  e.strict = false;
  for (int it = 1; it <= 10; ++it) {
    const int64_t nnz = b.count(thr, false);
    e.iterations = it;
    e.threshold = thr;
    if (10 * nnz > 13 * k) {  // nnz > 1.3 k: exact top-k of the candidates
      e.selection = b.topk_within(b.select(thr, false, -1), k);
      e.exact = true;
      return e;
    }
    if (10 * nnz < 8 * k && it < 10) {  // nnz < 0.8 k: lower the threshold
      thr = to_threshold(static_cast<double>(thr) * 0.8);
      continue;
    }
    break;
  }
  e.selection = b.select(thr, false, k);
  return e;
}

template <class B>
EstimateT<typename B::Sel> gaussiank_impl(B& b, double rho) {
  static constexpr char kName[] = "gaussiank";
  check_density(kName, rho);
  const int64_t n = b.n();
  const AbsStats st = b.stats(-1.0f);
  if (st.nonfinite) b.require_finite(kName);
  const int64_t k = k_for_density(n, rho);
  if (k >= n) return all_of(b);
  const double dn = static_cast<double>(n);
  const double mu = st.sum / dn;
  const double var = n > 1 ? std::max(0.0, (st.sum_sq - dn * mu * mu) / (dn - 1.0)) : 0.0;
  const double z = std::fabs(normal_quantile(rho / 2.0));
  EstimateT<typename B::Sel> e;
  e.strict = true;
  float thr = to_threshold(mu + std::sqrt(var) * z);
  for (int adjust = 0;; ++adjust) {
    const int64_t nnz = b.count(thr, true);
    e.iterations = adjust + 1;
    e.threshold = thr;
    if (adjust == 3) break;
    if (3 * nnz < 2 * k) {
      thr = to_threshold(static_cast<double>(thr) * 0.5);
    } else if (3 * nnz > 4 * k) {
      thr = to_threshold(static_cast<double>(thr) * 1.5);
    } else {
      break;
    }
  }
  e.selection = b.select(e.threshold, true, -1);
  return e;
}

template <class B>
EstimateT<typename B::Sel> redsync_impl(B& b, double rho) {
  static constexpr char kName[] = "redsync";
  check_density(kName, rho);
  const int64_t n = b.n();
  const AbsStats st = b.stats(-1.0f);
  if (st.nonfinite) b.require_finite(kName);
  const int64_t k = k_for_density(n, rho);
  if (k >= n) return all_of(b);
  const double mean = st.sum_abs / static_cast<double>(n);
  const double top = st.max_abs;
  double lo = 0.0, hi = 1.0;
  EstimateT<typename B::Sel> e;
  e.strict = true;
  for (int it = 1;; ++it) {
    const double r = 0.5 * (lo + hi);
    const float thr = to_threshold(mean + r * (top - mean));
    const int64_t nnz = b.count(thr, true);
    e.iterations = it;
    e.threshold = thr;
    if (nnz > k && nnz < 2 * k) break;
    if (2 * nnz < k) hi = r; else lo = r;
    if (hi - lo <= 0.2) break;
  }
  e.selection = b.select(e.threshold, true, -1);
  return e;
}

// Generalised-Pareto moment fit on a non-negative sample with the given mean
// and variance; the x with survival probability `ratio`.
inline double gpd_threshold(double mean, double var, double ratio) {
  if (!(mean > 0.0) || !(var > 0.0)) return 0.0;
  const double q = mean * mean / var;
  const double c = 0.5 * (q - 1.0);
  const double s = 0.5 * mean * (q + 1.0);
  if (std::fabs(c) < 1e-12) return -s * std::log(ratio);
  return s * (1.0 - std::pow(ratio, c)) / c;
}

inline double gamma_threshold(double mean, double mean_log, double ratio) {
  const double t = std::log(mean) - mean_log;
  if (!(t > 0.0)) return -mean * std::log(ratio);  // degenerate (all equal): exponential
  const double shape = (3.0 - t + std::sqrt((t - 3.0) * (t - 3.0) + 24.0 * t)) / (12.0 * t);
  const double scale = mean / shape;
  return scale * gamma_p_inverse(shape, 1.0 - ratio);
}

template <class B>
EstimateT<typename B::Sel> sidco_impl(B& b, double rho, SidcoFit fit, int stages) {
  static constexpr char kName[] = "sidco";
  check_density(kName, rho);
  if (stages < 1) throw std::invalid_argument("sidco: stages must be >= 1");
  const int64_t n = b.n();
  const AbsStats st = b.stats(-1.0f);
  if (st.nonfinite) b.require_finite(kName);
  const int64_t k = k_for_density(n, rho);
  if (k >= n) return all_of(b);
  EstimateT<typename B::Sel> e;
  e.strict = true;
  const double norm = std::sqrt(st.sum_sq);
  if (!(norm > 0.0)) {  // all zeros: nothing exceeds 0
    e.selection = b.select(0.0f, true, -1);
    e.iterations = 1;
    return e;
  }
  constexpr double kFirstRatio = 0.25;
  const bool multi = stages > 1 && rho < kFirstRatio;
  const int total_stages = multi ? stages : 1;
  const double later_ratio = multi ? std::pow(rho / kFirstRatio, 1.0 / (stages - 1)) : rho;
  const double dn = static_cast<double>(n);
  // Stage 1 on all x = |g| / norm.
  const double ratio1 = multi ? kFirstRatio : rho;
  const double mean1 = st.sum_abs / (dn * norm);
  const double var1 = std::max(0.0, st.sum_sq / (dn * norm * norm) - mean1 * mean1);
  double thr_x;
  switch (fit) {
    case SidcoFit::kExponential:
      thr_x = -mean1 * std::log(ratio1);
      break;
    case SidcoFit::kGPareto:
      thr_x = gpd_threshold(mean1, var1, ratio1);
      break;
    case SidcoFit::kGammaGPareto:
    default:
      thr_x = gamma_threshold(mean1, b.mean_log(1.0 / norm, 1e-10), ratio1);
      break;
  }
  float thr = to_threshold(thr_x * norm);
  e.iterations = 1;
  for (int stage = 2; stage <= total_stages; ++stage) {
    const AbsStats sub = b.stats(thr);
    if (sub.count < 2) break;
    const double c = static_cast<double>(sub.count);
    const double min_x = sub.min_abs / norm;
    const double mean_abs = sub.sum_abs / c;
    const double mean_y = mean_abs / norm - min_x;
    const double var_y = std::max(0.0, sub.sum_sq / c - mean_abs * mean_abs) / (norm * norm);
    const double fitted = fit == SidcoFit::kExponential ? -mean_y * std::log(later_ratio)
                                                        : gpd_threshold(mean_y, var_y, later_ratio);
    thr = to_threshold((min_x + fitted) * norm);
    e.iterations = stage;
  }
  e.threshold = thr;
  e.selection = b.select(thr, true, -1);
  return e;
}

}  // namespace sparsefuse::kernels::detail
