// Hand-computed statistics of the fidelity suite.
#include <gtest/gtest.h>

#include "tools/fidelity/report.h"
#include "tools/fidelity/stats.h"

namespace sparsefuse::fidelity {
namespace {

TEST(KendallTau, HandComputedOrderings) {
  EXPECT_DOUBLE_EQ(*kendall_tau({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(*kendall_tau({1, 2, 3}, {30, 20, 10}), -1.0);
  // One swapped pair of three: (2 concordant - 1 discordant) / 3.
  EXPECT_DOUBLE_EQ(*kendall_tau({1, 2, 3}, {1, 3, 2}), 1.0 / 3);
  // tau-b with a tie in the prediction: pairs (1,2) tie in b; 2 concordant.
  EXPECT_NEAR(*kendall_tau({1, 2, 3}, {5, 5, 9}), 2 / std::sqrt(3.0 * 2.0), 1e-12);
  EXPECT_FALSE(kendall_tau({1}, {1}).has_value());
  EXPECT_FALSE(kendall_tau({1, 1}, {2, 3}).has_value());
}

Case collective_case() {
  Case c;
  c.kind = "collective";
  c.category = "nccl-tests";
  c.role = "calibration";
  c.id = "x";
  // Errors: +100 % at 1 KiB (not judged: there are sizes >= 1 MiB), -10 %, +20 %, +40 % above.
  c.points = {{1024, "", 8, 10, 20}, {1 << 20, "", 8, 100, 90}, {2 << 20, "", 8, 100, 120}, {4 << 20, "", 8, 100, 140}};
  return c;
}

TEST(SummaryError, CollectivesAreJudgedOnSizesFromOneMiB) {
  Case c = collective_case();
  EXPECT_EQ(summary_points(c).size(), 3u);
  EXPECT_NEAR(summary_error(c), 0.2, 1e-12);  // median of 0.1, 0.2, 0.4
  EXPECT_NEAR(category_mae({c}).at("nccl-tests"), (0.1 + 0.2 + 0.4) / 3, 1e-12);
  EXPECT_TRUE(bound_violations({c}, {{"x", 0.25}}).empty());
  EXPECT_EQ(bound_violations({c}, {{"x", 0.15}}).size(), 1u);
  EXPECT_EQ(bound_violations({c}, {}).size(), 1u);  // a microbenchmark case without a bound fails too
  c.points.pop_back();  // two sizes >= 1 MiB are no median: every size is judged
  EXPECT_EQ(summary_points(c).size(), 3u);
  EXPECT_NEAR(summary_error(c), 0.2, 1e-12);  // median of 1.0, 0.1, 0.2
}

TEST(SummaryError, ScalingCasesUseTheMeanAndRankMethodsPerWorkerCount) {
  Case c;
  c.kind = "scaling";
  c.compare_methods = true;
  c.points = {{0, "a", 2, 1.8, 1.9}, {0, "b", 2, 1.9, 1.8}, {0, "a", 4, 3.0, 3.3}, {0, "b", 4, 3.5, 3.5}};
  auto taus = method_ranking_taus(c);
  ASSERT_EQ(taus.size(), 2u);
  EXPECT_EQ(taus[0], std::make_pair(2, -1.0));
  EXPECT_EQ(taus[1], std::make_pair(4, 1.0));
  double mean = (0.1 / 1.8 + 0.1 / 1.9 + 0.3 / 3.0 + 0.0) / 4;
  EXPECT_NEAR(summary_error(c), mean, 1e-12);
}

}  // namespace
}  // namespace sparsefuse::fidelity
