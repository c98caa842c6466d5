// Test helpers: a sort-based top-k oracle and synthetic gradient generators
// with fixed seeds (portable: built on xoshiro256**, no std:: distributions).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/rng.h"
#include "kernels/synthetic.h"

namespace sparsefuse::kernels::testing {

// Oracle: full sort by (|x| key descending, index ascending), first k, then
// sorted by index. Independent of the radix code paths.
inline std::vector<int32_t> oracle_topk_indices(const std::vector<float>& g, int64_t k) {
  std::vector<int32_t> order(g.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return abs_key(g[a]) > abs_key(g[b]);
  });
  order.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(g.size()))));
  std::sort(order.begin(), order.end());
  return order;
}

inline double uniform01(Xoshiro256& rng) { return double(rng.next() >> 11) * 0x1.0p-53; }

inline double normal(Xoshiro256& rng) { return standard_normal(rng); }

enum class Dist {
  kGaussian,     // N(0, 1e-3^2)
  kLaplace,      // Laplace scale 1e-3 (|g| exponential)
  kStudentT3,    // heavy tailed, nu = 3
  kSmallInts,    // integers in [-4, 4]: massive ties, many zeros
  kBf16,         // Gaussian rounded to bf16: many ties
  kManyZeros,    // 90 % exact zeros (+0/-0), rest Gaussian
  kNarrow,       // uniform in [1, 1.00003] with random sign (AIR's adversarial)
  kAllEqual,     // every |g| equal, signs random
  kWideRange,    // exponent spread over ~60 binades, denormals included
};

inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kGaussian: return "gaussian";
    case Dist::kLaplace: return "laplace";
    case Dist::kStudentT3: return "student_t3";
    case Dist::kSmallInts: return "small_ints";
    case Dist::kBf16: return "bf16";
    case Dist::kManyZeros: return "many_zeros";
    case Dist::kNarrow: return "narrow";
    case Dist::kAllEqual: return "all_equal";
    case Dist::kWideRange: return "wide_range";
  }
  return "?";
}

inline std::vector<Dist> all_dists() {
  return {Dist::kGaussian, Dist::kLaplace,   Dist::kStudentT3, Dist::kSmallInts, Dist::kBf16,
          Dist::kManyZeros, Dist::kNarrow,   Dist::kAllEqual,  Dist::kWideRange};
}

inline std::vector<float> make_gradient(Dist d, int64_t n, uint64_t seed) {
  Xoshiro256 rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const double sign = (rng.next() & 1) ? 1.0 : -1.0;
    switch (d) {
      case Dist::kGaussian: x = float(1e-3 * normal(rng)); break;
      case Dist::kLaplace: x = float(sign * -1e-3 * std::log(1.0 - uniform01(rng))); break;
      case Dist::kStudentT3: {
        const double z = normal(rng);
        double chi = 0;
        for (int i = 0; i < 3; ++i) { const double t = normal(rng); chi += t * t; }
        x = float(1e-3 * z / std::sqrt(chi / 3.0));
        break;
      }
      case Dist::kSmallInts: x = float(int64_t(rng.below(9)) - 4); break;
      case Dist::kBf16: {
        float f = float(normal(rng));
        uint32_t u;
        __builtin_memcpy(&u, &f, 4);
        u &= 0xFFFF0000u;
        __builtin_memcpy(&f, &u, 4);
        x = f;
        break;
      }
      case Dist::kManyZeros:
        x = rng.below(10) == 0 ? float(normal(rng)) : float(sign * 0.0);
        break;
      case Dist::kNarrow: x = float(sign * (1.0 + 3e-5 * uniform01(rng))); break;
      case Dist::kAllEqual: x = float(sign * 0.5); break;
      case Dist::kWideRange:
        x = float(sign * std::ldexp(1.0 + uniform01(rng), int(rng.below(60)) - 140));
        break;
    }
  }
  return v;
}

}  // namespace sparsefuse::kernels::testing
