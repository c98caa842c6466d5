#include "runtime/flush_probe.h"

#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace sparsefuse::runtime {
namespace {

// One gradient per hook, of SIZES[k] elements.
struct Gradients {
  explicit Gradients(std::vector<int64_t> s) : sizes(std::move(s)) {
    for (int64_t n : sizes) data.emplace_back(size_t(n), 0.5f);
  }
  std::vector<int64_t> sizes;
  std::vector<std::vector<float>> data;
};

void run_iteration(FlushProbe& probe, const Gradients& g) {
  probe.begin_iteration();
  for (size_t k = 0; k < g.sizes.size(); ++k) probe.hook(g.data[k].data(), g.sizes[k]);
  probe.end_iteration();
}

TEST(FlushProbe, RefusesNoHooksOrNoElements) {
  EXPECT_THROW(FlushProbe(0, 64), std::invalid_argument);
  EXPECT_THROW(FlushProbe(3, 0), std::invalid_argument);
}

TEST(FlushProbe, RefusesCallsOutOfOrder) {
  FlushProbe probe(3, 64);
  const std::vector<float> g(10, 1.0f);
  EXPECT_THROW(probe.hook(g.data(), 10), std::logic_error);
  EXPECT_THROW(probe.end_iteration(), std::logic_error);
  probe.begin_iteration();
  EXPECT_THROW(probe.begin_iteration(), std::logic_error);
  EXPECT_THROW(probe.hook(nullptr, 10), std::invalid_argument);
  EXPECT_THROW(probe.hook(g.data(), 0), std::invalid_argument);
  probe.hook(g.data(), 10);
  probe.end_iteration();
  EXPECT_THROW(probe.end_iteration(), std::logic_error);
}

TEST(FlushProbe, RefusesMoreHooksThanDeclared) {
  FlushProbe probe(2, 64);
  const std::vector<float> g(10, 1.0f);
  probe.begin_iteration();
  probe.hook(g.data(), 10);
  probe.hook(g.data(), 10);
  EXPECT_THROW(probe.hook(g.data(), 10), std::invalid_argument);
}

TEST(FlushProbe, RefusesAnIterationUnlikeTheFirst) {
  FlushProbe probe(3, 64);
  const Gradients g({10, 20});
  run_iteration(probe, g);
  probe.begin_iteration();
  probe.hook(g.data[0].data(), 10);
  EXPECT_THROW(probe.hook(g.data[0].data(), 10), std::invalid_argument);  // hook 1 made 20 ready before
  FlushProbe fewer(3, 64);
  run_iteration(fewer, g);
  fewer.begin_iteration();
  fewer.hook(g.data[0].data(), 10);
  EXPECT_THROW(fewer.end_iteration(), std::invalid_argument);  // hook 1 missing
}

// Iteration 0 learns the hooks, 1 (engine) and 2 (kernel) warm up; 3 and 5
// are engine iterations, 4 a kernel one: every hook of a measured iteration
// is a sample, and each hook is probed at min(its elements, the maximum).
TEST(FlushProbe, ProbesEachHookAtItsOwnSizeUpToTheMaximum) {
  FlushProbe probe(4, 100);
  const Gradients g({30, 5000, 100, 7});
  for (int it = 0; it < 4; ++it) run_iteration(probe, g);
  EXPECT_THROW(probe.summary(), std::logic_error);  // no kernel iteration measured yet
  run_iteration(probe, g);
  run_iteration(probe, g);
  const FlushProbeSummary s = probe.summary();
  ASSERT_EQ(s.hooks.size(), 4u);
  const int64_t probed[] = {30, 100, 100, 7};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(s.hooks[k].elements, probed[k]) << k;
    EXPECT_GT(s.hooks[k].flush_us, 0) << k;
    EXPECT_GT(s.hooks[k].kernel_us, 0) << k;
  }
  EXPECT_EQ(s.flushes, 8);  // 4 hooks x iterations 3 and 5
  EXPECT_EQ(s.kernels, 4);  // 4 hooks x iteration 4
  EXPECT_EQ(s.write_backs, 0);  // no iteration was given its gradients
  EXPECT_EQ(s.write_back_us, 0);
}

// Given the hooks' gradients, every iteration after the first writes each
// hook's average back (one rank: its own values, in engine and kernel
// iterations, at and over the maximum) and the measured ones are timed. A
// wrong count is refused and leaves the iteration open.
TEST(FlushProbe, WritesEveryHooksAverageBackAndTimesIt) {
  FlushProbe probe(3, 100);
  Gradients g({30, 5000, 100});
  std::vector<std::vector<float>> out;
  for (int64_t n : g.sizes) out.emplace_back(size_t(n));
  float* outputs[] = {out[0].data(), out[1].data(), out[2].data()};
  for (int it = 0; it < 6; ++it) {
    probe.begin_iteration();
    for (size_t k = 0; k < 3; ++k) {
      std::vector<float>& data = g.data[k];  // new values every iteration
      for (size_t i = 0; i < data.size(); ++i) data[i] = float(it * 10 + int(k)) + 0.5f * float(i % 7);
      probe.hook(data.data(), g.sizes[k]);
      std::fill(out[k].begin(), out[k].end(), -1.0f);
    }
    EXPECT_THROW(probe.end_iteration(outputs, 2), std::invalid_argument);
    float* with_null[] = {out[0].data(), nullptr, out[2].data()};
    EXPECT_THROW(probe.end_iteration(with_null, 3), std::invalid_argument);
    probe.end_iteration(outputs, 3);
    for (size_t k = 0; k < 3; ++k) {
      if (it == 0) {
        EXPECT_EQ(out[k][0], -1.0f) << "iteration 0 only learns";
      } else {
        EXPECT_EQ(out[k], g.data[k]) << "iteration " << it << ", hook " << k;
      }
    }
  }
  const FlushProbeSummary s = probe.summary();
  EXPECT_EQ(s.write_backs, 3);  // iterations 3, 4 and 5
  EXPECT_GT(s.write_back_us, 0);
}

// The median over the hooks of each hook's flush - kernel, floored at 0.
TEST(FlushProbe, BookkeepingIsTheMedianHooksDifferenceNeverNegative) {
  FlushProbeSummary s;
  EXPECT_DOUBLE_EQ(s.bookkeeping_us(), 0.0);
  s.hooks = {{64, 0.2, 0.5}, {64, 0.75, 0.5}, {64, 1.5, 0.5}};  // differences 0 (floored), 0.25, 1
  EXPECT_DOUBLE_EQ(s.bookkeeping_us(), 0.25);
  s.hooks.push_back({64, 2.0, 0.5});  // 1.5: the mean of the middle two, 0.25 and 1
  EXPECT_DOUBLE_EQ(s.bookkeeping_us(), 0.625);
}

}  // namespace
}  // namespace sparsefuse::runtime
