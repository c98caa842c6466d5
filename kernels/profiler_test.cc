#include "kernels/profiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/synthetic.h"

namespace sparsefuse::kernels {
namespace {

TEST(Profiler, CpuProfileFormat) {
  ProfileOptions o;
  o.sizes = {1000, 20000};
  o.densities = {0.01, 0.1};
  o.repetitions = 1;
  o.workers = 4;
  const ProfileRun run = run_profile(o);
  const auto& p = run.profile;
  EXPECT_EQ(p.at("format"), "sparsefuse-profile/1");
  EXPECT_EQ(p.at("device").at("kind"), "cpu");
  EXPECT_EQ(p.at("device").at("threads"), 1);
  EXPECT_FALSE(p.at("device").at("name").get<std::string>().empty());
  const auto& prov = p.at("provenance");
  EXPECT_EQ(prov.at("kind"), "measured");
  EXPECT_EQ(prov.at("tool"), "sparsefuse profile-kernels");
  EXPECT_TRUE(std::regex_match(prov.at("date").get<std::string>(), std::regex(R"(\d{4}-\d{2}-\d{2})")));
  EXPECT_TRUE(prov.contains("host"));
  EXPECT_TRUE(prov.contains("compiler"));
  EXPECT_FALSE(prov.contains("cuda"));
  const auto& c = p.at("compression");
  ASSERT_EQ(c.size(), 9u);
  for (const char* name : {"topk", "dgc", "gaussiank", "redsync", "sidco", "randomk", "pack", "ef_topk"}) {
    ASSERT_TRUE(c.contains(name)) << name;
    const bool pack = std::string(name) == "pack";  // + density 1 at each size: dense as pairs
    ASSERT_EQ(c.at(name).size(), pack ? 6u : 4u) << name;  // 2 sizes x 2 densities
    for (const auto& e : c.at(name)) {
      EXPECT_GT(e.at("time_us").get<double>(), 0.0);
      EXPECT_EQ(e.size(), 3u);
    }
    EXPECT_EQ(c.at(name)[0].at("elements"), 1000);
    EXPECT_EQ(c.at(name)[0].at("density"), 0.01);
    EXPECT_EQ(c.at(name)[pack ? 3 : 2].at("elements"), 20000);
  }
  EXPECT_EQ(c.at("pack")[2].at("density"), 1.0);
  EXPECT_EQ(c.at("pack")[5].at("density"), 1.0);
  // ADTopk at every row length up to the size: rows 4, 16, 64, 256 and 1000
  // at 1000; those and 4096 at 20000; two densities.
  ASSERT_EQ(c.at("adtopk").size(), 22u);
  for (const auto& e : c.at("adtopk")) {
    EXPECT_EQ(e.size(), 4u);
    const int64_t row = e.at("row").get<int64_t>();
    const int64_t elements = e.at("elements").get<int64_t>();
    EXPECT_TRUE(std::find(kAdtopkRows.begin(), kAdtopkRows.end(), row) != kAdtopkRows.end()) << row;
    EXPECT_EQ(elements % row, 0) << row;
    EXPECT_TRUE(elements == 1000 / row * row || elements == 20000 / row * row) << row << " " << elements;
  }
  EXPECT_EQ(c.at("adtopk")[0].at("row"), 4);
  EXPECT_EQ(c.at("adtopk")[3].at("elements"), 768);  // 1000 as rows of 256
  const auto& u = p.at("decompression").at("unpack");
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0].at("workers"), 4);
  EXPECT_GT(run.memory_bandwidth, 1e8);

  char buf[1 << 16] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  print_profile_table(run, f);
  std::fclose(f);
  const std::string table(buf);
  EXPECT_NE(table.find("size(elements)"), std::string::npos);
  EXPECT_NE(table.find("floor ratio"), std::string::npos);
  EXPECT_NE(table.find("memory bandwidth"), std::string::npos);
  int rows = 0;
  for (size_t pos = 0; (pos = table.find('\n', pos)) != std::string::npos; ++pos) ++rows;
  EXPECT_EQ(rows, 5 + 36 + 2 + 22);  // 5 header lines, 9 kernels x 4, pack at density 1, ADTopk's rows
  EXPECT_NE(table.find("adtopk rows of 256"), std::string::npos);
}

TEST(Profiler, OptionsAndKernelFilter) {
  ProfileOptions o;
  o.sizes = {5000};
  o.densities = {0.05};
  o.repetitions = 1;
  o.kernels = {"topk", "unpack"};
  const auto p = profile_kernels(o);
  EXPECT_EQ(p.at("compression").size(), 1u);
  EXPECT_EQ(p.at("decompression").at("unpack").size(), 1u);
  // adtopk skips sizes below its shortest row, and measures a (row,
  // elements) once: 4096 and 5000 are both one row of 4096.
  o.kernels = {"adtopk"};
  o.sizes = {3};
  EXPECT_FALSE(profile_kernels(o).at("compression").contains("adtopk"));
  o.sizes = {4096, 5000};
  const auto rows = profile_kernels(o);
  int rows_of_4096 = 0;
  for (const auto& e : rows.at("compression").at("adtopk")) rows_of_4096 += e.at("row") == 4096;
  EXPECT_EQ(rows_of_4096, 1);
  // max_elements drops larger sizes.
  o.kernels = {"topk"};
  o.sizes = {1000, 100000};
  o.max_elements = 5000;
  EXPECT_EQ(profile_kernels(o).at("compression").at("topk").size(), 1u);

  ProfileOptions bad;
  bad.device = "tpu";
  EXPECT_THROW(run_profile(bad), std::invalid_argument);
  bad.device = "cpu";
  bad.kernels = {"nope"};
  EXPECT_THROW(run_profile(bad), std::invalid_argument);
  bad.kernels = {};
  bad.densities = {0.0};
  EXPECT_THROW(run_profile(bad), std::invalid_argument);
}

// Rounds pass over the whole grid: every point measured once a round (the
// barrier before each point counts them), the same points as one round, in
// the same order, and the rounds recorded; rounds < 1 is refused.
TEST(Profiler, RoundsMeasureEveryPointOnceEach) {
  ProfileOptions o;
  o.sizes = {1000, 5000};
  o.densities = {0.01, 0.1};
  o.repetitions = 1;
  o.kernels = {"topk", "pack", "unpack"};
  o.after_compute_evict_bytes = 1 << 16;
  int points = 0;
  o.before_point = [&points] { ++points; };
  const auto one = profile_kernels(o);
  const int per_round = points;
  EXPECT_EQ(one.at("provenance").at("rounds"), 1);
  points = 0;
  o.rounds = 3;
  const auto three = profile_kernels(o);
  EXPECT_EQ(points, 3 * per_round);
  EXPECT_EQ(three.at("provenance").at("rounds"), 3);
  for (const char* section : {"compression", "compression_after_compute"}) {
    for (const char* kernel : {"topk", "pack"}) {
      const auto& a = one.at(section).at(kernel);
      const auto& b = three.at(section).at(kernel);
      ASSERT_EQ(a.size(), b.size()) << section << " " << kernel;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].at("elements"), b[i].at("elements"));
        EXPECT_EQ(a[i].at("density"), b[i].at("density"));
        EXPECT_GT(b[i].at("time_us").get<double>(), 0);
      }
    }
  }
  EXPECT_EQ(three.at("decompression").at("unpack").size(), one.at("decompression").at("unpack").size());
  o.rounds = 0;
  EXPECT_THROW(run_profile(o), std::invalid_argument);
}

// What validate_profile_options says about BAD ("accepted" if nothing).
std::string message(const ProfileOptions& bad) {
  try {
    validate_profile_options(bad);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

// A working set spreads the calls over copies of the inputs; it is a CPU
// measurement and bounded, and a bad value names itself.
TEST(Profiler, WorkingSet) {
  ProfileOptions o;
  o.sizes = {2000};
  o.densities = {0.01};
  o.repetitions = 1;
  o.kernels = {"topk", "ef_topk", "unpack"};
  o.working_set_bytes = 1 << 20;  // 65 copies of the 16 KB gradient + residual
  const auto p = profile_kernels(o);
  EXPECT_GT(p.at("compression").at("topk").at(0).at("time_us").get<double>(), 0.0);
  EXPECT_GT(p.at("compression").at("ef_topk").at(0).at("time_us").get<double>(), 0.0);
  EXPECT_EQ(p.at("decompression").at("unpack").size(), 1u);
  // The cold section: the same compression kernels and points, gradients out
  // of cache; unpack is not among them.
  ASSERT_TRUE(p.contains("compression_cold"));
  const auto& cold = p.at("compression_cold");
  EXPECT_EQ(cold.size(), 2u);
  for (const char* kernel : {"topk", "ef_topk"}) {
    ASSERT_EQ(cold.at(kernel).size(), p.at("compression").at(kernel).size()) << kernel;
    EXPECT_EQ(cold.at(kernel).at(0).at("elements"), 2000);
    EXPECT_GT(cold.at(kernel).at(0).at("time_us").get<double>(), 0.0);
  }
  o.working_set_bytes = 0;  // nothing to take cold copies from
  EXPECT_FALSE(profile_kernels(o).contains("compression_cold"));

  ProfileOptions bad;
  bad.working_set_bytes = -1;
  EXPECT_EQ(message(bad), "profile: working set outside [0, 4 GiB]");
  bad.working_set_bytes = kMaxWorkingSet + 1;
  EXPECT_EQ(message(bad), "profile: working set outside [0, 4 GiB]");
  bad.working_set_bytes = 1 << 20;
  bad.device = "cuda";
  EXPECT_EQ(message(bad), "profile: a working set is measured on the cpu only");
  bad.device = "cpu";
  EXPECT_EQ(message(bad), "accepted");
}

// After-compute calls: every compression kernel again at sizes up to
// kAfterComputeMaxElements (not unpack, not above it); a CPU measurement,
// bounded, and a bad value names itself.
TEST(Profiler, AfterCompute) {
  ProfileOptions o;
  o.sizes = {2000, kAfterComputeMaxElements + 1};
  o.densities = {0.01};
  o.repetitions = 1;
  o.kernels = {"topk", "pack", "unpack"};
  o.after_compute_evict_bytes = 1 << 20;
  const auto p = profile_kernels(o);
  ASSERT_TRUE(p.contains("compression_after_compute"));
  EXPECT_FALSE(p.contains("compression_cold"));
  const auto& after = p.at("compression_after_compute");
  EXPECT_EQ(after.size(), 2u);  // topk and pack
  EXPECT_EQ(after.at("topk").size(), 1u);     // 2000 at 0.01; the larger size left out
  EXPECT_EQ(after.at("pack").size(), 2u);     // and pack at density 1
  EXPECT_EQ(after.at("topk").at(0).at("elements"), 2000);
  EXPECT_GT(after.at("topk").at(0).at("time_us").get<double>(), 0.0);
  EXPECT_EQ(p.at("compression").at("topk").size(), 2u);  // the hot curve has both sizes

  ProfileOptions bad;
  bad.after_compute_evict_bytes = -1;
  EXPECT_EQ(message(bad), "profile: after-compute eviction outside [0, 4 GiB]");
  bad.after_compute_evict_bytes = kMaxWorkingSet + 1;
  EXPECT_EQ(message(bad), "profile: after-compute eviction outside [0, 4 GiB]");
  bad.after_compute_evict_bytes = 1 << 20;
  bad.device = "cuda";
  EXPECT_EQ(message(bad), "profile: after-compute calls are measured on the cpu only");
}

// ef_topk's calls above kAfterComputeMaxElements are timed one by one, each
// after a gradient is written into the next landing slot: with a working set
// the slots fill it (and the cold calls are timed so too), without one there
// is one slot; every point is taken.
TEST(Profiler, LargeErrorFeedbackCallsAreTimedOneByOne) {
  ProfileOptions o;
  // Two sizes: the second has fewer landing slots (one with the working set)
  // than the first wrote.
  o.sizes = {kAfterComputeMaxElements + 1, 20 * kAfterComputeMaxElements};
  o.densities = {0.01, 0.1};
  o.repetitions = 1;
  o.kernels = {"topk", "ef_topk"};
  for (const int64_t working_set : {int64_t{0}, int64_t{3} << 20}) {  // 7 slots, then 1
    o.working_set_bytes = working_set;
    const auto p = profile_kernels(o);
    std::vector<std::string> sections = {"compression"};
    if (working_set > 0) sections.push_back("compression_cold");
    for (const auto& section : sections) {
      for (const char* kernel : {"topk", "ef_topk"}) {
        const auto& points = p.at(section).at(kernel);
        ASSERT_EQ(points.size(), 4u) << section << " " << kernel;  // 2 sizes x 2 densities
        for (const auto& point : points) {
          EXPECT_GT(point.at("elements").get<int64_t>(), kAfterComputeMaxElements) << section << " " << kernel;
          EXPECT_GT(point.at("time_us").get<double>(), 0.0) << section << " " << kernel;
        }
      }
    }
  }
}

// The hot calls cycle through distinct gradients within kHotPoolBytes: a
// kernel never sees the same values twice in a row (a repeated input trains
// the branch predictor), and the pool is reproducible.
TEST(Profiler, HotPoolHoldsDistinctGradients) {
  EXPECT_EQ(hot_pool_copies(1000), size_t{131});  // 512 KiB / 4,000 bytes
  EXPECT_EQ(hot_pool_copies(65536), size_t{2});
  EXPECT_EQ(hot_pool_copies(65537), size_t{1});
  EXPECT_EQ(hot_pool_copies(1'000'000), size_t{1});

  const auto pool = distinct_gradients(1000, 3, 7);
  ASSERT_EQ(pool.size(), 3u);
  EXPECT_EQ(pool[0], gaussian_gradient(1000, 7, 1e-3));
  EXPECT_EQ(pool[2], gaussian_gradient(1000, 9, 1e-3));
  for (size_t a = 0; a < pool.size(); ++a) {
    for (size_t b = a + 1; b < pool.size(); ++b) {
      int same = 0;
      for (size_t i = 0; i < 1000; ++i) same += pool[a][i] == pool[b][i];
      EXPECT_LT(same, 5) << "copies " << a << " and " << b;
    }
  }
  EXPECT_EQ(distinct_gradients(1000, 3, 7), pool);
}

// With a model's gradient as the sample, copy c is the window starting
// sample_window_start(first + c) of the way round, wrapping past the end:
// sample 0..9, windows of 4 from numbers 1, 2, 3 start at 6, 2, 8 (0.618,
// 0.236, 0.854 of the way) and the last wraps to 8, 9, 0, 1.
TEST(Profiler, GradientSampleWindowsSpreadAndWrap) {
  EXPECT_EQ(sample_window_start(0, 10), 0u);
  EXPECT_EQ(sample_window_start(1, 10), 6u);
  EXPECT_EQ(sample_window_start(2, 10), 2u);
  EXPECT_EQ(sample_window_start(3, 10), 8u);
  const std::vector<float> sample = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto pool = distinct_gradients(4, 3, 1, &sample);
  ASSERT_EQ(pool.size(), 3u);
  EXPECT_EQ(pool[0], (std::vector<float>{6, 7, 8, 9}));
  EXPECT_EQ(pool[1], (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(pool[2], (std::vector<float>{8, 9, 0, 1}));
  // Longer than the sample: it repeats.
  EXPECT_EQ(distinct_gradients(23, 1, 2, &sample)[0],
            (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4}));
}

TEST(Profiler, GradientSampleFileIsRawFloat32AndChecked) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string base = std::string(dir ? dir : "/tmp") + "/sample";
  const std::vector<float> values = {1.5f, -2.25f, 0.0f, 3e-8f};
  std::ofstream(base + ".f32", std::ios::binary).write(reinterpret_cast<const char*>(values.data()), 16);
  EXPECT_EQ(read_gradient_sample(base + ".f32"), values);
  auto problem = [](const std::string& path) {
    try {
      read_gradient_sample(path);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(problem(base + ".missing"), base + ".missing: cannot be read");
  std::ofstream(base + ".odd", std::ios::binary).write("abcdef", 6);
  EXPECT_EQ(problem(base + ".odd"),
            base + ".odd: 6 bytes; expected a positive whole number of float32 values (4 bytes each)");
  std::ofstream(base + ".empty", std::ios::binary).flush();
  EXPECT_NE(problem(base + ".empty").find("0 bytes"), std::string::npos);
  const float with_nan[2] = {1.0f, std::nanf("")};
  std::ofstream(base + ".nan", std::ios::binary).write(reinterpret_cast<const char*>(with_nan), 8);
  EXPECT_EQ(problem(base + ".nan"), base + ".nan: value 1 is not finite; expected a gradient");
}

// With the tensors of its gradient, a profile times ADTopk on each tensor of
// >= 1e5 elements and two dimensions twice per density: on its own gradient
// and on Gaussian values of its shape. A tensor too small or one-dimensional
// is skipped but still takes its place in the gradient. The gradient here is
// an outer product (every row ordered alike, as a linear layer's at batch 1).
TEST(Profiler, AdtopkOnEachTensorsOwnGradient) {
  const int64_t rows = 60, row = 2048;
  std::vector<float> g(size_t(100 + rows * row + 100'000));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < row; ++i) g[size_t(100 + r * row + i)] = float((r + 1) * (i % 97 + 1)) * 1e-4f;
  }
  ProfileOptions o;
  o.sizes = {1000};
  o.densities = {0.01, 0.1};
  o.repetitions = 1;
  o.kernels = {"topk"};
  o.gradients = std::make_shared<const std::vector<float>>(g);
  o.tensors = {{"fc.bias", {100}, 100}, {"fc.weight", {rows, row}, rows * row}, {"flat", {100'000}, 100'000}};
  const auto p = profile_kernels(o);
  ASSERT_TRUE(p.contains("adtopk_tensors"));
  const auto& entries = p.at("adtopk_tensors");
  ASSERT_EQ(entries.size(), 2u);  // fc.weight at each density; fc.bias is small, flat one-dimensional
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(entries[i].at("name"), "fc.weight");
    EXPECT_EQ(entries[i].at("elements"), rows * row);
    EXPECT_EQ(entries[i].at("row"), row);
    EXPECT_EQ(entries[i].at("density"), o.densities[i]);
    EXPECT_GT(entries[i].at("own_us").get<double>(), 0);
    EXPECT_GT(entries[i].at("gaussian_us").get<double>(), 0);
  }
  EXPECT_FALSE(profile_kernels(ProfileOptions{.sizes = {1000}, .densities = {0.01}, .repetitions = 1,
                                              .kernels = {"topk"}})
                   .contains("adtopk_tensors"));
  // The tensors must tile the gradient, each with a shape of their elements, on the cpu.
  ProfileOptions bad = o;
  bad.tensors.pop_back();
  EXPECT_NE(message(bad).find("the tensors hold 122980 elements, the gradient 222980"), std::string::npos)
      << message(bad);
  bad = o;
  bad.tensors[1].shape = {rows, row + 1};
  EXPECT_NE(message(bad).find("tensor fc.weight"), std::string::npos) << message(bad);
  bad = o;
  bad.gradients = nullptr;
  EXPECT_NE(message(bad).find("with gradients"), std::string::npos) << message(bad);
}

TEST(Profiler, BytesMoved) {
  EXPECT_EQ(profile_bytes_moved("topk", 1000, 0.01, 1), 4000 + 80);
  EXPECT_EQ(profile_bytes_moved("ef_topk", 1000, 0.01, 1), 12000 + 80);
  EXPECT_EQ(profile_bytes_moved("randomk", 1000, 0.01, 1), 320 + 80);
  EXPECT_EQ(profile_bytes_moved("unpack", 1000, 0.01, 8), 8 * 8 * 10 + 4000);
  EXPECT_EQ(profile_bytes_moved("pack", 1000, 0.01, 1), 160);
  EXPECT_EQ(profile_bytes_moved("adtopk", 2000, 0.01, 1), 8000 + 8 * 20);
  EXPECT_EQ(profile_bytes_moved("adtopk", 2048, 0.01, 1, 64), 8192 + 8 * 32);  // 32 rows of 64, one each
  EXPECT_THROW(profile_bytes_moved("adtopk", 2048, 0.01, 1, 0), std::invalid_argument);
  EXPECT_THROW(profile_bytes_moved("x", 1, 0.1, 1), std::invalid_argument);
}

TEST(Profiler, CudaWithoutDeviceFailsCleanly) {
  if (cuda::device_available()) GTEST_SKIP() << "a CUDA device is present";
  ProfileOptions o;
  o.device = "cuda";
  o.sizes = {1000};
  EXPECT_THROW(run_profile(o), std::runtime_error);
}

}  // namespace
}  // namespace sparsefuse::kernels
