#include <gtest/gtest.h>

#include <cmath>

#include "sim/variability.h"

namespace sparsefuse::sim {
namespace {

TEST(Variability, NoNoiseMeansIdenticalWorkers) {
  model::VariabilityConfig c;
  ComputeVariability v(c, 8, 1);
  for (int w = 0; w < 8; ++w) EXPECT_EQ(v.next_scale(w), 1.0);
}

TEST(Variability, StragglersAndNodeSpeeds) {
  model::VariabilityConfig c;
  c.straggler_ranks = {3};
  c.straggler_slowdown = 2.0;
  c.workers_per_node = 2;
  c.node_speed_factors = {1.0, 0.5};  // nodes 1, 3 run at half speed
  ComputeVariability v(c, 8, 1);
  std::vector<double> expected = {1, 1, 2, 4, 1, 1, 2, 2};  // worker 3: slow node and straggler
  for (int w = 0; w < 8; ++w) EXPECT_DOUBLE_EQ(v.next_scale(w), expected[w]) << w;
}

TEST(Variability, StragglerCountIsSeeded) {
  model::VariabilityConfig c;
  c.straggler_count = 5;
  c.straggler_slowdown = 1.5;
  ComputeVariability a(c, 100, 42), b(c, 100, 42), other(c, 100, 43);
  EXPECT_EQ(a.stragglers().size(), 5u);
  EXPECT_EQ(a.stragglers(), b.stragglers());
  EXPECT_NE(a.stragglers(), other.stragglers());
}

TEST(Variability, LognormalNoiseHasMeanOneAndTheRequestedCv) {
  model::VariabilityConfig c;
  c.compute_cv = 0.2;
  ComputeVariability v(c, 1, 9);
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = v.next_scale(0);
    sum += x;
    sum_sq += x * x;
  }
  double mean = sum / n, sd = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 0.005);
  EXPECT_NEAR(sd / mean, 0.2, 0.005);
}

}  // namespace
}  // namespace sparsefuse::sim
