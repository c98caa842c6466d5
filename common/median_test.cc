#include "common/median.h"

#include <gtest/gtest.h>

namespace sparsefuse {
namespace {

TEST(Median, OddAndEvenCounts) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7}), 7);
  EXPECT_EQ(median({5, 5, 1, 9}), 5);
  EXPECT_EQ(median({-1, 8}), 3.5);
}

}  // namespace
}  // namespace sparsefuse
