#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "policy/gradient_model.h"
#include "policy/presets.h"
#include "sim/communication.h"
#include "sim/network.h"
#include "sim/variability.h"

namespace sparsefuse::sim {

namespace {

TimeNs scaled(TimeNs nominal, double scale) { return TimeNs(std::llround(double(nominal) * scale)); }

// Collects one worker's flushes and checks that every worker flushes the same
// bucket sequence (a policy that breaks this would deadlock a real job).
class WorkerFlushes : public policy::FlushSink {
 public:
  WorkerFlushes(std::vector<Operation>& ops, std::vector<TimeNs>& posts) : ops_(ops), posts_(posts) {}
  void begin_worker(int worker, bool first) {
    worker_ = worker;
    first_ = first;
    count_ = 0;
  }
  void flush(const policy::Bucket& bucket, TimeNs when) override {
    if (first_) {
      ops_.push_back({bucket, 0, when, 0, 0, 0});
    } else if (count_ >= ops_.size() || !ops_[count_].bucket.same_operation(bucket)) {
      throw std::logic_error("workers flushed different bucket sequences");
    }
    Operation& op = ops_[count_];
    op.all_posted = std::max(op.all_posted, when);
    posts_.push_back(when);
    ++count_;
  }
  size_t count() const { return count_; }

 private:
  std::vector<Operation>& ops_;
  std::vector<TimeNs>& posts_;
  int worker_ = 0;
  bool first_ = true;
  size_t count_ = 0;
};

struct WorkerIteration {
  TimeNs start = 0, backward_start = 0, backward_end = 0, optimizer_start = 0, end = 0;
  double scale = 1;
};

TimeNs overlap(TimeNs a0, TimeNs a1, TimeNs b0, TimeNs b1) {
  return std::max<TimeNs>(0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace

double SimResult::mean_iteration_s() const {
  double sum = 0;
  for (TimeNs t : iteration_ns) sum += double(t);
  return sum / double(iteration_ns.size()) * 1e-9;
}

SimResult simulate(const Scenario& scenario, Timeline* timeline) {
  auto wall_start = std::chrono::steady_clock::now();
  const int W = scenario.workers;
  const double compute_scale = scenario.compute_scale();
  const policy::GradientModel model = policy::GradientModel::from_trace(scenario.trace, compute_scale);
  const TimeNs forward_ns = scaled(scenario.trace.forward_ns, compute_scale);
  const TimeNs optimizer_ns = scaled(scenario.trace.optimizer_ns, compute_scale);
  FlatNetwork network(scenario.network, W);
  std::unique_ptr<policy::Scheme> scheme = policy::build_scheme(scenario.scheme, model, network);
  std::unique_ptr<policy::Coordinator> coordinator = scheme->make_coordinator();
  std::vector<std::unique_ptr<policy::WorkerPolicy>> policies;
  if (!coordinator) {
    for (int w = 0; w < W; ++w) policies.push_back(scheme->make_worker_policy(w));
  }
  ComputeVariability variability(scenario.variability, W, scenario.seed);
  CommunicationEngine engine;

  SimResult result;
  result.scenario = scenario.resolved();
  result.provenance = scenario.trace.provenance_kind();
  result.samples_per_iteration = int64_t(W) * scenario.batch_per_worker;

  std::vector<WorkerIteration> workers(W);
  std::vector<Operation> ops;
  std::vector<TimeNs> posts;  // worker-major: posts[w * ops.size() + k]
  std::vector<double> bucket_wait;
  WorkerFlushes sink(ops, posts);
  const int L = model.size();
  const int total_iterations = scenario.warmup_iterations + scenario.iterations;
  TimeNs previous_job_end = 0;
  uint64_t events = 0;
  Breakdown sum;

  for (int it = 0; it < total_iterations; ++it) {
    const bool measured = it >= scenario.warmup_iterations;
    ops.clear();
    posts.clear();
    if (coordinator) coordinator->begin_iteration(it);

    // Stage 1: each worker's compute stream and flush decisions.
    for (int w = 0; w < W; ++w) {
      WorkerIteration& wi = workers[w];
      wi.start = wi.end;
      wi.scale = variability.next_scale(w);
      wi.backward_start = wi.start + scaled(forward_ns, wi.scale);
      wi.backward_end = wi.backward_start + scaled(model.backward_ns, wi.scale);
      if (coordinator) {
        for (int t = 0; t < L; ++t) coordinator->report_ready(w, t, wi.backward_start + scaled(model.ready_ns[t], wi.scale));
      } else {
        sink.begin_worker(w, w == 0);
        policy::WorkerPolicy& p = *policies[w];
        p.begin_iteration(it);
        for (int t = 0; t < L; ++t) p.on_tensor_ready(t, wi.backward_start + scaled(model.ready_ns[t], wi.scale), sink);
        if (sink.count() != ops.size()) throw std::logic_error("workers flushed different numbers of buckets");
      }
    }
    events += uint64_t(W) * uint64_t(L);
    if (coordinator) {
      std::vector<policy::CoordinatedFlush> flushes;
      coordinator->resolve(flushes);
      for (const auto& f : flushes) ops.push_back({f.bucket, 0, f.not_before, 0, 0, 0});
      // A worker "posts" a fused allreduce when its own copy of the last tensor is ready.
      for (int w = 0; w < W; ++w) {
        for (auto& op : ops) {
          TimeNs own = workers[w].backward_start + scaled(model.ready_ns[op.bucket.end_tensor - 1], workers[w].scale);
          posts.push_back(own);
          op.all_posted = std::max(op.all_posted, own);
        }
      }
    }
    const size_t K = ops.size();
    events += uint64_t(W) * K;

    // Stage 2: the collectives, on the global event queue.
    for (auto& op : ops) op.duration = network.collective_ns(op.bucket.collective, op.bucket.bytes_per_worker);
    events += engine.run(ops);
    const TimeNs comm_done = K ? ops.back().end : 0;  // one communicator: FIFO, last op ends last

    // Optimizer, iteration end, and the breakdown.
    TimeNs job_end = 0;
    bucket_wait.assign(K, 0.0);
    for (int w = 0; w < W; ++w) {
      WorkerIteration& wi = workers[w];
      wi.optimizer_start = std::max(wi.backward_end, comm_done);
      wi.end = wi.optimizer_start + scaled(optimizer_ns, wi.scale);
      job_end = std::max(job_end, wi.end);
      if (!measured) continue;
      // The tail between backward end and optimizer start is exposed
      // communication while a collective runs, sync wait otherwise (waiting
      // for other workers or for a negotiation). Ops on one communicator are
      // disjoint in time, so the overlaps add up.
      TimeNs exposed = 0;
      for (size_t k = 0; k < K; ++k) {
        exposed += overlap(ops[k].start, ops[k].end, wi.backward_end, wi.optimizer_start);
        bucket_wait[k] += double(ops[k].start - posts[w * K + k]);
      }
      TimeNs tail = wi.optimizer_start - wi.backward_end;
      sum.forward += double(wi.backward_start - wi.start);
      sum.backward += double(wi.backward_end - wi.backward_start);
      sum.communication_exposed += double(exposed);
      sum.sync_wait += double(tail - exposed);
      sum.optimizer += double(wi.end - wi.optimizer_start);
      if (timeline && timeline->wants(w, it)) {
        timeline->span(w, Timeline::kCompute, "forward", wi.start, wi.backward_start);
        timeline->span(w, Timeline::kCompute, "backward", wi.backward_start, wi.backward_end);
        timeline->span(w, Timeline::kCompute, "optimizer", wi.optimizer_start, wi.end);
        for (size_t k = 0; k < K; ++k) {
          const auto& b = ops[k].bucket;
          Json args = {{"bucket", k}, {"tensors", b.tensors()}, {"bytes", b.bytes_per_worker}};
          timeline->span(w, Timeline::kCommunication, "wait", posts[w * K + k], ops[k].start, args);
          timeline->span(w, Timeline::kCommunication, std::string(policy::collective_name(b.collective)),
                         ops[k].start, ops[k].end, args);
        }
      }
    }
    if (measured) {
      result.iteration_ns.push_back(job_end - previous_job_end);
      if (result.buckets.empty()) {
        for (size_t k = 0; k < K; ++k) {
          result.buckets.push_back({ops[k].bucket, bucket_wait[k] / W * 1e-9, ns_to_seconds(ops[k].duration)});
        }
      }
    }
    previous_job_end = job_end;
  }

  const double per_iteration = 1e-9 / (double(W) * scenario.iterations);
  result.breakdown = {sum.forward * per_iteration, sum.backward * per_iteration, 0.0,
                      sum.communication_exposed * per_iteration, sum.sync_wait * per_iteration,
                      sum.optimizer * per_iteration};
  result.events = events;
  result.worker_iterations = int64_t(W) * total_iterations;
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace sparsefuse::sim
