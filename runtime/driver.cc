#include "runtime/driver.h"

#include <optional>

#include <fmt/format.h>

#include "policy/gradient_model.h"
#include "runtime/engine.h"
#include "runtime/check.h"
#include "runtime/oracle.h"
#include "runtime/replanner.h"
#include "runtime/statistics.h"
#include "runtime/support.h"
#include "model/forward_times.h"
#include "model/plan.h"

namespace sparsefuse::runtime {

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

// Runs every iteration, checking each against the reference when asked;
// returns the first failure any rank saw ("" if none).
// A scheme that defers communication (DeAR) is checked one iteration late:
// its average of iteration i is complete once iteration i + 1's forward has
// all-gathered it, and the last iteration's once complete_deferred has.
// A scheme whose collectives run on into the next forward (ByteScheduler)
// is settled one iteration late altogether: checked, agreed on and counted
// once its exchanges are complete.
std::string run_iterations(const model::Scenario& s, RankEngine& engine, Oracle* oracle, RuntimeReplanner& replanner,
                           CommThread& comm, const RunOptions& options, RankTotals& totals) {
  const int total = s.warmup_iterations + s.iterations;
  std::optional<KeptRecord> kept;  // the deferred iteration awaiting its check
  auto check = [&](int it) -> std::string {
    if (!oracle) return "";
    if (engine.payloads_on_plane()) engine.copy_plane_state();  // off the clock
    if (!engine.defers_communication()) return oracle->check(iteration_record(engine, it));
    std::string failure = kept ? oracle->check(kept->with_aggregate(engine.aggregate())) : "";
    if (it < total) kept.emplace(iteration_record(engine, it));
    return failure;
  };
  // Iteration IT's exchanges are engine.exchanges(): agree on them (a
  // failure anywhere stops every rank) and count them with its TIMES.
  auto settle = [&](int it, const IterationTimes& times, const std::string& failure) -> std::string {
    if (agree_after_iteration(comm, options, it, engine.exchanges(), !failure.empty()) > 0) {
      return failure.empty() ? fmt::format("iteration {}: another rank's check failed", it) : failure;
    }
    if (it >= s.warmup_iterations) totals.add(times, engine.exchanges());
    return "";
  };
  // A lagging scheme's iteration it - 1 is settled inside run_iteration(it)
  // (RankEngine::set_settle_hook), once its collectives are done.
  IterationTimes previous;
  std::string lagging_failure;
  if (engine.lags_one_iteration()) {
    engine.set_settle_hook([&](int done) {
      if (lagging_failure.empty()) lagging_failure = settle(done, previous, check(done));
    });
  }
  for (int it = 0; it < total; ++it) {
    const IterationTimes t = engine.run_iteration(it);
    if (engine.lags_one_iteration()) {
      if (lagging_failure.empty() && it + 1 == total) {
        engine.complete_deferred();
        lagging_failure = settle(it, t, check(it));
      }
      if (!lagging_failure.empty()) return lagging_failure;
      previous = t;
    } else {
      std::string failure = check(it);
      if (it + 1 == total && engine.defers_communication()) {
        engine.complete_deferred();  // a collective: every rank, whatever its check said
        if (failure.empty()) failure = check(total);
      }
      failure = settle(it, t, failure);
      if (!failure.empty()) return failure;
    }
    replanner.after_iteration(it, engine, comm, options.timeout);
    if (options.progress) options.progress(it + 1, total);
  }
  return "";
}

}  // namespace

RunOutcome run_scenario(const model::Scenario& s, model::ScenarioPlan& planned, CommThread& comm,
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
  if (planned.scheme().forward_plan()) config.forward_split = model::forward_times(s.trace, model, s.compute_scale());
  config.cpu_threads = s.compression.cpu_threads;
  config.timeout = options.timeout;
  config.make_compressor = options.make_compressor;
  ExecutorInfo info;
  info.payloads = "host";
  if (options.make_plane) {
    const std::string refusal = resident_refusal(planned.scheme());
    if (refusal.empty()) config.make_plane = options.make_plane;
    info.payloads = refusal.empty() ? "device" : "host-staged (" + refusal + ")";
  }
  RankEngine engine(model, layout, planned.scheme(), comm, config);
  std::unique_ptr<Oracle> oracle;
  if (options.check) oracle = std::make_unique<Oracle>(model, layout, s.seed, P, comm.rank());

  RankTotals totals;
  RuntimeReplanner replanner(planned.scheme());
  std::string failure = run_iterations(s, engine, oracle.get(), replanner, comm, options, totals);
  if (!failure.empty()) {
    RunOutcome outcome;
    outcome.check_failure = failure;
    return outcome;
  }
  info.time_scale = options.time_scale;
  info.gradients = "synthetic: N(0, grad_rms^2) per element, seeded by (seed, rank, iteration, tensor)";
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return summarize_run(s, planned, engine, totals, comm, options, info);
}

Json RunOutcome::to_json() const {
  Json out = result.to_json(/*timing=*/false);
  out["executor"] = executor;
  return out;
}

}  // namespace sparsefuse::runtime
