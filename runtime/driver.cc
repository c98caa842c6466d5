#include "runtime/driver.h"

#include <fmt/format.h>

#include "common/provenance.h"
#include "policy/gradient_model.h"
#include "runtime/engine.h"
#include "runtime/check.h"
#include "runtime/oracle.h"
#include "runtime/support.h"
#include "model/plan.h"

namespace sparsefuse::runtime {

namespace {

// Once per iteration, off the clock: every rank's flush count and a hash of
// its bucket sequence must agree, and a failed --check on any rank stops
// every rank. Returns how many ranks failed the check.
int agree_after_iteration(CommThread& comm, const RunOptions& options, int iteration,
                          const std::vector<std::unique_ptr<BucketExchange>>& exchanges, bool failed) {
  uint64_t hash = 0;
  for (const auto& x : exchanges) hash = hash * 0x100000001b3ull ^ bucket_fingerprint(x->bucket, iteration, x->index);
  const int64_t mine[3] = {int64_t(exchanges.size()), int64_t(hash), failed ? 1 : 0};
  std::vector<int64_t> all;
  comm.submit([&](Communicator& c) { all = c.allgather(mine, 3); }, fmt::format("the end of iteration {}", iteration));
  comm.drain(options.timeout);
  int failures = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (all[3 * r] != mine[0] || all[3 * r + 1] != mine[1]) {
      throw std::runtime_error(fmt::format("iteration {}: rank {} flushed {} buckets, rank {} flushed {} (or a "
                                           "different sequence): the ranks' policies disagree",
                                           iteration, r, all[3 * r], comm.rank(), mine[0]));
    }
    failures += int(all[3 * r + 2]);
  }
  return failures;
}

}  // namespace

std::unique_ptr<model::ScenarioPlan> plan_for_runtime(const model::Scenario& scenario, int ranks) {
  if (scenario.workers != ranks) {
    throw InputError(scenario.file, "/workers",
                     fmt::format("expected {} (the number of ranks this run was started with), got {}; run with "
                                 "mpirun -np {} or pass --set workers={}",
                                 ranks, scenario.workers, scenario.workers, ranks));
  }
  auto planned = std::make_unique<model::ScenarioPlan>(scenario);
  std::string reason = unsupported_reason(scenario.scheme.preset, planned->scheme());
  if (!reason.empty()) throw InputError(scenario.file, "/scheme", reason);
  return planned;
}

namespace {

// This rank's sums over the measured iterations.
struct RankTotals {
  // forward, backward, compression, exposed communication, optimizer (ns), bytes sent, lost contributions
  std::vector<double> sums = std::vector<double>(7, 0.0);
  std::vector<double> iteration_ns;
};
constexpr size_t kPerBucket = 4;  // sent count, compression, collective duration, decompression

// Runs every iteration, checking each against the reference when asked;
// returns the first failure any rank saw ("" if none).
std::string run_iterations(const model::Scenario& s, RankEngine& engine, Oracle* oracle,
                           CommThread& comm, const RunOptions& options, RankTotals& totals) {
  const int total = s.warmup_iterations + s.iterations;
  for (int it = 0; it < total; ++it) {
    const IterationTimes t = engine.run_iteration(it);
    std::string failure = oracle ? oracle->check(iteration_record(engine, it)) : "";
    if (agree_after_iteration(comm, options, it, engine.exchanges(), !failure.empty()) > 0) {
      return failure.empty() ? fmt::format("iteration {}: another rank's check failed", it) : failure;
    }
    if (options.progress) options.progress(it + 1, total);
    if (it < s.warmup_iterations) continue;
    totals.iteration_ns.push_back(double(t.total));
    const double add[] = {double(t.forward), double(t.backward), double(t.compression), double(t.communication_exposed),
                          double(t.optimizer)};
    for (int i = 0; i < 5; ++i) totals.sums[i] += add[i];
    for (const auto& x : engine.exchanges()) {
      totals.sums[5] += double(x->bytes_sent());
      totals.sums[6] += double(x->lost);
    }
  }
  return "";
}

// The totals summed over ranks, followed by the last iteration's per-bucket
// figures summed over ranks; iteration times become the slowest rank's.
std::vector<double> reduce_over_ranks(const RankEngine& engine, RankTotals& totals, CommThread& comm,
                                      const RunOptions& options) {
  std::vector<double> summed = totals.sums;
  for (const auto& x : engine.exchanges()) {
    summed.insert(summed.end(), {double(x->sent_count), double(x->compression_ns), double(x->finished - x->started),
                                 double(x->decompression_ns)});
  }
  comm.submit(
      [&](Communicator& c) {
        c.allreduce_sum(summed.data(), int64_t(summed.size()));
        c.allreduce_max(totals.iteration_ns.data(), int64_t(totals.iteration_ns.size()));
      },
      "the final statistics");
  comm.drain(options.timeout);
  return summed;
}

void fill_result(const model::Scenario& s, const model::ScenarioPlan& planned, const RankEngine& engine,
                 const RankTotals& totals, const std::vector<double>& summed, int P, const RunOptions& options,
                 model::RunResult& r) {
  r.scenario = s.resolved();
  r.plan = planned.scheme().describe();
  r.network = {{"model", "measured"}, {"transport", options.transport}, {"ranks", P}};
  r.provenance = s.trace.provenance_kind();
  r.compression_costs = options.device == "cuda"
                            ? "measured: CUDA kernels (kernels/cuda/), on each rank's compression stream"
                            : "measured: CPU kernels (kernels/), inline on each rank's thread";
  r.samples_per_iteration = int64_t(P) * s.batch_per_worker;
  for (double ns : totals.iteration_ns) r.iteration_ns.push_back(TimeNs(ns));
  const double per = 1e-9 / (double(P) * s.iterations);  // ns summed over ranks and iterations -> s per iteration
  r.breakdown = {summed[0] * per, summed[1] * per, summed[2] * per, summed[3] * per, 0.0, summed[4] * per};
  r.bytes_sent_per_worker = summed[5] / (double(P) * s.iterations);
  r.lost_contributions = totals.sums[6] / s.iterations;  // every rank loses the same (same gathered stream)
  const auto& last = engine.exchanges();
  for (size_t k = 0; k < last.size(); ++k) {
    const double* b = summed.data() + totals.sums.size() + kPerBucket * k;
    model::BucketRecord record;
    record.bucket = last[k]->bucket;
    record.sent_elements = b[0] / P;
    record.compression_s = b[1] / P * 1e-9;
    record.duration_s = b[2] / P * 1e-9;
    record.decompression_s = b[3] / P * 1e-9;
    record.lost_contributions = double(last[k]->lost);
    r.buckets.push_back(record);
  }
}

Json executor_description(const RankEngine& engine, int P, const RunOptions& options, double wall_s) {
  int unsynchronized = 0;
  for (bool done : engine.synchronized()) unsynchronized += !done;
  return {{"name", "runtime-mpi"},
          {"ranks", P},
          {"transport", options.transport},
          {"device", options.device},
          {"host", host_name()},
          {"time_scale", options.time_scale},
          {"timeout_s", double(options.timeout.count()) / 1000.0},
          {"checked", options.check},
          {"unsynchronized_tensors", unsynchronized},
          {"wall_s", wall_s},
          {"gradients", "synthetic: N(0, grad_rms^2) per element, seeded by (seed, rank, iteration, tensor)"},
          {"notes",
           {"iteration_time_s is the slowest rank's; breakdown_s and buckets are means over ranks",
            "sync_wait is not separable in a real run: it is inside communication_exposed and duration_s",
            "every collective runs on one communication thread per rank, in flush order (communicators are not "
            "concurrent)"}}};
}

}  // namespace

RunOutcome run_scenario(const model::Scenario& s, const model::ScenarioPlan& planned, CommThread& comm,
                        const RunOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const policy::GradientModel& model = planned.model;
  const ModelLayout layout = ModelLayout::from(s.trace, model);
  const int P = comm.size();
  EngineConfig config;
  config.seed = s.seed;
  config.time_scale = options.time_scale;
  config.forward_ns = planned.forward_ns;
  config.optimizer_ns = planned.optimizer_ns;
  config.timeout = options.timeout;
  config.make_compressor = options.make_compressor;
  RankEngine engine(model, layout, planned.scheme(), comm, config);
  std::unique_ptr<Oracle> oracle;
  if (options.check) oracle = std::make_unique<Oracle>(model, layout, s.seed, P, comm.rank());

  RunOutcome outcome;
  RankTotals totals;
  outcome.check_failure = run_iterations(s, engine, oracle.get(), comm, options, totals);
  if (!outcome.check_failure.empty()) return outcome;
  const std::vector<double> summed = reduce_over_ranks(engine, totals, comm, options);
  fill_result(s, planned, engine, totals, summed, P, options, outcome.result);
  outcome.result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  outcome.executor = executor_description(engine, P, options, outcome.result.wall_s);
  return outcome;
}

Json RunOutcome::to_json() const {
  Json out = result.to_json(/*timing=*/false);
  out["executor"] = executor;
  return out;
}

}  // namespace sparsefuse::runtime
