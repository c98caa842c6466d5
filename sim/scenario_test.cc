// Scenario parsing, overrides and the precise messages of bad input.
#include <gtest/gtest.h>

#include "policy/presets.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

Json valid() { return {{"model", "bert-base"}, {"workers", 4}, {"scheme", "ddp"}}; }

std::string error_of(const Json& doc) {
  try {
    model::parse_scenario(doc, "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Scenario, DefaultsAreFilledAndResolved) {
  model::Scenario s = model::parse_scenario(valid(), "s.json");
  EXPECT_EQ(s.batch_per_worker, 4);  // from the trace
  EXPECT_EQ(s.iterations, 20);
  EXPECT_EQ(s.warmup_iterations, 2);
  Json r = s.resolved();
  EXPECT_EQ(r["scheme"]["bucket_cap_bytes"], 25 << 20);
  EXPECT_EQ(r["network"]["bandwidth_gbps"], 100.0);
  // The resolved scenario parses back to the same resolution.
  EXPECT_EQ(model::parse_scenario(r, "r.json").resolved().dump(), r.dump());
}

// result.json's scenario "re-runs to the same result": for every preset, the
// resolved scenario parses back to the same resolution and the same result.
// compression.calls: "hot" (the default) or "after-compute"; anything else
// named with the file and key.
TEST(Scenario, CompressionCallsIsHotOrAfterCompute) {
  Json doc = valid();
  EXPECT_FALSE(model::parse_scenario(doc, "s.json").compression.calls_after_compute);
  doc["compression"] = {{"calls", "after-compute"}};
  EXPECT_TRUE(model::parse_scenario(doc, "s.json").compression.calls_after_compute);
  doc["compression"] = {{"calls", "cold"}};
  EXPECT_EQ(error_of(doc), "s.json: at /compression/calls: expected \"hot\" or \"after-compute\", got \"cold\"");
}

TEST(Scenario, EveryPresetsResolvedScenarioRunsAgainIdentically) {
  for (const std::string& preset : policy::preset_names()) {
    Json doc = {{"model", "bert-base"}, {"workers", 8}, {"iterations", 2}, {"warmup_iterations", 1},
                {"scheme", preset}, {"variability", {{"compute_cv", 0.05}}}};
    model::Scenario s = model::parse_scenario(doc, "s.json");
    Json r = s.resolved();
    model::Scenario again;
    try {
      again = model::parse_scenario(r, "r.json");
    } catch (const InputError& e) {
      ADD_FAILURE() << preset << ": " << e.what();
      continue;
    }
    EXPECT_EQ(again.resolved().dump(), r.dump()) << preset;
    EXPECT_EQ(simulate(again).to_json(false).dump(), simulate(s).to_json(false).dump()) << preset;
  }
}

TEST(Scenario, OverridesUseDottedPathsAndJsonValues) {
  Json doc = valid();
  model::apply_override(doc, "workers=1024");
  model::apply_override(doc, "network.bandwidth_gbps=25");
  model::apply_override(doc, "scheme.first_bucket_bytes=2097152");
  model::apply_override(doc, "description=plain text");
  model::Scenario s = model::parse_scenario(doc, "s.json");
  EXPECT_EQ(s.workers, 1024);
  EXPECT_EQ(s.network.bandwidth_gbps, 25.0);
  EXPECT_EQ(s.scheme.preset, "ddp");
  EXPECT_EQ(s.scheme.resolved["first_bucket_bytes"], 2097152);
  EXPECT_EQ(s.description, "plain text");
  model::apply_override(doc, "scheme.preset=horovod");
  EXPECT_THROW(model::parse_scenario(doc, "s.json"), InputError);  // first_bucket_bytes is not a horovod knob
  EXPECT_THROW(model::apply_override(doc, "novalue"), InputError);
  EXPECT_THROW(model::apply_override(doc, "workers.x=1"), InputError);
}

// A --set value is kept as a string when it is not JSON; result.json records
// it, so it must be UTF-8 text.
TEST(Scenario, OverridesThatAreNotUtf8AreBadInput) {
  Json doc = valid();
  try {
    model::apply_override(doc, "description=a\xff" "b");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "--set description=a\xff" "b");
    EXPECT_EQ(e.problem(), "expected UTF-8 text");
  }
  model::apply_override(doc, "description=\xe2\x9c\x93 ok");
  EXPECT_EQ(doc["description"], "\xe2\x9c\x93 ok");
}

TEST(Scenario, BadInputNamesFilePointerAndExpectation) {
  Json doc = valid();
  doc["wrokers"] = 3;
  EXPECT_EQ(error_of(doc), "s.json: at /wrokers: unknown key \"wrokers\"; did you mean \"workers\"?");

  doc = valid();
  doc["workers"] = "four";
  EXPECT_EQ(error_of(doc), "s.json: at /workers: expected an integer in [1, 1048576], got the string \"four\"");

  doc = valid();
  doc["workers"] = 0;
  EXPECT_EQ(error_of(doc), "s.json: at /workers: expected an integer in [1, 1048576], got 0");

  doc = valid();
  doc["network"] = {{"bandwidth_gbps", 0}};
  EXPECT_NE(error_of(doc).find("/network/bandwidth_gbps: expected a number > 0"), std::string::npos);

  doc = valid();
  doc["variability"] = {{"compute_cv", -0.1}};
  EXPECT_NE(error_of(doc).find("/variability/compute_cv: expected a number >= 0"), std::string::npos);

  doc = valid();
  doc["scheme"] = "horovd";
  EXPECT_EQ(error_of(doc), "s.json: at /scheme: unknown preset \"horovd\"; did you mean \"horovod\"?");

  doc = valid();
  doc["scheme"] = {{"preset", "horovod"}, {"cycle_time_ms", 5}};
  EXPECT_EQ(error_of(doc), "s.json: at /scheme/cycle_time_ms: unknown key \"cycle_time_ms\"; did you mean \"cycle_time_us\"?");

  doc = valid();
  doc["model"] = "bert-lage";
  EXPECT_EQ(error_of(doc), "s.json: at /model: unknown model \"bert-lage\"; did you mean \"bert-large\"?");

  doc = valid();
  doc.erase("workers");
  EXPECT_EQ(error_of(doc), "s.json: at /: missing required key \"workers\"");

  doc = valid();
  doc["variability"] = {{"stragglers", {{"ranks", {9}}}}};
  EXPECT_EQ(error_of(doc), "s.json: at /variability/stragglers/ranks/0: expected an integer in [0, 3], got 9");
}

TEST(Scenario, BadTracesAreRejected) {
  Json doc = valid();
  doc["model"] = {{"trace", "tests/data/bad_no_tensors.json"}};
  EXPECT_EQ(error_of(doc), "tests/data/bad_no_tensors.json: at /tensors: expected at least one tensor; the trace has none");
  doc["model"] = {{"trace", "tests/data/bad_sizes.json"}};
  EXPECT_EQ(error_of(doc),
            "tests/data/bad_sizes.json: at /tensors/0/elements: inconsistent size: shape gives 32 elements but "
            "\"elements\" is 30");
  doc["model"] = {{"trace", "tests/data/missing.json"}};
  EXPECT_EQ(error_of(doc), "tests/data/missing.json: cannot open file (does it exist and is it readable?)");
}

}  // namespace
}  // namespace sparsefuse::sim
