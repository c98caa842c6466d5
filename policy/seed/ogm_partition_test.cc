#include "policy/seed/ogm_partition.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace sparsefuse::policy::seed {
namespace {

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }
int sum(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); }

std::string str(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// BERT-base SQuAD (NVIDIA layout, pooler included), named_parameters order.
std::vector<int64_t> bert_base_forward() {
  const int64_t h = 768, ff = 3072;
  std::vector<int64_t> v = {30528 * h, 512 * h, 2 * h, h, h};
  for (int layer = 0; layer < 12; ++layer) {
    for (int qkv = 0; qkv < 3; ++qkv) v.insert(v.end(), {h * h, h});
    v.insert(v.end(), {h * h, h, h, h, ff * h, ff, h * ff, h, h, h});
  }
  v.insert(v.end(), {h * h, h, 2 * h, 2});
  return v;
}

// GPT-2-large (HF, tied LM head), named_parameters order.
std::vector<int64_t> gpt2_large_forward() {
  const int64_t d = 1280;
  std::vector<int64_t> v = {50257 * d, 1024 * d};
  for (int block = 0; block < 36; ++block) {
    v.insert(v.end(), {d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * 4 * d, 4 * d, 4 * d * d, d});
  }
  v.insert(v.end(), {d, d});
  return v;
}

std::vector<int64_t> backward(std::vector<int64_t> forward) {
  std::reverse(forward.begin(), forward.end());
  return forward;
}

TEST(OgmInventories, TotalsMatchSpec) {
  const auto bert = bert_base_forward();
  EXPECT_EQ(bert.size(), 201u);
  EXPECT_EQ(sum(bert), 109488386);
  const auto gpt2 = gpt2_large_forward();
  EXPECT_EQ(gpt2.size(), 436u);
  EXPECT_EQ(sum(gpt2), 774030080);
  // Backward order starts at the QA head / final LayerNorm.
  EXPECT_EQ(backward(bert).front(), 2);
  EXPECT_EQ(backward(gpt2).back(), 50257 * 1280);
}

// Logged partition 1 (the seed's FGBuff BERT-base log): BERT-base, rho = 0.1.
TEST(OgmPartition, BertBaseRho01MatchesLog) {
  const OgmTrace t = ogm_partition_trace(backward(bert_base_forward()), 0.1, "bert_base");
  std::printf("bert_base rho=0.1 counts: %s\n", str(t.counts).c_str());
  EXPECT_EQ(t.counts, (std::vector<int>{3, 16, 2, 60, 60, 61}));
  EXPECT_EQ(ogm_partition(backward(bert_base_forward()), 0.1, "bert_base"), t.counts);

  // Step 1: 100 pairs, then the word embedding alone (Tb(23.4M) > 0).
  std::vector<int> greedy(100, 2);
  greedy.push_back(1);
  EXPECT_EQ(t.greedy_counts, greedy);
  // Step 2 (the seed prints this list as groups_new: 94 entries): 8 pairs fit
  // under tc_0 and merge; the bound then becomes their summed tc (~44 ms),
  // which the never-reset accumulator does not pass again before the end of
  // the list, so the end-of-list branch appends the other 92 groups alone.
  std::vector<int> ft = {2, 16};
  ft.insert(ft.end(), 91, 2);
  ft.push_back(1);
  EXPECT_EQ(t.finetuned_counts, ft);

  // The seed's printed sums for this run (the same BERT log):
  // sum(merging_time_compression_array) = 1.099710923666425,
  // sum(group_compression_time_array)   = 0.023590015845828576,
  // sum(group_backward_time_size_array) = 0.04641398668288996.
  // Our values use the spec's tables, which print 4-5 significant digits; the
  // largest deviation that rounding can explain (half a unit in the last digit
  // of every table point, weighted by how often each point is used) is
  // 2.32e-4 s, 5.05e-6 s and 5e-7 s respectively. The logged Σb equals the
  // seed's T_bwd itself, i.e. the seed's bert_base constant is
  // 0.04641398668..., which the spec rounds to 0.046414.
  EXPECT_NEAR(t.sum_tc_s, 1.099710923666425, 2.32e-4);
  EXPECT_NEAR(t.sum_z_s, 0.023590015845828576, 5.05e-6);
  EXPECT_NEAR(t.sum_b_s, 0.04641398668288996, 5e-7);
  // Pin our exact values so a change in the cost model is noticed.
  EXPECT_NEAR(t.sum_tc_s, 1.0996819470622212, 1e-12);
  EXPECT_NEAR(t.sum_z_s, 0.02359149150666666, 1e-14);
  EXPECT_NEAR(t.sum_b_s, 0.046414, 1e-15);
}

// Logged partition 2 (the seed's RGMerge GPT-2 log): GPT-2-large, unknown key => T_bwd = 0,
// rho = 1.0, Tc clamped above 150,000 KB.
TEST(OgmPartition, Gpt2LargeRho1MatchesLog) {
  const OgmTrace t = ogm_partition_trace(backward(gpt2_large_forward()), 1.0, "gpt_2");
  std::printf("gpt_2 rho=1.0 counts: %s\n", str(t.counts).c_str());
  EXPECT_EQ(t.counts, (std::vector<int>{3, 56, 378}));

  // T_bwd = 0: every greedy group is exactly two tensors.
  EXPECT_EQ(t.greedy_counts, std::vector<int>(218, 2));
  // g0, one merge of 28 pairs, then (with b = 0 the accumulator grows only by
  // compression time and never passes the merged run's summed tc) the
  // end-of-list branch appends the remaining 189 pairs alone.
  EXPECT_EQ(t.finetuned_counts.size(), 191u);
  EXPECT_EQ(t.finetuned_counts[1], 56);
  EXPECT_EQ(t.sum_b_s, 0.0);

  // The logged intermediate sums 31.2649 s and 0.043683 s are, by the seed's
  // own labels in the BERT log, Σ tc_i and Σ z_i over ALL step-1 groups
  // (g0 included; with T_bwd = 0, Σ z_i is also Σ (b_i + z_i)). For the
  // second value the obvious alternative, Σ_{i>=1} z_i (= B here, 0.0436107),
  // is 7.2e-5 s off, more than table rounding allows. For the first,
  // Σ_{i>=1} tc_i (31.263202) is also within the rounding bound, so the pairing
  // with Σ z_i and the seed's labels decide it. With the spec's tables we get
  // 31.268857 s and 0.0436875 s; rounding of the table points can move these
  // by at most 6.650e-3 s and 1.09e-5 s (same bound as above), so the log is
  // consistent with them but not reproduced to all printed digits.
  std::printf("gpt_2 rho=1.0 sum_tc=%.9f s sum_z=%.9f s B=%.9f s\n", t.sum_tc_s, t.sum_z_s,
              t.overlap_budget_s);
  EXPECT_NEAR(t.sum_tc_s, 31.2649, 6.650e-3);
  EXPECT_NEAR(t.sum_z_s, 0.043683, 1.09e-5);
  EXPECT_NEAR(t.sum_tc_s, 31.2688572842133, 1e-9);
  EXPECT_NEAR(t.sum_z_s, 0.04368748421333336, 1e-14);

  // Without the clamp, the prefix of 58 tensors (about 360,000 KB) would be
  // extrapolated or raise; the clamp makes step 3 (a) fire right there.
  EXPECT_GT(t.overlap_budget_s, 0.0);
  EXPECT_LT(t.overlap_budget_s, 1.5161);
}

TEST(OgmPartition, QuirkOffByOneAndCorrectedSums) {
  const auto bert = backward(bert_base_forward());
  const auto gpt2 = backward(gpt2_large_forward());
  for (double rho : {0.01, 0.05, 0.1, 1.0}) {
    for (const auto* sizes : {&bert, &gpt2}) {
      const std::string key = sizes == &bert ? "bert_base" : "gpt_2";
      const std::vector<int> quirky = ogm_partition(*sizes, rho, key, true);
      const std::vector<int> fixed = ogm_partition(*sizes, rho, key, false);
      std::printf("%s rho=%g quirks: %s corrected: %s\n", key.c_str(), rho, str(quirky).c_str(),
                  str(fixed).c_str());
      EXPECT_EQ(sum(quirky), static_cast<int>(sizes->size()) + 1);
      EXPECT_EQ(sum(fixed), static_cast<int>(sizes->size()));
      EXPECT_TRUE(std::all_of(quirky.begin(), quirky.end(), [](int c) { return c >= 1; }));
      EXPECT_TRUE(std::all_of(fixed.begin(), fixed.end(), [](int c) { return c >= 1; }));
    }
  }
}

TEST(OgmPartition, CorrectedBertBase) {
  // Accumulator restarted per pass, a merged run costed as one buffer: 8 pairs
  // fit under tc_0 (the 2-tensor QA head); the next 62 pairs' production fits
  // under the 16-tensor buffer's own cost, and the remaining 59 tensors form
  // the last run, merged at the end of the list. Step 3 keeps all four: the
  // third buffer (124) is larger than the second, so no tail splitting, and
  // the fourth ends the list. No off-by-one: counts sum to 201.
  const OgmTrace t = ogm_partition_trace(backward(bert_base_forward()), 0.1, "bert_base", false);
  EXPECT_EQ(t.counts, (std::vector<int>{2, 16, 124, 59}));
  EXPECT_EQ(t.finetuned_counts, t.counts);
  EXPECT_EQ(t.greedy_counts.size(), 101u);  // step 1 is unchanged
}

// Step 2 by hand, seed mode, in units where every group's tc is 1 except
// where noted and every group's production time b + z is 0.375 (binary
// fractions, so the sums are exact):
//   pass 1, bound tc(g0) = 1:  A = .375 (g1), .75 (g2), 1.125 (g3) > 1
//           -> merge g1..g2 (tc 2)
//   pass 2, bound 2:           A = 1.5 (g3), 1.875 (g4), 2.25 (g5) > 2
//           -> merge g3..g4 (tc 2): the bound grew, so a second merge
//   pass 3, bound 2:           A = 2.625 (g5) > 2 -> g5 alone (tc 8)
//   pass 4, bound 8:           A = 3 (g6), 3.375 (g7), end of list
//           -> g6 and g7 appended one by one, not merged.
// The old reading (bound fixed at tc(g0), accumulator never reset) gives
// [1, 5, 3, 4, 5, 6, 7]: one merge, then every group alone.
TEST(OgmFineTune, SeedBoundGrowsAfterAMergeAndTheTailIsAppendedAlone) {
  std::vector<OgmGroup> g;
  for (int c = 1; c <= 8; ++c) g.push_back({c, 0, 1.0, 0.125, 0.25});
  g[0].z_s = g[0].b_s = 0;  // g0's production is never read
  g[5].tc_s = 8.0;
  EXPECT_EQ(ogm_fine_tune(g, 0.1, SeedSparsifier::kTopk, true), (std::vector<int>{1, 5, 9, 6, 7, 8}));
}

// Corrected mode on the same shape of input: the accumulator restarts every
// pass and a merged run costs what one buffer of its size costs. With empty
// groups that cost is C = Tc(0) + Tz(0); production per group is 0.375 C.
//   pass 1, bound C: .375, .75, 1.125 > 1 -> merge g1..g2 (tc C)
//   pass 2, bound C: same                 -> merge g3..g4 (tc C)
//   pass 3, bound C: .375 (g5), .75 (g6), end of list -> merge g5..g6.
// The seed mode on these groups gives [1, 2, 2, 1, 1] (g5 passes the grown
// accumulator, then g6 passes g5's own tc).
TEST(OgmFineTune, CorrectedRestartsTheAccumulatorAndMergesTheTail) {
  const double c = seed_tc_s(0, 0.1) + seed_tz_s(0, SeedSparsifier::kTopk);
  std::vector<OgmGroup> g(7, OgmGroup{1, 0, c, 0.125 * c, 0.25 * c});
  EXPECT_EQ(ogm_fine_tune(g, 0.1, SeedSparsifier::kTopk, false), (std::vector<int>{1, 2, 2, 2}));
  EXPECT_EQ(ogm_fine_tune(g, 0.1, SeedSparsifier::kTopk, true), (std::vector<int>{1, 2, 2, 1, 1}));
  EXPECT_THROW(ogm_fine_tune({}, 0.1, SeedSparsifier::kTopk, true), std::invalid_argument);
}

// BERT-base at rho = 0.05 (the seed's BERT-base scripts' density): the bound
// after the first merge (8 pairs' summed tc) is large enough that a second,
// long run merges before the accumulator passes it; the last two groups
// then pass the grown accumulator and stay alone. Under the old reading
// (bound fixed at tc_0) this was [2, 16, 2, 2, ..., 2, 1] and the final
// partition [3, 16, 2, 60, 60, 61], the same as at rho = 0.1.
TEST(OgmPartition, SeedFineTuningMergesAgainAfterTheBoundGrows) {
  const OgmTrace t = ogm_partition_trace(backward(bert_base_forward()), 0.05, "bert_base");
  EXPECT_EQ(t.finetuned_counts, (std::vector<int>{2, 16, 180, 2, 1}));
  EXPECT_EQ(t.counts, (std::vector<int>{3, 16, 180, 3}));
}

TEST(OgmPartition, DiffMinClosesSingleTensors) {
  // lstm: diff_min = 5.8047 ms, T_bwd = 65.097 ms. A tensor whose Tb is below
  // diff_min closes a group on its own; here each of 20 equal tensors has
  // Tb = 3.25 ms, so every greedy group is a single tensor.
  const std::vector<int64_t> sizes(20, 1000);
  const OgmTrace t = ogm_partition_trace(sizes, 0.1, "lstm");
  EXPECT_EQ(t.greedy_counts, std::vector<int>(20, 1));
}

TEST(OgmPartition, RejectsBadInput) {
  EXPECT_THROW(ogm_partition({}, 0.1, "bert_base"), std::invalid_argument);
  EXPECT_THROW(ogm_partition({1, 2}, 0.0, "bert_base"), std::invalid_argument);
  EXPECT_THROW(ogm_partition({1, 2}, 1.5, "bert_base"), std::invalid_argument);
  EXPECT_THROW(ogm_partition({1, -2}, 0.1, "bert_base"), std::invalid_argument);
}

}  // namespace
}  // namespace sparsefuse::policy::seed
