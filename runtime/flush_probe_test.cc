#include "runtime/flush_probe.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace sparsefuse::runtime {
namespace {

void run_iteration(FlushProbe& probe, int hooks) {
  probe.begin_iteration();
  for (int h = 0; h < hooks; ++h) probe.hook();
  probe.end_iteration();
}

TEST(FlushProbe, RefusesNoHooksOrNoElements) {
  EXPECT_THROW(FlushProbe(0, 64), std::invalid_argument);
  EXPECT_THROW(FlushProbe(3, 0), std::invalid_argument);
}

TEST(FlushProbe, RefusesCallsOutOfOrder) {
  FlushProbe probe(3, 64);
  EXPECT_THROW(probe.hook(), std::logic_error);
  EXPECT_THROW(probe.end_iteration(), std::logic_error);
  probe.begin_iteration();
  EXPECT_THROW(probe.begin_iteration(), std::logic_error);
  for (int h = 0; h < 3; ++h) probe.hook();
  EXPECT_THROW(probe.hook(), std::logic_error);  // a fourth
  probe.end_iteration();
  EXPECT_THROW(probe.end_iteration(), std::logic_error);
}

// A parameter without a gradient fires no hook: its tensor is handed at the
// end of the iteration and is no sample.
TEST(FlushProbe, FewerHooksThanDeclaredGiveFewerSamples) {
  FlushProbe probe(4, 64);
  for (int it = 0; it < 4; ++it) run_iteration(probe, 3);
  const FlushProbeSummary s = probe.summary();
  EXPECT_EQ(s.flushes, 3);
  EXPECT_EQ(s.kernels, 3);
}

// Iterations 0 (engine) and 1 (kernel) are warm-ups; 2 and 4 are engine
// iterations, 3 a kernel one: every hook of a measured iteration is a sample.
TEST(FlushProbe, SamplesEveryHookOfTheMeasuredIterations) {
  FlushProbe probe(5, 64);
  for (int it = 0; it < 2; ++it) run_iteration(probe, 5);
  EXPECT_THROW(probe.summary(), std::logic_error);
  run_iteration(probe, 5);
  EXPECT_THROW(probe.summary(), std::logic_error);  // no kernel iteration measured yet
  run_iteration(probe, 5);
  run_iteration(probe, 5);
  const FlushProbeSummary s = probe.summary();
  EXPECT_EQ(s.flushes, 10);
  EXPECT_EQ(s.kernels, 5);
  EXPECT_GT(s.flush_us, 0);
  EXPECT_GT(s.kernel_us, 0);
  EXPECT_DOUBLE_EQ(s.bookkeeping_us(), s.flush_us > s.kernel_us ? s.flush_us - s.kernel_us : 0.0);
}

TEST(FlushProbe, BookkeepingIsNeverNegative) {
  EXPECT_DOUBLE_EQ((FlushProbeSummary{0.2, 0.5, 1, 1}.bookkeeping_us()), 0.0);
  EXPECT_DOUBLE_EQ((FlushProbeSummary{0.75, 0.5, 1, 1}.bookkeeping_us()), 0.25);
}

}  // namespace
}  // namespace sparsefuse::runtime
