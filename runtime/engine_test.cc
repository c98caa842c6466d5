// The engine and the driver in one process, over the loopback communicator:
// the real replay, kernels and result path with one rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "runtime/driver.h"
#include "runtime/engine.h"
#include "runtime/reference.h"
#include "model/plan.h"

namespace sparsefuse::runtime {
namespace {

std::unique_ptr<CommThread> loopback() {
  return std::make_unique<CommThread>([] { return std::make_unique<LoopbackCommunicator>(); });
}

model::Scenario tiny(Json scheme, int workers = 1, int iterations = 3) {
  Json doc = {{"model", {{"trace", "tests/data/tiny3.json"}}},
              {"workers", workers},
              {"warmup_iterations", 1},
              {"iterations", iterations},
              {"scheme", scheme},
              {"compression", {{"density", 0.1}}}};
  return model::parse_scenario(doc, "tiny.json");
}

TEST(CommThread, RunsJobsInOrderAndRethrowsTheirErrors) {
  auto comm = loopback();
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) comm->submit([&order, i](Communicator&) { order.push_back(i); }, "job");
  comm->drain(std::chrono::seconds(10));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  comm->submit([](Communicator&) { throw std::runtime_error("boom"); }, "failing job");
  bool ran_after = false;
  comm->submit([&ran_after](Communicator&) { ran_after = true; }, "later job");
  EXPECT_THROW(comm->drain(std::chrono::seconds(10)), std::runtime_error);
  EXPECT_FALSE(ran_after);
}

// wait_for(ticket) returns once that job has run, while later ones may still
// be queued or running: the engine decompresses bucket k during bucket k+1.
TEST(CommThread, WaitsForOneJobWhileLaterOnesRun) {
  auto comm = loopback();
  std::atomic<bool> release{false}, second_done{false};
  const uint64_t first = comm->submit([](Communicator&) {}, "first");
  const uint64_t second = comm->submit(
      [&](Communicator&) {
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        second_done = true;
      },
      "second");
  EXPECT_EQ(second, first + 1);
  comm->wait_for(first, std::chrono::seconds(10));
  EXPECT_FALSE(second_done);  // still held: waiting for the first did not wait for it
  EXPECT_THROW(comm->wait_for(second, std::chrono::milliseconds(20)), CommTimeout);
  release = true;
  comm->wait_for(second, std::chrono::seconds(10));
  EXPECT_TRUE(second_done);
}

TEST(CommThread, TimesOutNamingTheStuckJob) {
  auto comm = loopback();
  comm->submit([](Communicator&) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }, "flush #7");
  try {
    comm->drain(std::chrono::milliseconds(20));
    FAIL() << "expected a timeout";
  } catch (const CommTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("flush #7 did not complete within 0.02 s"), std::string::npos) << e.what();
  }
  comm->drain(std::chrono::seconds(10));  // the job ends; the thread can be joined
}

// Every supported preset over a few iterations on one rank: the aggregate
// equals the reference exactly, and dense schemes return the gradient itself.
TEST(RankEngine, MatchesTheReferenceForEverySupportedPreset) {
  for (const char* preset : {"wfbp", "ddp", "syncea", "mgwfbp", "topk-layerwise", "omgs", "fgbuff", "saf",
                             "safusion-inter", "ssfusion", "ssfusion-i", "adtopk", "adtopk-i", "adtopk-h", "cupcake"}) {
    SCOPED_TRACE(preset);
    model::Scenario s = tiny(preset);
    auto comm = loopback();
    RunOptions options;
    options.check = true;
    options.transport = "loopback";
    RunOutcome outcome = run_scenario(s, *plan_for_runtime(s, 1), *comm, options);
    EXPECT_EQ(outcome.check_failure, "");
    EXPECT_EQ(outcome.result.iteration_ns.size(), 3u);
    EXPECT_FALSE(outcome.result.buckets.empty());
  }
}

TEST(RankEngine, DenseAggregateIsTheGradientAndTopkSendsK) {
  auto comm = loopback();
  {
    const model::Scenario s = tiny("wfbp");
    const model::ScenarioPlan dense(s);
    const ModelLayout layout = ModelLayout::from(s.trace, dense.model);
    RankEngine engine(dense.model, layout, dense.scheme(), *comm, {});
    engine.run_iteration(0);
    std::vector<float> gradient(size_t(layout.total()));
    synthetic_gradient(1, 0, 0, dense.model, layout, gradient.data());
    EXPECT_EQ(engine.aggregate(), gradient);
    EXPECT_EQ(engine.exchanges().size(), 3u);
  }
  const model::Scenario sparse = tiny("topk-layerwise");
  const model::ScenarioPlan planned(sparse);
  const ModelLayout layout = ModelLayout::from(sparse.trace, planned.model);
  RankEngine engine(planned.model, layout, planned.scheme(), *comm, {});
  engine.run_iteration(0);
  ASSERT_EQ(engine.exchanges().size(), 3u);
  for (const auto& x : engine.exchanges()) {
    EXPECT_EQ(x->bucket.collective, Collective::kAllgather);
    EXPECT_EQ(x->sent_count, 25);  // 10% of 250
    EXPECT_LE(x->posted, x->started);
    EXPECT_LE(x->started, x->finished);
  }
  int nonzero = 0;
  for (float v : engine.aggregate()) nonzero += v != 0.0f;
  EXPECT_EQ(nonzero, 75);
}

// Driven step by step as a training loop drives it: each bucket is
// decompressed by the communication thread as soon as its collective is
// done, so with backward still going on nothing is left to decompress after
// it (the simulator's overlap); the next iteration reuses the exchanges.
TEST(RankEngine, DecompressesDuringBackwardAndReusesExchanges) {
  auto comm = loopback();
  const model::Scenario s = tiny("topk-layerwise");
  const model::ScenarioPlan planned(s);
  const ModelLayout layout = ModelLayout::from(s.trace, planned.model);
  RankEngine engine(planned.model, layout, planned.scheme(), *comm, {});
  std::vector<const BucketExchange*> first;
  for (int it = 0; it < 2; ++it) {
    engine.begin_iteration(it);
    engine.backward_started();
    for (int t = 0; t < layout.tensors(); ++t) {
      std::fill(engine.gradient(t), engine.gradient(t) + layout.elements(t, t + 1), float(t + 1));
      engine.tensor_ready(t);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // backward's last op: the collectives finish
    engine.wait_for_buckets();
    const IterationTimes times = engine.end_iteration();
    ASSERT_EQ(engine.exchanges().size(), 3u);
    for (const auto& x : engine.exchanges()) {
      EXPECT_GT(x->decompressed, x->finished);
      EXPECT_LT(x->decompressed, times.forward + times.backward + times.compression);  // before backward's end
      EXPECT_EQ(x->decompression_ns, x->decompressed - x->finished);
    }
    EXPECT_LT(times.compression, std::chrono::nanoseconds(std::chrono::milliseconds(50)).count());
    if (it == 0) {
      for (const auto& x : engine.exchanges()) first.push_back(x.get());
    } else {
      std::vector<const BucketExchange*> second;
      for (const auto& x : engine.exchanges()) second.push_back(x.get());
      std::sort(first.begin(), first.end());
      std::sort(second.begin(), second.end());
      EXPECT_EQ(first, second);
    }
  }
  // Tensor 0 (all 1.0) sent its top 25 in iteration 0; with error feedback
  // the other 225 carried over, so 25 entries of 2.0 are sent in iteration 1.
  int twos = 0;
  for (int64_t i = 0; i < 250; ++i) twos += engine.aggregate()[size_t(i)] == 2.0f;
  EXPECT_EQ(twos, 25);
}

TEST(RankEngine, RefusesCallsOutOfOrder) {
  auto comm = loopback();
  const model::Scenario s = tiny("wfbp");
  const model::ScenarioPlan planned(s);
  const ModelLayout layout = ModelLayout::from(s.trace, planned.model);
  RankEngine engine(planned.model, layout, planned.scheme(), *comm, {});
  EXPECT_THROW(engine.tensor_ready(0), std::logic_error);  // before begin_iteration
  engine.begin_iteration(0);
  EXPECT_THROW(engine.wait_for_buckets(), std::logic_error);  // in the forward pass
  engine.backward_started();
  EXPECT_THROW(engine.tensor_ready(1), std::logic_error);  // not backward order
  engine.tensor_ready(0);
  EXPECT_THROW(engine.wait_for_buckets(), std::logic_error);  // two tensors missing
  engine.tensor_ready(1);
  engine.tensor_ready(2);
  engine.wait_for_buckets();
  EXPECT_THROW(engine.begin_iteration(1), std::logic_error);  // end_iteration first
  engine.end_iteration();
}

// The reference notices a wrong aggregate.
TEST(ReferenceAggregate, ReportsTheFirstMismatch) {
  const model::Scenario s = tiny("topk-layerwise");
  const model::ScenarioPlan planned(s);
  const policy::GradientModel& model = planned.model;
  const ModelLayout layout = ModelLayout::from(s.trace, model);
  auto comm = loopback();
  RankEngine engine(model, layout, planned.scheme(), *comm, {});
  engine.run_iteration(0);
  std::vector<float> wrong = engine.aggregate();
  size_t first_sent = 0;
  while (wrong[first_sent] == 0.0f) ++first_sent;
  wrong[first_sent] += 1.0f;
  ReferenceAggregate reference(model, layout, 1, 1);
  std::string failure = reference.check(0, engine.requests(), engine.exchanges(), wrong);
  EXPECT_NE(failure.find("iteration 0, flush #0 (allgather): tensor 0 (a) element"), std::string::npos) << failure;
}

TEST(Driver, ResultFollowsTheSimulatorSchemaWithAnExecutor) {
  auto comm = loopback();
  RunOptions options;
  options.transport = "loopback";
  options.time_scale = 2.0;
  const model::Scenario s = tiny("ddp", 1, 2);
  Json out = run_scenario(s, *plan_for_runtime(s, 1), *comm, options).to_json();
  EXPECT_EQ(out["format"], "sparsefuse-result/1");
  EXPECT_EQ(out["executor"]["name"], "runtime-mpi");
  EXPECT_EQ(out["executor"]["ranks"], 1);
  EXPECT_EQ(out["executor"]["time_scale"], 2.0);
  EXPECT_EQ(out["scenario"]["workers"], 1);
  ASSERT_EQ(out["buckets"].size(), 1u);
  EXPECT_EQ(out["buckets"][0]["elements"], 750);
  EXPECT_EQ(out["buckets"][0]["collective"], "allreduce");
  // Forward (1000 ns) and backward (3000 ns) replayed at twice the time.
  EXPECT_GE(out["iteration_time_s"]["min"].get<double>(), 8e-6);
  EXPECT_EQ(out["bytes_sent_per_worker"], 3000.0);
}

TEST(Driver, RefusesWhatItCannotRunAsBadInput) {
  try {
    plan_for_runtime(tiny("horovod"), 1);
    FAIL() << "horovod must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.pointer(), "/scheme");
    EXPECT_NE(e.problem().find("cannot run preset \"horovod\": it negotiates its buckets at run time"),
              std::string::npos)
        << e.what();
  }
  for (const char* preset : {"dear", "bytescheduler", "oktopk", "randomk-shared", "ssfusion-o"}) {
    EXPECT_THROW(plan_for_runtime(tiny(preset), 1), InputError) << preset;
  }
  EXPECT_THROW(plan_for_runtime(tiny({{"preset", "ddp"}, {"replan_every", 2}}), 1), InputError);
  try {
    plan_for_runtime(tiny("ddp", 4), 2);
    FAIL() << "a worker count other than the ranks must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.pointer(), "/workers");
    EXPECT_NE(e.problem().find("expected 2 (the number of ranks"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(plan_for_runtime(tiny("fgbuff"), 1));
}

}  // namespace
}  // namespace sparsefuse::runtime
