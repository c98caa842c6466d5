#include <gtest/gtest.h>

#include "policy/adaptive.h"

namespace sparsefuse::policy {
namespace {

// Samples on the line 1000 + 2 * bytes: the fit recovers it exactly.
TEST(MeasuredCost, FitsAlphaBetaByLeastSquares) {
  Measurements m;
  m.workers = 4;
  m.collectives[Collective::kAllreduce] = {{0, 1000}, {100, 1200}, {1000, 3000}};
  m.compressed_elements = 1000;
  m.compression_ns = 5000;
  MeasuredCost cost(m);
  auto [alpha, beta] = cost.fit(Collective::kAllreduce);
  EXPECT_NEAR(alpha, 1000, 1e-6);
  EXPECT_NEAR(beta, 2, 1e-9);
  EXPECT_EQ(cost.collective_ns(Collective::kAllreduce, 500), 2000);
  EXPECT_EQ(cost.collective_ns(Collective::kAllgather, 500), 2000);  // falls back to the allreduce fit
  EXPECT_EQ(cost.compression_ns(Sparsifier::kTopk, 200, 0.01), 1000);  // 5 ns per element
}

TEST(MeasuredCost, OneSizeGivesAConstant) {
  Measurements m;
  m.collectives[Collective::kAllgather] = {{64, 700}, {64, 900}};
  auto [alpha, beta] = MeasuredCost(m).fit(Collective::kAllgather);
  EXPECT_EQ(beta, 0);
  EXPECT_EQ(alpha, 800);
}

TEST(Adaptive, NegotiatedPresetsCannotReplan) {
  Json doc = {{"preset", "horovod"}, {"replan_every", 5}};
  EXPECT_THROW(parse_scheme_config(JsonNode(doc, "f", "/scheme")), InputError);
}

}  // namespace
}  // namespace sparsefuse::policy
