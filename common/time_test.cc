#include "common/time.h"

#include <cmath>

#include <gtest/gtest.h>

#include "common/rng.h"

namespace sparsefuse {
namespace {

// round_ns replaces std::llround on the simulator's hot path; any difference
// would change simulated results, so it must agree everywhere.
TEST(Time, RoundNsEqualsLlroundAtHalvesAndNeighbours) {
  for (double base : {0.0, 1.0, 2.0, 1e6, 1e9, 12345678901.0, 4503599627370495.0}) {
    for (double x : {base, base + 0.5, base - 0.5, std::nextafter(base + 0.5, 0.0), std::nextafter(base + 0.5, 1e300),
                     std::nextafter(base - 0.5, 0.0), 0.49999999999999994}) {
      EXPECT_EQ(round_ns(x), std::llround(x)) << x;
      EXPECT_EQ(round_ns(-x), std::llround(-x)) << -x;
    }
  }
}

TEST(Time, RoundNsEqualsLlroundOnRandomScaledDurations) {
  Rng rng(42);
  for (int i = 0; i < 1'000'000; ++i) {
    const double x = double(rng.below(uint64_t(1) << 40)) * (0.5 + rng.uniform());
    ASSERT_EQ(round_ns(x), std::llround(x)) << x;
  }
}

TEST(Time, RoundNsFallsBackBeyondExactRange) {
  for (double x : {4503599627370496.0, 9007199254740993.0, 1e18, -1e18}) EXPECT_EQ(round_ns(x), std::llround(x)) << x;
}

}  // namespace
}  // namespace sparsefuse
