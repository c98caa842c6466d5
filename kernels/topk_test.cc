#include "kernels/topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "kernels/test_util.h"

namespace sparsefuse::kernels {
namespace {

using testing::all_dists;
using testing::Dist;
using testing::dist_name;
using testing::make_gradient;
using testing::oracle_topk_indices;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void expect_matches_oracle(const std::vector<float>& g, int64_t k, const std::string& what) {
  const Selection s = topk_abs(g.data(), static_cast<int64_t>(g.size()), k);
  const std::vector<int32_t> want = oracle_topk_indices(g, k);
  ASSERT_EQ(s.indices, want) << what;
  for (int64_t j = 0; j < s.size(); ++j)
    ASSERT_EQ(bits(s.values[j]), bits(g[s.indices[j]])) << what << " j=" << j;
}

TEST(TopkAbs, HandCase) {
  //                        0     1    2     3    4    5     6
  const std::vector<float> g{0.5f, -3.f, 1.f, 3.f, -1.f, 2.f, 0.f};
  const Selection s = topk_abs(g.data(), 7, 3);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{1, 3, 5}));
  EXPECT_EQ(s.values, (std::vector<float>{-3.f, 3.f, 2.f}));
  // |g| = 1 is tied at indices 2 and 4: the smaller index wins.
  const Selection s4 = topk_abs(g.data(), 7, 4);
  EXPECT_EQ(s4.indices, (std::vector<int32_t>{1, 2, 3, 5}));
  EXPECT_EQ(s4.values, (std::vector<float>{-3.f, 1.f, 3.f, 2.f}));
}

TEST(TopkAbs, EdgeCounts) {
  const std::vector<float> g{4.f, -1.f, 2.f};
  EXPECT_EQ(topk_abs(g.data(), 3, 0).size(), 0);
  const Selection one = topk_abs(g.data(), 3, 1);
  EXPECT_EQ(one.indices, (std::vector<int32_t>{0}));
  EXPECT_EQ(one.values, (std::vector<float>{4.f}));
  for (int64_t k : {3, 4, 100}) {
    const Selection all = topk_abs(g.data(), 3, k);
    EXPECT_EQ(all.indices, (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(all.values, g);
  }
  const std::vector<float> single{-7.f};
  EXPECT_EQ(topk_abs(single.data(), 1, 1).values, (std::vector<float>{-7.f}));
  EXPECT_EQ(topk_abs(single.data(), 1, 0).size(), 0);
  EXPECT_EQ(topk_abs(nullptr, 0, 5).size(), 0);
}

TEST(TopkAbs, AllEqualAndZeros) {
  std::vector<float> g(100, 0.25f);
  for (size_t i = 0; i < g.size(); i += 3) g[i] = -0.25f;
  for (int64_t k : {1, 7, 50, 99}) {
    const Selection s = topk_abs(g.data(), 100, k);
    ASSERT_EQ(s.size(), k);
    for (int64_t j = 0; j < k; ++j) EXPECT_EQ(s.indices[j], j);  // lowest indices win
  }
  // +0 and -0 have the same magnitude: ties by index; values keep their sign bit.
  std::vector<float> z{0.f, -0.f, 0.f, -0.f, 1e-45f};
  const Selection s = topk_abs(z.data(), 5, 3);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(bits(s.values[1]), bits(-0.f));
  EXPECT_EQ(s.values[2], 1e-45f);  // denormal beats zero
}

TEST(TopkAbs, ExhaustiveSmallPatterns) {
  // Every vector of length 1..6 over {0, +-1, +-2} (magnitudes with ties), all k.
  const float alphabet[] = {0.f, 1.f, -1.f, 2.f, -2.f};
  for (int n = 1; n <= 6; ++n) {
    int64_t combos = 1;
    for (int i = 0; i < n; ++i) combos *= 5;
    for (int64_t c = 0; c < combos; ++c) {
      std::vector<float> g(static_cast<size_t>(n));
      int64_t x = c;
      for (int i = 0; i < n; ++i, x /= 5) g[static_cast<size_t>(i)] = alphabet[x % 5];
      for (int64_t k = 0; k <= n + 1; ++k)
        expect_matches_oracle(g, k, "n=" + std::to_string(n) + " c=" + std::to_string(c));
    }
  }
}

TEST(TopkAbs, RandomAgainstOracle) {
  const int64_t sizes[] = {1, 2, 3, 17, 100, 1000, 4097, 65537};
  for (const Dist d : all_dists()) {
    for (const int64_t n : sizes) {
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        const auto g = make_gradient(d, n, seed * 7919 + static_cast<uint64_t>(n));
        for (const double rho : {0.001, 0.01, 0.05, 0.1, 0.5, 0.999}) {
          const int64_t k = k_for_density(n, rho);
          expect_matches_oracle(g, k, std::string(dist_name(d)) + " n=" + std::to_string(n) +
                                          " seed=" + std::to_string(seed) +
                                          " k=" + std::to_string(k));
        }
      }
    }
  }
}

TEST(TopkAbs, LargeGaussianAgainstOracle) {
  const int64_t n = 1 << 20;
  const auto g = make_gradient(Dist::kGaussian, n, 99);
  for (const int64_t k : {int64_t{1}, int64_t{1048}, int64_t{10485}, int64_t{104857}, n - 1})
    expect_matches_oracle(g, k, "k=" + std::to_string(k));
}

TEST(TopkAbs, NonFiniteReported) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const float bad : {nan, -nan, inf, -inf}) {
    for (const int64_t pos : {0, 5, 9}) {
      std::vector<float> g(10, 1.0f);
      g[static_cast<size_t>(pos)] = bad;
      g[9] = bad;  // a later bad entry too: the first is reported
      for (const int64_t k : {0, 1, 5, 10, 11}) {
        try {
          topk_abs(g.data(), 10, k);
          FAIL() << "no error for k=" << k;
        } catch (const NonFiniteError& e) {
          EXPECT_EQ(e.index(), pos) << "k=" << k;
          EXPECT_NE(std::string(e.what()).find("index " + std::to_string(pos)), std::string::npos);
        }
      }
    }
  }
  // The largest finite float is fine.
  std::vector<float> g{std::numeric_limits<float>::max(), 1.f};
  EXPECT_EQ(topk_abs(g.data(), 2, 1).indices, (std::vector<int32_t>{0}));
}

TEST(TopkAbs, RejectsBadArguments) {
  const std::vector<float> g{1.f};
  EXPECT_THROW(topk_abs(g.data(), 1, -1), std::invalid_argument);
  EXPECT_THROW(topk_abs(g.data(), -1, 1), std::invalid_argument);
  EXPECT_THROW(topk_abs(g.data(), kMaxElements + 1, 1), std::invalid_argument);
}

TEST(TopkAbs, WorkspaceReuseGivesSameAnswer) {
  TopkWorkspace ws;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto g = make_gradient(Dist::kBf16, 5000 + int64_t(seed) * 1000, seed);
    const int64_t n = static_cast<int64_t>(g.size());
    std::vector<float> v(500);
    std::vector<int32_t> idx(500);
    ASSERT_EQ(topk_abs(g.data(), n, 500, v.data(), idx.data(), &ws), 500);
    EXPECT_EQ(idx, oracle_topk_indices(g, 500));
  }
}

TEST(KthLargest, MatchesSort) {
  for (const Dist d : all_dists()) {
    const auto x = make_gradient(d, 3001, 5);
    std::vector<uint32_t> keys;
    for (float f : x) keys.push_back(abs_key(f));
    std::sort(keys.begin(), keys.end(), std::greater<>());
    for (const int64_t k : {1, 2, 30, 1500, 3001})
      EXPECT_EQ(kth_largest_abs_key(x.data(), 3001, k), keys[static_cast<size_t>(k - 1)])
          << dist_name(d) << " k=" << k;
  }
}

// ------------------------------------------------------------ error feedback

TEST(EfTopk, ConservationBitExactAndSelectionOfAcc) {
  for (const Dist d : {Dist::kGaussian, Dist::kBf16, Dist::kManyZeros, Dist::kSmallInts}) {
    for (const int64_t n : {1, 10, 1000, 50000}) {
      auto r = make_gradient(d, n, 11);
      const auto g = make_gradient(d, n, 12);
      std::vector<float> acc(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) acc[i] = r[i] + g[i];
      for (const int64_t k : {int64_t{0}, int64_t{1}, n / 100 + 1, n / 3, n}) {
        std::vector<float> res = r;
        const Selection s = ef_topk(res.data(), g.data(), n, k);
        ASSERT_EQ(s.indices, oracle_topk_indices(acc, k)) << dist_name(d) << " n=" << n;
        std::vector<float> sent(static_cast<size_t>(n), 0.0f);
        std::vector<bool> chosen(static_cast<size_t>(n), false);
        for (int64_t j = 0; j < s.size(); ++j) {
          ASSERT_EQ(bits(s.values[j]), bits(acc[s.indices[j]]));
          sent[s.indices[j]] = s.values[j];
          chosen[s.indices[j]] = true;
        }
        for (int64_t i = 0; i < n; ++i) {
          if (chosen[i]) {
            ASSERT_EQ(bits(res[i]), bits(0.0f)) << i;  // residual zeroed
            ASSERT_EQ(bits(sent[i]), bits(acc[i])) << i;
          } else {
            ASSERT_EQ(bits(res[i]), bits(acc[i])) << i;  // residual keeps acc exactly
          }
          ASSERT_EQ(sent[i] + res[i], acc[i]) << i;
        }
      }
    }
  }
}

TEST(EfTopk, NonFiniteAccReportedAndResidualKept) {
  std::vector<float> r{1.f, 2.f, std::numeric_limits<float>::max(), 0.f};
  const std::vector<float> g{1.f, 1.f, std::numeric_limits<float>::max(), 1.f};  // overflow at 2
  try {
    ef_topk(r.data(), g.data(), 4, 2);
    FAIL();
  } catch (const NonFiniteError& e) {
    EXPECT_EQ(e.index(), 2);
  }
  EXPECT_EQ(r[0], 2.f);
  EXPECT_EQ(r[1], 3.f);
  EXPECT_TRUE(std::isinf(r[2]));
  EXPECT_EQ(r[3], 1.f);
}

// ------------------------------------------------------------------ random-k

TEST(Randomk, IdenticalAcrossWorkersDistinctAscending) {
  const int64_t n = 100000, k = 1000;
  const RandomkKey key{42, 7, 3};
  // Each "worker" has different gradient values but the same (seed, tensor, step).
  std::vector<std::vector<int32_t>> per_worker;
  for (int w = 0; w < 4; ++w) {
    const auto g = make_gradient(Dist::kGaussian, n, 100 + static_cast<uint64_t>(w));
    const Selection s = randomk(g.data(), n, k, RandomkKey{42, 7, 3});
    for (int64_t j = 0; j < k; ++j) ASSERT_EQ(bits(s.values[j]), bits(g[s.indices[j]]));
    per_worker.push_back(s.indices);
  }
  for (int w = 1; w < 4; ++w) EXPECT_EQ(per_worker[w], per_worker[0]);
  const auto& idx = per_worker[0];
  ASSERT_EQ(static_cast<int64_t>(idx.size()), k);
  for (int64_t j = 1; j < k; ++j) ASSERT_LT(idx[j - 1], idx[j]);  // distinct, ascending
  EXPECT_GE(idx.front(), 0);
  EXPECT_LT(idx.back(), n);
  EXPECT_EQ(randomk_indices(n, k, key), idx);
  // A different step, tensor or seed draws a different set.
  EXPECT_NE(randomk_indices(n, k, RandomkKey{42, 7, 4}), idx);
  EXPECT_NE(randomk_indices(n, k, RandomkKey{42, 8, 3}), idx);
  EXPECT_NE(randomk_indices(n, k, RandomkKey{43, 7, 3}), idx);
}

TEST(Randomk, MatchesPriorityDefinition) {
  // The definition in topk.h: the k largest randomk_key priorities, ties to the
  // smaller index.
  const int64_t n = 5000;
  const RandomkKey key{1, 2, 3};
  const uint64_t stream = randomk_stream(1, 2, 3);
  std::vector<int32_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return randomk_key(stream, a) > randomk_key(stream, b);
  });
  for (const int64_t k : {1, 10, 2500, 4999}) {
    std::vector<int32_t> want(order.begin(), order.begin() + k);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(randomk_indices(n, k, key), want) << k;
  }
  EXPECT_EQ(randomk_indices(n, 0, key).size(), 0u);
  EXPECT_EQ(randomk_indices(n, n + 5, key).size(), static_cast<size_t>(n));
}

TEST(Randomk, RoughlyUniform) {
  // Over 400 steps, each of 100 positions is chosen ~400 * k/n = 40 times.
  // Binomial(400, 0.1): sd 6; the fixed seeds make this deterministic, and the
  // bound [10, 75] is > 5 sd wide on each side.
  const int64_t n = 100, k = 10;
  std::vector<int> hits(n, 0);
  for (uint64_t step = 0; step < 400; ++step)
    for (const int32_t i : randomk_indices(n, k, RandomkKey{9, 1, step})) ++hits[i];
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GE(hits[i], 10) << i;
    EXPECT_LE(hits[i], 75) << i;
  }
}

// -------------------------------------------------------------------- ADTopk

// Oracle for one row: sort (key desc, j asc), take k1.
std::vector<int64_t> row_oracle(const std::vector<float>& g, int64_t base, int64_t d1, int64_t stride,
                                int64_t k1) {
  std::vector<int64_t> js(static_cast<size_t>(d1));
  for (int64_t j = 0; j < d1; ++j) js[j] = j;
  std::stable_sort(js.begin(), js.end(), [&](int64_t a, int64_t b) {
    return abs_key(g[base + a * stride]) > abs_key(g[base + b * stride]);
  });
  js.resize(static_cast<size_t>(k1));
  std::vector<int64_t> flat;
  for (int64_t j : js) flat.push_back(base + j * stride);
  return flat;
}

TEST(Adtopk, PerRowCountsAndOracle) {
  struct Case {
    std::vector<int64_t> shape;
    double rho;
  };
  const Case cases[] = {
      {{8, 100}, 0.05},         {{16, 64, 3, 3}, 0.01},  {{4, 3, 5}, 0.01},
      {{3, 1000}, 0.001},       {{5, 7, 2}, 0.5},        {{2, 4}, 1.0},
      {{1, 1}, 0.01},           {{6, 33, 4}, 0.1},
  };
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    for (const Dist dist : {Dist::kGaussian, Dist::kSmallInts}) {
      const auto g = make_gradient(dist, n, static_cast<uint64_t>(n));
      const Selection s = adtopk(g.data(), c.shape, c.rho);
      const int64_t d0 = c.shape[0], d1 = c.shape[1];
      const int64_t rest = n / (d0 * d1);
      const int64_t k1 = std::max<int64_t>(1, static_cast<int64_t>(std::floor(d1 * c.rho)));
      ASSERT_EQ(adtopk_geometry(c.shape, c.rho).k1, std::min(k1, d1));
      ASSERT_EQ(s.size(), d0 * rest * std::min(k1, d1));
      ASSERT_EQ(adtopk_count(c.shape, c.rho), s.size());
      std::vector<int64_t> want;
      for (int64_t i0 = 0; i0 < d0; ++i0)
        for (int64_t ir = 0; ir < rest; ++ir) {
          const auto row = row_oracle(g, i0 * d1 * rest + ir, d1, rest, std::min(k1, d1));
          want.insert(want.end(), row.begin(), row.end());
        }
      std::sort(want.begin(), want.end());
      ASSERT_EQ(static_cast<int64_t>(want.size()), s.size());
      for (int64_t j = 0; j < s.size(); ++j) {
        ASSERT_EQ(s.indices[j], want[j]) << dist_name(dist) << " j=" << j;
        ASSERT_EQ(bits(s.values[j]), bits(g[s.indices[j]]));
      }
    }
  }
}

TEST(Adtopk, OneDimensionalNotCompressed) {
  const std::vector<float> g{3.f, -1.f, 0.f, 2.f};
  const Selection s = adtopk(g.data(), {4}, 0.01);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(s.values, g);
  EXPECT_EQ(adtopk_count({4}, 0.01), 4);
}

TEST(Adtopk, HandCaseWithTies) {
  // shape (2, 4): rows [1, -5, 5, 2] and [0, 0, 0, 0]; rho 0.5 -> k1 = 2.
  const std::vector<float> g{1.f, -5.f, 5.f, 2.f, 0.f, 0.f, 0.f, 0.f};
  const Selection s = adtopk(g.data(), {2, 4}, 0.5);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{1, 2, 4, 5}));
  // Strided rows: shape (1, 3, 2): row ir=0 is {g0, g2, g4}, ir=1 is {g1, g3, g5}.
  const std::vector<float> h{1.f, 9.f, 4.f, 9.f, 4.f, 1.f};
  const Selection t = adtopk(h.data(), {1, 3, 2}, 0.34);  // k1 = 1
  EXPECT_EQ(t.indices, (std::vector<int32_t>{1, 2}));     // ir=1 tie 9/9 -> j=0 (flat 1)
}

TEST(Adtopk, NonFiniteReported) {
  std::vector<float> g(12, 1.f);
  g[7] = std::numeric_limits<float>::quiet_NaN();
  try {
    adtopk(g.data(), {3, 4}, 0.5);
    FAIL();
  } catch (const NonFiniteError& e) {
    EXPECT_EQ(e.index(), 7);
  }
  EXPECT_THROW(adtopk(g.data(), {12}, 0.5), NonFiniteError);
}

// ------------------------------------------------------- threshold compaction

TEST(SelectAbsThreshold, StrictAndLimit) {
  const std::vector<float> g{0.5f, -2.f, 1.f, 2.f, -1.f};
  EXPECT_EQ(select_abs_threshold(g.data(), 5, 1.f, true).indices, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(select_abs_threshold(g.data(), 5, 1.f, false).indices,
            (std::vector<int32_t>{1, 2, 3, 4}));
  const Selection lim = select_abs_threshold(g.data(), 5, 1.f, false, 2);
  EXPECT_EQ(lim.indices, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(lim.values, (std::vector<float>{-2.f, 1.f}));
  EXPECT_EQ(count_abs_threshold(g.data(), 5, 1.f, true), 2);
  EXPECT_EQ(count_abs_threshold(g.data(), 5, 1.f, false), 4);
}

}  // namespace
}  // namespace sparsefuse::kernels
