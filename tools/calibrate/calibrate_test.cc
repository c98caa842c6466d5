// Hand-checked parser and fit cases: small nccl-tests and OSU snippets whose
// numbers were written from known α-β parameters, and the bad-input forms.
#include <cmath>

#include <gtest/gtest.h>

#include "common/input_error.h"
#include "tools/calibrate/calibration.h"

namespace sparsefuse::calibrate {
namespace {

// all_reduce_perf on 8 ranks (two '#  Rank' lines shown as nccl-tests prints
// them would give 2; here all 8 are listed). Rows follow, with p = 8
// (steps 14, bus factor 1.75): sizes <= 8 KiB: alpha 1 us, bus bw 1.75 GB/s
// -> t = 14 + s/1000; sizes >= 1 MiB: alpha 2 us, 17.5 GB/s -> t = 28 + s/10000.
const char* kNcclTests = R"(# nThread 1 nGpus 1 minBytes 1024 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid   1 on host device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   2 on host device  1 [0x1c] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   3 on host device  2 [0x1d] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   4 on host device  3 [0x1e] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid   5 on host device  4 [0x1f] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid   6 on host device  5 [0x20] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid   7 on host device  6 [0x21] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid   8 on host device  7 [0x22] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    15.02    0.07    0.12      0    15.00    0.07    0.12      0
        2048           512     float     sum      -1    16.05    0.13    0.22      0    16.00    0.13    0.22      0
        4096          1024     float     sum      -1    18.10    0.23    0.40      0    18.00    0.23    0.40      0
        8192          2048     float     sum      -1    22.19    0.37    0.65      0    22.00    0.37    0.65      0
host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE
     1048576        262144     float     sum      -1   132.86    7.89   13.81      0   132.00    7.94   13.90      0
     2097152        524288     float     sum      -1   237.72    8.82   15.44      0   237.00    8.85   15.48      0
     4194304       1048576     float     sum      -1   447.43    9.37   16.40      0   447.00    9.38   16.42      0
     8388608       2097152     float     sum      -1   866.86    9.68   16.94      0   866.00    9.69   16.95      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 5.9
)";

// osu_allreduce on 2 ranks (steps 2, bus factor 1): sizes <= 32 B latency
// only, alpha 15 us -> 30 us; from 16 KiB alpha 50 us, 1 GB/s -> 100 + s/1000.
const char* kOsu = R"(# OSU MPI Allreduce Latency Test v5.4.0
# Size       Avg Latency(us)
4                      30.00
8                      30.00
16                     30.00
32                     30.00
16384                 116.38
32768                 132.77
65536                 165.54
131072                231.07
)";

InputSpec spec(const std::string& path, std::optional<int> ranks = std::nullopt) {
  InputSpec s = parse_input_argument(path);
  s.ranks = ranks;
  return s;
}

TEST(MeasuredTable, NcclTestsRowsRanksAndCollectiveFromTheOutputAndName) {
  EXPECT_EQ(detect_format(kNcclTests, "x"), TableFormat::kNcclTests);
  auto rows = parse_nccl_tests(kNcclTests, spec("run/all_reduce_perf.txt"));
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].ranks, 8);
  EXPECT_EQ(rows[0].collective, Collective::kAllreduce);
  EXPECT_DOUBLE_EQ(rows[4].bytes, 1048576);
  EXPECT_DOUBLE_EQ(rows[4].time_us, 132.86);  // out-of-place time, not in-place
  EXPECT_EQ(rows[4].line, 21);
  EXPECT_EQ(parse_nccl_tests(kNcclTests, spec("all_gather_perf.log"))[0].collective, Collective::kAllgather);
}

TEST(MeasuredTable, OsuRowsNeedRanksFromTheCommandLine) {
  EXPECT_EQ(detect_format(kOsu, "x"), TableFormat::kOsu);
  auto rows = parse_osu(kOsu, spec("o.txt", 2));
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].collective, Collective::kAllreduce);  // from the title line
  EXPECT_DOUBLE_EQ(rows[7].time_us, 231.07);
  EXPECT_THROW(parse_osu(kOsu, spec("o.txt")), InputError);
  EXPECT_EQ(parse_input_argument("a/osu.txt@4").ranks, 4);
  EXPECT_THROW(parse_input_argument("a.txt@0"), InputError);
}

TEST(MeasuredTable, ProfileCollectivesJsonKeepsItsCollectivesAndRanks) {
  const char* json = R"({"collectives": {"allreduce": [{"ranks": 2, "bytes": 1024, "time_us": 3.5}],
                                         "reduce_scatter": [{"ranks": 4, "bytes": 2048, "time_us": 7}]}})";
  EXPECT_EQ(detect_format(json, "p.json"), TableFormat::kProfileJson);
  auto rows = parse_profile_json(json, "p.json");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].collective, Collective::kAllreduce);
  EXPECT_EQ(rows[1].collective, Collective::kReduceScatter);
  EXPECT_EQ(rows[1].ranks, 4);
  EXPECT_DOUBLE_EQ(rows[1].time_us, 7);
  EXPECT_THROW(parse_profile_json(R"({"collectives": {"alltoall": []}})", "p.json"), InputError);
  EXPECT_THROW(parse_profile_json("{not json", "p.json"), InputError);
}

TEST(MeasuredTable, BadInputNamesFileLineAndExpectation) {
  std::string bad = std::string(kOsu) + "65536 fast\n";
  try {
    parse_osu(bad, spec("osu.txt", 2));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "osu.txt");
    EXPECT_EQ(e.pointer(), "line 11");
    EXPECT_NE(e.problem().find("SIZE AVG_LATENCY_US"), std::string::npos);
  }
  std::string short_row = std::string(kNcclTests) + "  16777216  4194304  float  sum  -1  1700.0\n";
  EXPECT_THROW(parse_nccl_tests(short_row, spec("all_reduce_perf")), InputError);
  // A header without a "time" column: bad input, not a read past the row (found by fuzzing).
  EXPECT_THROW(parse_nccl_tests("#  size  count  type  redop\n  1024  256  float  sum\n", spec("all_reduce_perf")),
               InputError);
  EXPECT_THROW(detect_format("hello\nworld\n", "f"), InputError);
  EXPECT_TRUE(parse_osu("# OSU MPI Allreduce Latency Test\n# Size Avg Latency(us)\n", spec("o", 2)).empty());
}

TEST(PiecewiseFit, RecoversTheNcclTestsParametersAndThreshold) {
  auto fit = fit_piecewise(parse_nccl_tests(kNcclTests, spec("all_reduce_perf")), FitOptions{});
  ASSERT_EQ(fit.segments.size(), 2u);
  EXPECT_NEAR(fit.segments[0].alpha_us, 1.0, 0.01);
  EXPECT_NEAR(fit.segments[0].bandwidth_gbps_bytes, 1.75, 0.01);
  EXPECT_NEAR(fit.segments[1].alpha_us, 2.0, 0.02);
  EXPECT_NEAR(fit.segments[1].bandwidth_gbps_bytes, 17.5, 0.05);
  EXPECT_NEAR(fit.segments[1].from_bytes, 92681.9, 0.1);  // sqrt(8192 * 1048576)
  EXPECT_NEAR(fit.predict_us(8, 16777216), 28 + 1677.7216, 0.5);
}

TEST(PiecewiseFit, RecoversTheOsuLatencyOnlyRangeAndTheLargeRange) {
  auto fit = fit_piecewise(parse_osu(kOsu, spec("o", 2)), FitOptions{});
  ASSERT_EQ(fit.segments.size(), 2u);
  EXPECT_NEAR(fit.segments[0].alpha_us, 15.0, 1e-6);
  EXPECT_EQ(fit.segments[0].bandwidth_gbps_bytes, 0);  // latency only: no byte term
  EXPECT_NEAR(fit.segments[1].alpha_us, 50.0, 0.05);
  EXPECT_NEAR(fit.segments[1].bandwidth_gbps_bytes, 1.0, 0.001);
  EXPECT_NEAR(fit.segments[1].from_bytes, 724.08, 0.01);
}

TEST(PiecewiseFit, OneWildRowDoesNotMoveTheFit) {
  // nccl-tests tables carry such rows (68 us among 13-17 us on a DGX H100).
  std::string wild = kOsu;
  wild.insert(wild.find("16384"), "64                    300.00\n");
  auto fit = fit_piecewise(parse_osu(wild, spec("o", 2)), FitOptions{});
  ASSERT_EQ(fit.segments.size(), 2u);
  EXPECT_NEAR(fit.segments[0].alpha_us, 15.0, 1e-3);
  EXPECT_NEAR(fit.segments[1].bandwidth_gbps_bytes, 1.0, 0.001);
}

TEST(Calibration, HeldOutSizesArePredictedByTheLastSegment) {
  auto rows = parse_nccl_tests(kNcclTests, spec("all_reduce_perf"));
  Holdout h = default_holdout(rows);  // one rank count: the top quarter of sizes
  ASSERT_TRUE(h.min_bytes.has_value());
  EXPECT_EQ(*h.min_bytes, 4194304);
  // Fitted on 6 sizes, two per range: the small and large ranges stay apart.
  FitOptions options;
  options.min_sizes_per_segment = 2;
  Calibration c = calibrate(rows, h, options);
  EXPECT_LT(*median_abs_error(c.rows, true, 1 << 20), 0.005);
  Json file = calibration_file(c, Labels{"nvlink", "nccl", {"all_reduce_perf"}});
  EXPECT_EQ(file["collectives"]["allreduce"].size(), 8u);
  EXPECT_EQ(file["calibration"]["held_out"], "sizes >= 4194304 B");
  // Allgather was not measured: carried from the allreduce fit with its own
  // ring counts (p = 8: 7 steps and 7/8 of the bytes, half of allreduce's).
  ASSERT_EQ(file["collectives"]["allgather"].size(), 8u);
  EXPECT_EQ(file["calibration"]["derived_not_measured"], Json::array({"allgather", "reduce_scatter"}));
  const Json& first = file["collectives"]["allgather"][0];
  EXPECT_NEAR(first["time_us"].get<double>(), file["collectives"]["allreduce"][0]["time_us"].get<double>() / 2, 1e-9);
}

TEST(Calibration, HoldingOutARankCountPredictsItThroughTheRingFactors) {
  // Three node counts of one exact law, alpha 5 us, bus bw 2 GB/s.
  std::vector<Sample> rows;
  for (int p : {2, 4, 8}) {
    for (double s : {1e5, 2e5, 4e5, 8e5}) {
      rows.push_back({Collective::kAllreduce, p, s, 5 * latency_steps(Collective::kAllreduce, p) +
                                                        byte_factor(Collective::kAllreduce, p) * s / 2000.0});
    }
  }
  Holdout h = default_holdout(rows);
  EXPECT_EQ(h.ranks, 8);
  Calibration c = calibrate(rows, h, FitOptions{});
  EXPECT_LT(*median_abs_error(c.rows, true, 0), 1e-9);
  EXPECT_EQ(c.fits[0].segments[0].law, Law::kRing);
  EXPECT_THROW(calibrate(rows, Holdout{std::nullopt, 1.0}, FitOptions{}), InputError);
}

TEST(Calibration, TheLawAcrossRankCountsIsFoundFromTheData) {
  // MPI's small-message allreduce: recursive doubling, log2(p) steps each
  // moving the whole buffer; alpha 20 us, 1 GB/s. Fitted on 2 and 4 ranks,
  // it predicts 8 exactly only under that law (the ring would give 14 steps).
  std::vector<Sample> rows;
  for (int p : {2, 4, 8}) {
    for (double s : {1e3, 2e3, 4e3, 8e3}) {
      rows.push_back({Collective::kAllreduce, p, s, std::log2(p) * (20 + s / 1000.0)});
    }
  }
  Calibration c = calibrate(rows, default_holdout(rows), FitOptions{});
  ASSERT_EQ(c.fits[0].segments.size(), 1u);
  EXPECT_EQ(c.fits[0].segments[0].law, Law::kRecursiveDoubling);
  EXPECT_NEAR(c.fits[0].segments[0].alpha_us, 20, 1e-6);
  EXPECT_LT(*median_abs_error(c.rows, true, 0), 1e-9);
}

}  // namespace
}  // namespace sparsefuse::calibrate
