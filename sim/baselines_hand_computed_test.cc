// Cross-iteration scheduling and sparse-allreduce presets, derived on paper
// and matched to the nanosecond.
//
// Fixture tests/data/fwd3.json: layers l3, l2, l1 (backward order t0, t1, t2;
// l1 is the input side), 250 elements (1000 B) each, gradients ready 1000,
// 2000, 3000 ns after backward start (backward 3000 ns), forward 300, 300,
// 400 ns per layer (l1 runs first: 400, then l2 300, then l3 300; 1000 in
// all), optimizer 600 ns = 200 per layer (split by elements).
// Network: alpha = 1 us, 8 Gb/s = 1 ns per byte; 2 workers, no noise.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/rng.h"
#include "sim/forward_pass.h"
#include "model/scenario.h"
#include "sim/simulator.h"
#include "sim/worker.h"

namespace sparsefuse::sim {
namespace {

model::RunResult run(const std::string& trace, Json scheme, int warmup, int iterations, int workers = 2,
              Timeline* timeline = nullptr) {
  Json doc = {{"model", {{"trace", "tests/data/" + trace}}},
              {"workers", workers},
              {"warmup_iterations", warmup},
              {"iterations", iterations},
              {"scheme", scheme},
              {"network", {{"latency_us", 1.0}, {"bandwidth_gbps", 8.0}}},
              {"compression", {{"profile", "tests/data/profile-unit-all.json"}, {"gpu_memory_gbytes_per_s", 1.0}}}};
  return simulate(model::parse_scenario(doc, ""), timeline);
}

// Worker 0's spans called NAME on TRACK, as [begin, end) in ns.
std::vector<std::pair<TimeNs, TimeNs>> spans(const Timeline& timeline, const std::string& name, Timeline::Track track) {
  std::vector<std::pair<TimeNs, TimeNs>> out;
  const Json trace = timeline.to_json();
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0 || e["tid"] != int(track) || e["name"] != name) continue;
    TimeNs begin = std::llround(e["ts"].get<double>() * 1e3);
    out.emplace_back(begin, begin + std::llround(e["dur"].get<double>() * 1e3));
  }
  std::sort(out.begin(), out.end());
  return out;
}

using Spans = std::vector<std::pair<TimeNs, TimeNs>>;

// DeAR, threshold 2500 B. Groups in forward order: l1 + l2 (2000 B; adding
// l3 would reach 3000 >= 2500) = G0 = tensors [1, 3), then l3 = G1 = [0, 1).
// Buffers padded to a multiple of p = 2: G0 500 elements (2000 B, 1000 B
// per rank), G1 250 (1000 B, 500 B per rank).
// Reduce-scatter (p-1) alpha + (p-1)/p M: G0 1000 + 1000 = 2000, G1 1000 +
// 500 = 1500. All-gather (p-1) alpha + (p-1) m: G0 2000, G1 1500.
//
// Iteration 0 (no previous iteration: no all-gather, no update): forward
// [0, 1000] (G0 700 then G1 300). Backward from 1000: l3 ready 2000 closes G1
// -> RS G1 [2000, 3500]; l1 ready 4000 closes G0 -> RS G0 [4000, 6000].
// step() waits for the reduce-scatters: the iteration ends at 6000.
// Iteration 1 starts at 6000: both workers launch AG G0 at 6000 -> [6000,
// 8000]; G0's forward waits for it (2000 exposed), launches AG G1 at 8000
// -> [8000, 9500], updates G0 [8000, 8400] and runs G0's forward [8400,
// 9100] while AG G1 moves: communication overlapping the next forward.
// G1 waits until 9500 (400 exposed), updates [9500, 9700], forward [9700,
// 10000]. Backward from 10000: RS G1 [11000, 12500], RS G0 [13000, 15000];
// the iteration ends at 15000: 9000 ns. Every later iteration repeats it.
// Breakdown, iteration 1: forward 1000, optimizer 600, backward 3000,
// exposed 2000 + 400 (in the forward) + 2000 (RS G0 after backward), no
// sync wait. Iteration 0: forward 1000, backward 3000, exposed 2000.
TEST(BaselinesHandComputed, DearAllGathersOverlapTheNextForward) {
  Json scheme = {{"preset", "dear"}, {"fusion_threshold_bytes", 2500}};
  Timeline timeline({0}, {1});
  model::RunResult r = run("fwd3.json", scheme, 0, 2, 2, &timeline);
  ASSERT_EQ(r.iteration_ns.size(), 2u);
  EXPECT_EQ(r.iteration_ns[0], 6000);
  EXPECT_EQ(r.iteration_ns[1], 9000);
  ASSERT_EQ(r.buckets.size(), 2u);  // the reduce-scatters, in flush order
  EXPECT_EQ(r.buckets[0].bucket.collective, Collective::kReduceScatter);
  EXPECT_EQ(r.buckets[0].bucket.tensors(), 1);
  EXPECT_EQ(r.buckets[1].bucket.tensors(), 2);
  EXPECT_DOUBLE_EQ(r.buckets[0].duration_s, 1500e-9);
  EXPECT_DOUBLE_EQ(r.buckets[1].duration_s, 2000e-9);
  EXPECT_EQ(r.plan["groups"], 2);
  EXPECT_NEAR(r.breakdown.forward, 1000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.backward, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.optimizer, 300e-9, 1e-15);  // (0 + 600) / 2
  EXPECT_NEAR(r.breakdown.communication_exposed, (2000 + 4400) / 2 * 1e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 0, 1e-15);
  // Iteration 1 on worker 0: the all-gathers, the updates and the forward
  // stages; AG G1 [8000, 9500] overlaps G0's forward [8400, 9100].
  EXPECT_EQ(spans(timeline, "allgather", Timeline::kCommunication), (Spans{{6000, 8000}, {8000, 9500}}));
  EXPECT_EQ(spans(timeline, "optimizer", Timeline::kCompute), (Spans{{8000, 8400}, {9500, 9700}}));
  EXPECT_EQ(spans(timeline, "forward", Timeline::kCompute), (Spans{{8400, 9100}, {9700, 10000}}));
  EXPECT_EQ(spans(timeline, "reduce_scatter", Timeline::kCommunication), (Spans{{11000, 12500}, {13000, 15000}}));
  // Steady state from the third iteration on.
  model::RunResult steady = run("fwd3.json", scheme, 1, 3);
  for (TimeNs t : steady.iteration_ns) EXPECT_EQ(t, 9000);
}

// DeAR with a straggler: worker 1 computes at 1.5x. Iteration 0: worker 0
// posts RS G1 at 2000 and RS G0 at 4000; worker 1 (forward 1500, then l3 at
// 3000, l1 at 6000) posts at 3000 and 6000: RS G1 [3000, 4500], RS G0
// [6000, 8000]; both end iteration 0 at 8000. Iteration 1: AG G0 [8000,
// 10000]; worker 0 runs G0 (400 + 700) to 11100, worker 1 (600 + 1050) to
// 11650. AG G1 is posted when both started G0: at 10000 -> [10000, 11500].
// Worker 0 waits 11100 -> 11500 (400, exposed), G1 (200 + 300) to 12000;
// worker 1 starts G1 at 11650, (300 + 450) to 12400. Backward: worker 0
// from 12000 posts RS G1 at 13000, RS G0 at 15000; worker 1 from 12400 at
// 13900 and 16900: RS G1 [13900, 15400], RS G0 [16900, 18900]: iteration 1
// ends at 18900 (10900 ns). Worker 0's tail 15000 -> 18900 holds RS G1's
// last 400 ns and RS G0's 2000 of exposed communication; the remaining 1500
// (15400 -> 16900, waiting for worker 1 to post RS G0) is sync wait.
TEST(BaselinesHandComputed, DearStraggler) {
  Json doc = {{"model", {{"trace", "tests/data/fwd3.json"}}},
              {"workers", 2},
              {"warmup_iterations", 1},
              {"iterations", 1},
              {"scheme", {{"preset", "dear"}, {"fusion_threshold_bytes", 2500}}},
              {"network", {{"latency_us", 1.0}, {"bandwidth_gbps", 8.0}}},
              {"variability", {{"stragglers", {{"ranks", {1}}, {"slowdown", 1.5}}}}}};
  model::RunResult r = simulate(model::parse_scenario(doc, ""));
  ASSERT_EQ(r.iteration_ns.size(), 1u);
  EXPECT_EQ(r.iteration_ns[0], 10900);
  // Means over the two workers: forward (1000 + 1500) / 2, optimizer
  // (600 + 900) / 2, backward (3000 + 4500) / 2; exposed: worker 0 2000 +
  // 400 in the forward, 400 + 2000 in the tail; worker 1 2000 + 0 + 2000
  // (its tail 16900 -> 18900); sync wait: worker 0 1500.
  EXPECT_NEAR(r.breakdown.forward, 1250e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.optimizer, 750e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.backward, 3750e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.communication_exposed, 4400e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 750e-9, 1e-15);
}

// ByteScheduler, partitions of 125 elements (500 B): every layer is two
// allreduces of 2 alpha + 500 = 2500 ns. Priority = backward index (l1 = t2
// highest). Credit 125 elements: one partition in flight at a time.
// Iteration 0: forward [0, 1000]; l3 (P0a, P0b) posted at 2000, l2 (P1a,
// P1b) at 3000, l1 (P2a, P2b) at 4000. P0a launches at 2000 -> [2000, 4500];
// when it finishes the highest priority goes: P2a [4500, 7000], P2b [7000,
// 9500], P1a [9500, 12000], P1b [12000, 14500], P0b [14500, 17000].
// ByteScheduler's step() does not wait: iteration 0 ends with backward, at
// 4000. Iteration 1's forward (from 4000), input side first: l1 waits for
// P2b (9500; 5500 exposed), updates [9500, 9700], forward [9700, 10100];
// l2 waits for P1b (14500; 4400 exposed) -> [14500, 15000]; l3 waits for
// P0b (17000; 2000 exposed) -> [17000, 17500]. l1's forward runs while
// l2's and l3's partitions are still moving. Backward from 17500 ends at
// 20500: iteration 1 = 16500 ns. Its partitions: P0a at 18500 -> [18500,
// 21000], then P2a [21000, 23500], P2b [23500, 26000], P1a [26000, 28500],
// P1b [28500, 31000], P0b [31000, 33500]; sync wait = start - own post: 0,
// 500, 3000, 6500, 9000, 12500.
TEST(BaselinesHandComputed, ByteSchedulerPriorityAndCredit) {
  Json scheme = {{"preset", "bytescheduler"}, {"partition_elements", 125}, {"credit_elements", 125}, {"cycle_time_us", 0.0}};
  Timeline timeline({0}, {0, 1});
  model::RunResult r = run("fwd3.json", scheme, 0, 2, 2, &timeline);
  ASSERT_EQ(r.iteration_ns.size(), 2u);
  EXPECT_EQ(r.iteration_ns[0], 4000);
  EXPECT_EQ(r.iteration_ns[1], 16500);
  ASSERT_EQ(r.buckets.size(), 6u);  // launch order
  const int tensor[] = {0, 2, 2, 1, 1, 0};
  const double wait_ns[] = {0, 500, 3000, 6500, 9000, 12500};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(r.buckets[k].bucket.first_tensor, tensor[k]) << k;
    EXPECT_EQ(r.buckets[k].bucket.elements, 125);
    EXPECT_DOUBLE_EQ(r.buckets[k].duration_s, 2500e-9);
    EXPECT_NEAR(r.buckets[k].sync_wait_s, wait_ns[k] * 1e-9, 1e-15) << k;
  }
  // Means over both iterations: forward 1000, backward 3000, optimizer
  // 600 / 2, exposed (0 + 5500 + 4400 + 2000) / 2; nothing after backward.
  EXPECT_NEAR(r.breakdown.forward, 1000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.backward, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.optimizer, 300e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.communication_exposed, 5950e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 0, 1e-15);
  EXPECT_DOUBLE_EQ(r.bytes_sent_per_worker, 6 * 500);
  // Worker 0: iteration 0's partitions, then iteration 1's forward: l1's
  // forward [9700, 10100] runs while P1a [9500, 12000] moves.
  Spans allreduces = spans(timeline, "allreduce", Timeline::kCommunication);
  ASSERT_EQ(allreduces.size(), 12u);
  EXPECT_EQ(Spans(allreduces.begin(), allreduces.begin() + 6),
            (Spans{{2000, 4500}, {4500, 7000}, {7000, 9500}, {9500, 12000}, {12000, 14500}, {14500, 17000}}));
  Spans forward = spans(timeline, "forward", Timeline::kCompute);
  EXPECT_EQ(Spans(forward.begin() + 3, forward.end()), (Spans{{9700, 10100}, {14700, 15000}, {17200, 17500}}));
  // Steady state: iteration 2 starts at 20500, l1 waits for P2b (26000),
  // [26000, 26600]; l2 for P1b (31000) -> 31500; l3 for P0b (33500) ->
  // 34000; backward ends 37000: 16500 again.
  model::RunResult steady = run("fwd3.json", scheme, 1, 2);
  for (TimeNs t : steady.iteration_ns) EXPECT_EQ(t, 16500);
}

// Without a binding credit every partition launches as soon as it is
// posted, in posting order: P0a [2000, 4500], P0b [4500, 7000], P1a [7000,
// 9500], P1b [9500, 12000], P2a [12000, 14500], P2b [14500, 17000]. The
// input layer's partitions now finish last: iteration 1's forward waits for
// P2b until 17000 (l1 [17000, 17600]); l2 (done at 12000) and l3 (7000) do
// not wait: [17600, 18100], [18100, 18600]; backward ends 21600: 17600 ns,
// 1100 more than with priorities.
TEST(BaselinesHandComputed, ByteSchedulerWithoutCreditLimitIsFifo) {
  Json scheme = {{"preset", "bytescheduler"}, {"partition_elements", 125}, {"credit_elements", 1000000}, {"cycle_time_us", 0.0}};
  model::RunResult r = run("fwd3.json", scheme, 0, 2);
  EXPECT_EQ(r.iteration_ns[1], 17600);
  const int tensor[] = {0, 0, 1, 1, 2, 2};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(r.buckets[k].bucket.first_tensor, tensor[k]) << k;
}

// The same set-up through Horovod with a 3 us cycle: negotiation with two
// workers is ceil(log2 2) alpha = 1000 ns, so a partition launched at t
// starts at the first multiple of 3000 at or after t, plus 1000. P0a
// launched at 2000 -> [4000, 6500]; P2a launched at 6500 -> [10000, 12500];
// P2b at 12500 -> [16000, 18500]; P1a at 18500 -> [22000, 24500]; P1b at
// 24500 -> [28000, 30500]; P0b at 30500 -> [34000, 36500]. The start-up
// more than doubles iteration 0's communication (14500 -> 34500 ns after
// the first post).
TEST(BaselinesHandComputed, ByteSchedulerPartitionsWaitForHorovodsCycle) {
  Json scheme = {{"preset", "bytescheduler"}, {"partition_elements", 125}, {"credit_elements", 125}, {"cycle_time_us", 3.0}};
  Timeline timeline({0}, {0, 1});
  model::RunResult r = run("fwd3.json", scheme, 0, 2, 2, &timeline);
  Spans allreduces = spans(timeline, "allreduce", Timeline::kCommunication);
  ASSERT_EQ(allreduces.size(), 12u);
  EXPECT_EQ(Spans(allreduces.begin(), allreduces.begin() + 6),
            (Spans{{4000, 6500}, {10000, 12500}, {16000, 18500}, {22000, 24500}, {28000, 30500}, {34000, 36500}}));
  const int tensor[] = {0, 2, 2, 1, 1, 0};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(r.buckets[k].bucket.first_tensor, tensor[k]) << k;
}

// gTop-k over the whole model of tests/data/tiny3.json (3 x 250 elements,
// ready 1000, 2000, 3000 after a 1000 ns forward, optimizer 500), density
// 0.04: k = 30. Backward ends at 4000, the local top-k (1 us) until 5000;
// gTop-k over 2 workers: 2 (1000 + 240) + a top-k of 60 (1000) = 3480 ->
// [5000, 8480]; scatter of k = 30 pairs into 750 elements: 3000 + 240 ->
// [8480, 11720]; optimizer [11720, 12220].
TEST(BaselinesHandComputed, GTopkPresetEndToEnd) {
  model::RunResult r = run("tiny3.json", {{"preset", "gtopk"}, {"density", 0.04}, {"error_feedback", "none"}}, 0, 1);
  EXPECT_EQ(r.iteration_ns[0], 12220);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_EQ(r.buckets[0].bucket.sparse, policy::SparseAllreduce::kGTopk);
  EXPECT_DOUBLE_EQ(r.buckets[0].duration_s, 3480e-9);
  EXPECT_DOUBLE_EQ(r.buckets[0].decompression_s, 3240e-9);
  EXPECT_DOUBLE_EQ(r.buckets[0].sent_elements, 30);
  EXPECT_DOUBLE_EQ(r.buckets[0].compression_s, 1000e-9);
}

// Random-k with a shared seed, same set-up: the random-k kernel (1 us) ends
// at 5000, then a ring allreduce of 30 values (120 B): 2000 + 120 ->
// [5000, 7120]; scatter 3000 + 8 30 -> [7120, 10360]; optimizer to 10860.
TEST(BaselinesHandComputed, SharedSeedRandomkEndToEnd) {
  model::RunResult r = run("tiny3.json", {{"preset", "randomk-shared"}, {"density", 0.04}, {"error_feedback", "none"}}, 0, 1);
  EXPECT_EQ(r.iteration_ns[0], 10860);
  EXPECT_EQ(r.buckets[0].bucket.bytes_per_worker, 120);
  EXPECT_DOUBLE_EQ(r.buckets[0].sent_elements, 30);
}

// TopkDSA, same set-up: the local top-k ends at 5000; over 2 workers one
// recursive-doubling round sends min(2^0 k, n) = 30 pairs: 1000 + 240 ->
// [5000, 6240]; the union holds 2 k = 60 pairs: scatter 3000 + 8 60 ->
// [6240, 9720]; optimizer to 10220.
TEST(BaselinesHandComputed, TopkDsaPresetEndToEnd) {
  model::RunResult r = run("tiny3.json", {{"preset", "topk-dsa"}, {"density", 0.04}, {"error_feedback", "none"}}, 0, 1);
  EXPECT_EQ(r.iteration_ns[0], 10220);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_EQ(r.buckets[0].bucket.sparse, policy::SparseAllreduce::kTopkDsa);
  EXPECT_DOUBLE_EQ(r.buckets[0].duration_s, 1240e-9);
  EXPECT_DOUBLE_EQ(r.buckets[0].decompression_s, 3480e-9);
}

// The executor's shortcut for a threshold sparsifier's count draw is the
// generator's first draw exactly.
TEST(BaselinesHandComputed, FirstUniformMatchesTheGenerator) {
  for (uint64_t i = 0; i < 10000; ++i) {
    uint64_t key = stream_seed(42, i * 0x9E3779B97F4A7C15ull);
    EXPECT_EQ(first_uniform(key), Rng(key).uniform()) << i;
  }
}

// Per-tensor forward times: a tensor without gradient joins the gradient
// tensor that runs just before it in forward order (or the start), time the
// tensors do not account for runs first; without per-tensor times the
// forward is split by elements. Trace (backward order): g0 (100 elements,
// 10 ns), x (no gradient, 5 ns), g1 (300, 20 ns), y (no gradient, 7 ns);
// forward 50 ns. Forward order: y, g1, x, g0 -> lead 7 + (50 - 42) = 15,
// g1 20 + 5 = 25, g0 10. Optimizer 400 by elements: 100, 300.
TEST(BaselinesHandComputed, ForwardTimesPerTensor) {
  Trace trace;
  trace.model = "fwd";
  trace.batch_size = 1;
  trace.forward_ns = 50;
  trace.backward_ns = 20;
  trace.optimizer_ns = 400;
  trace.tensors = {{"g0", {100}, 100, 10, 10, true, 0},
                   {"x", {1}, 1, 10, 5, false, 0},
                   {"g1", {300}, 300, 20, 20, true, 0},
                   {"y", {1}, 1, 20, 7, false, 0}};
  policy::GradientModel model = policy::GradientModel::from_trace(trace, 1.0);
  ForwardTimes f = forward_times(trace, model, 1.0);
  EXPECT_EQ(f.lead_ns, 15);
  EXPECT_EQ(f.tensor_ns, (std::vector<TimeNs>{10, 25}));
  EXPECT_EQ(f.optimizer_ns, (std::vector<TimeNs>{100, 300}));
  for (auto& t : trace.tensors) t.forward_ns = 0;
  ForwardTimes by_elements = forward_times(trace, model, 2.0);  // compute scale 2
  EXPECT_EQ(by_elements.lead_ns, 0);
  EXPECT_EQ(by_elements.tensor_ns, (std::vector<TimeNs>{24, 76}));  // 50 x 100/400 -> 12, 38, doubled
}

}  // namespace
}  // namespace sparsefuse::sim
