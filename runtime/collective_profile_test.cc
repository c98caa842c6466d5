#include "runtime/collective_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "common/input_error.h"
#include "model/netmodel/calibrated.h"

namespace sparsefuse::runtime {
namespace {

using Sizes = std::vector<int64_t>;

TEST(ProfileSizes, DoublesFromMinUpToMax) {
  EXPECT_EQ(profile_sizes(Collective::kAllreduce, 2, 1024, 65536), (Sizes{1024, 2048, 4096, 8192, 16384, 32768, 65536}));
  // MAX off the doubling grid is not measured itself.
  EXPECT_EQ(profile_sizes(Collective::kAllreduce, 2, 1024, 5000), (Sizes{1024, 2048, 4096}));
  EXPECT_EQ(profile_sizes(Collective::kReduceScatter, 2, 1000, 4000), (Sizes{1000, 2000, 4000}));
}

TEST(ProfileSizes, RoundsDownToWholeElementsOfTheCollective) {
  // Allgather on 3 ranks: a multiple of 8 * 3 bytes (one pair from each rank).
  EXPECT_EQ(profile_sizes(Collective::kAllgather, 3, 1024, 4096), (Sizes{1008, 2040, 4080}));
  // Reduce-scatter on 3 ranks: a multiple of 4 * 3 bytes.
  EXPECT_EQ(profile_sizes(Collective::kReduceScatter, 3, 1024, 2048), (Sizes{1020, 2040}));
  // Below one element per rank: one element, and a size that repeats is kept once
  // (the calibrated table refuses duplicate measurements).
  EXPECT_EQ(profile_sizes(Collective::kAllgather, 256, 1024, 4096), (Sizes{2048, 4096}));
  EXPECT_EQ(profile_sizes(Collective::kAllreduce, 2, 1, 8), (Sizes{4, 8}));
}

std::string validation_error(const CollectiveProfileOptions& o) {
  try {
    validate(o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ProfileOptions, BadValuesNameTheOption) {
  EXPECT_EQ(validation_error({}), "");
  EXPECT_EQ(validation_error({.min_bytes = 0}), "--min-bytes: expected an integer in [1, 1073741824], got 0");
  EXPECT_EQ(validation_error({.max_bytes = kMaxProfileBytes + 1}),
            "--max-bytes: expected an integer in [1, 1073741824], got 1073741825");
  EXPECT_EQ(validation_error({.min_bytes = 4096, .max_bytes = 1024}),
            "--min-bytes: expected at most --max-bytes (1024), got 4096");
  EXPECT_EQ(validation_error({.warmup = -1}), "--warmup: expected an integer in [0, 1000000], got -1");
  EXPECT_EQ(validation_error({.working_set = -1}), "--working-set: expected an integer in [0, 4294967296], got -1");
  EXPECT_EQ(validation_error({.iterations = 0}), "--iterations: expected an integer in [1, 1000000], got 0");
}


// Rank 0 of two; rank 1 is scripted: its measured times (which allreduce_max
// combines with this rank's) and nothing else. Records what was called.
class SlowPeer : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void allreduce_sum(const float* send, float*, int64_t n) override {
    calls.push_back({"allreduce", n});
    sends.push_back(send);
  }
  void reduce_scatter_sum(const float*, float*, int64_t n) override { calls.push_back({"reduce_scatter", n}); }
  void allgather_values(const float*, float*, int64_t) override { ADD_FAILURE() << "not profiled"; }
  void allreduce_sum(double*, int64_t) override { ADD_FAILURE() << "unexpected sum of doubles"; }
  void allreduce_max(double* data, int64_t n) override {
    ASSERT_EQ(size_t(n), peer_times_us.size());
    for (int64_t i = 0; i < n; ++i) data[i] = std::max(data[i], peer_times_us[size_t(i)]);
  }
  std::vector<int64_t> allgather(const int64_t*, int) override {
    ADD_FAILURE() << "unexpected allgather";
    return {};
  }
  void allgatherv(const float*, const int32_t*, const std::vector<int64_t>& counts, float*, int32_t*) override {
    EXPECT_EQ(counts, std::vector<int64_t>(2, counts[0]));
    calls.push_back({"allgather", counts[0]});
  }
  void barrier() override { calls.push_back({"barrier", 0}); }

  std::vector<double> peer_times_us;
  std::vector<std::pair<std::string, int64_t>> calls;
  std::vector<const float*> sends;  // each allreduce's buffer
};

TEST(TimeCollective, MedianOverRepetitionsOfTheSlowestRank) {
  SlowPeer comm;
  // The peer is far slower than this rank's no-op collectives in every timed
  // repetition, so the result is the median of the peer's times.
  comm.peer_times_us = {5e6, 1e6, 3e6, 2e6};
  EXPECT_EQ(time_collective(comm, Collective::kAllreduce, 1024, 2, 4), 2.5e6);
  // Warm-up and timed repetitions alike: a barrier, then the collective over 1024 / 4 floats.
  std::vector<std::pair<std::string, int64_t>> expected;
  for (int r = 0; r < 6; ++r) {
    expected.push_back({"barrier", 0});
    expected.push_back({"allreduce", 256});
  }
  EXPECT_EQ(comm.calls, expected);
}

// A 4 KiB working set holds four copies of a 1 KiB allreduce's buffer: each
// is used once first (no barrier, untimed), then the repetitions take them
// in turn.
TEST(TimeCollective, WorkingSetCyclesThroughDisjointCopies) {
  SlowPeer comm;
  comm.peer_times_us = {1, 1, 1, 1};
  time_collective(comm, Collective::kAllreduce, 1024, 1, 4, 4096);
  ASSERT_EQ(comm.sends.size(), 9u);
  const float* base = comm.sends[0];
  std::vector<std::ptrdiff_t> offsets;
  for (const float* p : comm.sends) offsets.push_back(p - base);
  EXPECT_EQ(offsets, (std::vector<std::ptrdiff_t>{0, 256, 512, 768, 0, 256, 512, 768, 0}));
  EXPECT_EQ(std::count(comm.calls.begin(), comm.calls.end(), std::pair<std::string, int64_t>{"barrier", 0}), 5);
  EXPECT_EQ(comm.calls[4], (std::pair<std::string, int64_t>{"barrier", 0}));  // after the four first uses
  // A working set smaller than one copy still times one, reused.
  SlowPeer small;
  small.peer_times_us = {1, 1};
  time_collective(small, Collective::kAllreduce, 1024, 0, 2, 1000);
  ASSERT_EQ(small.sends.size(), 2u);
  EXPECT_EQ(small.sends[0], small.sends[1]);
}

TEST(TimeCollective, ElementsPerRankFollowTheTablesBytes) {
  SlowPeer comm;
  comm.peer_times_us = {1.0};
  time_collective(comm, Collective::kAllgather, 1024, 0, 1);  // 1024 B gathered from 2 ranks: 64 pairs each
  time_collective(comm, Collective::kReduceScatter, 1024, 0, 1);  // 1024 B in per rank: 128 floats back
  EXPECT_EQ(comm.calls, (std::vector<std::pair<std::string, int64_t>>{
                            {"barrier", 0}, {"allgather", 64}, {"barrier", 0}, {"reduce_scatter", 128}}));
}

CollectiveProfile two_rank_profile() {
  CollectiveProfile p;
  p.ranks = 2;
  p.library = "Open MPI v4.1.4, package: Debian";
  p.timings = {{Collective::kAllreduce, 1024, 10.5},    {Collective::kAllreduce, 4096, 20.25},
               {Collective::kAllgather, 1024, 12.0},    {Collective::kAllgather, 4096, 30.0},
               {Collective::kReduceScatter, 1024, 9.0}, {Collective::kReduceScatter, 4096, 18.0}};
  return p;
}

TEST(CollectiveProfile, JsonHasProvenanceAndOneListPerCollective) {
  const Json j = two_rank_profile().to_json();
  EXPECT_EQ(j["format"], "sparsefuse-profile/1");
  const Json& p = j["provenance"];
  EXPECT_EQ(p["kind"], "measured");
  EXPECT_EQ(p["tool"], "sparsefuse profile-collectives");
  EXPECT_EQ(p["transport"], "mpi");
  EXPECT_EQ(p["ranks"], 2);
  EXPECT_EQ(p["mpi_library"], "Open MPI v4.1.4, package: Debian");
  EXPECT_EQ(p["iterations"], 20);
  EXPECT_EQ(p["warmup"], 5);
  EXPECT_EQ(p["working_set_bytes"], 0);
  EXPECT_FALSE(p["host"].get<std::string>().empty());
  EXPECT_TRUE(std::regex_match(p["date"].get<std::string>(), std::regex(R"(\d{4}-\d{2}-\d{2})")));
  EXPECT_EQ(j["collectives"].size(), 3u);
  EXPECT_EQ(j["collectives"]["allgather"],
            Json::parse(R"([{"ranks": 2, "bytes": 1024, "time_us": 12.0}, {"ranks": 2, "bytes": 4096, "time_us": 30.0}])"));
}

TEST(CollectiveProfile, WrittenFileLoadsAsACalibratedTable) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                           "/collective_profile_test.json";
  std::ofstream(path) << two_rank_profile().to_json().dump(2);
  const auto table = netmodel::CalibratedTable::load(path);
  for (const CollectiveTiming& t : two_rank_profile().timings) {
    EXPECT_EQ(table.rank_counts(t.collective), std::vector<int>{2});
    EXPECT_DOUBLE_EQ(table.time_us(t.collective, 2, double(t.bytes)), t.time_us) << collective_name(t.collective);
  }
  // Between the measured sizes: the table's log-log interpolation of our points.
  EXPECT_DOUBLE_EQ(table.time_us(Collective::kAllreduce, 2, 2048), std::sqrt(10.5 * 20.25));
}

TEST(CollectiveProfile, TableRowHasNcclTestsBandwidths) {
  // 1024 B in 1 us: 1.024 GB/s; allreduce's bus factor 2 (P - 1) / P is 1 at P = 2.
  EXPECT_EQ(table_row({Collective::kAllreduce, 1024, 1.0}, 2),
            "        1024          256  float       allreduce         1.00        1.024        1.024\n");
  // Allgather counts pairs; bus factor (P - 1) / P = 3/4 at P = 4.
  EXPECT_EQ(table_row({Collective::kAllgather, 4096, 2.0}, 4),
            "        4096          512   pair       allgather         2.00        2.048        1.536\n");
}

}  // namespace
}  // namespace sparsefuse::runtime
