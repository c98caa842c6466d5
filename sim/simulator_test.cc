// Properties of whole simulations on the built-in traces.
#include <gtest/gtest.h>

#include "policy/gradient_model.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

Json base(const std::string& scheme, int workers, double cv, int seed) {
  return {{"model", "bert-base"}, {"workers", workers}, {"iterations", 8}, {"warmup_iterations", 1},
          {"seed", seed}, {"scheme", scheme}, {"variability", {{"compute_cv", cv}}}};
}

model::RunResult run(const Json& doc) { return simulate(model::parse_scenario(doc, "")); }

TEST(Simulator, SameScenarioAndSeedGiveIdenticalResults) {
  for (const char* scheme : {"wfbp", "horovod", "ddp", "syncea", "mgwfbp"}) {
    Json doc = base(scheme, 32, 0.1, 7);
    EXPECT_EQ(run(doc).to_json(false).dump(), run(doc).to_json(false).dump()) << scheme;
  }
}

TEST(Simulator, DifferentSeedChangesNoisyResult) {
  EXPECT_NE(run(base("horovod", 32, 0.1, 1)).to_json(false).dump(),
            run(base("horovod", 32, 0.1, 2)).to_json(false).dump());
}

TEST(Simulator, SeedIrrelevantWithoutNoise) {
  EXPECT_EQ(run(base("ddp", 16, 0.0, 1)).iteration_ns, run(base("ddp", 16, 0.0, 2)).iteration_ns);
}

TEST(Simulator, MoreBandwidthIsNeverSlower) {
  for (const char* scheme : {"wfbp", "horovod", "ddp", "syncea", "mgwfbp"}) {
    double previous = 1e30;
    for (double gbps : {10.0, 25.0, 100.0, 400.0}) {
      Json doc = base(scheme, 64, 0.05, 3);
      doc["network"] = {{"bandwidth_gbps", gbps}};
      double t = run(doc).mean_iteration_s();
      EXPECT_LE(t, previous) << scheme << " at " << gbps << " Gb/s";
      previous = t;
    }
  }
}

TEST(Simulator, MoreComputeNoiseNeverLowersMeanIteration) {
  for (const char* scheme : {"horovod", "ddp", "syncea"}) {
    double previous = 0;
    for (double cv : {0.0, 0.05, 0.2, 0.5}) {
      Json doc = base(scheme, 64, cv, 5);
      doc["iterations"] = 30;
      double t = run(doc).mean_iteration_s();
      EXPECT_GE(t, previous) << scheme << " cv " << cv;
      previous = t;
    }
  }
}

TEST(Simulator, BreakdownAddsUpToMeanIterationWithoutNoise) {
  for (const char* scheme : {"wfbp", "horovod", "ddp", "syncea", "mgwfbp"}) {
    model::RunResult r = run(base(scheme, 16, 0.0, 1));
    const model::Breakdown& b = r.breakdown;
    double sum = b.forward + b.backward + b.compression + b.communication_exposed + b.sync_wait + b.optimizer;
    EXPECT_NEAR(sum, r.mean_iteration_s(), 1e-12) << scheme;
  }
}

TEST(Simulator, BucketsCoverEveryGradientTensorOnce) {
  for (const char* scheme : {"wfbp", "horovod", "ddp", "syncea", "mgwfbp"}) {
    model::RunResult r = run(base(scheme, 8, 0.05, 1));
    int next = 0;
    int64_t bytes = 0;
    for (const auto& b : r.buckets) {
      EXPECT_EQ(b.bucket.first_tensor, next) << scheme;
      next = b.bucket.end_tensor;
      bytes += b.bucket.bytes_per_worker;
    }
    EXPECT_EQ(next, 199) << scheme;  // bert-base: 201 tensors, pooler has no gradient
    EXPECT_EQ(bytes, (109488386 - 768 * 768 - 768) * 4) << scheme;
  }
}

TEST(Simulator, DdpUsesItsPublishedBucketSizes) {
  model::RunResult r = run(base("ddp", 8, 0.0, 1));
  policy::GradientModel model = policy::GradientModel::from_trace(load_builtin_trace("bert-base"), 1.0);
  for (size_t i = 0; i + 1 < r.buckets.size(); ++i) {
    int64_t limit = i == 0 ? (1 << 20) : (25 << 20);
    const auto& b = r.buckets[i].bucket;
    // Closed as soon as its size reached the limit: without its last tensor it was below.
    EXPECT_GE(b.bytes_per_worker, limit) << i;
    EXPECT_LT(b.bytes_per_worker - model.bytes(b.end_tensor - 1), limit) << i;
  }
}

}  // namespace
}  // namespace sparsefuse::sim
