#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "model/netmodel/topology.h"
#include "model/plan.h"
#include "sim/backward_stage.h"
#include "sim/collective_stage.h"
#include "sim/contention.h"
#include "sim/coordinated_posts.h"
#include "sim/forward_pass.h"
#include "sim/recorder.h"
#include "sim/replanner.h"
#include "sim/variability.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

namespace {

// The engine's state for one scenario, and the iteration loop that drives the
// components: BackwardStage (stage 1), post_coordinated_flushes, the
// CollectiveStage (stage 2), the GatedForward of schemes whose forward waits
// on communication, the Replanner and the Recorder.
class Simulation {
 public:
  Simulation(const model::Scenario& scenario, Timeline* timeline, const EngineOptions& options);
  model::RunResult run(const ProgressHook& progress);

 private:
  void run_iteration(int it);
  void run_stages(int it);
  bool run_partial_stages(int it);
  void run_stages_with_interference(int it);
  std::vector<Interval> guess_in_flight();
  void mark_late_workers();
  void start_workers(int it);
  void finish_workers(int it);
  void remember_covering_collectives();
  void make_worker_policies();

  const model::Scenario& scenario_;
  const int workers_;
  const int total_iterations_;
  model::ScenarioPlan plan_;
  std::unique_ptr<netmodel::Topology> topology_;  // the contention model's graph, if any
  std::unique_ptr<Contention> contention_;
  std::unique_ptr<policy::Coordinator> coordinator_;
  std::vector<std::unique_ptr<policy::WorkerPolicy>> policies_;
  const policy::ForwardPlan* forward_plan_;
  std::unique_ptr<GatedForward> gated_;
  std::vector<ForwardStats> forward_stats_;
  std::vector<TimeNs> covering_done_;  // per tensor: end of the last collective covering it
  ComputeVariability variability_;
  CollectiveStage collective_stage_;
  FlushRecord record_;
  FlushRecord partial_record_;  // a partial pass's (sim/simulator.cc)
  std::vector<char> late_;      // per worker: replayed in partial passes
  std::vector<TimeNs> latest_not_replayed_;  // coordinated schemes: what the others report in them
  const bool partial_passes_;
  WorkerExecutor executor_;
  BackwardStage backward_;
  Replanner replanner_;
  Recorder recorder_;
  Timeline* timeline_;
  std::vector<WorkerStreams> streams_;
  IterationCollectives collectives_;
  TimeNs previous_job_end_ = 0;
  uint64_t queue_events_ = 0, worker_steps_ = 0;
  uint64_t interference_passes_ = 0, interference_partial_passes_ = 0, interference_unsettled_ = 0;
  // The last iteration's collectives in flight and where that iteration began:
  // the next iteration's first guess of its own.
  std::vector<Interval> last_in_flight_;
  TimeNs last_origin_ = 0;
};

std::unique_ptr<Contention> make_contention(const netmodel::Topology* topology) {
  if (topology) return std::make_unique<LinkContention>(*topology);
  return std::make_unique<EqualShare>();
}

Simulation::Simulation(const model::Scenario& scenario, Timeline* timeline, const EngineOptions& options)
    : scenario_(scenario),
      workers_(scenario.workers),
      total_iterations_(scenario.warmup_iterations + scenario.iterations),
      plan_(scenario),
      topology_(scenario.topology ? std::make_unique<netmodel::Topology>(*scenario.topology) : nullptr),
      contention_(make_contention(topology_.get())),
      coordinator_(plan_.scheme().make_coordinator()),
      forward_plan_(plan_.scheme().forward_plan()),
      variability_(scenario.variability, scenario.workers, scenario.seed),
      collective_stage_(scenario, plan_, *contention_),
      late_(size_t(scenario.workers), 0),
      partial_passes_(options.partial_passes),
      executor_(plan_.compression, plan_.model, scenario.seed, record_),
      backward_(scenario, plan_, coordinator_.get(), policies_),
      replanner_(plan_.scheme(), scenario.workers),
      recorder_(scenario.workers, timeline),
      timeline_(timeline),
      streams_(size_t(scenario.workers)) {
  if (!coordinator_) make_worker_policies();
  if (forward_plan_) {
    gated_ = std::make_unique<GatedForward>(*forward_plan_,
                                            forward_times(scenario.trace, plan_.model, scenario.compute_scale()));
  }
}

void Simulation::make_worker_policies() {
  policies_.clear();
  for (int w = 0; w < workers_; ++w) policies_.push_back(plan_.scheme().make_worker_policy(w));
}

model::RunResult Simulation::run(const ProgressHook& progress) {
  auto wall_start = std::chrono::steady_clock::now();
  model::RunResult result;
  result.scenario = scenario_.resolved();
  result.network = plan_.network->describe();
  result.provenance = scenario_.trace.provenance_kind();
  result.compression_costs = plan_.compression.compression_costs();
  result.samples_per_iteration = int64_t(workers_) * scenario_.batch_per_worker;
  for (int it = 0; it < total_iterations_; ++it) {
    run_iteration(it);
    if (progress) progress(it + 1, total_iterations_);
  }
  result.plan = plan_.scheme().describe();
  recorder_.finish(scenario_.iterations, result);
  result.queue_events = queue_events_;
  result.worker_steps = worker_steps_;
  result.interference_passes = interference_passes_;
  result.interference_partial_passes = interference_partial_passes_;
  result.interference_unsettled = interference_unsettled_;
  result.worker_iterations = int64_t(workers_) * total_iterations_;
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

void Simulation::run_iteration(int it) {
  start_workers(it);
  if (scenario_.compute.comm_interference > 0) {
    run_stages_with_interference(it);
  } else {
    run_stages(it);
  }
  replanner_.record(collectives_);
  remember_covering_collectives();
  finish_workers(it);
  if (replanner_.replan_after(it, backward_, executor_)) make_worker_policies();
}

// Stages 1 and 2 once, from the workers' start times.
void Simulation::run_stages(int it) {
  record_.clear();
  if (coordinator_) coordinator_->begin_iteration(it);
  // Stage 1: each worker's own streams and flush decisions.
  for (int w = 0; w < workers_; ++w) {
    backward_.run_worker(w, it, gated_ != nullptr, streams_[w], executor_);
    if (!coordinator_ && executor_.flushes() != record_.buckets.size()) {
      throw std::logic_error("workers flushed different numbers of buckets");
    }
  }
  worker_steps_ += uint64_t(workers_) * uint64_t(plan_.model.size());
  std::vector<TimeNs> not_before;
  if (coordinator_) post_coordinated_flushes(*coordinator_, it, backward_, streams_, executor_, record_, not_before);
  worker_steps_ += uint64_t(workers_) * record_.buckets.size();
  // Stage 2: the collectives on the global event queue, then decompression.
  queue_events_ += collective_stage_.run(record_, not_before, plan_.scheme(), collectives_);
}

// A partial pass: stages 1 and 2 with only the workers marked in late_
// replayed, into partial_record_. The others contribute what the last full
// pass recorded for them (to a coordinator, the latest of their ready times
// per tensor, in one report; else their posts): at the start of an
// iteration that is the last iteration's, earlier than anything in this
// one, which delays no collective. False, with the pass abandoned, where
// worker 0 (always replayed: its flushes are the reference) flushes a number
// of buckets the record does not hold.
bool Simulation::run_partial_stages(int it) {
  partial_record_.clear();
  executor_.write_to(partial_record_);
  if (coordinator_) coordinator_->begin_iteration(it);
  const size_t stored = record_.buckets.size();
  bool lined_up = true;
  for (int w = 0; w < workers_ && lined_up; ++w) {
    if (late_[w]) {
      backward_.run_worker(w, it, gated_ != nullptr, streams_[w], executor_);
      worker_steps_ += uint64_t(plan_.model.size());
      if (!coordinator_ && executor_.flushes() != partial_record_.buckets.size()) {
        throw std::logic_error("workers flushed different numbers of buckets");
      }
      lined_up = coordinator_ || partial_record_.buckets.size() == stored;
    } else if (coordinator_) {
      backward_.reset_streams(streams_[w], gated_ != nullptr);
    } else {
      const auto from = ptrdiff_t(size_t(w) * stored), to = from + ptrdiff_t(stored);
      auto append = [&](auto& into, const auto& list) { into.insert(into.end(), list.begin() + from, list.begin() + to); };
      append(partial_record_.posts, record_.posts);
      append(partial_record_.bytes, record_.bytes);
      append(partial_record_.compression, record_.compression);
    }
  }
  executor_.write_to(record_);
  if (!lined_up) return false;
  const auto not_replayed = std::find(late_.begin(), late_.end(), 0);
  if (coordinator_ && not_replayed != late_.end()) {
    backward_.report_latest(int(not_replayed - late_.begin()), latest_not_replayed_);
  }
  std::vector<TimeNs> not_before;
  if (coordinator_) {
    post_coordinated_flushes(*coordinator_, it, backward_, streams_, executor_, partial_record_, not_before);
  }
  queue_events_ += collective_stage_.run(partial_record_, not_before, plan_.scheme(), collectives_);
  return true;
}

// Backward kernels slowed by the collectives in flight. The collectives are
// resolved after the backward that posts them (stage 2 after stage 1), so the
// two are iterated to a fixed point: a pass replays every worker's backward
// slowed by the collectives of the pass before, then resolves the
// collectives it posts; once a pass's collectives run exactly when those
// that slowed it did, backward and collectives agree. Time is causal (a
// kernel is slowed only by collectives already running), so every pass
// agrees with the fixed point up to a later time than the pass before and
// the passes settle, but a pass may fix only one more collective: a
// bucket-per-tensor scheme on a fast network can need as many passes as it
// has collectives. The passes stop at kMaxPasses; such an iteration keeps the
// last pass (its backward slowed by the previous pass's collectives, exact
// up to where the two agree) and is counted as unsettled in result.json.
// What the passes accumulate (measurements, the latency-noise stream) is
// rewound before each repeat, so only the last pass counts.
//
// A full pass replays all workers, but a collective starts when its last
// worker posts, and with compute noise a few workers post last. So before
// each full pass, partial passes (run_partial_stages) iterate to a fixed
// point of their own with only those workers replayed, and the full pass
// starts from their collectives; where the guessed workers were the last,
// it settles at once. The late workers are first the envelope of the
// unslowed backward lines (BackwardStage::mark_latest), then, after a full
// pass that did not settle, also the workers it found last. Only full
// passes decide, and the fixed point is unique, so a settled iteration comes
// out the same as without partial passes (tested); they only save passes.
void Simulation::run_stages_with_interference(int it) {
  constexpr int kMaxPasses = 16;
  const int64_t compressed_elements = executor_.compressed_elements;
  const TimeNs compression_ns = executor_.compression_ns;
  const std::vector<double> ready_sums = backward_.ready_sums();
  const Rng latency_noise = collective_stage_.latency_noise();
  auto rewind = [&] {
    executor_.compressed_elements = compressed_elements;
    executor_.compression_ns = compression_ns;
    backward_.set_ready_sums(ready_sums);
    collective_stage_.set_latency_noise(latency_noise);
  };
  const double f = scenario_.compute.comm_interference;
  std::vector<Interval> in_flight = guess_in_flight();
  std::fill(late_.begin(), late_.end(), 0);
  late_[0] = 1;
  backward_.mark_latest(streams_, gated_ != nullptr, late_);
  int partial_budget = partial_passes_ ? kMaxPasses : 0;
  for (int pass = 1;; ++pass) {
    if (coordinator_ && partial_budget > 0) backward_.latest_ready_except(late_, latest_not_replayed_);
    while (partial_budget > 0) {
      --partial_budget;
      executor_.set_comm_in_flight(&in_flight, f);
      const bool ran = run_partial_stages(it);
      rewind();
      if (!ran) break;  // the record is the last iteration's; the full pass renews it
      ++interference_partial_passes_;
      const std::vector<Interval>& guessed = collectives_.communicating.intervals();
      if (guessed == in_flight) break;
      in_flight = guessed;
    }
    executor_.set_comm_in_flight(&in_flight, f);
    run_stages(it);
    const std::vector<Interval>& resolved = collectives_.communicating.intervals();
    const bool settled = resolved == in_flight;
    if (settled || pass == kMaxPasses) {
      interference_passes_ += uint64_t(pass);
      interference_unsettled_ += settled ? 0 : 1;
      last_in_flight_ = resolved;
      break;
    }
    in_flight = resolved;
    rewind();
    mark_late_workers();
  }
  executor_.set_comm_in_flight(nullptr, 0);
}

// The first guess of an iteration's collectives: the last iteration's, moved
// by how much later this iteration begins (none in the first iteration).
// Causality makes the fixed point unique whatever the guess, so a settled
// iteration comes out the same as from no guess; in a steady state the
// guess is already right and one pass settles it. Remembers where this
// iteration begins, for the next guess.
std::vector<Interval> Simulation::guess_in_flight() {
  TimeNs origin = streams_[0].start;
  for (const auto& s : streams_) origin = std::min(origin, s.start);
  std::vector<Interval> in_flight = last_in_flight_;
  for (auto& iv : in_flight) {
    iv.first += origin - last_origin_;
    iv.second += origin - last_origin_;
  }
  last_origin_ = origin;
  return in_flight;
}

// After a full pass: the workers that posted some flush last, and for a
// coordinator the workers whose copy of some tensor was ready last.
void Simulation::mark_late_workers() {
  mark_latest_per_column(record_.posts, record_.buckets.size(), late_);
  if (coordinator_) backward_.mark_last_ready(late_);
}

// Every worker starts where its last iteration ended, at this iteration's
// speed. A gated forward needs every worker at once (DeAR's all-gathers), so
// it runs here for all of them, gated by the previous iteration's collectives.
void Simulation::start_workers(int it) {
  for (int w = 0; w < workers_; ++w) {
    streams_[w].start = streams_[w].end;
    streams_[w].scale = variability_.next_scale(w);
  }
  if (!gated_) return;
  GatedForward::Previous previous{&covering_done_, &collectives_.communicating, collectives_.done};
  auto deferred_cost = [this](const policy::Bucket& b) { return collective_stage_.deferred_cost(b); };
  gated_->run(it, it == 0, previous, streams_, deferred_cost, forward_stats_, timeline_);
  worker_steps_ += uint64_t(workers_) * uint64_t(gated_->stages());
}

// ByteScheduler: a forward stage waits for the collectives of the previous
// iteration that cover its tensors.
void Simulation::remember_covering_collectives() {
  if (!forward_plan_ || !forward_plan_->wait_for_covering_collectives) return;
  covering_done_.assign(size_t(plan_.model.size()), 0);
  for (const auto& op : collectives_.ops) {
    for (int t = op.bucket.first_tensor; t < op.bucket.end_tensor; ++t) {
      covering_done_[t] = std::max(covering_done_[t], op.end);
    }
  }
}

// Optimizer and iteration end for every worker, then the recording.
void Simulation::finish_workers(int it) {
  const bool measured = it >= scenario_.warmup_iterations;
  if (measured) recorder_.begin_iteration(collectives_, it + 1 == total_iterations_);
  // With a gated forward the update runs inside the next forward, and a
  // worker may not even wait for its collectives (ByteScheduler).
  const bool waits = !forward_plan_ || forward_plan_->iteration_waits_for_collectives;
  TimeNs job_end = 0;
  for (int w = 0; w < workers_; ++w) {
    WorkerStreams& s = streams_[w];
    s.optimizer_start = std::max(s.backward_end, waits ? collectives_.done : 0);
    for (const auto& job : s.async_jobs) s.optimizer_start = std::max(s.optimizer_start, job.second);
    s.end = s.optimizer_start + (gated_ ? 0 : scaled_ns(plan_.optimizer_ns, s.scale));
    job_end = std::max(job_end, s.end);
    if (!measured) continue;
    recorder_.add_worker(w, s, record_, collectives_, gated_ ? &forward_stats_[w] : nullptr);
    recorder_.timeline_spans(w, it, s, record_, collectives_, gated_ != nullptr);
  }
  if (measured) recorder_.end_iteration(job_end - previous_job_end_, record_, collectives_);
  previous_job_end_ = job_end;
}

}  // namespace

model::RunResult simulate(const model::Scenario& scenario, Timeline* timeline, const ProgressHook& progress,
                          const EngineOptions& options) {
  return Simulation(scenario, timeline, options).run(progress);
}

}  // namespace sparsefuse::sim
