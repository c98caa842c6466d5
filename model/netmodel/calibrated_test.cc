#include "model/netmodel/calibrated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/input_error.h"

namespace sparsefuse::netmodel {
namespace {

CalibratedTable parse(const std::string& text) {
  static Json keep;  // JsonNode refers to it
  keep = Json::parse(text);
  return CalibratedTable::parse(JsonNode(keep, "profile.json", "/collectives"));
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// allreduce at 8 ranks: 1 KiB 10 us, 1 MiB 100 us, 4 MiB 340 us; at 32 ranks:
// 1 KiB 40 us, 1 MiB 400 us. allgather at 8 ranks only.
const char* kTable = R"({
  "allreduce": [
    {"ranks": 8, "bytes": 1048576, "time_us": 100},
    {"ranks": 8, "bytes": 1024, "time_us": 10},
    {"ranks": 8, "bytes": 4194304, "time_us": 340},
    {"ranks": 32, "bytes": 1024, "time_us": 40},
    {"ranks": 32, "bytes": 1048576, "time_us": 400}
  ],
  "allgather": [{"ranks": 8, "bytes": 65536, "time_us": 20}]
})";

TEST(Calibrated, ExactPointsAreReturned) {
  CalibratedTable t = parse(kTable);
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 8, 1024), 10);
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 8, 1048576), 100);
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 32, 1048576), 400);
  EXPECT_EQ(t.rank_counts(Collective::kAllreduce), (std::vector<int>{8, 32}));
  EXPECT_TRUE(t.has(Collective::kAllgather));
  EXPECT_FALSE(t.has(Collective::kReduceScatter));
}

TEST(Calibrated, LogLogInBytes) {
  CalibratedTable t = parse(kTable);
  // 32 KiB is halfway between 1 KiB and 1 MiB in log2 (10, 15, 20): time is
  // the geometric mean sqrt(10 x 100) = 31.6227766.
  EXPECT_NEAR(t.time_us(Collective::kAllreduce, 8, 32768), std::sqrt(1000.0), 1e-9);
  // 2 MiB: log2 21 is halfway between 20 and 22: sqrt(100 x 340) = 184.3908891.
  EXPECT_NEAR(t.time_us(Collective::kAllreduce, 8, 2097152), std::sqrt(34000.0), 1e-9);
}

TEST(Calibrated, ClampsBelowAndExtrapolatesLinearlyAbove) {
  CalibratedTable t = parse(kTable);
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 8, 8), 10);  // latency floor
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 8, 0), 0);
  // Above 4 MiB: last segment costs (340 - 100) / (4194304 - 1048576) us per byte;
  // 8 MiB = 340 + 4194304 x 240 / 3145728 = 340 + 320 = 660.
  EXPECT_NEAR(t.time_us(Collective::kAllreduce, 8, 8388608), 660, 1e-9);
  // One measurement only: proportional. 128 KiB = 2 x 64 KiB -> 40 us.
  EXPECT_NEAR(t.time_us(Collective::kAllgather, 8, 131072), 40, 1e-9);
}

TEST(Calibrated, LogLogInRanksAndClampOrExtrapolateOutside) {
  CalibratedTable t = parse(kTable);
  // 16 ranks is halfway between 8 and 32 in log2: sqrt(100 x 400) = 200 at 1 MiB.
  EXPECT_NEAR(t.time_us(Collective::kAllreduce, 16, 1048576), 200, 1e-9);
  // Fewer ranks than measured: clamped to 8 ranks.
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 2, 1048576), 100);
  // 128 ranks: log-log through (8, 100) and (32, 400) has slope 1: 100 x 128/8 = 1600.
  EXPECT_NEAR(t.time_us(Collective::kAllreduce, 128, 1048576), 1600, 1e-9);
  // Only one rank count (allgather): clamped.
  EXPECT_NEAR(t.time_us(Collective::kAllgather, 64, 65536), 20, 1e-9);
}

TEST(Calibrated, ExtrapolationInRanksNeverGetsFaster) {
  // Larger rank count measured faster (noise): beyond it, stay at its time.
  CalibratedTable t = parse(R"({"allreduce": [{"ranks": 8, "bytes": 1024, "time_us": 50},
                                               {"ranks": 16, "bytes": 1024, "time_us": 40}]})");
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 64, 1024), 40);
}

TEST(Calibrated, MissingCollectiveIsAnInputError) {
  CalibratedTable t = parse(kTable);
  try {
    t.time_us(Collective::kReduceScatter, 8, 1024);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "profile.json: at /collectives: no measurements for reduce_scatter (needed for 8 ranks)");
  }
}

TEST(Calibrated, BadTablesNameFileAndPointer) {
  EXPECT_EQ(error_of(R"({"allreduse": []})"),
            "profile.json: at /collectives/allreduse: unknown key \"allreduse\"; did you mean \"allreduce\"?");
  EXPECT_EQ(error_of(R"({"allreduce": []})"),
            "profile.json: at /collectives/allreduce: expected at least one {\"ranks\", \"bytes\", \"time_us\"} measurement");
  EXPECT_NE(error_of(R"({"allreduce": {"ranks": 8}})").find("at /collectives/allreduce: expected an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"allreduce": [{"ranks": 8, "bytes": 1024, "time_us": 0}]})")
                .find("at /collectives/allreduce/0/time_us: expected a number > 0"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"allreduce": [{"ranks": 0, "bytes": 1024, "time_us": 1}]})")
                .find("at /collectives/allreduce/0/ranks: expected an integer in [1, "),
            std::string::npos);
  EXPECT_NE(error_of(R"({"allreduce": [{"ranks": 8, "bytes": 1024}]})")
                .find("at /collectives/allreduce/0: missing required key \"time_us\""),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"allreduce": [{"ranks": 8, "bytes": 1024, "time_us": 1},
                                       {"ranks": 8, "bytes": 1024, "time_us": 2}]})"),
            "profile.json: at /collectives/allreduce/1: a second measurement for 8 ranks and 1024 bytes");
  EXPECT_NE(error_of(R"({"allreduce": [{"ranks": 8, "bytes": 1024, "time_us": 1, "us": 2}]})")
                .find("unknown key \"us\""),
            std::string::npos);
}

TEST(Calibrated, LoadsTheCollectivesMemberOfAProfileFile) {
  std::string path = ::testing::TempDir() + "/calibrated_profile.json";
  std::ofstream(path) << R"({"devices": ["H200"], "collectives": {"allreduce": [{"ranks": 2, "bytes": 64, "time_us": 5}]}})";
  CalibratedTable t = CalibratedTable::load(path);
  EXPECT_DOUBLE_EQ(t.time_us(Collective::kAllreduce, 2, 64), 5);
  std::ofstream(path) << R"({"devices": []})";
  try {
    CalibratedTable::load(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing required key \"collectives\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsefuse::netmodel
