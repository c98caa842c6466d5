// Sparse scenarios derived on paper, matched to the nanosecond. Fixture
// tests/data/tiny3.json: tensors a, b, c of 250 elements (b is [10, 25]),
// ready 1000, 2000, 3000 ns after backward start; forward 1000 ns, optimizer
// 500 ns. Network: alpha = 1 us, 1 ns per byte. Compression: every kernel
// takes 1 us (tests/data/profile-unit.json); decompression at 1 byte/ns.
#include <gtest/gtest.h>

#include "sim/alignment.h"
#include "model/plan.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

Json tiny_scenario(Json scheme, int workers = 2, const char* profile = "tests/data/profile-unit.json",
                   const char* calls = "hot", const char* trace = "tests/data/tiny3.json") {
  return {{"model", {{"trace", trace}}},
          {"workers", workers},
          {"warmup_iterations", 0},
          {"iterations", 1},
          {"scheme", scheme},
          {"network", {{"latency_us", 1.0}, {"bandwidth_gbps", 8.0}}},
          {"compression", {{"profile", profile}, {"gpu_memory_gbytes_per_s", 1.0}, {"calls", calls}}}};
}

model::RunResult run_tiny(Json scheme, int workers = 2, const char* profile = "tests/data/profile-unit.json",
                          const char* calls = "hot", const char* trace = "tests/data/tiny3.json") {
  return simulate(model::parse_scenario(tiny_scenario(scheme, workers, profile, calls, trace), ""));
}

Json layerwise(const char* alignment) {
  return {{"preset", "topk-layerwise"}, {"density", 0.04}, {"error_feedback", "none"}, {"alignment", alignment}};
}

// DOC with compression.KEY = -1 is refused, naming the field.
void expect_negative_compression_value_refused(Json doc, const std::string& key) {
  doc["compression"][key] = -1;
  try {
    model::parse_scenario(doc, "s.json");
    ADD_FAILURE() << "a negative " << key << " was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/compression/" + key), std::string::npos) << e.what();
  }
}

// PROFILE's TABLE (a bookkeeping object) without time_us, or with a negative
// one, is refused naming both.
void expect_bookkeeping_without_time_refused(const char* profile, const std::string& table) {
  Json bad = load_json_file(profile);
  bad[table].erase("time_us");
  for (const Json& bookkeeping : {bad[table], Json{{"time_us", -0.5}}}) {
    bad[table] = bookkeeping;
    try {
      model::load_profile_curves(bad, "p.json");
      ADD_FAILURE() << "accepted " << table << " " << bookkeeping.dump();
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("/" + table), std::string::npos) << what;
      EXPECT_NE(what.find("time_us"), std::string::npos) << what;
    }
  }
}

// Per-tensor top-k, k = floor(250 * 0.04) = 10 pairs = 80 B per worker.
// Each tensor: its kernel (1000 ns), then 1000 ns of inline compression:
// flushes at 3000, 5000, 7000; backward ends 7000. Allgather (p = 2):
// 1000 + 80 = 1080 -> [3000, 4080], [5000, 6080], [7000, 8080].
// Decompression: (4*250 + 8*20) B at 1 B/ns = 1160 -> last [8080, 9240].
// Optimizer [9240, 9740]. Tail 7000..9240: 1080 exposed communication, 1160
// exposed decompression (the earlier one overlaps the last allgather).
TEST(SparseHandComputed, LayerwiseTopkFixedCounts) {
  model::RunResult r = run_tiny(layerwise("fixed-k"));
  EXPECT_EQ(r.iteration_ns[0], 9740);
  ASSERT_EQ(r.buckets.size(), 3u);
  for (const auto& b : r.buckets) {
    EXPECT_EQ(b.bucket.bytes_per_worker, 80);
    EXPECT_EQ(b.sent_elements, 10);
    EXPECT_DOUBLE_EQ(b.duration_s, 1080e-9);
    EXPECT_DOUBLE_EQ(b.decompression_s, 1160e-9);
    EXPECT_DOUBLE_EQ(b.compression_s, 1000e-9);
    EXPECT_DOUBLE_EQ(b.sync_wait_s, 0);
  }
  EXPECT_NEAR(r.breakdown.backward, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.compression, (3000 + 1160) * 1e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.communication_exposed, 1080e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.sync_wait, 0, 1e-15);
  EXPECT_DOUBLE_EQ(r.bytes_sent_per_worker, 240);
}

// Exchange counts: an allgather of 8-byte counts (1000 + 8) before the
// variable-size gather (1000 + (160 - 80)): 2088 per tensor.
// [3000, 5088], [5088, 7176], [7176, 9264]; decompression [9264, 10424];
// optimizer ends 10924.
TEST(SparseHandComputed, ExchangeCountsCostsOneMoreRound) {
  model::RunResult r = run_tiny(layerwise("exchange-counts"));
  EXPECT_EQ(r.iteration_ns[0], 10924);
  EXPECT_DOUBLE_EQ(r.buckets[1].sync_wait_s, 88e-9);  // posted 5000, started 5088
}

// Pad to max: an allreduce of the count (2000 + 8) before an allgather of the
// largest contribution (1080): 3088 per tensor. [3000, 6088], [6088, 9176],
// [9176, 12264]; decompression [12264, 13424]; optimizer ends 13924.
TEST(SparseHandComputed, PadToMaxAgreesOnTheMaximumFirst) {
  EXPECT_EQ(run_tiny(layerwise("pad-to-max")).iteration_ns[0], 13924);
}

// ADTopk: a and c are 1-D, so dense: all 250 values as pairs, with their
// indices, as the runtime sends them (2000 B); b = [10, 25] keeps k1 =
// max(1, floor(25 * 0.04)) = 1 per row: 10 pairs = 80 B. Only b is compressed.
TEST(SparseHandComputed, AdtopkPerRowCounts) {
  model::RunResult r = run_tiny({{"preset", "adtopk"}, {"density", 0.04}, {"error_feedback", "none"}});
  ASSERT_EQ(r.buckets.size(), 3u);
  EXPECT_EQ(r.buckets[0].bucket.bytes_per_worker, 2000);
  EXPECT_EQ(r.buckets[0].sent_elements, 250);
  EXPECT_EQ(r.buckets[1].bucket.bytes_per_worker, 80);
  EXPECT_EQ(r.buckets[1].sent_elements, 10);
  EXPECT_EQ(r.buckets[2].bucket.bytes_per_worker, 2000);
  EXPECT_DOUBLE_EQ(r.buckets[0].compression_s, 0);
  EXPECT_DOUBLE_EQ(r.buckets[1].compression_s, 1000e-9);
  EXPECT_EQ(r.plan["dense_tensors"], 2);
  EXPECT_EQ(r.plan["adtopk_rows_covered"], 1.0);
}

// Packing (tests/data/profile-unit-pack.json: 500 ns at density 0.04, 2000
// ns dense as pairs) runs on the compute stream after each compression and
// delays the post. Layerwise top-k, 10 of 250 = density 0.04: kernel a
// [1000, 2000], top-k [2000, 3000], pack [3000, 3500] -> post 3500; b
// [3500, 4500], [4500, 5500], [5500, 6000] -> 6000; c [6000, 7000], [7000,
// 8000], [8000, 8500] -> 8500. Allgathers of 1080: the last [8500, 9580];
// decompression [9580, 10740]; optimizer ends 11240 = 9740 + 3 x 500.
TEST(SparseHandComputed, PackingDelaysThePostOnTheComputeStream) {
  model::RunResult r = run_tiny(layerwise("fixed-k"), 2, "tests/data/profile-unit-pack.json");
  EXPECT_EQ(r.iteration_ns[0], 11240);
  ASSERT_EQ(r.buckets.size(), 3u);
  for (const auto& b : r.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  EXPECT_NEAR(r.breakdown.backward, 3000e-9, 1e-15);
  EXPECT_NEAR(r.breakdown.compression, (4500 + 1160) * 1e-9, 1e-15);
  // ADTopk's 1-D tensors a and c go dense as pairs: packed at density 1.
  model::RunResult ad = run_tiny({{"preset", "adtopk"}, {"density", 0.04}, {"error_feedback", "none"}}, 2,
                                 "tests/data/profile-unit-pack.json");
  ASSERT_EQ(ad.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(ad.buckets[0].compression_s, 2000e-9);
  EXPECT_DOUBLE_EQ(ad.buckets[1].compression_s, 1500e-9);
  EXPECT_DOUBLE_EQ(ad.buckets[2].compression_s, 2000e-9);
}

// Cold gradients (docs/simulator-model.md#cold-gradients): one buffer over
// a, b, c, top-k behind fusion at 3000 ns. Tensors a and b were written
// before c's backward: 500 of its 750 elements are cold, so top-k costs
// 1/3 x 1000 + 2/3 x 4000 = 3000 ns and packing 1/3 x 500 + 2/3 x 2000 =
// 1500 ns: compression 4500 ns. Per tensor, every request is its tensor's
// last: 1000 + 500 each, all hot.
TEST(SparseHandComputed, AFusedBuffersOlderTensorsAreCold) {
  Json fused = {{"preset", "fgbuff"}, {"partition", "single"}, {"placement", "behind"}, {"density", 0.04},
                {"error_feedback", "none"}};
  model::RunResult r = run_tiny(fused, 2, "tests/data/profile-unit-cold.json");
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_DOUBLE_EQ(r.buckets[0].compression_s, 4500e-9);
  model::RunResult per_tensor = run_tiny(layerwise("fixed-k"), 2, "tests/data/profile-unit-cold.json");
  ASSERT_EQ(per_tensor.buckets.size(), 3u);
  for (const auto& b : per_tensor.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  // A profile without a cold section costs every request hot.
  model::RunResult hot = run_tiny(fused, 2, "tests/data/profile-unit-pack.json");
  EXPECT_DOUBLE_EQ(hot.buckets[0].compression_s, 1500e-9);
}

// Calls after compute (docs/simulator-model.md#calls-after-compute): per
// tensor, top-k costs its hot 1000 ns plus its entry excess 3000 - 1000 and
// packing 500 + (750 - 500): 3750 ns per bucket. Hot calls: 1500 ns. A
// profile without the section charges hot and the result says so.
TEST(SparseHandComputed, CallsAfterComputePayTheirEntryCost) {
  const char* profile = "tests/data/profile-unit-after-compute.json";
  model::RunResult after = run_tiny(layerwise("fixed-k"), 2, profile, "after-compute");
  ASSERT_EQ(after.buckets.size(), 3u);
  for (const auto& b : after.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 3750e-9);
  EXPECT_NE(after.compression_costs.find("compression_after_compute excess charged"), std::string::npos)
      << after.compression_costs;
  model::RunResult hot = run_tiny(layerwise("fixed-k"), 2, profile, "hot");
  for (const auto& b : hot.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  EXPECT_EQ(hot.compression_costs.find("after compute"), std::string::npos) << hot.compression_costs;
  model::RunResult unmeasured = run_tiny(layerwise("fixed-k"), 2, "tests/data/profile-unit-pack.json", "after-compute");
  for (const auto& b : unmeasured.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  EXPECT_NE(unmeasured.compression_costs.find("it measured none, every call charged hot"), std::string::npos)
      << unmeasured.compression_costs;
}

// A module's second parameter follows its first one's compression, not a
// backward step: tiny3-modules names a and b m.weight and m.bias. Per
// tensor, m.weight and n.weight pay the entry excess (3750 ns as above);
// m.bias is charged its hot 1000 ns plus packing 500 + 250 (the payload's
// own entry stays: its buffer is the bucket's, not the kernel's): 1750 ns.
TEST(SparseHandComputed, AModulesSecondParameterFollowsTheFirstsCompression) {
  const char* profile = "tests/data/profile-unit-after-compute.json";
  model::RunResult r = run_tiny(layerwise("fixed-k"), 2, profile, "after-compute", "tests/data/tiny3-modules.json");
  ASSERT_EQ(r.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(r.buckets[0].compression_s, 3750e-9);
  EXPECT_DOUBLE_EQ(r.buckets[1].compression_s, 1750e-9);
  EXPECT_DOUBLE_EQ(r.buckets[2].compression_s, 3750e-9);
  // Names without a module (tiny3's a, b, c): every tensor follows compute.
  model::RunResult unnamed = run_tiny(layerwise("fixed-k"), 2, profile, "after-compute");
  for (const auto& b : unnamed.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 3750e-9);
}

// The runtime's flush bookkeeping (compression.flush_bookkeeping_us = 0.25)
// is added to every packed bucket: per-tensor top-k after compute, 3750 +
// 250 = 4000 ns per bucket; ADTopk's dense-as-pairs buckets a and c pay it
// too (2000 + 250), as does b (1500 + 250). A dense allreduce packs
// nothing and pays nothing.
TEST(SparseHandComputed, EveryPackedFlushPaysTheRuntimesBookkeeping) {
  Json doc = tiny_scenario(layerwise("fixed-k"), 2, "tests/data/profile-unit-after-compute.json", "after-compute");
  doc["compression"]["flush_bookkeeping_us"] = 0.25;
  model::RunResult r = simulate(model::parse_scenario(doc, ""));
  ASSERT_EQ(r.buckets.size(), 3u);
  for (const auto& b : r.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 4000e-9);
  doc["scheme"] = {{"preset", "adtopk"}, {"density", 0.04}, {"error_feedback", "none"}};
  doc["compression"] = {{"profile", "tests/data/profile-unit-pack.json"},
                        {"gpu_memory_gbytes_per_s", 1.0},
                        {"flush_bookkeeping_us", 0.25}};
  model::RunResult ad = simulate(model::parse_scenario(doc, ""));
  ASSERT_EQ(ad.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(ad.buckets[0].compression_s, 2250e-9);
  EXPECT_DOUBLE_EQ(ad.buckets[1].compression_s, 1750e-9);
  EXPECT_DOUBLE_EQ(ad.buckets[2].compression_s, 2250e-9);
  doc["scheme"] = "wfbp";
  for (const auto& b : simulate(model::parse_scenario(doc, "")).buckets) EXPECT_DOUBLE_EQ(b.compression_s, 0);
  expect_negative_compression_value_refused(doc, "flush_bookkeeping_us");
}

// A profile's measured bookkeeping (profile-unit-bookkeeping.json:
// profile-unit-after-compute.json plus flush_bookkeeping.time_us = 0.25) is
// charged per packed flush with calls after compute, 3750 + 250 = 4000 ns
// per per-tensor top-k bucket, and named in compression_costs; with hot
// calls it is not (1000 + 500); a scenario's value replaces it (0: 3750).
// A flush_bookkeeping without time_us, or a negative one, is refused.
TEST(SparseHandComputed, TheProfilesBookkeepingIsChargedAfterCompute) {
  const char* profile = "tests/data/profile-unit-bookkeeping.json";
  model::RunResult after = run_tiny(layerwise("fixed-k"), 2, profile, "after-compute");
  ASSERT_EQ(after.buckets.size(), 3u);
  for (const auto& b : after.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 4000e-9);
  EXPECT_NE(after.compression_costs.find("0.25 us per packed flush (the profile's)"), std::string::npos)
      << after.compression_costs;
  for (const auto& b : run_tiny(layerwise("fixed-k"), 2, profile, "hot").buckets) {
    EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  }
  Json doc = tiny_scenario(layerwise("fixed-k"), 2, profile, "after-compute");
  doc["compression"]["flush_bookkeeping_us"] = 0;
  for (const auto& b : simulate(model::parse_scenario(doc, "")).buckets) EXPECT_DOUBLE_EQ(b.compression_s, 3750e-9);
  expect_bookkeeping_without_time_refused(profile, "flush_bookkeeping");
}

// A trace's in-situ flush bookkeeping (tiny3-flush-probe.json: runtime_flush
// 0.9 - 0.3 = 0.6 us, as `sparsefuse train --profile interleaved` measures
// it) replaces a CPU profile's (0.25) with calls after compute: 3750 + 600 =
// 4350 ns per per-tensor top-k bucket, named as the trace's. Hot calls pay
// none (1500); a scenario's value still wins (0: 3750); a GPU profile keeps
// its own (2050, as above).
TEST(SparseHandComputed, TheTracesInSituBookkeepingReplacesTheCpuProfiles) {
  const char* trace = "tests/data/tiny3-flush-probe.json";
  const char* profile = "tests/data/profile-unit-bookkeeping.json";
  model::RunResult after = run_tiny(layerwise("fixed-k"), 2, profile, "after-compute", trace);
  ASSERT_EQ(after.buckets.size(), 3u);
  for (const auto& b : after.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 4350e-9);
  EXPECT_NE(after.compression_costs.find("0.6 us per packed flush (the trace's runtime_flush, measured in situ)"),
            std::string::npos)
      << after.compression_costs;
  for (const auto& b : run_tiny(layerwise("fixed-k"), 2, profile, "hot", trace).buckets) {
    EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  }
  Json doc = tiny_scenario(layerwise("fixed-k"), 2, profile, "after-compute", trace);
  doc["compression"]["flush_bookkeeping_us"] = 0;
  for (const auto& b : simulate(model::parse_scenario(doc, "")).buckets) EXPECT_DOUBLE_EQ(b.compression_s, 3750e-9);
  for (const auto& b : run_tiny(layerwise("fixed-k"), 2, "tests/data/profile-unit-gpu-bookkeeping.json", "hot",
                                trace).buckets) {
    EXPECT_DOUBLE_EQ(b.compression_s, 2050e-9);
  }
}

// The runtime's write-back of the averages into the framework's gradients
// (tiny3-flush-probe.json: runtime_flush write_back_us 1.5) joins the
// optimizer phase unscaled: wfbp's optimizer 500 + 1500 ns on tiny3 at its
// own batch, 2 x 500 + 1500 at twice the batch, and every iteration 1500 ns
// longer than on tiny3.json, which has none.
TEST(SparseHandComputed, TheRuntimesWriteBackJoinsTheOptimizerPhase) {
  const Json wfbp = "wfbp";
  const model::RunResult plain = run_tiny(wfbp, 2);
  const model::RunResult written = run_tiny(wfbp, 2, "tests/data/profile-unit.json", "hot",
                                            "tests/data/tiny3-flush-probe.json");
  EXPECT_DOUBLE_EQ(plain.breakdown.optimizer, 500e-9);
  EXPECT_DOUBLE_EQ(written.breakdown.optimizer, 2000e-9);
  ASSERT_EQ(plain.iteration_ns.size(), written.iteration_ns.size());
  for (size_t i = 0; i < plain.iteration_ns.size(); ++i) {
    EXPECT_EQ(written.iteration_ns[i], plain.iteration_ns[i] + 1500) << i;
  }
  Json doc = tiny_scenario(wfbp, 2, "tests/data/profile-unit.json", "hot", "tests/data/tiny3-flush-probe.json");
  doc["batch_per_worker"] = 2;
  EXPECT_DOUBLE_EQ(simulate(model::parse_scenario(doc, "")).breakdown.optimizer, 2500e-9);
}

// A bucket of one tensor sent dense as pairs costs the trace's in-situ flush
// of that tensor (tiny3-flush-probe.json: a 0.9 us, c 0.8) with calls after
// compute: ADTopk sends the 1-D a and c so. Without the trace's figures
// (a scenario's bookkeeping, here 0) it is the pack curve (0.5 us) plus
// its after-compute excess (0.75 - 0.5) plus that bookkeeping: 750 ns; hot
// calls pay the pack curve alone: 500 ns.
TEST(SparseHandComputed, ADenseBucketOfOneTensorCostsItsInSituFlush) {
  const char* trace = "tests/data/tiny3-flush-probe.json";
  const char* profile = "tests/data/profile-unit-bookkeeping.json";
  const Json adtopk = {{"preset", "adtopk"}, {"density", 0.04}, {"error_feedback", "none"}};
  model::RunResult after = run_tiny(adtopk, 2, profile, "after-compute", trace);
  ASSERT_EQ(after.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(after.buckets[0].compression_s, 900e-9);
  EXPECT_DOUBLE_EQ(after.buckets[2].compression_s, 800e-9);
  EXPECT_NE(after.compression_costs.find("that tensor's flush measured in situ by the trace's runtime_flush (3 "
                                         "tensors)"),
            std::string::npos)
      << after.compression_costs;
  Json doc = tiny_scenario(adtopk, 2, profile, "after-compute", trace);
  doc["compression"]["flush_bookkeeping_us"] = 0;
  const model::RunResult overridden = simulate(model::parse_scenario(doc, ""));
  EXPECT_DOUBLE_EQ(overridden.buckets[0].compression_s, 750e-9);
  EXPECT_DOUBLE_EQ(overridden.buckets[2].compression_s, 750e-9);
  EXPECT_EQ(overridden.compression_costs.find("in situ by"), std::string::npos) << overridden.compression_costs;
  const model::RunResult hot = run_tiny(adtopk, 2, profile, "hot", trace);
  EXPECT_DOUBLE_EQ(hot.buckets[0].compression_s, 500e-9);
  EXPECT_DOUBLE_EQ(hot.buckets[2].compression_s, 500e-9);
}

// A profile's request bookkeeping (profile-unit-request.json:
// profile-unit-pack.json plus request_bookkeeping.time_us = 0.3) is charged
// per inline compression request, hot calls included: per-tensor top-k,
// 1000 + 300 + pack 500 = 1800 ns per bucket, named in compression_costs; a
// scenario's value replaces it (0: 1500); a dense allreduce compresses
// nothing and pays nothing. A request_bookkeeping without time_us, or a
// negative one, and a negative scenario value are refused.
TEST(SparseHandComputed, EveryInlineRequestPaysTheProfilesRequestBookkeeping) {
  const char* profile = "tests/data/profile-unit-request.json";
  model::RunResult r = run_tiny(layerwise("fixed-k"), 2, profile);
  ASSERT_EQ(r.buckets.size(), 3u);
  for (const auto& b : r.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 1800e-9);
  EXPECT_NE(r.compression_costs.find("0.3 us per inline compression request (the profile's)"), std::string::npos)
      << r.compression_costs;
  Json doc = tiny_scenario(layerwise("fixed-k"), 2, profile);
  doc["compression"]["request_bookkeeping_us"] = 0;
  for (const auto& b : simulate(model::parse_scenario(doc, "")).buckets) EXPECT_DOUBLE_EQ(b.compression_s, 1500e-9);
  doc["scheme"] = "wfbp";
  for (const auto& b : simulate(model::parse_scenario(doc, "")).buckets) EXPECT_DOUBLE_EQ(b.compression_s, 0);
  expect_negative_compression_value_refused(doc, "request_bookkeeping_us");
  expect_bookkeeping_without_time_refused(profile, "request_bookkeeping");
  // The planners see it too: the scheme's cost estimate of a request is the
  // curve's 1000 ns plus the 300.
  const model::ScenarioPlan planned(model::parse_scenario(tiny_scenario(layerwise("fixed-k"), 2, profile), ""));
  EXPECT_EQ(planned.estimates.compression_ns(policy::Sparsifier::kTopk, 250, 0.04), 1300);
}

// A GPU profile's flush bookkeeping (profile-unit-gpu-bookkeeping.json:
// device kind cuda, request_bookkeeping 0.3 us, flush_bookkeeping 0.25 us)
// is charged with hot calls too, unlike a CPU profile's: per-tensor top-k,
// 1000 + 300 + pack 500 + 250 = 2050 ns per bucket; ADTopk's dense-as-pairs
// buckets a and c (no request) 2000 + 250, its sparse b 1000 + 300 + 500 + 250.
TEST(SparseHandComputed, AGpuProfilesFlushBookkeepingIsChargedWithHotCalls) {
  const char* profile = "tests/data/profile-unit-gpu-bookkeeping.json";
  model::RunResult r = run_tiny(layerwise("fixed-k"), 2, profile);
  ASSERT_EQ(r.buckets.size(), 3u);
  for (const auto& b : r.buckets) EXPECT_DOUBLE_EQ(b.compression_s, 2050e-9);
  Json doc = tiny_scenario({{"preset", "adtopk"}, {"density", 0.04}, {"error_feedback", "none"}}, 2, profile);
  model::RunResult ad = simulate(model::parse_scenario(doc, ""));
  ASSERT_EQ(ad.buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(ad.buckets[0].compression_s, 2250e-9);
  EXPECT_DOUBLE_EQ(ad.buckets[1].compression_s, 2050e-9);
  EXPECT_DOUBLE_EQ(ad.buckets[2].compression_s, 2250e-9);
}

// ADTopk on tensor b ([10, 25]: rows of 25) with tests/data/profile-unit-adtopk-rows.json
// (4 us on rows of 5, 1 us on rows of 125, rows of 10000 measured from 10000
// elements only): halfway in log between 5 and 125, sqrt(4 x 1) = 2 us. The
// 1-D tensors a and c are sent dense and compress nothing. With one cost for
// every row (profile-unit.json) b costs its 1 us.
TEST(SparseHandComputed, AdtopkPaysItsTensorsRowLength) {
  const Json adtopk = {{"preset", "adtopk"}, {"density", 0.04}, {"error_feedback", "none"}};
  auto compression_of_b = [](const model::RunResult& r) {
    for (const auto& b : r.buckets)
      if (b.bucket.first_tensor == 1) return b.compression_s;
    ADD_FAILURE() << "no bucket starts at tensor b";
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(compression_of_b(run_tiny(adtopk, 2, "tests/data/profile-unit-adtopk-rows.json")), 2000e-9);
  EXPECT_DOUBLE_EQ(compression_of_b(run_tiny(adtopk, 2, "tests/data/profile-unit.json")), 1000e-9);
}

// ADTopk on b measured on its own gradient (profile-unit-adtopk-own.json:
// 1/4 of Gaussian values' time at density 0.01, 3/4 at 0.1) scales b's 2 us
// by the ratio at the density nearest in log: 0.04 is nearer 0.1 (0.75:
// 1.5 us), 0.015 nearer 0.01 (0.25: 0.5 us). The same ratios in a fused
// profile apply as well; a profile without them leaves b at 2 us.
TEST(SparseHandComputed, AdtopkScalesByItsTensorsOwnGradient) {
  auto adtopk = [](double density) {
    return Json{{"preset", "adtopk"}, {"density", density}, {"error_feedback", "none"}};
  };
  const char* own = "tests/data/profile-unit-adtopk-own.json";
  const model::RunResult r = run_tiny(adtopk(0.04), 2, own);
  EXPECT_DOUBLE_EQ(r.buckets[1].compression_s, 1500e-9);
  EXPECT_NE(r.compression_costs.find("ADTopk on 1 tensors scaled by its time on their own gradient"),
            std::string::npos)
      << r.compression_costs;
  EXPECT_DOUBLE_EQ(run_tiny(adtopk(0.015), 2, own).buckets[1].compression_s, 500e-9);
  Json doc = tiny_scenario(adtopk(0.04), 2, "tests/data/profile-unit-adtopk-rows.json");
  EXPECT_DOUBLE_EQ(simulate(model::parse_scenario(doc, "")).buckets[1].compression_s, 2000e-9);
  doc["compression"]["fused_profile"] = own;
  EXPECT_DOUBLE_EQ(simulate(model::parse_scenario(doc, "")).buckets[1].compression_s, 1500e-9);
}

// Allgather volumes by alignment, p = 2, contributions of 80 and 240 bytes.
TEST(SparseHandComputed, AlignmentCosts) {
  model::NetworkConfig config;
  config.latency_us = 1;
  config.bandwidth_gbps = 8;
  model::FlatNetwork two(config, 2);
  Contributions c;
  c.add(80);
  c.add(240);
  policy::Bucket b;
  b.collective = Collective::kAllgather;
  b.alignment = policy::Alignment::kExchangeCounts;
  EXPECT_EQ(operation_cost(two, b, c).total(), 1008 + 1000 + 240);  // counts, then 320 - 80 bytes
  b.alignment = policy::Alignment::kPadToMax;
  EXPECT_EQ(operation_cost(two, b, c).total(), 2008 + 1000 + 240);
  EXPECT_EQ(bytes_on_wire(b, c, 80), 240);
  b.alignment = policy::Alignment::kEqualSlices;
  EXPECT_EQ(operation_cost(two, b, c).total(), 1000 + 240);
  EXPECT_EQ(bytes_on_wire(b, c, 80), 80);
}

// Equal slices: counts [10, 30] -> slices of 20: slice 0 holds 10 + 10 pairs of
// two workers (100 cross pairs), slice 1 only worker 1's. n = 1000: 0.1 lost.
// Counts [5, 7, 10]: total 22, slices of 7, 1 pair of tail dropped; slice 0 =
// 5 (w0) + 2 (w1), slice 1 = 5 (w1) + 2 (w2), slice 2 = 7 (w2): 10 + 10 cross
// pairs.
TEST(SparseHandComputed, EqualSlicesLoss) {
  EXPECT_DOUBLE_EQ(equal_slices_loss({10, 30}, 1000), 0.1);
  EXPECT_DOUBLE_EQ(equal_slices_loss({5, 7, 10}, 1000), 1 + 20.0 / 1000);
  EXPECT_DOUBLE_EQ(equal_slices_loss({8, 8, 8, 8}, 1000), 0);  // aligned: nothing lost
  EXPECT_DOUBLE_EQ(equal_slices_loss({1, 0, 0}, 1000), 1);     // fewer pairs than slices
}

}  // namespace
}  // namespace sparsefuse::sim
