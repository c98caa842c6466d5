#include "policy/seed/seed_cost.h"

#include <array>
#include <stdexcept>

#include <gtest/gtest.h>

namespace sparsefuse::policy::seed {
namespace {

TEST(SeedCost, BackwardTimeTableAndUnknownModels) {
  EXPECT_EQ(seed_backward_time_s("resnet50"), 0.035237);
  EXPECT_EQ(seed_backward_time_s("resnet152"), 0.057006);
  EXPECT_EQ(seed_backward_time_s("resnet101"), 0.054357);
  EXPECT_EQ(seed_backward_time_s("vgg16"), 0.015517);
  EXPECT_EQ(seed_backward_time_s("vgg19"), 0.017644);
  EXPECT_EQ(seed_backward_time_s("lstm"), 0.065097);
  EXPECT_EQ(seed_backward_time_s("transformer"), 0.093534);
  EXPECT_EQ(seed_backward_time_s("bert_base"), 0.046414);
  EXPECT_EQ(seed_backward_time_s("gpt_2"), 0.0);
  EXPECT_EQ(seed_backward_time_s("bert_large"), 0.0);
  EXPECT_EQ(seed_backward_time_s("vit"), 0.0);
}

// The names the seed scripts pass: BERT-large's script passes none and runs
// with BERT-base's backward time; GPT-2 and ViT pass gpt_2, which has none.
TEST(SeedCost, ScriptModelKeys) {
  EXPECT_EQ(seed_script_model_key("bert-base"), "bert_base");
  EXPECT_EQ(seed_script_model_key("bert-large"), "bert_base");
  EXPECT_EQ(seed_backward_time_s(seed_script_model_key("bert-large")), 0.046414);
  EXPECT_EQ(seed_script_model_key("gpt2-large"), "gpt_2");
  EXPECT_EQ(seed_script_model_key("vit-large"), "gpt_2");
  EXPECT_EQ(seed_backward_time_s(seed_script_model_key("vit-large")), 0.0);
  EXPECT_EQ(seed_script_model_key("resnet50-cifar100"), "resnet50");
  EXPECT_EQ(seed_script_model_key("resnet50"), "resnet50");
  EXPECT_EQ(seed_script_model_key("resnet152"), "resnet152");
  EXPECT_EQ(seed_script_model_key("vgg16"), "vgg16");
  EXPECT_EQ(seed_script_model_key("my-model"), "my-model");
  EXPECT_EQ(seed_backward_time_s(seed_script_model_key("my-model")), 0.0);
}

TEST(SeedCost, DiffMin) {
  EXPECT_EQ(seed_diff_min_s("lstm"), 5.8047e-3);
  EXPECT_EQ(seed_diff_min_s("transformer"), 9.0568e-2);
  EXPECT_EQ(seed_diff_min_s("bert_base"), 0.0);
  EXPECT_EQ(seed_diff_min_s("anything"), 0.0);
}

TEST(SeedCost, BackwardTimeIsProportional) {
  EXPECT_DOUBLE_EQ(seed_tb_s(25, 100, 0.04), 0.01);
  EXPECT_EQ(seed_tb_s(25, 0, 0.04), 0.0);
  EXPECT_EQ(seed_tb_s(25, 100, 0.0), 0.0);
}

TEST(SeedCost, CommKbTruncatesLikePythonInt) {
  EXPECT_EQ(seed_tc_kb(255, 1.0), 0);  // 0.996 KB
  EXPECT_EQ(seed_tc_kb(256, 1.0), 1);
  EXPECT_EQ(seed_tc_kb(2559, 1.0), 9);
  // 23040 * 0.7 * 4 / 1024 is 63 in exact arithmetic but 62.99999999999999 in
  // doubles; Python's int() gives 62 (checked with CPython 3.11).
  EXPECT_EQ(seed_tc_kb(23040, 0.7), 62);
}

TEST(SeedCost, CommTableInterpolatesAndClamps) {
  EXPECT_DOUBLE_EQ(seed_tc_s(0, 1.0), 5.115e-3);        // x = 0 < 0.1 KB
  EXPECT_DOUBLE_EQ(seed_tc_s(255, 1.0), 5.115e-3);      // x = 0
  EXPECT_DOUBLE_EQ(seed_tc_s(256, 1.0), 5.463e-3);      // x = 1 KB, a knot
  EXPECT_DOUBLE_EQ(seed_tc_s(55 * 256, 1.0), 5.777e-3);  // 55 KB: 5.578 + 45 * 0.398 / 90
  EXPECT_DOUBLE_EQ(seed_tc_s(150000LL * 256, 1.0), 1.5161);
  EXPECT_DOUBLE_EQ(seed_tc_s(774030080, 1.0), 1.5161);  // GPT-2-large dense: clamped
  // rho scales the argument: 55 KB at rho = 0.5 needs twice the elements.
  EXPECT_DOUBLE_EQ(seed_tc_s(110 * 256, 0.5), 5.777e-3);
}

TEST(SeedCost, CompressTablesInterpolateAndClamp) {
  EXPECT_EQ(seed_tz_kb(0), 1);
  EXPECT_EQ(seed_tz_kb(255), 1);
  EXPECT_EQ(seed_tz_kb(2560), 10);
  EXPECT_DOUBLE_EQ(seed_tz_s(1), 0.0768e-3);          // below 10 KB
  EXPECT_DOUBLE_EQ(seed_tz_s(2560), 0.0768e-3);       // 10 KB knot
  EXPECT_DOUBLE_EQ(seed_tz_s(55 * 256), 0.1265e-3);   // 0.0768 + 45 * 0.0994 / 90
  EXPECT_DOUBLE_EQ(seed_tz_s(5500 * 256), 0.2792e-3);  // 0.3171 - 4500 * 0.0758 / 9000
  EXPECT_DOUBLE_EQ(seed_tz_s(1000000LL * 256), 1.5996e-3);
  EXPECT_DOUBLE_EQ(seed_tz_s(4000000LL * 256), 1.5996e-3);

  EXPECT_DOUBLE_EQ(seed_tz_s(2560, SeedSparsifier::kDgc), 0.340e-3);
  EXPECT_DOUBLE_EQ(seed_tz_s(2560, "redsync"), 0.416e-3);
  EXPECT_DOUBLE_EQ(seed_tz_s(25600, "randomk"), 0.132e-3);
  EXPECT_DOUBLE_EQ(seed_tz_s(1000000LL * 256, "sidco"), 11.03e-3);
  EXPECT_DOUBLE_EQ(seed_tz_s(2560, "topk"), seed_tz_s(2560));
  EXPECT_THROW(seed_tz_s(2560, "gaussian"), std::invalid_argument);  // row commented out in the seed
}

TEST(SeedCost, ParseSparsifier) {
  EXPECT_EQ(parse_seed_sparsifier("sidco-exp"), SeedSparsifier::kSidcoExp);
  EXPECT_EQ(parse_seed_sparsifier("dgc"), SeedSparsifier::kDgc);
  EXPECT_FALSE(parse_seed_sparsifier("top-k").has_value());
}

TEST(SeedCost, InterpMatchesScipyOnKnotsAndRejectsBadTables) {
  const std::array<double, 3> xs = {0, 10, 20};
  const std::array<double, 3> ys = {1, 2, 0};
  EXPECT_EQ(interp_linear_clamped(xs, ys, -5), 1.0);
  EXPECT_EQ(interp_linear_clamped(xs, ys, 0), 1.0);
  EXPECT_EQ(interp_linear_clamped(xs, ys, 10), 2.0);  // left segment's formula
  EXPECT_EQ(interp_linear_clamped(xs, ys, 15), 1.0);
  EXPECT_EQ(interp_linear_clamped(xs, ys, 20), 0.0);
  EXPECT_EQ(interp_linear_clamped(xs, ys, 99), 0.0);
  const std::array<double, 1> one = {0};
  EXPECT_THROW(interp_linear_clamped(one, one, 0), std::invalid_argument);
}

}  // namespace
}  // namespace sparsefuse::policy::seed
