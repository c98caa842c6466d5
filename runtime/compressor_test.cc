#include "runtime/compressor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/synthetic.h"
#include "kernels/topk.h"

namespace sparsefuse::runtime {
namespace {

using policy::CompressionRequest;
using policy::Sparsifier;

// Three tensors: 1-D 300, 2-D 20x30, 1-D 100.
ModelLayout three_tensors() {
  ModelLayout layout;
  layout.offset = {0, 300, 900, 1000};
  layout.shape = {{300}, {20, 30}, {100}};
  return layout;
}

CompressionRequest request(int first, int end, const ModelLayout& layout, Sparsifier s, double density, bool ef) {
  CompressionRequest r;
  r.first_tensor = first;
  r.end_tensor = end;
  r.elements = layout.elements(first, end);
  r.sparsifier = s;
  r.density = density;
  r.expected_count = policy::exact_count(r.elements, density);
  r.error_feedback = ef;
  return r;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Compressor, TopkIsTheKernelsExactTopk) {
  ModelLayout layout = three_tensors();
  std::vector<float> g = kernels::gaussian_gradient(layout.total(), 7, 1.0);
  Compressor c(layout);
  auto r = request(1, 2, layout, Sparsifier::kTopk, 0.1, false);
  kernels::Selection got = c.compress(r, g.data(), nullptr, {});
  kernels::Selection want = kernels::topk_abs(g.data() + 300, 600, 60);
  EXPECT_EQ(got.indices, want.indices);
  EXPECT_EQ(got.values, want.values);
}

// Compressing into a selection that already holds one overwrites it in its
// own buffers (the engine keeps one per request slot) and gives what a new
// selection would, stale entries included in nothing.
TEST(Compressor, CompressingIntoAnOldSelectionReusesItsBuffers) {
  ModelLayout layout = three_tensors();
  for (auto [s, ef] : {std::pair{Sparsifier::kTopk, true}, std::pair{Sparsifier::kTopk, false},
                       std::pair{Sparsifier::kRandomk, false}, std::pair{Sparsifier::kAdtopk, true}}) {
    SCOPED_TRACE(policy::sparsifier_name(s));
    Compressor c(layout);
    std::vector<float> residual(size_t(layout.total()), 0.0f), fresh_residual = residual;
    auto r = request(0, 3, layout, s, 0.05, ef);
    kernels::Selection slot = c.compress(r, kernels::gaussian_gradient(layout.total(), 5, 1.0).data(),
                                         residual.data(), {1, 0, 0});
    fresh_residual = residual;
    const float* values = slot.values.data();
    const int32_t* indices = slot.indices.data();
    const std::vector<float> g = kernels::gaussian_gradient(layout.total(), 6, 1.0);
    c.compress(r, g.data(), residual.data(), {1, 0, 1}, slot);
    const kernels::Selection want = Compressor(layout).compress(r, g.data(), fresh_residual.data(), {1, 0, 1});
    EXPECT_EQ(slot.values.data(), values);
    EXPECT_EQ(slot.indices.data(), indices);
    EXPECT_EQ(slot.indices, want.indices);
    EXPECT_EQ(slot.values, want.values);
    EXPECT_EQ(residual, fresh_residual);
  }
}

// Error feedback: over several steps, for every sparsifier, what was sent
// plus the residual equals residual-before + gradient bit for bit, and the
// residual is zero exactly where something was sent.
TEST(Compressor, ErrorFeedbackConservesEveryElement) {
  ModelLayout layout = three_tensors();
  for (Sparsifier s : {Sparsifier::kTopk, Sparsifier::kDgc, Sparsifier::kGaussiank, Sparsifier::kRedsync,
                       Sparsifier::kSidco, Sparsifier::kRandomk, Sparsifier::kAdtopk}) {
    SCOPED_TRACE(policy::sparsifier_name(s));
    Compressor c(layout);
    std::vector<float> residual(size_t(layout.total()), 0.0f);
    for (int step = 0; step < 3; ++step) {
      std::vector<float> g = kernels::gaussian_gradient(layout.total(), 100 + step, 0.5);
      std::vector<float> before = residual;
      auto r = request(0, 3, layout, s, 0.05, true);
      kernels::Selection sel = c.compress(r, g.data(), residual.data(), {1, 0, step});
      ASSERT_GT(sel.size(), 0);
      std::vector<float> sent(size_t(layout.total()), 0.0f);
      for (int64_t j = 0; j < sel.size(); ++j) {
        ASSERT_TRUE(same_bits(residual[sel.indices[j]], 0.0f));
        sent[sel.indices[j]] = sel.values[j];
      }
      for (size_t i = 0; i < g.size(); ++i) {
        float acc = before[i] + g[i];
        ASSERT_TRUE(same_bits(sent[i] + residual[i], acc)) << "element " << i;
      }
    }
  }
}

TEST(Compressor, RandomkIndicesAreSharedAcrossRanksAndChangePerIteration) {
  ModelLayout layout = three_tensors();
  std::vector<float> g0 = kernels::gaussian_gradient(layout.total(), 1, 1.0);
  std::vector<float> g1 = kernels::gaussian_gradient(layout.total(), 2, 1.0);
  Compressor c(layout);
  auto r = request(0, 1, layout, Sparsifier::kRandomk, 0.1, false);
  auto a = c.compress(r, g0.data(), nullptr, {5, 0, 3});
  auto b = c.compress(r, g1.data(), nullptr, {5, 1, 3});
  auto next = c.compress(r, g0.data(), nullptr, {5, 0, 4});
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_NE(a.indices, next.indices);
  EXPECT_EQ(a.size(), 30);
}

TEST(Compressor, AdtopkOverARangeSelectsPerRowAndShiftsIndices) {
  ModelLayout layout = three_tensors();
  std::vector<float> g = kernels::gaussian_gradient(layout.total(), 3, 1.0);
  Compressor c(layout);
  auto r = request(0, 3, layout, Sparsifier::kAdtopk, 0.1, false);
  kernels::Selection sel = c.compress(r, g.data(), nullptr, {});
  // 1-D tensors are kept whole; the 20x30 tensor keeps 3 per row of 30.
  EXPECT_EQ(sel.size(), 300 + 20 * 3 + 100);
  kernels::Selection middle = kernels::adtopk(g.data() + 300, {20, 30}, 0.1);
  for (int64_t j = 0; j < middle.size(); ++j) EXPECT_EQ(sel.indices[300 + j], middle.indices[j] + 300);
  EXPECT_TRUE(std::is_sorted(sel.indices.begin(), sel.indices.end()));
}

TEST(Compressor, FixedKAlignmentGivesExactlyK) {
  ModelLayout layout = three_tensors();
  std::vector<float> g = kernels::gaussian_gradient(layout.total(), 9, 1.0);
  Compressor c(layout);
  for (Sparsifier s : {Sparsifier::kDgc, Sparsifier::kGaussiank, Sparsifier::kRedsync, Sparsifier::kSidco}) {
    auto r = request(1, 2, layout, s, 0.05, false);
    r.align_to_expected = true;
    EXPECT_EQ(c.compress(r, g.data(), nullptr, {}).size(), 30) << policy::sparsifier_name(s);
  }
}

// A threshold selection is a top-s set, so aligning it to k must give the
// exact top-k, whether it truncates or pads.
TEST(AlignToCount, TruncatesAndPadsToTheTopK) {
  std::vector<float> g = kernels::gaussian_gradient(500, 11, 1.0);
  const kernels::Selection top40 = kernels::topk_abs(g.data(), 500, 40);
  for (int64_t s : {10, 40, 90}) {
    kernels::Selection threshold_like = kernels::topk_abs(g.data(), 500, s);
    kernels::Selection aligned = align_to_count(threshold_like, g.data(), 500, 40);
    EXPECT_EQ(aligned.indices, top40.indices) << "from " << s;
    EXPECT_EQ(aligned.values, top40.values) << "from " << s;
  }
  EXPECT_EQ(align_to_count(top40, g.data(), 500, 1000).size(), 500);
}

// Padding any selection (not only a top-s one): the selected entries stay and
// the largest-magnitude unselected ones join them, ties to the smaller index,
// against a sort of every unselected entry. Values drawn from a few levels,
// so ties are common.
TEST(AlignToCount, PadsAnySelectionWithTheLargestUnselectedEntries) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + int64_t(rng() % 300);
    std::vector<float> g(static_cast<size_t>(n));
    for (auto& x : g) x = float(int(rng() % 7) - 3) * 0.5f;
    const int64_t k = 1 + int64_t(rng() % uint64_t(n));
    kernels::Selection chosen;
    for (int64_t i = 0; i < n; ++i) {
      if (chosen.size() + 1 < k && rng() % 4 == 0) {
        chosen.indices.push_back(int32_t(i));
        chosen.values.push_back(g[size_t(i)]);
      }
    }
    std::vector<int32_t> rest;
    for (int64_t i = 0; i < n; ++i) {
      if (!std::binary_search(chosen.indices.begin(), chosen.indices.end(), int32_t(i))) rest.push_back(int32_t(i));
    }
    std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) { return std::fabs(g[a]) > std::fabs(g[b]); });
    std::vector<int32_t> want = chosen.indices;
    want.insert(want.end(), rest.begin(), rest.begin() + (k - chosen.size()));
    std::sort(want.begin(), want.end());
    const kernels::Selection padded = align_to_count(chosen, g.data(), n, k);
    ASSERT_EQ(padded.indices, want) << "trial " << trial << ": n " << n << ", k " << k;
    for (int64_t j = 0; j < k; ++j) EXPECT_EQ(padded.values[j], g[size_t(padded.indices[j])]);
  }
}

TEST(Compressor, RejectsARequestWhoseCountDoesNotMatchItsTensors) {
  ModelLayout layout = three_tensors();
  std::vector<float> g(1000, 1.0f);
  Compressor c(layout);
  auto r = request(0, 2, layout, Sparsifier::kTopk, 0.1, false);
  r.elements = 300;
  EXPECT_THROW(c.compress(r, g.data(), nullptr, {}), std::logic_error);
}

}  // namespace
}  // namespace sparsefuse::runtime
