// GPU tests (tag "gpu"): every CUDA kernel against its CPU reference.
// Exact kernels must give identical index sets and bit-identical values.
// Without a usable device the binary prints a skip message and exits 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/estimators.h"
#include "kernels/pack.h"
#include "kernels/test_util.h"
#include "kernels/topk.h"

namespace sparsefuse::kernels {
namespace {

using cuda::DeviceBuffer;
using testing::all_dists;
using testing::Dist;
using testing::dist_name;
using testing::make_gradient;

template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& h) {
  DeviceBuffer<T> d;
  d.upload(h);
  return d;
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

class Cuda : public ::testing::Test {
 protected:
  cuda::Workspace ws;
};

Selection gpu_topk(cuda::Workspace& ws, const std::vector<float>& g, int64_t k) {
  const int64_t n = static_cast<int64_t>(g.size());
  const auto dg = to_device(g);
  const int64_t m = std::min(k, n);
  DeviceBuffer<float> v(m);
  DeviceBuffer<int32_t> i(m);
  EXPECT_EQ(cuda::topk_abs(dg.data(), n, k, v.data(), i.data(), ws), m);
  return Selection{v.download(), i.download()};
}

TEST_F(Cuda, TopkMatchesCpu) {
  // 32768 and 32769: either side of the one-block path's limit (small_select::kMaxElements).
  const int64_t sizes[] = {1, 2, 7, 1000, 4097, 32768, 32769, 65537, 1 << 20, 3'000'001};
  for (const Dist d : all_dists()) {
    for (const int64_t n : sizes) {
      const auto g = make_gradient(d, n, 31 + static_cast<uint64_t>(n));
      for (const double rho : {0.0, 0.001, 0.01, 0.1, 0.5, 1.0, 2.0}) {
        const int64_t k = rho == 0.0 ? 0 : (rho > 1.0 ? n + 3 : k_for_density(n, rho));
        const Selection want = topk_abs(g.data(), n, k);
        const Selection got = gpu_topk(ws, g, k);
        ASSERT_EQ(got.indices, want.indices) << dist_name(d) << " n=" << n << " k=" << k;
        ASSERT_EQ(bits_of(got.values), bits_of(want.values)) << dist_name(d) << " n=" << n;
      }
    }
  }
}

TEST_F(Cuda, TopkExhaustiveSmall) {
  const float alphabet[] = {0.f, 1.f, -1.f, 2.f, -0.f};
  for (int n = 1; n <= 5; ++n) {
    int64_t combos = 1;
    for (int i = 0; i < n; ++i) combos *= 5;
    for (int64_t c = 0; c < combos; ++c) {
      std::vector<float> g(static_cast<size_t>(n));
      int64_t x = c;
      for (int i = 0; i < n; ++i, x /= 5) g[static_cast<size_t>(i)] = alphabet[x % 5];
      for (int64_t k = 0; k <= n; ++k)
        ASSERT_EQ(gpu_topk(ws, g, k).indices, topk_abs(g.data(), n, k).indices) << c << " " << k;
    }
  }
}

TEST_F(Cuda, TopkNonFinite) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    for (const int64_t n : {1000, 100000}) {  // the one-block path and the multi-kernel one
      auto g = make_gradient(Dist::kGaussian, n, 3);
      const int64_t first = n * 7 / 9;
      g[static_cast<size_t>(first)] = bad;
      g[static_cast<size_t>(n * 9 / 10)] = bad;
      for (const int64_t k : {int64_t{0}, int64_t{10}, n}) {
        try {
          gpu_topk(ws, g, k);
          FAIL() << n << " " << k;
        } catch (const NonFiniteError& e) {
          EXPECT_EQ(e.index(), first) << n << " " << k;
        }
      }
    }
  }
}

TEST_F(Cuda, KthLargestMatchesCpu) {
  for (const Dist d : all_dists()) {
    for (const int64_t n : {20011, 100003}) {
      const auto x = make_gradient(d, n, 4);
      const auto dx = to_device(x);
      for (const int64_t k : {int64_t{1}, int64_t{100}, n / 2, n})
        EXPECT_EQ(cuda::kth_largest_abs_key(dx.data(), n, k, ws), kth_largest_abs_key(x.data(), n, k))
            << dist_name(d) << " n=" << n << " k=" << k;
    }
  }
}

TEST_F(Cuda, EfTopkMatchesCpuBitExact) {
  for (const Dist d : {Dist::kGaussian, Dist::kBf16, Dist::kManyZeros}) {
    for (const int64_t n : {int64_t{30011}, int64_t{1'000'003}}) {
    const auto r = make_gradient(d, n, 5);
    const auto g = make_gradient(d, n, 6);
    for (const int64_t k : {int64_t{0}, int64_t{1}, int64_t{10000}, n}) {
      std::vector<float> cpu_r = r;
      const Selection want = ef_topk(cpu_r.data(), g.data(), n, k);
      auto dr = to_device(r);
      const auto dg = to_device(g);
      const int64_t m = std::min(k, n);
      DeviceBuffer<float> v(m);
      DeviceBuffer<int32_t> i(m);
      ASSERT_EQ(cuda::ef_topk(dr.data(), dg.data(), n, k, v.data(), i.data(), ws), m);
      ASSERT_EQ(i.download(), want.indices) << dist_name(d) << " k=" << k;
      ASSERT_EQ(bits_of(v.download()), bits_of(want.values));
      ASSERT_EQ(bits_of(dr.download()), bits_of(cpu_r)) << "residual";
      }
    }
  }
}

TEST_F(Cuda, RandomkMatchesCpu) {
  for (const int64_t n : {10, 100000, 2'000'000}) {
    const auto g = make_gradient(Dist::kGaussian, n, 7);
    const auto dg = to_device(g);
    for (const int64_t k : {int64_t{0}, int64_t{1}, n / 100 + 1, n}) {
      for (uint64_t step = 0; step < 3; ++step) {
        const RandomkKey key{123, 4, step};
        const Selection want = randomk(g.data(), n, k, key);
        DeviceBuffer<float> v(std::min(k, n));
        DeviceBuffer<int32_t> i(std::min(k, n));
        cuda::randomk(dg.data(), n, k, key, v.data(), i.data(), ws);
        ASSERT_EQ(i.download(), want.indices) << n << " " << k;
        ASSERT_EQ(bits_of(v.download()), bits_of(want.values));
      }
    }
  }
}

TEST_F(Cuda, AdtopkMatchesCpu) {
  const std::vector<std::vector<int64_t>> shapes = {
      {1024, 1024}, {64, 64, 3, 3}, {7, 3, 5}, {50, 1280}, {300, 20000}, {4, 1}, {100000}, {2, 3, 1, 1},
      // Rows of every warp kernel (d1 <= 32, 64, 128, 256) and the first block-kernel row.
      {4096, 4}, {1000, 32}, {500, 33}, {300, 100}, {200, 256}, {100, 257}, {64, 200, 3}};
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (const Dist d : {Dist::kGaussian, Dist::kSmallInts}) {
      const auto g = make_gradient(d, n, 8);
      const auto dg = to_device(g);
      for (const double rho : {0.001, 0.01, 0.1, 1.0}) {
        const Selection want = adtopk(g.data(), shape, rho);
        DeviceBuffer<float> v(want.size());
        DeviceBuffer<int32_t> i(want.size());
        ASSERT_EQ(cuda::adtopk(dg.data(), shape, rho, v.data(), i.data(), ws), want.size());
        ASSERT_EQ(i.download(), want.indices) << shape.size() << " n=" << n << " rho=" << rho;
        ASSERT_EQ(bits_of(v.download()), bits_of(want.values));
      }
    }
  }
  std::vector<float> bad(12, 1.f);
  bad[5] = std::numeric_limits<float>::infinity();
  const auto dbad = to_device(bad);
  DeviceBuffer<float> v(12);
  DeviceBuffer<int32_t> i(12);
  try {
    cuda::adtopk(dbad.data(), {3, 2, 2}, 0.5, v.data(), i.data(), ws);
    FAIL();
  } catch (const NonFiniteError& e) {
    EXPECT_EQ(e.index(), 5);
  }
}

TEST_F(Cuda, PackUnpackMatchCpu) {
  const std::vector<int64_t> offsets{0, 100000, 100037, 600037};
  const int64_t n = offsets.back();
  const int P = 5;
  std::vector<float> all_v;
  std::vector<int32_t> all_i;
  std::vector<int64_t> rank_counts;
  for (int r = 0; r < P; ++r) {
    const auto buf = make_gradient(Dist::kGaussian, n, 90 + r);
    std::vector<int32_t> local;
    std::vector<int64_t> counts;
    for (size_t t = 0; t + 1 < offsets.size(); ++t) {
      const Selection s = topk_abs(buf.data() + offsets[t], offsets[t + 1] - offsets[t],
                                   (r + 1) * (offsets[t + 1] - offsets[t]) / 50);
      local.insert(local.end(), s.indices.begin(), s.indices.end());
      counts.push_back(s.size());
    }
    const Selection want = pack(buf.data(), offsets, local.data(), counts);
    const auto dbuf = to_device(buf);
    const auto dlocal = to_device(local);
    DeviceBuffer<float> v(want.size());
    DeviceBuffer<int32_t> i(want.size());
    ASSERT_EQ(cuda::pack(dbuf.data(), offsets, dlocal.data(), counts, v.data(), i.data(), ws), want.size());
    ASSERT_EQ(i.download(), want.indices);
    ASSERT_EQ(bits_of(v.download()), bits_of(want.values));
    all_v.insert(all_v.end(), want.values.begin(), want.values.end());
    all_i.insert(all_i.end(), want.indices.begin(), want.indices.end());
    rank_counts.push_back(want.size());
  }
  std::vector<float> want(n);
  unpack(all_v.data(), all_i.data(), rank_counts, n, want.data());
  const auto dv = to_device(all_v);
  const auto di = to_device(all_i);
  DeviceBuffer<float> dense(n);
  cuda::unpack(dv.data(), di.data(), rank_counts, n, dense.data(), ws);
  ASSERT_EQ(bits_of(dense.download()), bits_of(want)) << "deterministic unpack";
  cuda::unpack(dv.data(), di.data(), rank_counts, n, dense.data(), ws, nullptr, false);
  const auto loose = dense.download();
  // Atomic adds in any order: a sum of P terms is off by at most (P-1) u S
  // (S the sum of their magnitudes, u = 2^-24), the division adds u |result|;
  // both under P u S/P. A bound relative to the result itself fails under
  // cancellation (seen on an H100: 4.7e-11 off a result of 2.5e-5).
  std::vector<float> abs_v(all_v.size());
  for (size_t j = 0; j < all_v.size(); ++j) abs_v[j] = std::fabs(all_v[j]);
  std::vector<float> magnitude(n);
  unpack(abs_v.data(), all_i.data(), rank_counts, n, magnitude.data());
  const double u = std::ldexp(1.0, -24);
  for (int64_t e = 0; e < n; ++e) ASSERT_NEAR(loose[e], want[e], 2 * P * u * magnitude[e]) << e;
  // Equal slices on the same (unequal-count) stream: identical dense and loss.
  const int64_t len = static_cast<int64_t>(all_i.size());
  std::vector<float> want_eq(n);
  const int64_t lost = unpack_equal_slices(all_v.data(), all_i.data(), len, P, n, want_eq.data());
  EXPECT_GT(lost, 0);
  EXPECT_EQ(cuda::unpack_equal_slices(dv.data(), di.data(), len, P, n, dense.data(), ws), lost);
  ASSERT_EQ(bits_of(dense.download()), bits_of(want_eq));
  // Bad indices are reported.
  const std::vector<int32_t> bad_local{0, 100000};
  const auto dbad = to_device(bad_local);
  DeviceBuffer<float> v(2);
  DeviceBuffer<int32_t> i(2);
  const auto buf = to_device(std::vector<float>(n, 1.f));
  EXPECT_THROW(cuda::pack(buf.data(), offsets, dbad.data(), {2, 0, 0}, v.data(), i.data(), ws),
               std::out_of_range);
  EXPECT_THROW(cuda::unpack(dv.data(), di.data(), rank_counts, 10, dense.data(), ws), std::out_of_range);
}

TEST_F(Cuda, ThresholdCompactionMatchesCpu) {
  const auto g = make_gradient(Dist::kLaplace, 1'000'000, 9);
  const auto dg = to_device(g);
  for (const bool strict : {true, false}) {
    for (const float thr : {0.0f, 1e-3f, 5e-3f}) {
      EXPECT_EQ(cuda::count_abs_threshold(dg.data(), 1'000'000, thr, strict, ws),
                count_abs_threshold(g.data(), 1'000'000, thr, strict));
      const Selection want = select_abs_threshold(g.data(), 1'000'000, thr, strict, 5000);
      const Selection got = cuda::to_host(cuda::select_abs_threshold(dg.data(), 1'000'000, thr, strict, 5000, ws));
      ASSERT_EQ(got.indices, want.indices);
      ASSERT_EQ(bits_of(got.values), bits_of(want.values));
    }
  }
}

// Estimators: same steps as the CPU; reductions may round differently, so the
// thresholds must agree closely and each GPU selection must be exactly the CPU
// threshold compaction at the GPU's own threshold.
void expect_estimate(const std::vector<float>& g, const Estimate& cpu, const cuda::DeviceEstimate& gpu,
                     int64_t limit, const std::string& what) {
  const Selection got = cuda::to_host(gpu.selection);
  EXPECT_EQ(gpu.iterations, cpu.iterations) << what;
  EXPECT_EQ(gpu.exact, cpu.exact) << what;
  EXPECT_NEAR(gpu.threshold, cpu.threshold, 1e-5 * std::fabs(cpu.threshold) + 1e-30) << what;
  if (gpu.exact) {
    EXPECT_EQ(got.indices, cpu.selection.indices) << what;
  } else {
    const Selection want =
        select_abs_threshold(g.data(), static_cast<int64_t>(g.size()), gpu.threshold, gpu.strict, limit);
    EXPECT_EQ(got.indices, want.indices) << what;
    EXPECT_EQ(bits_of(got.values), bits_of(want.values)) << what;
  }
}

TEST_F(Cuda, EstimatorsFollowCpu) {
  const int64_t n = 2'000'000;
  for (const Dist d : {Dist::kGaussian, Dist::kLaplace}) {
    const auto g = make_gradient(d, n, 10);
    const auto dg = to_device(g);
    for (const double rho : {0.001, 0.01, 0.1}) {
      const std::string what = std::string(dist_name(d)) + " rho=" + std::to_string(rho);
      const int64_t k = k_for_density(n, rho);
      expect_estimate(g, dgc(g.data(), n, rho, 5), cuda::dgc(dg.data(), n, rho, 5, ws), k, "dgc " + what);
      expect_estimate(g, gaussiank(g.data(), n, rho), cuda::gaussiank(dg.data(), n, rho, ws), -1,
                      "gaussiank " + what);
      expect_estimate(g, redsync(g.data(), n, rho), cuda::redsync(dg.data(), n, rho, ws), -1, "redsync " + what);
      for (const SidcoFit fit : {SidcoFit::kExponential, SidcoFit::kGPareto, SidcoFit::kGammaGPareto})
        for (const int stages : {1, 3})
          expect_estimate(g, sidco(g.data(), n, rho, fit, stages), cuda::sidco(dg.data(), n, rho, fit, stages, ws),
                          -1, "sidco " + what);
    }
  }
  auto bad = make_gradient(Dist::kGaussian, 1000, 1);
  bad[321] = std::numeric_limits<float>::quiet_NaN();
  const auto dbad = to_device(bad);
  try {
    cuda::gaussiank(dbad.data(), 1000, 0.01, ws);
    FAIL();
  } catch (const NonFiniteError& e) {
    EXPECT_EQ(e.index(), 321);
  }
}

TEST_F(Cuda, CopyBandwidthIsPositive) {
  const double bw = cuda::measure_copy_bandwidth(size_t{256} << 20, 5, ws);
  std::printf("device copy bandwidth: %.1f GB/s\n", bw / 1e9);
  EXPECT_GT(bw, 1e10);
}

}  // namespace
}  // namespace sparsefuse::kernels
