#include "sim/sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/input_error.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test holding a small, noisy scenario.
class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("sweep_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    scenario_ = (dir_ / "scenario.json").string();
    std::ofstream(scenario_) << R"({"model": "bert-base", "workers": 4, "iterations": 2, "scheme": "ddp",
                                    "variability": {"compute_cv": 0.05}})";
    out_ = (dir_ / "out").string();
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  SweepPlan small_plan() {
    return plan_sweep(scenario_, {"iterations=2"},
                      {schemes_axis("ddp,wfbp"), parse_grid_axis("workers=4,8"), parse_grid_axis("seed=1,2")});
  }

  fs::path dir_;
  std::string scenario_, out_;
};

TEST(GridAxis, SplitsOnTopLevelCommasOnly) {
  GridAxis axis = parse_grid_axis(R"(scheme={"preset":"ddp","bucket_cap_bytes":1024},"a,b",[1,2],7)");
  EXPECT_EQ(axis.key, "scheme");
  ASSERT_EQ(axis.values.size(), 4u);
  EXPECT_EQ(axis.values[0], R"({"preset":"ddp","bucket_cap_bytes":1024})");
  EXPECT_EQ(axis.values[1], R"("a,b")");
  EXPECT_EQ(axis.values[2], "[1,2]");
  EXPECT_EQ(axis.values[3], "7");
  EXPECT_EQ(schemes_axis("ddp,horovod").key, "scheme");
}

TEST(GridAxis, RejectsMalformedLists) {
  EXPECT_THROW(parse_grid_axis("workers"), InputError);
  EXPECT_THROW(parse_grid_axis("=1,2"), InputError);
  EXPECT_THROW(parse_grid_axis("workers="), InputError);
  EXPECT_THROW(parse_grid_axis("workers=1,,2"), InputError);
  try {
    parse_grid_axis("workers=4,8,4");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("value \"4\" is listed twice"), std::string::npos) << e.what();
  }
}

// sweep.json records keys and values, and JSON text is UTF-8: bytes that are
// not (a fuzzer found "co\x9bma") are bad input, not a failure while writing.
TEST(GridAxis, RejectsTextThatIsNotUtf8) {
  for (const std::string bad : {"description=co\x9bma,x", "k\xff=1,2"}) {
    try {
      parse_grid_axis(bad);
      FAIL() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "--grid " + bad);
      EXPECT_EQ(e.problem(), "expected UTF-8 text");
    }
  }
  EXPECT_THROW(schemes_axis("ddp,\xc3"), InputError);
  EXPECT_EQ(parse_grid_axis("description=caf\xc3\xa9,x").values[0], "caf\xc3\xa9");  // é is UTF-8
}

TEST(PointId, PlainPairsAreKeptReadable) {
  std::vector<GridAxis> axes = {{"workers", {"64"}}, {"scheme", {"ddp"}}};
  EXPECT_EQ(point_id(axes, {"64", "ddp"}), "workers=64,scheme=ddp");
  EXPECT_EQ(point_id({{"network.bandwidth_gbps", {}}}, {"12.5"}), "network.bandwidth_gbps=12.5");
}

TEST(PointId, UnsafeCharactersAreReplacedAndHashed) {
  std::vector<GridAxis> axes = {{"model", {}}};
  std::string a = point_id(axes, {R"({"trace": "/x/a b.json"})"});
  std::string b = point_id(axes, {R"({"trace": "/x/a_b.json"})"});
  EXPECT_EQ(a.find_first_of("/\"{} "), std::string::npos) << a;
  EXPECT_NE(a, b);  // same after sanitising; the hash tells them apart
  EXPECT_EQ(a.rfind("model=__trace_____x_a_b.json__-h", 0), 0u) << a;
  EXPECT_EQ(a, point_id(axes, {R"({"trace": "/x/a b.json"})"}));  // stable
  std::string long_id = point_id(axes, {std::string(400, 'x')});
  EXPECT_LE(long_id.size(), 160u + 18u);
  EXPECT_NE(long_id, point_id(axes, {std::string(401, 'x')}));
}

TEST_F(SweepTest, EnumeratesFirstAxisOutermostWithOverridesInOrder) {
  SweepPlan plan = small_plan();
  ASSERT_EQ(plan.points.size(), 8u);
  std::vector<std::string> ids;
  for (const auto& p : plan.points) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "scheme=ddp,workers=4,seed=1", "scheme=ddp,workers=4,seed=2", "scheme=ddp,workers=8,seed=1",
                     "scheme=ddp,workers=8,seed=2", "scheme=wfbp,workers=4,seed=1", "scheme=wfbp,workers=4,seed=2",
                     "scheme=wfbp,workers=8,seed=1", "scheme=wfbp,workers=8,seed=2"}));
  EXPECT_EQ(plan.points[5].index, 5u);
  EXPECT_EQ(plan.points[5].overrides,
            (std::vector<std::string>{"iterations=2", "scheme=wfbp", "workers=4", "seed=2"}));
  Json d = plan.description();
  EXPECT_EQ(d["keys"], Json({"scheme", "workers", "seed"}));
  EXPECT_EQ(d["values"][1], Json({"4", "8"}));
  EXPECT_EQ(d["points"][5]["id"], "scheme=wfbp,workers=4,seed=2");
  EXPECT_EQ(d["points"][5]["values"]["workers"], "4");
}

// Beyond what the fuzzer plans (256 points): a grid of 6,000 points gets
// 6,000 distinct ids in order and a sweep.json listing each; a product above
// ten million points is refused before anything is enumerated.
TEST_F(SweepTest, LargeGridsPlanFullyAndOversizedOnesAreRefused) {
  auto values = [](int n) {
    std::string list;
    for (int i = 1; i <= n; ++i) list += (i > 1 ? "," : "") + std::to_string(i);
    return list;
  };
  SweepPlan plan = plan_sweep(scenario_, {},
                              {parse_grid_axis("seed=" + values(60)), parse_grid_axis("workers=" + values(10)),
                               parse_grid_axis("iterations=" + values(10))},
                              /*validate=*/false);
  ASSERT_EQ(plan.points.size(), 6000u);
  std::set<std::string> ids;
  for (const auto& p : plan.points) ids.insert(p.id);
  EXPECT_EQ(ids.size(), 6000u);
  EXPECT_EQ(plan.points.back().id, "seed=60,workers=10,iterations=10");
  Json d = plan.description();
  ASSERT_EQ(d["points"].size(), 6000u);
  EXPECT_EQ(d["points"][5999]["values"]["seed"], "60");

  std::vector<GridAxis> huge;
  for (const char* key : {"seed", "workers", "iterations", "network.bandwidth_gbps", "network.latency_us", "rho",
                          "compute_scale", "a", "b", "c", "d"}) {
    huge.push_back(parse_grid_axis(std::string(key) + "=" + values(5)));  // 5^11 > 48 million
  }
  try {
    plan_sweep(scenario_, {}, huge, /*validate=*/false);
    FAIL() << "a 48-million-point grid was planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 10000000 points"), std::string::npos) << e.what();
  }
}

TEST_F(SweepTest, BadGridValueFailsUpFrontNamingThePoint) {
  try {
    plan_sweep(scenario_, {}, {parse_grid_axis("workers=4,0")});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("at /workers: expected an integer in [1, 1048576], got 0 (sweep point workers=0)"),
              std::string::npos)
        << m;
  }
  // Several bad points, validated on several threads: the first is reported.
  for (int round = 0; round < 5; ++round) {
    try {
      plan_sweep(scenario_, {}, {parse_grid_axis("seed=1,2,3,4,5,6,7,8"), parse_grid_axis("workers=4,8,0,-1")},
                 true, 4);
      FAIL() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("(sweep point seed=1,workers=0)"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(plan_sweep(scenario_, {}, {}), InputError);
  EXPECT_THROW(plan_sweep(scenario_, {}, {schemes_axis("ddp"), parse_grid_axis("scheme=wfbp")}), InputError);
  EXPECT_THROW(plan_sweep(scenario_, {}, {schemes_axis("ddp,nope")}), InputError);
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(SweepTest, WritesPointsAndCsvRowsInPlanOrder) {
  SweepPlan plan = small_plan();
  SweepRunOptions options;
  options.threads = 3;
  size_t calls = 0;
  options.progress = [&](size_t done, size_t total, bool ran) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_EQ(total, 8u);
    EXPECT_TRUE(ran);
  };
  SweepRunSummary s = run_sweep_points(plan, out_, options);
  EXPECT_EQ(s.ran, 8u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(calls, 8u);
  auto rows = lines(results_csv(plan, out_));
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0],
            "scheme,workers,seed,iteration_mean_s,iteration_p50_s,iteration_p99_s,throughput_samples_per_s,"
            "communication_exposed_s,sync_wait_s,buckets,bytes_per_worker,status");
  // Each row matches its point's own result file.
  for (size_t i = 0; i < plan.points.size(); ++i) {
    const SweepPoint& p = plan.points[i];
    Json j = *read_point_result(point_result_path(out_, p));
    int64_t bytes = 0;
    for (const auto& b : j["buckets"]) bytes += b["bytes_per_worker"].get<int64_t>();
    EXPECT_GT(bytes, 400'000'000);  // bert-base in fp32, dense schemes send every gradient once
    std::string expected_prefix = p.values[0] + "," + p.values[1] + "," + p.values[2] + "," +
                                  fmt::format("{:.12g}", j["iteration_time_s"]["mean"].get<double>()) + ",";  // 12 digits, no float noise
    EXPECT_EQ(rows[i + 1].rfind(expected_prefix, 0), 0u) << rows[i + 1];
    EXPECT_NE(rows[i + 1].find(fmt::format(",{},{},ok", j["buckets"].size(), bytes)), std::string::npos);
    EXPECT_EQ(rows[i + 1].find("wall"), std::string::npos);
    EXPECT_EQ(j["scenario"]["workers"], std::stoi(p.values[1]));
  }
}

TEST_F(SweepTest, RerunSkipsFinishedPointsAndRedoesMissingCorruptOrStaleOnes) {
  SweepPlan plan = small_plan();
  SweepRunOptions options;
  options.threads = 2;
  ASSERT_EQ(run_sweep_points(plan, out_, options).ran, 8u);
  const std::string before = results_csv(plan, out_);

  SweepRunSummary again = run_sweep_points(plan, out_, options);
  EXPECT_EQ(again.ran, 0u);
  EXPECT_EQ(again.skipped, 8u);

  fs::remove(point_result_path(out_, plan.points[1]));                          // lost
  std::ofstream(point_result_path(out_, plan.points[4]), std::ios::trunc) << "{\"iteration";  // torn
  Json stale = *read_point_result(point_result_path(out_, plan.points[6]));
  stale["scenario"]["seed"] = 99;  // written for a different scenario
  std::ofstream(point_result_path(out_, plan.points[6]), std::ios::trunc) << stale.dump();
  std::ofstream(point_dir(out_, plan.points[1]) + "/result.json.tmp.12345") << "partial";

  auto csv = lines(results_csv(plan, out_));
  EXPECT_EQ(csv[2].substr(csv[2].size() - 8), ",missing");
  EXPECT_EQ(csv[5].substr(csv[5].size() - 8), ",missing");

  SweepRunSummary resumed = run_sweep_points(plan, out_, options);
  EXPECT_EQ(resumed.ran, 3u);
  EXPECT_EQ(resumed.skipped, 5u);
  EXPECT_EQ(results_csv(plan, out_), before);
  EXPECT_FALSE(fs::exists(point_dir(out_, plan.points[1]) + "/result.json.tmp.12345"));
}

TEST_F(SweepTest, RanksSplitPointsByIndexAndTogetherMatchOneProcess) {
  SweepPlan plan = small_plan();
  SweepRunOptions options;
  run_sweep_points(plan, out_, options);
  const std::string single = results_csv(plan, out_);

  const std::string split = (dir_ / "split").string();
  options.ranks = 3;
  for (int r = 0; r < 3; ++r) {
    options.rank = r;
    SweepRunSummary s = run_sweep_points(plan, split, options);
    EXPECT_EQ(s.ran, r < 2 ? 3u : 2u);  // 8 points: indices 0,3,6 / 1,4,7 / 2,5
    for (const auto& p : plan.points) {
      bool mine_or_earlier = int(p.index % 3) <= r;
      EXPECT_EQ(fs::exists(point_result_path(split, p)), mine_or_earlier) << p.id << " after rank " << r;
    }
  }
  EXPECT_EQ(results_csv(plan, split), single);
}

TEST_F(SweepTest, FailedPointIsReportedAndCsvSaysSo) {
  // A trace file that disappears between planning and running makes the
  // point fail at run time, the only way a validated point can fail.
  fs::copy_file("tests/data/tiny3.json", dir_ / "tiny.json");  // tests run in the runfiles root
  SweepPlan plan = plan_sweep(scenario_, {R"(model={"trace": "tiny.json"})"}, {parse_grid_axis("workers=2,3")});
  fs::remove(dir_ / "tiny.json");
  SweepRunSummary s = run_sweep_points(plan, out_, {});
  EXPECT_EQ(s.failed, 2u);
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_NE(s.errors[0].find("tiny.json"), std::string::npos) << s.errors[0];
  auto csv = lines(results_csv(plan, out_));
  EXPECT_EQ(csv[1], "2,,,,,,,,,failed");
  EXPECT_TRUE(fs::exists(point_dir(out_, plan.points[0]) + "/error.json"));
}

TEST(Csv, QuotesFieldsThatNeedIt) {
  EXPECT_EQ(csv_field("ddp"), "ddp");
  EXPECT_EQ(csv_field(R"({"a":1,"b":"x"})"), R"("{""a"":1,""b"":""x""}")");
}

// The simulator keeps no global state: scenarios simulated concurrently give
// exactly what they give one at a time.
TEST_F(SweepTest, SimulatorIsReentrant) {
  std::vector<model::Scenario> scenarios;
  for (const char* scheme : {"ddp", "wfbp", "horovod", "mgwfbp", "syncea"}) {
    for (const char* workers : {"4", "16"}) {
      scenarios.push_back(model::load_scenario(scenario_, {std::string("scheme=") + scheme, std::string("workers=") + workers,
                                                    "variability.compute_cv=0.1", "iterations=3"}));
    }
  }
  std::vector<std::string> sequential, concurrent(scenarios.size());
  for (const auto& s : scenarios) sequential.push_back(simulate(s).to_json(false).dump());
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < scenarios.size(); ++i) {
      threads.emplace_back([&, i] { concurrent[i] = simulate(scenarios[i]).to_json(false).dump(); });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < scenarios.size(); ++i) EXPECT_EQ(concurrent[i], sequential[i]) << "scenario " << i;
  }
}

}  // namespace
}  // namespace sparsefuse::sim
