// The Horovod coordinator driven directly, without the simulator — as the
// runtime will drive it.
#include <gtest/gtest.h>

#include "policy/horovod.h"

namespace sparsefuse::policy {
namespace {

class FixedCost : public CostEstimator {
 public:
  int workers() const override { return 2; }
  TimeNs collective_ns(Collective, int64_t bytes) const override { return bytes; }
  TimeNs coordination_ns() const override { return 100; }
    TimeNs compression_ns(Sparsifier, int64_t, double) const override { return 0; }
    TimeNs cpu_compression_ns(Sparsifier, int64_t, double) const override { return 0; }
};

GradientModel four_tensors() {
  GradientModel m;
  m.names = {"a", "b", "c", "d"};
  m.elements = {250, 250, 250, 500};
  m.ready_ns = {1000, 1500, 3000, 4000};
  m.backward_ns = 4000;
  return m;
}

std::vector<int> counts(const std::vector<CoordinatedFlush>& flushes) {
  std::vector<int> out;
  for (const auto& f : flushes) out.push_back(f.bucket.tensors());
  return out;
}

TEST(HorovodCoordinator, FusesWhatIsReadyEverywhereInTheSameCycle) {
  GradientModel m = four_tensors();
  HorovodScheme scheme(m, FixedCost(), {2500, 1000});
  EXPECT_EQ(scheme.make_worker_policy(0), nullptr);
  auto c = scheme.make_coordinator();
  c->begin_iteration(0);
  // Worker 0 is early, worker 1 late: readiness everywhere = 1200, 1900, 2100, 2900.
  TimeNs w0[] = {100, 200, 300, 400}, w1[] = {1200, 1900, 2100, 2900};
  for (int t = 0; t < 4; ++t) {
    c->report_ready(0, t, w0[t]);
    c->report_ready(1, t, w1[t]);
  }
  std::vector<CoordinatedFlush> out;
  c->resolve(out);
  // Ticks every 1000 ns: 2000 (a, b), 3000 (c, d: 3000 B > 2500, so split).
  EXPECT_EQ(counts(out), (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(out[0].not_before, 2100);
  EXPECT_EQ(out[1].not_before, 3100);
  EXPECT_EQ(out[2].not_before, 3100);
  EXPECT_EQ(out[0].bucket.bytes_per_worker, 2000);

  // A new iteration starts from scratch.
  c->begin_iteration(1);
  for (int t = 0; t < 4; ++t) c->report_ready(0, t, 10);
  out.clear();
  c->resolve(out);
  EXPECT_EQ(counts(out), (std::vector<int>{2, 1, 1}));  // one tick; a+b = 2000 B, c+d would be 3000 B
  EXPECT_EQ(out[2].not_before, 1100);
}

TEST(HorovodCoordinator, ZeroThresholdDisablesFusion) {
  GradientModel m = four_tensors();
  HorovodScheme scheme(m, FixedCost(), {0, 1000});
  auto c = scheme.make_coordinator();
  c->begin_iteration(0);
  for (int t = 0; t < 4; ++t) c->report_ready(0, t, 5);
  std::vector<CoordinatedFlush> out;
  c->resolve(out);
  EXPECT_EQ(counts(out), (std::vector<int>{1, 1, 1, 1}));
}

TEST(HorovodCoordinator, NegotiationSlowerThanTheCycleStretchesIt) {
  GradientModel m = four_tensors();
  HorovodScheme scheme(m, FixedCost(), {1 << 30, 50});  // cycle 50 ns < negotiation 100 ns
  auto c = scheme.make_coordinator();
  c->begin_iteration(0);
  for (int t = 0; t < 4; ++t) c->report_ready(0, t, 130);
  std::vector<CoordinatedFlush> out;
  c->resolve(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].not_before, 200 + 100);  // tick at 200 (period 100), then negotiation
}

}  // namespace
}  // namespace sparsefuse::policy
