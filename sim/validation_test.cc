// compare_results by hand: relative errors, the bucket sequence check, the
// per-bucket errors, and documents that are not results.
#include "model/validation.h"

#include <gtest/gtest.h>

#include "common/input_error.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

Json bucket(int first, int tensors, const char* collective, int64_t elements, double duration_s,
            double compression_s) {
  return {{"first_tensor", first},          {"tensors", tensors},           {"collective", collective},
          {"elements", elements},           {"duration_s", duration_s},     {"compression_s", compression_s}};
}

// A result document with the fields the comparison reads.
Json result(double mean_s, double forward_s, double exposed_s, double sync_s, Json buckets) {
  return {{"format", "sparsefuse-result/1"},
          {"iteration_time_s", {{"mean", mean_s}, {"p50", mean_s}, {"p99", mean_s}}},
          {"breakdown_s",
           {{"forward", forward_s}, {"backward", 0.003}, {"compression", 0.0}, {"communication_exposed", exposed_s},
            {"sync_wait", sync_s}, {"optimizer", 0.001}}},
          {"bytes_sent_per_worker", 1048576.0},
          {"lost_contributions", 0.0},
          {"buckets", buckets}};
}

const model::MetricComparison& metric(const model::Validation& v, const std::string& name) {
  for (const auto& m : v.metrics) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no metric " + name);
}

// Measured 200 ms, simulated 100 ms: -50 %. Exposed communication + sync
// wait: 10 + 0 ms measured, 4 + 1 ms simulated: -50 %. Forward measured 0:
// no relative error. Buckets: durations 2 and 4 ms measured, 1 and 5 ms
// simulated: -50 % and +25 %, mean |error| 37.5 %, worst bucket #0; sums
// 6 ms against 6 ms: 0 %. Compression: 0 and 1 ms measured, 0 and 3 ms
// simulated: the sum +200 %, and per bucket only #1 counts (+200 %).
TEST(Validation, RelativeErrorsByHand) {
  Json m = result(0.2, 0.0, 0.010, 0.0,
                  {bucket(0, 2, "allreduce", 500, 0.002, 0.0), bucket(2, 2, "allgather", 750, 0.004, 0.001)});
  Json s = result(0.1, 0.001, 0.004, 0.001,
                  {bucket(0, 2, "allreduce", 500, 0.001, 0.0), bucket(2, 2, "allgather", 750, 0.005, 0.003)});
  model::Validation v = model::compare_results(JsonNode(m, "m.json", ""), JsonNode(s, "s.json", ""));
  EXPECT_DOUBLE_EQ(*metric(v, "iteration time, mean (ms)").relative_error, -0.5);
  EXPECT_DOUBLE_EQ(metric(v, "iteration time, mean (ms)").measured, 200.0);
  EXPECT_DOUBLE_EQ(*metric(v, "exposed communication + sync wait (ms)").relative_error, -0.5);
  EXPECT_FALSE(metric(v, "forward (ms)").relative_error.has_value());
  EXPECT_DOUBLE_EQ(*metric(v, "bytes sent per worker (MiB)").relative_error, 0.0);
  EXPECT_DOUBLE_EQ(metric(v, "bytes sent per worker (MiB)").measured, 1.0);
  ASSERT_TRUE(v.same_buckets) << v.bucket_difference;
  ASSERT_EQ(v.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(*v.mean_abs_bucket_error, 0.375);
  EXPECT_EQ(v.worst_bucket, 0);
  EXPECT_NEAR(*metric(v, "bucket collectives, sum of durations (ms)").relative_error, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(*metric(v, "bucket compression, sum (ms)").relative_error, 2.0);
  // Compression per bucket: #0 measured 0 is left out; #1 1 ms against 3 ms.
  EXPECT_DOUBLE_EQ(*v.mean_abs_compression_error, 2.0);
  EXPECT_EQ(v.worst_compression_bucket, 1);
  EXPECT_DOUBLE_EQ(*v.time_weighted_compression_error, 2.0);  // |3 - 1| / 1, #0 left out
  Json j = v.to_json();
  EXPECT_DOUBLE_EQ(j["mean_abs_bucket_compression_error"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["time_weighted_bucket_compression_error"].get<double>(), 2.0);
  EXPECT_EQ(j["format"], "sparsefuse-validation/1");
  EXPECT_TRUE(j["metrics"][3]["relative_error"].is_null());  // forward
}

// Compression of 1 and 9 ms measured, 2 and 9 ms simulated: one bucket 100 %
// off, one exact, so the mean |error| is 50 %; weighted by what each
// measured, (1 + 0) / (1 + 9) = 10 %.
TEST(Validation, TimeWeightedCompressionErrorWeighsBucketsByTheirCost) {
  Json m = result(0.2, 0, 0, 0, {bucket(0, 1, "allgather", 250, 0.001, 0.001), bucket(1, 1, "allgather", 250, 0.001, 0.009)});
  Json s = result(0.2, 0, 0, 0, {bucket(0, 1, "allgather", 250, 0.001, 0.002), bucket(1, 1, "allgather", 250, 0.001, 0.009)});
  model::Validation v = model::compare_results(JsonNode(m, "m.json", ""), JsonNode(s, "s.json", ""));
  EXPECT_DOUBLE_EQ(*v.mean_abs_compression_error, 0.5);
  EXPECT_DOUBLE_EQ(*v.time_weighted_compression_error, 0.1);
  // Nothing measured: neither figure exists.
  Json none = result(0.2, 0, 0, 0, {bucket(0, 1, "allreduce", 250, 0.001, 0.0)});
  model::Validation n = model::compare_results(JsonNode(none, "m.json", ""), JsonNode(none, "s.json", ""));
  EXPECT_FALSE(n.time_weighted_compression_error.has_value());
  EXPECT_TRUE(n.to_json()["time_weighted_bucket_compression_error"].is_null());
}

// By kind of bucket, hand-computed: a 2e5-element allgather 10 % off and a
// 5e5-element one 30 % off (>= 1e5: 20 %, 2 buckets); a 64-element one 50 %
// off; a 128-element allgather of dense pairs 50 % off; an allreduce with no
// compression measured counts nowhere.
TEST(Validation, CompressionErrorByKindOfBucket) {
  auto both = [](int first, const char* collective, int64_t elements, int64_t dense, double m, double s) {
    Json measured = bucket(first, 1, collective, elements, 0.001, m), simulated = measured;
    measured["dense_elements"] = simulated["dense_elements"] = dense;
    simulated["compression_s"] = s;
    return std::make_pair(measured, simulated);
  };
  Json mb = Json::array(), sb = Json::array();
  for (const auto& [m, s] : {both(0, "allgather", 200'000, 0, 100e-6, 110e-6),
                             both(1, "allgather", 64, 0, 4e-6, 2e-6),
                             both(2, "allgather", 128, 128, 2e-6, 1e-6),
                             both(3, "allreduce", 1000, 1000, 0, 0),
                             both(4, "allgather", 500'000, 0, 200e-6, 140e-6)}) {
    mb.push_back(m);
    sb.push_back(s);
  }
  const Json measured = result(0.2, 0, 0, 0, mb), simulated = result(0.2, 0, 0, 0, sb);
  model::Validation v = model::compare_results(JsonNode(measured, "m.json", ""), JsonNode(simulated, "s.json", ""));
  ASSERT_EQ(v.compression_by_kind.size(), 3u);
  EXPECT_EQ(v.compression_by_kind[0].kind, ">= 1e5 elements");
  EXPECT_NEAR(*v.compression_by_kind[0].mean_abs_error, 0.2, 1e-12);
  EXPECT_EQ(v.compression_by_kind[0].buckets, 2);
  EXPECT_NEAR(*v.compression_by_kind[1].mean_abs_error, 0.5, 1e-12);
  EXPECT_EQ(v.compression_by_kind[1].buckets, 1);
  EXPECT_EQ(v.compression_by_kind[2].kind, "sent dense as pairs");
  EXPECT_NEAR(*v.compression_by_kind[2].mean_abs_error, 0.5, 1e-12);
  EXPECT_EQ(v.compression_by_kind[2].buckets, 1);
  const Json j = v.to_json()["compression_error_by_kind"];
  EXPECT_EQ(j[1]["kind"], "< 1e5 elements");
  EXPECT_EQ(j[1]["buckets"], 1);
  // A kind with no measured bucket has no error.
  model::Validation dense = model::compare_results(JsonNode(result(0.2, 0, 0, 0, Json::array({mb[3]})), "m.json", ""),
                                                   JsonNode(result(0.2, 0, 0, 0, Json::array({sb[3]})), "s.json", ""));
  EXPECT_FALSE(dense.compression_by_kind[0].mean_abs_error.has_value());
  EXPECT_TRUE(dense.to_json()["compression_error_by_kind"][0]["mean_abs_error"].is_null());
}

TEST(Validation, DifferentBucketSequencesAreReportedNotCompared) {
  Json m = result(0.2, 0, 0, 0, {bucket(0, 1, "allreduce", 250, 0.001, 0), bucket(1, 1, "allreduce", 250, 0.001, 0)});
  Json s = result(0.2, 0, 0, 0, {bucket(0, 1, "allreduce", 250, 0.001, 0), bucket(1, 2, "allreduce", 500, 0.001, 0)});
  model::Validation v = model::compare_results(JsonNode(m, "m.json", ""), JsonNode(s, "s.json", ""));
  EXPECT_FALSE(v.same_buckets);
  EXPECT_EQ(v.bucket_difference,
            "bucket #1: measured first tensor 1, 1 tensors, allreduce of 250 elements; simulated first tensor 1, 2 "
            "tensors, allreduce of 500 elements");
  EXPECT_TRUE(v.buckets.empty());
  s["buckets"].erase(1);
  EXPECT_EQ(model::compare_results(JsonNode(m, "m.json", ""), JsonNode(s, "s.json", "")).bucket_difference,
            "2 buckets measured, 1 simulated");
}

// A simulated result against itself: every error is 0.
TEST(Validation, ASimulationAgreesWithItself) {
  Json doc = {{"model", {{"trace", "tests/data/tiny4.json"}}}, {"workers", 4}, {"iterations", 3},
              {"warmup_iterations", 1}, {"scheme", "topk-layerwise"}, {"compression", {{"density", 0.1}}}};
  Json r = simulate(model::parse_scenario(doc, "")).to_json(false);
  model::Validation v = model::compare_results(JsonNode(r, "a.json", ""), JsonNode(r, "b.json", ""));
  ASSERT_TRUE(v.same_buckets);
  EXPECT_EQ(v.buckets.size(), 4u);
  for (const auto& m : v.metrics) {
    if (m.relative_error) {
      EXPECT_EQ(*m.relative_error, 0.0) << m.name;
    }
  }
  EXPECT_EQ(*v.mean_abs_bucket_error, 0.0);
}

TEST(Validation, DocumentsThatAreNotResultsNameTheFileAndField) {
  Json good = result(0.1, 0, 0, 0, Json::array());
  Json bad = good;
  bad["format"] = "sparsefuse-trace/1";
  try {
    model::compare_results(JsonNode(bad, "m.json", ""), JsonNode(good, "s.json", ""));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "m.json: at /format: expected \"sparsefuse-result/1\"");
  }
  bad = good;
  bad.erase("breakdown_s");
  try {
    model::compare_results(JsonNode(good, "m.json", ""), JsonNode(bad, "s.json", ""));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("s.json: at /: missing required key \"breakdown_s\""), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sparsefuse::sim
