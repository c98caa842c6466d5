// The C API over the loopback communicator (one rank, no mpirun): a whole
// training iteration, results, and every kind of caller mistake as a status
// code with a message (never an exception or an abort).
#include "runtime/capi/sparsefuse_c.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

// A scenario file for tiny3 (written under the test's temporary directory).
std::string scenario(const std::string& scheme, int workers = 1, const std::string& text = "") {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + scheme + std::to_string(workers) + ".json";
  std::ofstream(path) << (text.empty() ? R"({"model": {"trace": ")" + std::filesystem::current_path().string() +
                                             R"(/tests/data/tiny3.json"}, "workers": )" + std::to_string(workers) +
                                             R"(, "warmup_iterations": 1, "iterations": 2, "scheme": ")" + scheme +
                                             R"(", "compression": {"density": 0.1}})"
                                       : text);
  return path;
}

struct Fixture : ::testing::Test {
  void SetUp() override { ASSERT_EQ(sf_comm_create(30, &comm), SF_OK) << sf_last_error(); }
  void TearDown() override {
    if (session) sf_session_destroy(session);
    sf_comm_destroy(comm);
  }
  void open(const std::string& scheme) {
    ASSERT_EQ(sf_session_create(comm, scenario(scheme).c_str(), &session), SF_OK) << sf_last_error();
  }
  sf_comm* comm = nullptr;
  sf_session* session = nullptr;
};

using CApi = Fixture;

TEST_F(CApi, DenseIterationReturnsTheGradientWhateverTheReadyOrder) {
  open("wfbp");
  ASSERT_EQ(sf_session_tensors(session), 3);
  EXPECT_STREQ(sf_session_tensor_name(session, 1), "b");
  EXPECT_EQ(sf_session_tensor_elements(session, 2), 250);
  std::vector<std::vector<float>> grads(3, std::vector<float>(250)), out(3, std::vector<float>(250, -1));
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 250; ++i) grads[size_t(t)][size_t(i)] = float(t * 1000 + i);
  float* outputs[3] = {out[0].data(), out[1].data(), out[2].data()};
  for (int it = 0; it < 3; ++it) {
    ASSERT_EQ(sf_session_begin_iteration(session), SF_OK) << sf_last_error();
    // Tensor 2 arrives first: it is held until 0 and 1 are in.
    for (int t : {2, 0, 1}) ASSERT_EQ(sf_session_tensor_ready(session, t, grads[size_t(t)].data(), 250), SF_OK);
    ASSERT_EQ(sf_session_wait(session, outputs, 3), SF_OK) << sf_last_error();
    ASSERT_EQ(sf_session_end_iteration(session), SF_OK) << sf_last_error();
  }
  EXPECT_EQ(out, grads);
  ASSERT_EQ(sf_session_buckets(session), 3);  // wfbp: one allreduce per tensor
  double times[5];
  int64_t info[4];
  ASSERT_EQ(sf_session_bucket(session, 2, times, info), SF_OK);
  EXPECT_EQ(info[0], 2);
  EXPECT_EQ(info[1], 3);
  EXPECT_EQ(info[2], 0);
  EXPECT_EQ(info[3], 250);
  EXPECT_LE(times[1], times[2]);
  EXPECT_LE(times[2], times[3]);
  char* json = nullptr;
  ASSERT_EQ(sf_session_finish(session, &json), SF_OK) << sf_last_error();
  const auto result = nlohmann::json::parse(json);
  sf_free(json);
  EXPECT_EQ(result["format"], "sparsefuse-result/1");
  EXPECT_EQ(result["scenario"]["iterations"], 2);  // three done, one of them warm-up
  EXPECT_EQ(result["executor"]["name"], "runtime-mpi (training)");
  EXPECT_EQ(result["buckets"].size(), 3u);
}

TEST_F(CApi, TopkKeepsTheLargestAndFeedsTheRestBack) {
  open("topk-layerwise");
  std::vector<std::vector<float>> grads(3, std::vector<float>(250, 0.0f)), out(3, std::vector<float>(250));
  for (int i = 0; i < 250; ++i) grads[0][size_t(i)] = float(i);  // top 25: 225..249
  float* outputs[3] = {out[0].data(), out[1].data(), out[2].data()};
  for (int it = 0; it < 2; ++it) {
    ASSERT_EQ(sf_session_begin_iteration(session), SF_OK);
    ASSERT_EQ(sf_session_backward_started(session), SF_OK);
    for (int t = 0; t < 3; ++t) ASSERT_EQ(sf_session_tensor_ready(session, t, grads[size_t(t)].data(), 250), SF_OK);
    ASSERT_EQ(sf_session_wait(session, outputs, 3), SF_OK) << sf_last_error();
    ASSERT_EQ(sf_session_end_iteration(session), SF_OK);
    if (it == 0) {
      for (int i = 0; i < 250; ++i) EXPECT_EQ(out[0][size_t(i)], i >= 225 ? float(i) : 0.0f) << i;
    }
  }
  // Iteration 1: residual + gradient = 2i for i < 225, i for the sent ones;
  // the top 25 are 2i for i in [200, 225).
  for (int i = 0; i < 250; ++i) EXPECT_EQ(out[0][size_t(i)], i >= 200 && i < 225 ? float(2 * i) : 0.0f) << i;
}

// The step API carries the negotiation, offloaded selections and sparse
// allreduces into training too. On one rank, with tensor t's element i =
// 1000 t + i: horovod fuses all three tensors into one allreduce (the
// average is the gradient); top-k selected on a CPU offload thread keeps
// each tensor's 25 largest; gtopk's one bucket over the model keeps the
// model's 75 largest, all in tensor 2.
TEST_F(CApi, CoordinatedOffloadedAndSparseAllreduceSchemesTrain) {
  std::vector<std::vector<float>> grads(3, std::vector<float>(250)), out(3, std::vector<float>(250, -1));
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 250; ++i) grads[size_t(t)][size_t(i)] = float(t * 1000 + i);
  float* outputs[3] = {out[0].data(), out[1].data(), out[2].data()};
  const std::string trace = std::filesystem::current_path().string() + "/tests/data/tiny3.json";
  for (const std::string scheme : {"\"horovod\"", R"({"preset": "topk-layerwise", "compress_on": "cpu-offload"})",
                                   "\"gtopk\""}) {
    SCOPED_TRACE(scheme);
    const std::string path = scenario("steps", 1, R"({"model": {"trace": ")" + trace +
                                                      R"("}, "workers": 1, "iterations": 1, "scheme": )" + scheme +
                                                      R"(, "compression": {"density": 0.1}})");
    ASSERT_EQ(sf_session_create(comm, path.c_str(), &session), SF_OK) << sf_last_error();
    ASSERT_EQ(sf_session_begin_iteration(session), SF_OK) << sf_last_error();
    for (int t = 0; t < 3; ++t) ASSERT_EQ(sf_session_tensor_ready(session, t, grads[size_t(t)].data(), 250), SF_OK);
    ASSERT_EQ(sf_session_wait(session, outputs, 3), SF_OK) << sf_last_error();
    ASSERT_EQ(sf_session_end_iteration(session), SF_OK) << sf_last_error();
    for (int t = 0; t < 3; ++t) {
      for (int i = 0; i < 250; ++i) {
        const bool kept = scheme == "\"horovod\"" ? true : scheme == "\"gtopk\"" ? t == 2 && i >= 175 : i >= 225;
        ASSERT_EQ(out[size_t(t)][size_t(i)], kept ? grads[size_t(t)][size_t(i)] : 0.0f) << t << " " << i;
      }
    }
    EXPECT_EQ(sf_session_buckets(session), scheme == "\"horovod\"" || scheme == "\"gtopk\"" ? 1 : 3);
    sf_session_destroy(session);
    session = nullptr;
  }
}

TEST_F(CApi, CallerMistakesAreBadInputWithAMessage) {
  sf_session* bad = nullptr;
  const std::string broken = scenario("broken", 1, "{\"workers\": ");
  EXPECT_EQ(sf_session_create(comm, broken.c_str(), &bad), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find(broken + ": malformed JSON"), std::string::npos) << sf_last_error();
  const std::string two = scenario("wfbp", 2);
  EXPECT_EQ(sf_session_create(comm, two.c_str(), &bad), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find(two + ": at /workers: expected 1"), std::string::npos)
      << sf_last_error();
  const std::string never_exact = scenario(
      "oktopk", 1,
      R"({"model": {"trace": ")" + std::filesystem::current_path().string() +
          R"(/tests/data/tiny3.json"}, "workers": 1, "scheme": {"preset": "oktopk", "exact_every": 0}})");
  EXPECT_EQ(sf_session_create(comm, never_exact.c_str(), &bad), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find("at /scheme: runtime-mpi cannot run preset \"oktopk\""),
            std::string::npos)
      << sf_last_error();
  EXPECT_EQ(bad, nullptr);

  open("wfbp");
  std::vector<float> g(250, 1.0f);
  EXPECT_EQ(sf_session_tensor_ready(session, 0, g.data(), 250), SF_BAD_INPUT);  // before begin_iteration
  EXPECT_NE(std::string(sf_last_error()).find("tensor_ready called between iterations"), std::string::npos)
      << sf_last_error();
  ASSERT_EQ(sf_session_begin_iteration(session), SF_OK);
  EXPECT_EQ(sf_session_tensor_ready(session, 0, g.data(), 249), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find("tensor 0 (a): expected 250 elements, got 249"), std::string::npos)
      << sf_last_error();
  EXPECT_EQ(sf_session_tensor_ready(session, 3, g.data(), 250), SF_BAD_INPUT);
  ASSERT_EQ(sf_session_tensor_ready(session, 0, g.data(), 250), SF_OK);
  EXPECT_EQ(sf_session_tensor_ready(session, 0, g.data(), 250), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find("reported ready twice"), std::string::npos) << sf_last_error();
  std::vector<float> o(250 * 3);
  float* outputs[3] = {o.data(), o.data() + 250, o.data() + 500};
  EXPECT_EQ(sf_session_wait(session, outputs, 3), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find("tensor 1 (b) was never reported ready"), std::string::npos)
      << sf_last_error();
  char* json = nullptr;
  EXPECT_EQ(sf_session_finish(session, &json), SF_BAD_INPUT);  // mid-iteration
}

// DeAR and ByteScheduler update inside the next forward: every stage opened
// in order hands over the previous iteration's averages of its tensors (one
// rank: its own gradient), none in the first iteration; complete() hands
// over the last iteration's. Calls out of order are bad input.
TEST_F(CApi, GatedSchemesHandOverThePreviousAveragesStageByStage) {
  for (const char* scheme : {"dear", "bytescheduler"}) {
    SCOPED_TRACE(scheme);
    open(scheme);
    const int stages = sf_session_stages(session);
    ASSERT_GT(stages, 0);
    auto gradient = [](int it, int t) {
      std::vector<float> g(250);
      for (int i = 0; i < 250; ++i) g[size_t(i)] = float(it * 10000 + t * 1000 + i);
      return g;
    };
    std::vector<std::vector<float>> out(3, std::vector<float>(250, -1));
    for (int it = 0; it < 3; ++it) {
      ASSERT_EQ(sf_session_begin_iteration(session), SF_OK) << sf_last_error();
      for (int g = 0; g < stages; ++g) {
        int first = -1, end = -1, updated = -1;
        ASSERT_EQ(sf_session_stage_tensors(session, g, &first, &end), SF_OK);
        std::vector<float*> outputs;
        for (int t = first; t < end; ++t) outputs.push_back(out[size_t(t)].data());
        if (g == 0 && stages > 1) {
          EXPECT_EQ(sf_session_open_stage(session, 1, nullptr, 0, &updated), SF_BAD_INPUT);
          EXPECT_NE(std::string(sf_last_error()).find("expected stage 0 (forward order)"), std::string::npos)
              << sf_last_error();
          EXPECT_EQ(sf_session_backward_started(session), SF_BAD_INPUT);
          EXPECT_NE(std::string(sf_last_error()).find("never opened"), std::string::npos) << sf_last_error();
        }
        ASSERT_EQ(sf_session_open_stage(session, g, outputs.data(), end - first, &updated), SF_OK) << sf_last_error();
        EXPECT_EQ(updated, it > 0 ? 1 : 0);
        for (int t = first; t < end && it > 0; ++t) EXPECT_EQ(out[size_t(t)], gradient(it - 1, t)) << "tensor " << t;
        ASSERT_EQ(sf_session_stage_updated(session), SF_OK) << sf_last_error();
      }
      for (int t = 0; t < 3; ++t) ASSERT_EQ(sf_session_tensor_ready(session, t, gradient(it, t).data(), 250), SF_OK);
      float* all[3] = {out[0].data(), out[1].data(), out[2].data()};
      EXPECT_EQ(sf_session_wait(session, all, 3), SF_BAD_INPUT);  // the averages come in the next forward
      EXPECT_NE(std::string(sf_last_error()).find("expected 0 output tensors, got 3"), std::string::npos)
          << sf_last_error();
      ASSERT_EQ(sf_session_wait(session, nullptr, 0), SF_OK) << sf_last_error();
      ASSERT_EQ(sf_session_end_iteration(session), SF_OK) << sf_last_error();
    }
    float* all[3] = {out[0].data(), out[1].data(), out[2].data()};
    ASSERT_EQ(sf_session_complete(session, all, 3), SF_OK) << sf_last_error();
    for (int t = 0; t < 3; ++t) EXPECT_EQ(out[size_t(t)], gradient(2, t)) << "tensor " << t;
    EXPECT_EQ(sf_session_begin_iteration(session), SF_BAD_INPUT);
    EXPECT_NE(std::string(sf_last_error()).find("begin_iteration called after complete"), std::string::npos)
        << sf_last_error();
    char* json = nullptr;
    ASSERT_EQ(sf_session_finish(session, &json), SF_OK) << sf_last_error();
    const auto result = nlohmann::json::parse(json);
    sf_free(json);
    EXPECT_EQ(result["scenario"]["iterations"], 2);
    EXPECT_FALSE(result["buckets"].empty());
    sf_session_destroy(session);
    session = nullptr;
  }
}

TEST_F(CApi, BroadcastOnOneRankReturnsTheText) {
  char* text = nullptr;
  ASSERT_EQ(sf_comm_broadcast_text(comm, 0, "a trace, 17 bytes", &text), SF_OK) << sf_last_error();
  EXPECT_STREQ(text, "a trace, 17 bytes");
  sf_free(text);
  EXPECT_EQ(sf_comm_broadcast_text(comm, 1, "x", &text), SF_BAD_INPUT);
  EXPECT_EQ(sf_comm_rank(comm), 0);
  EXPECT_EQ(sf_comm_size(comm), 1);
}


// --set as the CLI applies it: a knob turns a preset name into an object; a
// malformed assignment is bad input naming it.
TEST(CApiScenario, SetAppliesTheCliOverrideRules) {
  char* out = nullptr;
  ASSERT_EQ(sf_scenario_set(R"({"scheme": "fgbuff"})", "scheme.tensors_per_buffer=4", &out), SF_OK) << sf_last_error();
  EXPECT_EQ(nlohmann::json::parse(out), nlohmann::json::parse(R"({"scheme": {"preset": "fgbuff", "tensors_per_buffer": 4}})"));
  sf_free(out);
  ASSERT_EQ(sf_scenario_set("{}", "network.model=calibrated", &out), SF_OK);
  EXPECT_EQ(nlohmann::json::parse(out), nlohmann::json::parse(R"({"network": {"model": "calibrated"}})"));
  sf_free(out);
  EXPECT_EQ(sf_scenario_set("{}", "no-equals-sign", &out), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find("--set no-equals-sign"), std::string::npos) << sf_last_error();
  EXPECT_EQ(sf_scenario_set(R"({"workers": 2})", "workers.x=1", &out), SF_BAD_INPUT);
}

// One rank: the sum over ranks is the data itself; a null buffer is refused.
TEST_F(CApi, AllreduceSumOfDoubles) {
  double losses[2] = {1.5, -2.25};
  ASSERT_EQ(sf_comm_allreduce_sum(comm, losses, 2), SF_OK) << sf_last_error();
  EXPECT_EQ(losses[0], 1.5);
  EXPECT_EQ(losses[1], -2.25);
  EXPECT_EQ(sf_comm_allreduce_sum(comm, nullptr, 2), SF_BAD_INPUT);
}

// The flush probe: six iterations of three hooks (one learning them, two
// warm-ups, two engine iterations and a kernel one) give six flush and
// three kernel samples; from iteration 1 on each iteration writes every
// hook's average (its own gradient, one rank) back into the output given
// for it, the three measured ones timed; misuse is bad input.
TEST(CApiFlushProbe, SummarisesAndRefusesMisuse) {
  sf_flush_probe* probe = nullptr;
  EXPECT_EQ(sf_flush_probe_create(0, 64, &probe), SF_BAD_INPUT);
  EXPECT_NE(std::string(sf_last_error()).find("hooks and max elements >= 1"), std::string::npos) << sf_last_error();
  ASSERT_EQ(sf_flush_probe_create(3, 64, &probe), SF_OK) << sf_last_error();
  const int64_t sizes[] = {10, 100, 64};  // the second over the maximum: copied whole beside its probe tensor
  std::vector<std::vector<float>> gradients, outputs(3);
  for (int k = 0; k < 3; ++k) {
    gradients.emplace_back(size_t(sizes[k]));
    for (size_t i = 0; i < gradients[size_t(k)].size(); ++i) gradients[size_t(k)][i] = float(k + 1) + 0.001f * float(i);
  }
  float* written[3];
  int hooks = 0;
  int64_t elements[3] = {0, 0, 0}, samples[3] = {0, 0, 0};
  double flush[3], kernel[3], bookkeeping = -1, write_back = -1;
  auto summary = [&](int capacity) {
    return sf_flush_probe_summary(probe, capacity, &hooks, elements, flush, kernel, &bookkeeping, &write_back,
                                  samples);
  };
  EXPECT_EQ(sf_flush_probe_hook(probe, gradients[0].data(), 10), SF_BAD_INPUT);  // outside an iteration
  for (int it = 0; it < 6; ++it) {
    if (it == 4) {
      EXPECT_EQ(summary(3), SF_BAD_INPUT);  // no kernel iteration measured yet
    }
    ASSERT_EQ(sf_flush_probe_begin_iteration(probe), SF_OK) << sf_last_error();
    for (int k = 0; k < 3; ++k) {
      ASSERT_EQ(sf_flush_probe_hook(probe, gradients[size_t(k)].data(), sizes[k]), SF_OK) << sf_last_error();
      outputs[size_t(k)].assign(size_t(sizes[k]), -1.0f);
      written[k] = outputs[size_t(k)].data();
    }
    if (it == 2) {
      EXPECT_EQ(sf_flush_probe_end_iteration(probe, written, 2), SF_BAD_INPUT);  // three hooks
      EXPECT_NE(std::string(sf_last_error()).find("expected 0 or the 3 hooks'"), std::string::npos) << sf_last_error();
      ASSERT_EQ(sf_flush_probe_end_iteration(probe, nullptr, 0), SF_OK) << sf_last_error();  // refused: still open
      EXPECT_EQ(outputs[0][0], -1.0f) << "nothing written";
      continue;
    }
    ASSERT_EQ(sf_flush_probe_end_iteration(probe, written, 3), SF_OK) << sf_last_error();
    for (int k = 0; k < 3; ++k) {
      if (it == 0) {
        EXPECT_EQ(outputs[size_t(k)][0], -1.0f) << "iteration 0 only learns the hooks";
      } else {
        EXPECT_EQ(outputs[size_t(k)], gradients[size_t(k)]) << "iteration " << it << ", hook " << k;
      }
    }
  }
  EXPECT_EQ(summary(2), SF_BAD_INPUT);  // three hooks
  ASSERT_EQ(summary(3), SF_OK) << sf_last_error();
  ASSERT_EQ(hooks, 3);
  EXPECT_EQ(elements[0], 10);
  EXPECT_EQ(elements[1], 64);  // probed at the maximum
  EXPECT_EQ(elements[2], 64);
  std::vector<double> differences;
  for (int k = 0; k < 3; ++k) {
    EXPECT_GT(flush[k], 0) << k;
    EXPECT_GT(kernel[k], 0) << k;
    differences.push_back(std::max(0.0, flush[k] - kernel[k]));
  }
  std::sort(differences.begin(), differences.end());
  EXPECT_DOUBLE_EQ(bookkeeping, differences[1]);
  double recomputed = -1;
  ASSERT_EQ(sf_flush_probe_bookkeeping(3, flush, kernel, &recomputed), SF_OK);
  EXPECT_DOUBLE_EQ(recomputed, bookkeeping);
  const double flushes[] = {1.0, 0.5, 2.0, 4.0}, kernels[] = {0.5, 1.0, 1.0, 1.0};  // 0.5, 0 (floored), 1, 3
  ASSERT_EQ(sf_flush_probe_bookkeeping(4, flushes, kernels, &recomputed), SF_OK);
  EXPECT_DOUBLE_EQ(recomputed, 0.75);
  EXPECT_EQ(sf_flush_probe_bookkeeping(4, nullptr, kernels, &recomputed), SF_BAD_INPUT);
  EXPECT_EQ(samples[0], 6);
  EXPECT_EQ(samples[1], 3);
  EXPECT_EQ(samples[2], 3);  // iterations 3, 4 and 5 wrote back
  EXPECT_GT(write_back, 0);
  EXPECT_EQ(sf_flush_probe_summary(probe, 3, &hooks, nullptr, flush, kernel, &bookkeeping, &write_back, samples),
            SF_BAD_INPUT);
  ASSERT_EQ(sf_flush_probe_begin_iteration(probe), SF_OK);
  EXPECT_EQ(sf_flush_probe_hook(probe, gradients[0].data(), 11), SF_BAD_INPUT);  // hook 0 made 10 ready before
  EXPECT_EQ(sf_flush_probe_destroy(probe), SF_OK);
}

}  // namespace
