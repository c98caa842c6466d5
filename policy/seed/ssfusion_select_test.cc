#include "policy/seed/ssfusion_select.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include <gtest/gtest.h>

namespace sparsefuse::policy::seed {
namespace {

TEST(SsfusionPartition, FixedCount) {
  EXPECT_EQ(ssfusion_tensors_per_buffer(201), 10);
  const std::vector<int> bert = ssfusion_partition(201);  // 20 x 10 + 1
  EXPECT_EQ(bert.size(), 21u);
  EXPECT_EQ(bert.back(), 1);
  const std::vector<int> gpt2 = ssfusion_partition(436);  // 20 x 21 + 16
  EXPECT_EQ(gpt2.size(), 21u);
  EXPECT_EQ(gpt2.front(), 21);
  EXPECT_EQ(gpt2.back(), 16);
  EXPECT_EQ(ssfusion_partition(392).size(), 21u);  // ViT-large: 20 x 19 + 12
  EXPECT_EQ(ssfusion_partition(400), std::vector<int>(20, 20));
  EXPECT_EQ(ssfusion_partition(10), std::vector<int>(10, 1));  // ⌊10/20⌋ = 0 -> 1
  EXPECT_EQ(fixed_count_partition(7, 3), (std::vector<int>{3, 3, 1}));
  EXPECT_TRUE(fixed_count_partition(0, 3).empty());
  EXPECT_THROW(fixed_count_partition(7, 0), std::invalid_argument);
}

TEST(SsfusionValidThreshold, HandWalks) {
  // ΣS = 20, rho = 0.25: E = 5. Ascending 1, 1, 3, 5, 10:
  // 1 < 5 -> E = 4; 1 < 4 -> E = 3; 3 >= 3 -> V = 2 (dense-eligible: 1 + 1 < 5).
  EXPECT_EQ(ssfusion_valid_threshold({5, 1, 3, 10, 1}, 0.25), 2);
  // rho = 0.01: E = max(1, 0.2) = 1; the first size 1 >= 1 -> V = 0.
  EXPECT_EQ(ssfusion_valid_threshold({5, 1, 3, 10, 1}, 0.01), 0);
  // ΣS = 106, rho = 0.1: E = 10.6; 2, 2, 2 leave 4.6; 100 >= 4.6 -> V = 99.
  EXPECT_EQ(ssfusion_valid_threshold({100, 2, 2, 2}, 0.1), 99);
  // rho = 1: even the largest tensor is not dense-eligible: E = 10, 4 -> 6,
  // 6 >= 6 -> V = 5.
  EXPECT_EQ(ssfusion_valid_threshold({6, 4}, 1.0), 5);
  // Nothing stops the walk only when ΣS < 1: everything fits.
  EXPECT_EQ(ssfusion_valid_threshold({0, 0}, 0.1), 0);
  EXPECT_THROW(ssfusion_valid_threshold({}, 0.1), std::invalid_argument);
}

// Hand-checkable cost model (seconds): no backward time, 1 s per compressed
// tensor, and communication 0.3 s per element after scaling by the density
// the caller passes (comm(n, r) = 0.3 * n * r).
SelectiveCostModel toy_cost() {
  return SelectiveCostModel{
      [](int64_t) { return 0.0; },
      [](int64_t) { return 1.0; },
      [](int64_t n, double r) { return 0.3 * static_cast<double>(n) * r; },
  };
}

TEST(SsfusionSelect, ArgminOnHandTable) {
  // Two buffers: b0 = {10, 400, 20, 1000, 50}, b1 = {30, 5000}; rho = 0.1.
  const std::vector<int64_t> sizes = {10, 400, 20, 1000, 50, 30, 5000};
  const std::vector<int> counts = {5, 2};
  //
  // b0: ΣS = 1480, E = 148; ascending 10, 20, 50 leave 68; 400 >= 68 -> V = 399.
  // Candidates <= 399 from the whole model: 0, 10, 20, 30, 50.
  // Sparse tensor s contributes max(1, ⌊0.1 s⌋): 10->1, 20->2, 50->5, 400->40, 1000->100.
  // With the double-rho quirk, time(T) = #sparse * 1 + 0.3 * 0.1 * n_comm:
  //   T=0 : 5 sparse, n = 1+40+2+100+5     = 148 -> 5 + 4.44 = 9.44
  //   T=10: 4 sparse, n = 10+40+2+100+5    = 157 -> 4 + 4.71 = 8.71
  //   T=20: 3 sparse, n = 10+20+40+100+5   = 175 -> 3 + 5.25 = 8.25  <- min
  //   T=30: same set as T=20                     -> 8.25 (tie: keep 20)
  //   T=50: 2 sparse, n = 10+20+50+40+100  = 220 -> 2 + 6.60 = 8.60
  // b1: ΣS = 5030, E = 503; 30 leaves 473; 5000 >= 473 -> V = 4999.
  //   T<30 : 2 sparse, n = 3+500 = 503  -> 2 + 15.09 = 17.09
  //   T>=30: 1 sparse, n = 30+500 = 530 -> 1 + 15.90 = 16.90  <- min at T = 30
  const SelectiveResult r = ssfusion_select(sizes, counts, 0.1, toy_cost(), /*quirks=*/true);
  ASSERT_EQ(r.buffers.size(), 2u);
  EXPECT_EQ(r.buffers[0].valid_threshold, 399);
  EXPECT_EQ(r.buffers[0].chosen_threshold, 20);
  EXPECT_NEAR(r.buffers[0].chosen_time_s, 8.25, 1e-12);
  EXPECT_EQ(r.buffers[0].dense_elements, 30);
  EXPECT_EQ(r.buffers[1].valid_threshold, 4999);
  EXPECT_EQ(r.buffers[1].chosen_threshold, 30);
  EXPECT_NEAR(r.buffers[1].chosen_time_s, 16.9, 1e-12);
  EXPECT_EQ(r.dense, (std::vector<bool>{true, false, true, false, false, true, false}));
  // rho' = max(0.1, (148 - 30) / 1450) = 0.1: the seed never compensates.
  EXPECT_EQ(r.ratio, (std::vector<double>{1.0, 0.1, 1.0, 0.1, 0.1, 1.0, 0.1}));
  EXPECT_NEAR(ssfusion_threshold_time_s({10, 400, 20, 1000, 50}, 50, 0.1, toy_cost()), 8.6, 1e-12);

  // Corrected (quirks = false): comm(n_comm, 1), every element costed once:
  //   b0: T=0: 5 + 44.4 = 49.4; T=10: 4 + 47.1 = 51.1; T=20: 3 + 52.5; T=50: 2 + 66
  //   -> T = 0, nothing dense. b1: T<30: 2 + 150.9 = 152.9; T=30: 1 + 159 = 160 -> T = 0.
  const SelectiveResult c = ssfusion_select(sizes, counts, 0.1, toy_cost(), /*quirks=*/false);
  EXPECT_EQ(c.buffers[0].chosen_threshold, 0);
  EXPECT_NEAR(c.buffers[0].chosen_time_s, 49.4, 1e-12);
  EXPECT_EQ(c.buffers[1].chosen_threshold, 0);
  EXPECT_EQ(std::count(c.dense.begin(), c.dense.end(), true), 0);
}

TEST(SsfusionSelect, RejectsBadPartitions) {
  EXPECT_THROW(ssfusion_select({1, 2, 3}, {2}, 0.1, toy_cost()), std::invalid_argument);
  EXPECT_THROW(ssfusion_select({1, 2, 3}, {3, 0}, 0.1, toy_cost()), std::invalid_argument);
  EXPECT_THROW(ssfusion_select({1, 2, 3}, {3}, 0.0, toy_cost()), std::invalid_argument);
}

std::vector<int64_t> bert_base_backward() {
  const int64_t h = 768, ff = 3072;
  std::vector<int64_t> v = {30528 * h, 512 * h, 2 * h, h, h};
  for (int layer = 0; layer < 12; ++layer) {
    for (int qkv = 0; qkv < 3; ++qkv) v.insert(v.end(), {h * h, h});
    v.insert(v.end(), {h * h, h, h, h, ff * h, ff, h * ff, h, h, h});
  }
  v.insert(v.end(), {2 * h, 2});  // SSFusion skips the pooler
  std::reverse(v.begin(), v.end());
  return v;
}

TEST(SsfusionSelect, DensityPropertyOnBertBase) {
  const std::vector<int64_t> sizes = bert_base_backward();
  ASSERT_EQ(sizes.size(), 199u);
  const std::vector<int> counts = ssfusion_partition(199);  // 9 per buffer
  for (double rho : {0.01, 0.05, 0.1}) {
    for (bool quirks : {true, false}) {
      const SelectiveResult r = ssfusion_select(sizes, counts, rho, "bert_base", quirks);
      int64_t dense_total = 0;
      int64_t max_dense = 0;
      for (const SelectiveBuffer& b : r.buffers) {
        // The valid threshold caps the dense set below the buffer's budget.
        EXPECT_LT(static_cast<double>(b.dense_elements), rho * static_cast<double>(b.total_elements));
        EXPECT_LE(b.chosen_threshold, b.valid_threshold);
        EXPECT_EQ(b.sparse_ratio, rho);
        dense_total += b.dense_elements;
      }
      for (std::size_t t = 0; t < sizes.size(); ++t) {
        EXPECT_EQ(r.ratio[t], r.dense[t] ? 1.0 : rho);
        if (r.dense[t]) max_dense = std::max(max_dense, sizes[t]);
      }
      std::printf("bert_base ssfusion rho=%g quirks=%d: %lld dense elements, largest dense tensor %lld\n",
                  rho, quirks ? 1 : 0, static_cast<long long>(dense_total),
                  static_cast<long long>(max_dense));
    }
  }
}

TEST(SsfusionOffload, WalkUnmarksLastOffloaded) {
  // One buffer of 5 tensors, t2 dense; Tb = 1, GPU = 0.5, CPU = 3 (seconds):
  //   t0: now 1, CPU free            -> CPU, busy until 4
  //   t1: now 2, CPU busy            -> GPU, now 2.5
  //   t2: now 3.5, dense             -> skipped
  //   t3: now 4.5, CPU free (4)      -> CPU, busy until 7.5
  //   t4: now 5.5, CPU busy          -> GPU, now 6
  //   end: 7.5 > 6                   -> unmark t3 (the last offloaded) only
  const std::vector<int64_t> sizes = {1, 1, 1, 1, 1};
  const std::vector<bool> dense = {false, false, true, false, false};
  const std::vector<bool> on_cpu = ssfusion_offload(
      sizes, {5}, dense, [](int) { return 1.0; }, [](int64_t) { return 0.5; },
      [](int64_t) { return 3.0; });
  EXPECT_EQ(on_cpu, (std::vector<bool>{true, false, false, false, false}));
}

TEST(SsfusionOffload, WalkKeepsOffloadWhenCpuFinishesInTimeAndClockIsPerBuffer) {
  // Tb = 1, GPU = 0.5·s, CPU = 1.5·s, all sizes 1; buffers {4}, {3}.
  // Buffer 0: t0 now 1 -> CPU until 2.5; t1 now 2 busy -> GPU, now 2.5;
  //   t2 now 3.5 -> CPU until 5; t3 now 4.5 busy -> GPU, now 5;
  //   end: 5 > 5 is false -> both offloads stay.
  // Buffer 1 (fresh clock): t4 now 1 -> CPU until 2.5; t5 now 2 -> GPU, 2.5;
  //   t6 now 3.5 -> CPU until 5; end: 5 > 3.5 -> unmark t6.
  const std::vector<int64_t> sizes(7, 1);
  const std::vector<bool> on_cpu = ssfusion_offload(
      sizes, {4, 3}, std::vector<bool>(7, false), [](int) { return 1.0; },
      [](int64_t s) { return 0.5 * static_cast<double>(s); },
      [](int64_t s) { return 1.5 * static_cast<double>(s); });
  EXPECT_EQ(on_cpu, (std::vector<bool>{true, false, true, false, true, false, false}));
}

TEST(SsfusionOffload, RejectsMismatchedFlags) {
  auto one = [](int64_t) { return 1.0; };
  auto one_per_tensor = [](int) { return 1.0; };
  EXPECT_THROW(ssfusion_offload({1, 2}, {2}, {false}, one_per_tensor, one, one), std::invalid_argument);
}

}  // namespace
}  // namespace sparsefuse::policy::seed
