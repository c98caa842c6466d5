// The simulator's count model for threshold sparsifiers (policy::count_band,
// policy::banded_count) against what the CPU kernels select. The policy
// library cannot depend on the kernels (both sit on //common only), so this
// test is what ties the model to the kernels: it measures the kernels' counts
// over many random gradients and checks that the modelled band contains them
// and is no wider than they are.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/estimators.h"
#include "kernels/test_util.h"
#include "kernels/topk.h"
#include "policy/sparsifier.h"

namespace sparsefuse::kernels {
namespace {

using testing::Dist;
using testing::dist_name;
using testing::make_gradient;

struct Call {
  Dist dist;
  int64_t k = 0;
  int64_t count = 0;
  int iterations = 0;
  double ratio() const { return double(count) / double(k); }
};

// Gradient sizes, densities and seeds: 3 sizes x 4 densities x 8 seeds per
// distribution. k ranges from 10 to 40,000.
std::vector<Call> measure(const std::vector<Dist>& dists, Estimate (*estimate)(const float*, int64_t, double, uint64_t)) {
  std::vector<Call> calls;
  for (Dist d : dists) {
    for (int64_t n : {10'000, 100'000, 400'000}) {
      for (double rho : {0.001, 0.01, 0.05, 0.1}) {
        for (uint64_t seed = 1; seed <= 8; ++seed) {
          const std::vector<float> g = make_gradient(d, n, seed * 7919 + uint64_t(n));
          const Estimate e = estimate(g.data(), n, rho, seed);
          calls.push_back({d, k_for_density(n, rho), e.selection.size(), e.iterations});
        }
      }
    }
  }
  return calls;
}

Estimate dgc_call(const float* g, int64_t n, double rho, uint64_t seed) { return dgc(g, n, rho, seed); }
Estimate gaussiank_call(const float* g, int64_t n, double rho, uint64_t) { return gaussiank(g, n, rho); }
Estimate redsync_call(const float* g, int64_t n, double rho, uint64_t) { return redsync(g, n, rho); }
Estimate sidco_call(const float* g, int64_t n, double rho, uint64_t) { return sidco(g, n, rho); }

// Gradients whose magnitudes are continuous, as real gradients are.
const std::vector<Dist> kRealistic = {Dist::kGaussian, Dist::kLaplace, Dist::kStudentT3, Dist::kBf16};

TEST(DgcCountBand, KernelCountsStayInsideTheModelledBand) {
  const policy::CountBand band = policy::count_band(policy::Sparsifier::kDgc);
  // Every distribution the kernel tests use, degenerate ones included.
  const std::vector<Call> calls = measure(testing::all_dists(), dgc_call);
  double lo = 1e9, hi = 0;
  for (const Call& c : calls) {
    // Never more than k: DGC truncates to k or takes an exact top-k.
    ASSERT_LE(c.count, c.k) << dist_name(c.dist);
    // Below 0.8 k only when the ten threshold-lowering passes ran out (90 %
    // zeros, or magnitudes spread over 60 binades): outside the model.
    if (10 * c.count < 8 * c.k) {
      EXPECT_EQ(c.iterations, 10) << dist_name(c.dist) << " k=" << c.k << " count=" << c.count;
      continue;
    }
    lo = std::min(lo, c.ratio());
    hi = std::max(hi, c.ratio());
    EXPECT_GE(c.ratio(), band.low - 1e-12) << dist_name(c.dist) << " k=" << c.k;
    EXPECT_LE(c.ratio(), band.high) << dist_name(c.dist) << " k=" << c.k;
  }
  std::printf("dgc kernel ratios (converged calls): [%.4f, %.4f]; model [%.2f, %.2f]\n", lo, hi, band.low,
              band.high);
  // Tight: the measured extremes reach both ends of the modelled band.
  EXPECT_EQ(hi, band.high);
  EXPECT_LE(lo, band.low + 0.005);
}

TEST(DgcCountBand, ModelledShareAtKAndMeanMatchTheKernel) {
  const policy::CountBand band = policy::count_band(policy::Sparsifier::kDgc);
  int at_k_all = 0, n_all = 0;
  double sum_all = 0;
  for (Dist d : kRealistic) {
    int at_k = 0, n = 0;
    for (const Call& c : measure({d}, dgc_call)) {
      if (c.k < 100) continue;  // small k: the ratio moves in steps of 1/k
      at_k += c.count == c.k;
      sum_all += c.ratio();
      ++n;
    }
    const double share = double(at_k) / n;
    std::printf("dgc %-11s share at k %.3f over %d calls\n", dist_name(d), share, n);
    EXPECT_NEAR(share, band.at_high, 0.1) << dist_name(d);
    at_k_all += at_k;
    n_all += n;
  }
  const double share = double(at_k_all) / n_all, mean = sum_all / n_all;
  std::printf("dgc all: share at k %.3f (model %.2f), mean ratio %.4f (model %.4f)\n", share, band.at_high, mean,
              band.mean());
  EXPECT_NEAR(share, band.at_high, 0.04);
  EXPECT_NEAR(mean, band.mean(), 0.01);
}

TEST(DgcCountBand, ModelDrawsCoverTheBandAndNothingElse) {
  const policy::CountBand band = policy::count_band(policy::Sparsifier::kDgc);
  const int64_t k = 10'000, n = 100'000;
  int64_t lo = k, hi = 0;
  int at_k = 0;
  const int draws = 100'000;
  for (int i = 0; i < draws; ++i) {
    const int64_t c = policy::banded_count(band, k, n, (i + 0.5) / draws);
    lo = std::min(lo, c);
    hi = std::max(hi, c);
    at_k += c == k;
  }
  EXPECT_EQ(lo, 8'000);
  EXPECT_EQ(hi, k);
  EXPECT_NEAR(double(at_k) / draws, band.at_high, 1e-3);
  EXPECT_EQ(policy::banded_count(band, 1, 1, 0.0), 1);  // never below one element
  EXPECT_THROW(policy::banded_count(band, k, n, 1.0), std::invalid_argument);
}

// The other estimators: print what the kernels select against the modelled
// bands, for the record. Random-k selects exactly k by construction, and the
// model says so.
TEST(OtherCountBands, MeasuredAgainstTheModel) {
  struct Row {
    const char* name;
    policy::Sparsifier sparsifier;
    Estimate (*call)(const float*, int64_t, double, uint64_t);
  };
  for (const Row& row : {Row{"gaussiank", policy::Sparsifier::kGaussiank, gaussiank_call},
                         Row{"redsync", policy::Sparsifier::kRedsync, redsync_call},
                         Row{"sidco", policy::Sparsifier::kSidco, sidco_call}}) {
    const policy::CountBand band = policy::count_band(row.sparsifier);
    for (Dist d : kRealistic) {
      double lo = 1e9, hi = 0, sum = 0;
      int inside = 0, n = 0;
      for (const Call& c : measure({d}, row.call)) {
        if (c.k < 100) continue;
        lo = std::min(lo, c.ratio());
        hi = std::max(hi, c.ratio());
        sum += c.ratio();
        inside += c.ratio() >= band.low && c.ratio() <= band.high;
        ++n;
      }
      std::printf("%-9s %-11s kernel [%.3f, %.3f] mean %.3f, %.0f%% inside model [%.3f, %.3f]\n", row.name,
                  dist_name(d), lo, hi, sum / n, 100.0 * inside / n, band.low, band.high);
    }
  }
  EXPECT_TRUE(policy::count_band(policy::Sparsifier::kRandomk).exact());
  const std::vector<float> g = make_gradient(Dist::kGaussian, 100'000, 1);
  EXPECT_EQ(randomk(g.data(), 100'000, 1'000, RandomkKey{1, 0, 0}).size(), 1'000);
}

}  // namespace
}  // namespace sparsefuse::kernels
