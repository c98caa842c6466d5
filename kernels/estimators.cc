#include "kernels/estimators.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/estimators_impl.h"
#include "kernels/topk.h"

namespace sparsefuse::kernels {
namespace {

class CpuBackend {
 public:
  using Sel = Selection;

  CpuBackend(const char* kernel, const float* g, int64_t n) : g_(g), n_(n) { check_size(kernel, n); }

  int64_t n() const { return n_; }

  void require_finite(const char* kernel) { kernels::require_finite(kernel, g_, n_); }

  detail::AbsStats stats(float above) const {
    detail::AbsStats st;
    const bool all = above < 0.0f;
    double sum = 0, sum_abs = 0, sum_sq = 0;
    float lo = INFINITY, hi = 0.0f;
    int64_t count = 0;
    uint32_t bad = 0;
    for (int64_t i = 0; i < n_; ++i) {
      const float v = g_[i];
      const float a = std::fabs(v);
      bad |= static_cast<uint32_t>(abs_key(v) >= kNonFiniteKey);
      if (all || a > above) {
        ++count;
        sum += v;
        sum_abs += a;
        sum_sq += static_cast<double>(v) * v;
        lo = std::min(lo, a);
        hi = std::max(hi, a);
      }
    }
    st.count = count;
    st.sum = sum;
    st.sum_abs = sum_abs;
    st.sum_sq = sum_sq;
    st.min_abs = count ? lo : 0.0;
    st.max_abs = count ? hi : 0.0;
    st.nonfinite = bad != 0;
    return st;
  }

  double mean_log(double scale, double eps) const {
    double s = 0;
    for (int64_t i = 0; i < n_; ++i) s += std::log(std::fabs(g_[i]) * scale + eps);
    return n_ ? s / static_cast<double>(n_) : 0.0;
  }

  int64_t count(float thr, bool strict) const { return count_abs_threshold(g_, n_, thr, strict); }

  Sel select(float thr, bool strict, int64_t limit) const {
    return select_abs_threshold(g_, n_, thr, strict, limit);
  }

  Sel topk(int64_t k) const { return topk_abs(g_, n_, k); }

  Sel topk_within(Sel s, int64_t k) const {
    const Selection inner = topk_abs(s.values.data(), s.size(), k);
    Selection out;
    out.resize(inner.size());
    for (int64_t j = 0; j < inner.size(); ++j) {
      out.indices[j] = s.indices[inner.indices[j]];
      out.values[j] = inner.values[j];
    }
    return out;
  }

  Sel all() const { return topk_abs(g_, n_, n_); }

  float sample_kth(int64_t start, int64_t stride, int64_t m, int64_t kth) const {
    std::vector<float> sample(static_cast<size_t>(m));
    for (int64_t j = 0; j < m; ++j) sample[j] = g_[start + j * stride];
    const uint32_t key = kth_largest_abs_key(sample.data(), m, kth);
    float t;
    __builtin_memcpy(&t, &key, sizeof t);
    return t;
  }

 private:
  const float* g_;
  int64_t n_;
};

}  // namespace

Estimate dgc(const float* g, int64_t n, double rho, uint64_t seed) {
  CpuBackend b("dgc", g, n);
  return detail::dgc_impl(b, rho, seed);
}

Estimate gaussiank(const float* g, int64_t n, double rho) {
  CpuBackend b("gaussiank", g, n);
  return detail::gaussiank_impl(b, rho);
}

Estimate redsync(const float* g, int64_t n, double rho) {
  CpuBackend b("redsync", g, n);
  return detail::redsync_impl(b, rho);
}

Estimate sidco(const float* g, int64_t n, double rho, SidcoFit fit, int stages) {
  CpuBackend b("sidco", g, n);
  return detail::sidco_impl(b, rho, fit, stages);
}

int sidco_adapt_stages(int stages, double mean_ratio, double rho) {
  check_density("sidco_adapt_stages", rho);
  const int max_stages =
      std::max(1, static_cast<int>(std::ceil(std::log(rho) / std::log(0.5))));
  if (mean_ratio > 1.2) --stages;
  else if (mean_ratio < 0.8) ++stages;
  return std::clamp(stages, 1, max_stages);
}

}  // namespace sparsefuse::kernels
