// Start-up decisions of the scheduling and compression baselines, by hand.
#include <gtest/gtest.h>

#include "common/input_error.h"
#include "policy/bytescheduler.h"
#include "policy/cupcake.h"
#include "policy/dear.h"
#include "policy/espresso.h"
#include "policy/hipress.h"
#include "policy/planned_scheme.h"
#include "policy/presets.h"
#include "policy/timeline_model.h"

namespace sparsefuse::policy {
namespace {

GradientModel model_of(std::vector<int64_t> elements, std::vector<TimeNs> ready) {
  Trace trace;
  trace.model = "hand";
  trace.batch_size = 1;
  trace.backward_ns = ready.back();
  for (size_t i = 0; i < elements.size(); ++i) {
    trace.tensors.push_back({"t" + std::to_string(i), {elements[i]}, elements[i], ready[i], 0, true, 0});
  }
  return GradientModel::from_trace(trace, 1.0);
}

// Flat ring on p workers, alpha = 1000 ns, BETA ns per byte; every
// compression takes COMPRESS ns; no CPU curves.
class FlatCost : public CostEstimator {
 public:
  FlatCost(int p, double beta = 1, TimeNs compress = 1000) : p_(p), beta_(beta), compress_(compress) {}
  int workers() const override { return p_; }
  TimeNs collective_ns(Collective c, int64_t b) const override {
    const double m = p_ - 1, x = double(b);
    switch (c) {
      case Collective::kAllreduce: return TimeNs(2 * m * 1000 + 2 * m / p_ * x * beta_);
      case Collective::kAllgather: return TimeNs(m * 1000 + m * x * beta_);
      default: return TimeNs(m * 1000 + m / p_ * x * beta_);
    }
  }
  TimeNs coordination_ns() const override { return 1000; }
  TimeNs compression_ns(Sparsifier, int64_t, double) const override { return compress_; }
  TimeNs cpu_compression_ns(Sparsifier, int64_t, double) const override {
    throw InputError("profile", "/compression", "no CPU curves");
  }

 private:
  int p_;
  double beta_;
  TimeNs compress_;
};

// Backward order t0..t3 of 1000, 2000, 3000, 500 bytes; forward order is
// t3, t2, t1, t0. Threshold 4000 B: t3 + t2 = 3500, adding t1 would reach
// 5500 -> {t3, t2}; t1 + t0 = 3000 -> {t1, t0}. On 4 workers the group
// [2, 4) of 875 elements is padded to 876: reduce-scatter 3504 bytes,
// all-gather 876 bytes per rank.
TEST(Dear, GroupsInForwardOrderUnderTheThreshold) {
  GradientModel m = model_of({250, 500, 750, 125}, {10, 20, 30, 40});
  DearScheme dear(m, FlatCost(4), DearOptions{4000});
  const ForwardPlan* plan = dear.forward_plan();
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->stages.size(), 2u);
  EXPECT_EQ(plan->stages[0].first_tensor, 2);
  EXPECT_EQ(plan->stages[0].end_tensor, 4);
  EXPECT_EQ(plan->stages[1].first_tensor, 0);
  EXPECT_EQ(plan->stages[1].end_tensor, 2);
  EXPECT_TRUE(plan->stages[0].has_deferred);
  EXPECT_EQ(plan->stages[0].deferred.collective, Collective::kAllgather);
  EXPECT_EQ(plan->stages[0].deferred.bytes_per_worker, 876);
  EXPECT_EQ(dear.reduce_scatters()[0].bytes_per_worker, 3504);
  EXPECT_EQ(dear.reduce_scatters()[0].collective, Collective::kReduceScatter);
  EXPECT_TRUE(plan->iteration_waits_for_collectives);
  // A tensor above the threshold is a group of its own.
  DearScheme small(m, FlatCost(4), DearOptions{100});
  EXPECT_EQ(small.forward_plan()->stages.size(), 4u);
}

// 2,500,000 elements in partitions of 1,000,000: 1M, 1M, 0.5M.
TEST(ByteScheduler, PartitionsAndPriorities) {
  GradientModel m = model_of({2'500'000, 10}, {10, 20});
  ByteSchedulerScheme bs(m, ByteSchedulerOptions{1'000'000, 4'000'000});
  ASSERT_EQ(bs.partitions().size(), 4u);
  EXPECT_EQ(bs.partitions()[0].elements, 1'000'000);
  EXPECT_EQ(bs.partitions()[2].elements, 500'000);
  EXPECT_EQ(bs.partitions()[2].bytes_per_worker, 2'000'000);
  EXPECT_EQ(bs.partitions()[0].priority, 0);
  EXPECT_EQ(bs.partitions()[3].priority, 1);  // the input-side tensor goes first
  ASSERT_EQ(bs.forward_plan()->stages.size(), 2u);
  EXPECT_EQ(bs.forward_plan()->stages[0].first_tensor, 1);
  EXPECT_FALSE(bs.forward_plan()->iteration_waits_for_collectives);
}

// Partitions go through Horovod: the next tick of max(cycle, negotiation),
// then one negotiation; without a cycle they start when launched.
TEST(ByteScheduler, PartitionsStartByHorovodsCycle) {
  CreditScheduler horovod(100, 1'000'000, 30'000);
  EXPECT_EQ(horovod.start_ns(0), 30'000);
  EXPECT_EQ(horovod.start_ns(1), 1'030'000);
  EXPECT_EQ(horovod.start_ns(2'000'000), 2'030'000);
  CreditScheduler slow_negotiation(100, 10'000, 30'000);  // a cycle lasts the negotiation
  EXPECT_EQ(slow_negotiation.start_ns(40'000), 90'000);
  EXPECT_EQ(CreditScheduler(100).start_ns(1234), 1234);
  GradientModel m = model_of({10}, {10});
  EXPECT_THROW(ByteSchedulerScheme(m, ByteSchedulerOptions{1, 1, -1, 0}), std::invalid_argument);
}

// Credit 100: launches while the credit is positive, so one launch may take
// it negative; finishes return credit capped at the limit.
TEST(ByteScheduler, CreditRule) {
  CreditScheduler s(100);
  Bucket low, high;
  low.elements = 60, low.priority = 0;
  high.elements = 60, high.priority = 5;
  s.posted(0, low);
  s.posted(1, low);
  s.posted(2, high);
  EXPECT_EQ(s.next(), 2);  // highest priority first
  EXPECT_EQ(s.next(), 0);  // credit 40 > 0: launch, credit -20
  EXPECT_EQ(s.credit(), -20);
  EXPECT_EQ(s.next(), -1);
  s.finished(2, high);  // 40
  EXPECT_EQ(s.next(), 1);
  s.finished(0, low);
  s.finished(1, low);
  EXPECT_EQ(s.credit(), 100);  // capped
}

// SeCoPa's ring models with send(b) = 1000 + 10 b, encode 1000, decode
// 4e + 8q, merge 12e, N = 4, density 1/64.
// x = 1024: T_orig(K = 4) = 6 (1000 + 10 4 256) + 3 12 256 = 76656 (the
// minimum); T_cpr(4) = 6 (1000 + 10 8 4) + 4 1000 + 4 (1024 + 32) + 3 3072
// = 25360 (the minimum; K = 3 gives 30344): compress with K = 4.
// x = 16: T_orig(4) = 6 (1000 + 160) + 3 48 = 7104; T_cpr(4) = 6 (1000 +
// 80) + 4000 + 4 (16 + 8) + 144 = 10720: stays dense.
TEST(Hipress, SecopaChoosesPerGradient) {
  CasyncPrimitives prims;
  prims.send = [](double b) { return 1000 + 10 * b; };
  prims.encode = [](int64_t) { return 1000.0; };
  prims.decode = [](int64_t e, int64_t q) { return 4.0 * double(e) + 8.0 * double(q); };
  prims.aggregate = [](int64_t e) { return 12.0 * double(e); };
  EXPECT_DOUBLE_EQ(secopa_ring_orig(4, 4, 1024, prims).total(), 76656);
  EXPECT_DOUBLE_EQ(secopa_ring_cpr(4, 4, 1024, 1.0 / 64, prims).total(), 25360);
  EXPECT_DOUBLE_EQ(secopa_ring_cpr(4, 3, 1024, 1.0 / 64, prims).total(), 30344);
  SecopaChoice big = secopa_choose(4, 1024, 1.0 / 64, prims);
  EXPECT_TRUE(big.compress);
  EXPECT_EQ(big.partitions, 4);
  EXPECT_DOUBLE_EQ(big.orig_ns, 76656);
  EXPECT_DOUBLE_EQ(big.cpr_ns, 25360);
  SecopaChoice small = secopa_choose(4, 16, 1.0 / 64, prims);
  EXPECT_FALSE(small.compress);
  EXPECT_DOUBLE_EQ(small.orig_ns, 7104);
  EXPECT_DOUBLE_EQ(small.cpr_ns, 10720);
  EXPECT_EQ(secopa_choose(4, 1024, 1.0 / 64, prims, 2).partitions, 2);  // capped K
}

// On a slow network (10 ns/B) HiPress compresses the 1M-element tensor and
// leaves the 16-element one dense.
TEST(Hipress, PlanPerTensor) {
  GradientModel m = model_of({16, 1'000'000}, {1000, 2000});
  auto scheme = make_hipress_scheme(m, FlatCost(4, 10), HipressOptions{Sparsifier::kTopk, 0.01, 1.0, 0});
  auto* planned = dynamic_cast<PlannedScheme*>(scheme.get());
  ASSERT_NE(planned, nullptr);
  EXPECT_EQ(planned->buffers()[0].route, Route::kDense);
  EXPECT_EQ(planned->buffers()[1].route, Route::kSparseAllreduce);
  EXPECT_EQ(planned->buffers()[1].algorithm, SparseAllreduce::kCaSyncRing);
  EXPECT_EQ(scheme->describe()["compressed_tensors"], 1);
}

// Timeline model: t0 (1000 elements, ready 1000) dense, t1 (1M, ready 2000)
// GPU compression; p = 2, 1 ns/B, compression 1000, memory 1 B/ns, no EF.
// t0 allreduce 2000 + 4000 = 6000 -> [1000, 7000]; t1 compressed 2000 ->
// 3000 (delays backward end to 3000), allgather of 8 10^4 B: 1000 + 80000
// -> [7000, 88000]; decompression 4 10^6 + 8 2 10^4 -> 88000 + 4160000.
TEST(TimelineModel, HandComputed) {
  GradientModel m = model_of({1000, 1'000'000}, {1000, 2000});
  FlatCost cost(2);
  TimelineModel model(m, cost, Sparsifier::kTopk, 0.01, 1.0, 1, false);
  EXPECT_FALSE(model.cpu_available());
  std::vector<PlannedBuffer> plan = {{0, 1, Route::kDense}, {1, 2, Route::kAllgather}};
  EXPECT_EQ(model.iteration_ns(plan), 88000 + 4160000);
  LinkEstimate link = infer_link(cost);
  EXPECT_DOUBLE_EQ(link.alpha_ns, 1000);
  EXPECT_DOUBLE_EQ(link.ns_per_byte, 1);
}

// Espresso's greedy on a slow network: compressing the big tensor on the GPU
// beats sending it dense; the small one stays dense; no CPU curves, so no
// CPU option.
TEST(Espresso, GreedyPicksCompressionWhereItPays) {
  GradientModel m = model_of({10, 1'000'000}, {1000, 2000});
  EspressoOptions o;
  o.sparsifier = Sparsifier::kTopk;
  o.density = 0.01;
  o.memory_gbytes_per_s = 900;
  auto scheme = make_espresso_scheme(m, FlatCost(8, 10), o);
  auto d = scheme->describe();
  EXPECT_EQ(d["gpu_compressed_tensors"], 1);
  EXPECT_EQ(d["cpu_compressed_tensors"], 0);
  EXPECT_LT(d["modelled_iteration_ns"].get<int64_t>(), d["modelled_dense_ns"].get<int64_t>());
  auto* planned = dynamic_cast<PlannedScheme*>(scheme.get());
  EXPECT_EQ(planned->buffers()[0].route, Route::kDense);
  EXPECT_EQ(planned->buffers()[1].route, Route::kAllgather);
}

// Cupcake: equal-count splits without the search; with it, never worse
// than equal-count under the model.
TEST(Cupcake, SplitsAndSearch) {
  GradientModel m = model_of({100, 100, 100, 100, 100, 100, 100, 4'000'000}, {1, 2, 3, 4, 5, 6, 7, 100000});
  FlatCost cost(4);
  CupcakeOptions o;
  o.search = false;
  o.fusion_num = 4;
  EXPECT_EQ(cupcake_splits(m, cost, o), (std::vector<int>{2, 4, 6}));
  o.fusion_num = 2;
  EXPECT_EQ(cupcake_splits(m, cost, o), (std::vector<int>{4}));
  o.search = true;
  auto equal = make_cupcake_scheme(m, cost, CupcakeOptions{Sparsifier::kTopk, 0.01, 2, false, true, 900});
  auto searched = make_cupcake_scheme(m, cost, o);
  EXPECT_LE(searched->describe()["modelled_iteration_ns"].get<int64_t>(),
            equal->describe()["modelled_iteration_ns"].get<int64_t>());
  o.fusion_num = 0;  // layer-wise
  EXPECT_EQ(cupcake_splits(m, cost, o).size(), 7u);
}

TEST(Presets, SelfPlanningPresetsRefuseReplanning) {
  for (const char* name : {"dear", "bytescheduler", "hipress", "espresso", "cupcake"}) {
    Json doc = {{"preset", name}, {"replan_every", 5}};
    EXPECT_THROW(parse_scheme_config(JsonNode(doc, "f", "/scheme")), InputError) << name;
  }
  Json doc = {{"preset", "oktopk"}, {"replan_every", 5}};
  EXPECT_EQ(parse_scheme_config(JsonNode(doc, "f", "/scheme")).resolved["replan_every"], 5);
}

}  // namespace
}  // namespace sparsefuse::policy
