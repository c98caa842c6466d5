// The start-up agreement: what goes into a rank's fingerprint, and the
// message naming the ranks that differ.
#include <gtest/gtest.h>

#include "runtime/agreement.h"

namespace sparsefuse::runtime {
namespace {

model::Scenario scenario(const std::string& trace, Json scheme, int workers = 2) {
  Json doc = {{"model", {{"trace", trace}}}, {"workers", workers}, {"iterations", 3}, {"scheme", scheme}};
  return model::parse_scenario(doc, "agreement.json");
}

TEST(Agreement, TheSameRunHasTheSameFingerprint) {
  EXPECT_EQ(run_fingerprint(scenario("tests/data/tiny3.json", "wfbp")),
            run_fingerprint(scenario("tests/data/tiny3.json", "wfbp")));
}

TEST(Agreement, SchemeWorkersKnobsAndTraceChangeTheFingerprint) {
  const uint64_t base = run_fingerprint(scenario("tests/data/tiny3.json", "wfbp"));
  EXPECT_NE(base, run_fingerprint(scenario("tests/data/tiny3.json", "ssfusion")));
  EXPECT_NE(base, run_fingerprint(scenario("tests/data/tiny3.json", "wfbp", 4)));
  EXPECT_NE(run_fingerprint(scenario("tests/data/tiny3.json", {{"preset", "ssfusion"}, {"density", 0.1}})),
            run_fingerprint(scenario("tests/data/tiny3.json", {{"preset", "ssfusion"}, {"density", 0.2}})));
  EXPECT_NE(base, run_fingerprint(scenario("tests/data/tiny4.json", "wfbp")));
}

TEST(Agreement, NamesEveryRankThatDiffersFromRankZero) {
  EXPECT_EQ(disagreement({7}), "");
  EXPECT_EQ(disagreement({7, 7, 7}), "");
  EXPECT_EQ(disagreement({7, 7, 9}), "rank 2 (fingerprint 0000000000000009) differs from rank 0 (0000000000000007)");
  EXPECT_EQ(disagreement({-1, 1, -1, 2}),
            "rank 1 (fingerprint 0000000000000001), rank 3 (fingerprint 0000000000000002) differ from rank 0 "
            "(ffffffffffffffff)");
}

TEST(Agreement, OneRankExchangesWithItself) {
  CommThread comm([] { return std::make_unique<LoopbackCommunicator>(); });
  EXPECT_EQ(exchange_fingerprints(comm, 0x123456789abcdef0ull, std::chrono::seconds(10)),
            (std::vector<int64_t>{int64_t(0x123456789abcdef0ull)}));
}

}  // namespace
}  // namespace sparsefuse::runtime
