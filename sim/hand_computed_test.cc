// Scenarios small enough to derive on paper, matched to the nanosecond.
// Fixtures: tests/data/tiny3.json (tensors a, b, c of 1000 B each, ready at
// 1000, 2000, 3000 ns after backward start; forward 1000 ns, backward 3000 ns,
// optimizer 500 ns) and tests/data/tiny4.json (t0..t3 of 1000, 1000, 1000,
// 2000 B ready at 1000, 1500, 3000, 4000 ns; backward 4000 ns).
// Network everywhere: alpha = 1 us, 8 Gb/s = exactly 1 ns per byte, so a ring
// allreduce of M bytes over p workers takes 2(p-1)*1000 + 2(p-1)/p*M ns.
#include <gtest/gtest.h>

#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

model::Scenario tiny(const std::string& trace, int workers, Json scheme, Json variability = Json::object(),
              int warmup = 0, int iterations = 1) {
  Json doc = {{"model", {{"trace", "tests/data/" + trace}}},
              {"workers", workers},
              {"warmup_iterations", warmup},
              {"iterations", iterations},
              {"scheme", scheme},
              {"network", {{"latency_us", 1.0}, {"bandwidth_gbps", 8.0}}},
              {"variability", variability}};
  return model::parse_scenario(doc, "");
}

std::vector<int> tensors_per_bucket(const model::RunResult& r) {
  std::vector<int> out;
  for (const auto& b : r.buckets) out.push_back(b.bucket.tensors());
  return out;
}

// WFBP, 2 workers, tiny3. Ring allreduce of 1000 B: 2000 + 1000 = 3000 ns.
// Backward starts at 1000; a ready 2000 -> [2000, 5000]; b ready 3000, waits
// for the communicator -> [5000, 8000]; c ready 4000 -> [8000, 11000].
// Backward ends 4000, optimizer [11000, 11500]. Every iteration is 11500 ns.
// Tail 4000..11000 = 7000 ns, all of it under a collective: exposed 7000, wait 0.
// Bucket sync wait = start - own post: a 0, b 5000-3000, c 8000-4000.
TEST(HandComputed, WfbpTwoWorkers) {
  model::RunResult r = simulate(tiny("tiny3.json", 2, "wfbp", Json::object(), 1, 3));
  ASSERT_EQ(r.iteration_ns.size(), 3u);
  for (TimeNs t : r.iteration_ns) EXPECT_EQ(t, 11500);
  EXPECT_EQ(tensors_per_bucket(r), (std::vector<int>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(r.buckets[0].sync_wait_s, 0.0);
  EXPECT_DOUBLE_EQ(r.buckets[1].sync_wait_s, 2000e-9);
  EXPECT_DOUBLE_EQ(r.buckets[2].sync_wait_s, 4000e-9);
  EXPECT_DOUBLE_EQ(r.buckets[1].duration_s, 3000e-9);
  EXPECT_NEAR(r.breakdown.forward, 1000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.backward, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.communication_exposed, 7000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 0.0, 1e-15);
  EXPECT_NEAR(r.breakdown.optimizer, 500e-9, 1e-15);
}

// SyncEA, 3 workers, worker 2 a straggler at 2x. One bucket of 3000 B:
// 2*2*1000 + (4/3)*3000 = 8000 ns. Iteration 0: workers 0, 1 post at 4000,
// worker 2 (forward 2000, backward 6000) at 8000; allreduce [8000, 16000];
// optimizer ends at 16500 (workers 0, 1) and 17000 (worker 2). Iteration 1
// starts at 16500 / 17000: posts at 20500 and 25000, allreduce [25000,
// 33000], ends 33500 / 34000: 17000 ns per iteration.
// Breakdown (iteration 1): workers 0,1: forward 1000, backward 3000, tail
// 20500..33000 = 12500 of which 8000 exposed, 4500 sync wait, optimizer 500;
// worker 2: 2000, 6000, 8000 exposed, 0 wait, 1000. Means: 4000/3, 4000,
// 8000, 3000, 2000/3.
TEST(HandComputed, SyncEaWithStraggler) {
  Json variability = {{"stragglers", {{"ranks", {2}}, {"slowdown", 2.0}}}};
  model::RunResult r = simulate(tiny("tiny3.json", 3, "syncea", variability, 1, 2));
  ASSERT_EQ(r.iteration_ns.size(), 2u);
  EXPECT_EQ(r.iteration_ns[0], 17000);
  EXPECT_EQ(r.iteration_ns[1], 17000);
  EXPECT_EQ(tensors_per_bucket(r), (std::vector<int>{3}));
  EXPECT_DOUBLE_EQ(r.buckets[0].duration_s, 8000e-9);
  EXPECT_NEAR(r.buckets[0].sync_wait_s, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.forward, 4000e-9 / 3, 1e-15);
  EXPECT_NEAR(r.breakdown.backward, 4000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.communication_exposed, 8000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.optimizer, 2000e-9 / 3, 1e-15);
}

// Horovod, 2 workers, tiny4, worker 1 a straggler at 1.5x; cycle 2.5 us,
// threshold 2500 B; negotiation = ceil(log2 2) * alpha = 1000 ns.
// Ready times: worker 0 (backward from 1000): 2000, 2500, 4000, 5000;
// worker 1 (forward 1500): 3000, 3750, 6000, 7500. Ready everywhere: 3000,
// 3750, 6000, 7500 -> cycle ticks 5000, 5000, 7500, 7500. Tick 5000 fuses
// t0+t1 (2000 B); at tick 7500 t2+t3 = 3000 B > 2500, so t2 and t3 go alone.
// Each may start at tick + 1000: 6000, 8500, 8500. Durations 2000 + M:
// 4000, 3000, 4000 -> [6000, 10000], [10000, 13000], [13000, 17000].
// Optimizer ends 17500 (w0) and 17750 (w1): iteration 17750 ns.
// Exposed: w0 tail 5000..17000 has 11000 under collectives, 1000 waiting;
// w1 tail 7500..17000 = 2500 + 3000 + 4000 exposed, 0 waiting.
// Bucket sync waits (start - own post): (3500 + 2250)/2, (6000 + 4000)/2,
// (8000 + 5500)/2.
TEST(HandComputed, HorovodCoordinatorAndCycles) {
  Json scheme = {{"preset", "horovod"}, {"cycle_time_us", 2.5}, {"fusion_threshold_bytes", 2500}};
  Json variability = {{"stragglers", {{"ranks", {1}}, {"slowdown", 1.5}}}};
  model::RunResult r = simulate(tiny("tiny4.json", 2, scheme, variability));
  ASSERT_EQ(r.iteration_ns.size(), 1u);
  EXPECT_EQ(r.iteration_ns[0], 17750);
  EXPECT_EQ(tensors_per_bucket(r), (std::vector<int>{2, 1, 1}));
  EXPECT_DOUBLE_EQ(r.buckets[0].sync_wait_s, 2875e-9);
  EXPECT_DOUBLE_EQ(r.buckets[1].sync_wait_s, 5000e-9);
  EXPECT_DOUBLE_EQ(r.buckets[2].sync_wait_s, 6750e-9);
  EXPECT_NEAR(r.breakdown.forward, 1250e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.backward, 5000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.communication_exposed, 10250e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 500e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.optimizer, 625e-9, 1e-15);
}

// DDP, 4 workers, tiny4, first bucket 1500 B, cap 2500 B: t0+t1 reach 2000
// >= 1500 and close bucket 0; t2+t3 reach 3000 >= 2500 and close bucket 1.
// Ring over 4: 6000 + 1.5 M -> 9000 and 10500 ns. Bucket 0 posted at 2500 ->
// [2500, 11500]; bucket 1 posted at 5000 -> [11500, 22000]; optimizer ends
// 22500. Tail 5000..22000 is all exposed communication.
TEST(HandComputed, DdpBucketsLaunchInOrder) {
  Json scheme = {{"preset", "ddp"}, {"first_bucket_bytes", 1500}, {"bucket_cap_bytes", 2500}};
  model::RunResult r = simulate(tiny("tiny4.json", 4, scheme));
  EXPECT_EQ(r.iteration_ns[0], 22500);
  EXPECT_EQ(tensors_per_bucket(r), (std::vector<int>{2, 2}));
  EXPECT_DOUBLE_EQ(r.buckets[0].duration_s, 9000e-9);
  EXPECT_DOUBLE_EQ(r.buckets[1].duration_s, 10500e-9);
  EXPECT_DOUBLE_EQ(r.buckets[1].sync_wait_s, 6500e-9);
  EXPECT_NEAR(r.breakdown.communication_exposed, 17000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 0.0, 1e-15);
}

}  // namespace
}  // namespace sparsefuse::sim
