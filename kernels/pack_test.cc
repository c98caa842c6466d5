#include "kernels/pack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "kernels/code_sweep.h"
#include "kernels/synthetic.h"
#include "kernels/test_util.h"
#include "kernels/topk.h"

namespace sparsefuse::kernels {
namespace {

TEST(Pack, GathersWithBufferOffsets) {
  // Buffer of three tensors: sizes 4, 0, 3 at offsets 0, 4, 4.
  const std::vector<float> buf{10.f, 11.f, 12.f, 13.f, 20.f, 21.f, 22.f};
  const std::vector<int64_t> offsets{0, 4, 4, 7};
  const std::vector<int32_t> local{1, 3, 0, 2};  // tensor 0: {1, 3}; tensor 2: {0, 2}
  const std::vector<int64_t> counts{2, 0, 2};
  const Selection s = pack(buf.data(), offsets, local.data(), counts);
  EXPECT_EQ(s.indices, (std::vector<int32_t>{1, 3, 4, 6}));
  EXPECT_EQ(s.values, (std::vector<float>{11.f, 13.f, 20.f, 22.f}));
}

TEST(Pack, RejectsBadInput) {
  const std::vector<float> buf(6, 1.f);
  const std::vector<int32_t> local{3};
  EXPECT_THROW(pack(buf.data(), {0, 3, 6}, local.data(), {1, 0}), std::out_of_range);
  const std::vector<int32_t> neg{-1};
  EXPECT_THROW(pack(buf.data(), {0, 3, 6}, neg.data(), {0, 1}), std::out_of_range);
  EXPECT_THROW(pack(buf.data(), {0, 6}, local.data(), {1, 0}), std::invalid_argument);
  EXPECT_THROW(pack(buf.data(), {0, 4, 2}, local.data(), {0, 0}), std::invalid_argument);
}

// pack_dense is pack with every count at its tensor's size and local
// indices 0, 1, ...: the same pairs, bit for bit.
TEST(Pack, DenseIsPackOfEveryElement) {
  const std::vector<float> buf = gaussian_gradient(1000, 3, 1.0);
  const std::vector<int64_t> offsets{0, 300, 300, 1000};
  std::vector<int32_t> local;
  for (int32_t j = 0; j < 300; ++j) local.push_back(j);
  for (int32_t j = 0; j < 700; ++j) local.push_back(j);
  const Selection want = pack(buf.data(), offsets, local.data(), {300, 0, 700});
  Selection got;
  got.resize(1000);
  pack_dense(buf.data(), 1000, got.values.data(), got.indices.data());
  EXPECT_EQ(got.indices, want.indices);
  EXPECT_EQ(got.values, want.values);
  pack_dense(buf.data(), 0, got.values.data(), got.indices.data());  // nothing to write
  EXPECT_THROW(pack_dense(buf.data(), -1, got.values.data(), got.indices.data()), std::invalid_argument);
}

// Flushing a buffer from the caches writes it back: its contents are kept
// (unaligned ends and an empty range included).
TEST(FlushFromCaches, KeepsTheData) {
  std::vector<float> data = gaussian_gradient(1000, 9, 1.0);
  const std::vector<float> before = data;
  flush_from_caches(data.data() + 3, 997 * sizeof(float) - 5);
  flush_from_caches(data.data(), 0);
  EXPECT_EQ(data, before);
}

// The code sweep runs the same blocks in the same order every call.
TEST(SweepCode, IsDeterministic) {
  const uint64_t first = sweep_code();
  EXPECT_NE(first, 1u);
  EXPECT_EQ(sweep_code(), first);
}

TEST(PackUnpack, RoundTripUnequalCounts) {
  // P = 3 workers each compress the same fusion layout (tensors of 1000, 37,
  // 500 elements) with their own gradients and different k per tensor, pack,
  // "allgather" (concatenate) with unequal per-rank counts, then unpack.
  const std::vector<int64_t> offsets{0, 1000, 1037, 1537};
  const int64_t n = offsets.back();
  const int P = 3;
  std::vector<float> all_values;
  std::vector<int32_t> all_indices;
  std::vector<int64_t> rank_counts;
  std::vector<double> want(n, 0.0);
  for (int r = 0; r < P; ++r) {
    const auto buf = testing::make_gradient(testing::Dist::kGaussian, n, 50 + r);
    std::vector<int32_t> local;
    std::vector<int64_t> counts;
    for (size_t t = 0; t + 1 < offsets.size(); ++t) {
      const int64_t size = offsets[t + 1] - offsets[t];
      const Selection s = topk_abs(buf.data() + offsets[t], size, (r + 1) * size / 20);
      local.insert(local.end(), s.indices.begin(), s.indices.end());
      counts.push_back(s.size());
    }
    const Selection packed = pack(buf.data(), offsets, local.data(), counts);
    for (int64_t j = 1; j < packed.size(); ++j) ASSERT_LT(packed.indices[j - 1], packed.indices[j]);
    for (int64_t j = 0; j < packed.size(); ++j) {
      ASSERT_EQ(packed.values[j], buf[packed.indices[j]]);
      want[packed.indices[j]] += packed.values[j];
    }
    all_values.insert(all_values.end(), packed.values.begin(), packed.values.end());
    all_indices.insert(all_indices.end(), packed.indices.begin(), packed.indices.end());
    rank_counts.push_back(packed.size());
  }
  ASSERT_NE(rank_counts[0], rank_counts[2]);
  std::vector<float> dense(n, 123.f);
  unpack(all_values.data(), all_indices.data(), rank_counts, n, dense.data());
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(dense[i], want[i] / P, 1e-9) << i;
  // Bit-exact order contract: rank order then stream order, then / P.
  std::vector<float> ref(n, 0.f);
  for (size_t j = 0; j < all_indices.size(); ++j) ref[all_indices[j]] += all_values[j];
  for (auto& x : ref) x /= float(P);
  EXPECT_EQ(0, std::memcmp(ref.data(), dense.data(), n * sizeof(float)));
}

TEST(Unpack, HandCaseWithDuplicates) {
  // Two ranks, counts 3 and 1; rank 0 repeats index 2.
  const std::vector<float> v{1.f, 2.f, 4.f, 8.f};
  const std::vector<int32_t> idx{2, 0, 2, 2};
  std::vector<float> dense(3);
  unpack(v.data(), idx.data(), {3, 1}, 3, dense.data());
  EXPECT_EQ(dense, (std::vector<float>{1.f, 0.f, 6.5f}));  // (1+4+8)/2, 2/2
  EXPECT_THROW(unpack(v.data(), idx.data(), {3, 1}, 2, dense.data()), std::out_of_range);
  EXPECT_THROW(unpack(v.data(), idx.data(), {}, 3, dense.data()), std::invalid_argument);
}

TEST(Average, DividesInFp32InPlaceOrNot) {
  const std::vector<float> sum{6.f, 3.f, -9.f, 5.f};
  std::vector<float> out(4);
  average(sum.data(), 4, 3, out.data());
  // 5 / 3 rounds to 0x3fd55555; 5 * (1/3) would give 0x3fd55556: a true division.
  EXPECT_EQ(out[0], 2.f);
  EXPECT_EQ(out[1], 1.f);
  EXPECT_EQ(out[2], -3.f);
  uint32_t bits;
  std::memcpy(&bits, &out[3], sizeof bits);
  EXPECT_EQ(bits, 0x3fd55555u);
  std::vector<float> in_place = sum;
  average(in_place.data(), 4, 3, in_place.data());
  EXPECT_EQ(in_place, out);
  EXPECT_THROW(average(sum.data(), 4, 0, out.data()), std::invalid_argument);
}

// Powers of two take the multiplication path: it must give the division's
// bits everywhere, subnormal results and the largest finite values included.
TEST(Average, PowerOfTwoWorkersGiveTheDivisionsBits) {
  std::vector<float> sum = kernels::gaussian_gradient(4099, 11, 1e3);
  for (float v : {std::numeric_limits<float>::denorm_min(), 3 * std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), 1.5f * std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 0.0f, -0.0f,
                  std::numeric_limits<float>::infinity()}) {
    sum.push_back(v);
  }
  std::vector<float> out(sum.size());
  for (int P : {1, 2, 4, 8, 64, 1024, 1 << 30}) {
    average(sum.data(), int64_t(sum.size()), P, out.data());
    for (size_t i = 0; i < sum.size(); ++i) {
      const float divided = sum[i] / static_cast<float>(P);
      ASSERT_EQ(std::memcmp(&out[i], &divided, sizeof divided), 0)
          << "P=" << P << " sum=" << sum[i] << ": " << out[i] << " vs " << divided;
    }
  }
}

TEST(UnpackEqualSlices, HandComputedLoss) {
  // P = 2 workers sent 3 and 4 entries (len 7), but the receiver slices the
  // stream into 2 slices of 3 and drops the tail:
  //   stream:  (1@0) (2@1) (4@0) | (8@1) (16@1) (32@2) | (64@2)
  //   slice 0 = {1@0, 2@1, 4@0}: index 0 twice -> last write (4) lands, 1 lost
  //   slice 1 = {8@1, 16@1, 32@2}: index 1 twice -> 16 lands, 8 lost
  //   tail    = {64@2}: dropped, 1 lost
  // dense = [4, 2 + 16, 32] / 2 = [2, 9, 16]; lost = 3.
  const std::vector<float> v{1.f, 2.f, 4.f, 8.f, 16.f, 32.f, 64.f};
  const std::vector<int32_t> idx{0, 1, 0, 1, 1, 2, 2};
  std::vector<float> dense(3, -1.f);
  const int64_t lost = unpack_equal_slices(v.data(), idx.data(), 7, 2, 3, dense.data());
  EXPECT_EQ(lost, 3);
  EXPECT_EQ(dense, (std::vector<float>{2.f, 9.f, 16.f}));
  // The correct receiver on the same stream keeps everything.
  unpack(v.data(), idx.data(), {3, 4}, 3, dense.data());
  EXPECT_EQ(dense, (std::vector<float>{2.5f, 13.f, 48.f}));
}

TEST(UnpackEqualSlices, EqualCountsLoseNothing) {
  const int64_t n = 1000;
  std::vector<float> v;
  std::vector<int32_t> idx;
  for (int r = 0; r < 4; ++r) {
    const auto g = testing::make_gradient(testing::Dist::kGaussian, n, 70 + r);
    const Selection s = topk_abs(g.data(), n, 25);
    v.insert(v.end(), s.values.begin(), s.values.end());
    idx.insert(idx.end(), s.indices.begin(), s.indices.end());
  }
  std::vector<float> a(n), b(n);
  EXPECT_EQ(unpack_equal_slices(v.data(), idx.data(), 100, 4, n, a.data()), 0);
  unpack(v.data(), idx.data(), {25, 25, 25, 25}, n, b.data());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float)));
}

}  // namespace
}  // namespace sparsefuse::kernels
