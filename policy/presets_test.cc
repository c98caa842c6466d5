#include <gtest/gtest.h>

#include "policy/presets.h"

namespace sparsefuse::policy {
namespace {

TEST(Presets, EveryPresetBuildsWithItsDefaults) {
  Trace trace;
  trace.model = "two-tensors";
  trace.batch_size = 1;
  trace.backward_ns = 10;
  trace.tensors = {{"a", {10}, 10, 5, 0, true, 0}, {"b", {4, 5}, 20, 10, 0, true, 0}};
  GradientModel m = GradientModel::from_trace(trace, 1.0);
  class Cost : public CostEstimator {
   public:
    int workers() const override { return 4; }
    TimeNs collective_ns(Collective, int64_t bytes) const override { return 10 + bytes; }
    TimeNs coordination_ns() const override { return 1; }
    TimeNs compression_ns(Sparsifier, int64_t, double) const override { return 0; }
    TimeNs cpu_compression_ns(Sparsifier, int64_t, double) const override { return 0; }
  } cost;
  for (const auto& name : preset_names()) {
    Json doc = name;
    SchemeConfig config = parse_scheme_config(JsonNode(doc, "f", "/scheme"));
    EXPECT_EQ(config.resolved["preset"], name);
    auto scheme = build_scheme(config, m, cost);
    EXPECT_TRUE(scheme->make_coordinator() || scheme->make_worker_policy(0)) << name;
  }
}

TEST(Presets, HorovodDefaultsAreTodaysHorovod) {
  Json doc = "horovod";
  SchemeConfig c = parse_scheme_config(JsonNode(doc, "f", "/scheme"));
  EXPECT_EQ(c.resolved["fusion_threshold_bytes"], 128 << 20);
  EXPECT_EQ(c.resolved["cycle_time_us"], 1000.0);
}

TEST(Presets, KnobTypesAreChecked) {
  Json doc = {{"preset", "ddp"}, {"bucket_cap_bytes", "big"}};
  try {
    parse_scheme_config(JsonNode(doc, "f", "/scheme"));
    FAIL() << "accepted a string bucket size";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f: at /scheme/bucket_cap_bytes: expected an integer in [0, 1125899906842624], got the string \"big\"");
  }
}

// A credit of 0 would never launch anything (the simulator stopped with an
// internal error, exit 1): bad input, naming the knob and its range.
TEST(Presets, CountKnobsHaveTheirMinimum) {
  Json doc = {{"preset", "bytescheduler"}, {"credit_elements", 0}};
  try {
    parse_scheme_config(JsonNode(doc, "f", "/scheme"));
    FAIL() << "accepted a credit of 0";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f: at /scheme/credit_elements: expected an integer in [1, 1125899906842624], got 0");
  }
}

}  // namespace
}  // namespace sparsefuse::policy
