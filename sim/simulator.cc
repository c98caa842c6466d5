#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include "common/rng.h"
#include "policy/adaptive.h"
#include "policy/gradient_model.h"
#include "sim/alignment.h"
#include "sim/communication.h"
#include "sim/forward_pass.h"
#include "sim/intervals.h"
#include "sim/launch_order.h"
#include "sim/contention.h"
#include "model/nccl_network.h"
#include "model/netmodel/topology.h"
#include "model/network.h"
#include "model/plan.h"
#include "sim/sparse_collectives.h"
#include "sim/variability.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

namespace {

using policy::Alignment;

constexpr uint64_t kLatencyNoiseStream = 3;  // variability.cc uses 1 and 2

TimeNs scaled(TimeNs nominal, double scale) { return TimeNs(std::llround(double(nominal) * scale)); }

// Bytes per element a bucket's contribution carries: (value, index) pairs
// for allgathers and sparse allreduces, fp32 values otherwise.
double bytes_per_sent_element(const policy::Bucket& b) {
  const bool pairs = b.collective == Collective::kAllgather ||
                     (b.sparse != policy::SparseAllreduce::kNone && b.sparse != policy::SparseAllreduce::kSharedIndices);
  return pairs ? 8.0 : 4.0;
}

}  // namespace

model::RunResult simulate(const model::Scenario& scenario, Timeline* timeline) {
  auto wall_start = std::chrono::steady_clock::now();
  const int W = scenario.workers;
  const double compute_scale = scenario.compute_scale();
  const model::ScenarioPlan planned(scenario);
  const policy::GradientModel& model = planned.model;
  const TimeNs forward_ns = planned.forward_ns, optimizer_ns = planned.optimizer_ns;
  const model::NetworkModel& network = *planned.network;
  std::unique_ptr<netmodel::Topology> topology;
  std::unique_ptr<Contention> contention = std::make_unique<EqualShare>();
  if (scenario.topology) {
    topology = std::make_unique<netmodel::Topology>(*scenario.topology);
    contention = std::make_unique<LinkContention>(*topology);
  }
  Rng latency_noise(stream_seed(scenario.seed, kLatencyNoiseStream));
  const model::CompressionCost& compression = planned.compression;
  policy::Scheme* const scheme = planned.scheme.get();
  std::unique_ptr<policy::Coordinator> coordinator = scheme->make_coordinator();
  std::vector<std::unique_ptr<policy::WorkerPolicy>> policies;
  if (!coordinator) {
    for (int w = 0; w < W; ++w) policies.push_back(scheme->make_worker_policy(w));
  }
  auto noisy = [&](model::CollectiveCost cost) {
    if (scenario.network.latency_noise_cv > 0) {
      cost.latency_ns = TimeNs(std::llround(double(cost.latency_ns) *
                                            latency_noise.lognormal_mean_one(scenario.network.latency_noise_cv)));
    }
    return cost;
  };
  // Schemes whose forward waits on communication run it stage by stage.
  const policy::ForwardPlan* forward_plan = scheme->forward_plan();
  std::unique_ptr<GatedForward> gated;
  if (forward_plan) gated = std::make_unique<GatedForward>(*forward_plan, forward_times(scenario.trace, model, compute_scale));
  std::vector<ForwardStats> forward_stats;
  std::vector<TimeNs> covering_done;  // per tensor: end of the last collective covering it (previous iteration)
  TimeNs previous_comm_done = 0;
  auto deferred_cost = [&](const policy::Bucket& b) {  // equal contributions from every worker
    Contributions c;
    c.sum = b.bytes_per_worker * W;
    c.min = c.max = b.bytes_per_worker;
    return noisy(operation_cost(network, b, c));
  };
  SparseCollectives sparse([&network](Collective c, int64_t bytes) { return network.collective_cost(c, bytes); }, W,
                           compression);
  std::vector<SparseCollectiveCost> sparse_costs;
  ComputeVariability variability(scenario.variability, W, scenario.seed);
  CommunicationEngine engine(*contention);
  FlushRecord record;
  WorkerExecutor executor(compression, scenario.seed, record);

  model::RunResult result;
  result.scenario = scenario.resolved();
  result.network = network.describe();
  result.provenance = scenario.trace.provenance_kind();
  result.compression_costs = compression.gpu_source();
  result.samples_per_iteration = int64_t(W) * scenario.batch_per_worker;

  const int L = model.size();
  std::vector<WorkerStreams> streams(W);
  std::vector<TimeNs> ready;  // coordinated schemes: ready[w * L + t]
  if (coordinator) ready.resize(size_t(W) * L);
  std::vector<TimeNs> cumulative(L);
  std::vector<Operation> ops;
  std::vector<Contributions> contributions;
  std::vector<Interval> decompression, scratch, jobs;
  std::vector<TimeNs> all_posted;
  std::vector<size_t> source;
  CoveredTime communicating;
  const int total_iterations = scenario.warmup_iterations + scenario.iterations;
  TimeNs previous_job_end = 0;
  uint64_t events = 0;
  model::Breakdown sum;
  double bytes_sum = 0, lost_sum = 0;
  const int replan_every = scheme->replan_every();
  std::vector<double> ready_sum(replan_every ? L : 0, 0.0);  // adaptive schemes: measured ready offsets
  policy::Measurements window;  // what adaptive schemes measured since their last re-plan

  for (int it = 0; it < total_iterations; ++it) {
    const bool measured = it >= scenario.warmup_iterations;
    record.clear();
    if (coordinator) coordinator->begin_iteration(it);

    // Stage 1: each worker's own streams and flush decisions. A gated
    // forward needs every worker at once (DeAR's all-gathers), so it runs
    // first for all of them.
    if (gated) {
      for (int w = 0; w < W; ++w) {
        streams[w].start = streams[w].end;
        streams[w].scale = variability.next_scale(w);
      }
      GatedForward::Previous previous{&covering_done, &communicating, previous_comm_done};
      gated->run(it, it == 0, previous, streams, deferred_cost, forward_stats, timeline);
      events += uint64_t(W) * uint64_t(gated->stages());
    }
    for (int w = 0; w < W; ++w) {
      WorkerStreams& s = streams[w];
      if (!gated) {
        s.start = s.end;
        s.scale = variability.next_scale(w);
        s.backward_start = s.start + scaled(forward_ns, s.scale);
      }
      s.clock = s.side_free = s.backward_start;
      s.cpu_free.assign(size_t(scenario.compression.cpu_threads), s.backward_start);
      s.inline_compression = 0;
      s.inline_jobs.clear();
      s.async_jobs.clear();
      executor.bind(w, it, s, w == 0);
      TimeNs previous = 0;
      for (int t = 0; t < L; ++t) {
        TimeNs now = scaled(model.ready_ns[t], s.scale);
        TimeNs at = executor.run_backward(now - previous);
        previous = now;
        if (coordinator) {
          ready[size_t(w) * L + t] = at;
          coordinator->report_ready(w, t, at);
        } else {
          if (t == 0) policies[w]->begin_iteration(it);
          policies[w]->on_tensor_ready(t, at, executor);
        }
        if (replan_every) ready_sum[t] += double(at - s.backward_start);
      }
      s.backward_end = executor.run_backward(scaled(model.backward_ns, s.scale) - previous);
      if (!coordinator && executor.flushes() != record.buckets.size()) {
        throw std::logic_error("workers flushed different numbers of buckets");
      }
    }
    events += uint64_t(W) * uint64_t(L);

    std::vector<TimeNs> not_before;
    if (coordinator) {
      // The coordinator decides the collectives for everyone; a worker posts
      // once its own copy of the last tensor is ready (and, for a sparse
      // buffer, once its selection on the side stream is done).
      std::vector<policy::CoordinatedFlush> flushes;
      coordinator->resolve(flushes);
      for (const auto& f : flushes) {
        record.buckets.push_back(f.bucket);
        not_before.push_back(f.not_before);
      }
      for (int w = 0; w < W; ++w) {
        executor.bind(w, it, streams[w], false);
        for (const auto& f : flushes) {
          TimeNs own = ready[size_t(w) * L + f.bucket.end_tensor - 1];
          if (f.compress) {
            policy::CompressionOutcome out = executor.compress(*f.request, std::max(own, f.not_before));
            record.posts.push_back(out.done);
            record.bytes.push_back(8 * out.selected);
            record.compression.push_back(out.done - std::max(own, f.not_before));
            if (w == 0) {  // buckets are worker 0's view, as for every scheme
              policy::Bucket& b = record.buckets[&f - flushes.data()];
              b.sent_elements = out.selected;
              b.bytes_per_worker = 8 * out.selected;
            }
          } else {
            record.posts.push_back(own);
            record.bytes.push_back(f.bucket.bytes_per_worker);
            record.compression.push_back(0);
          }
        }
      }
    }
    const size_t K = record.buckets.size();
    events += uint64_t(W) * K;

    // Stage 2: the collectives on the global event queue, then decompression.
    ops.assign(K, Operation{});
    contributions.assign(K, Contributions{});
    sparse_costs.assign(K, SparseCollectiveCost{});
    source.resize(K);  // operation k's entry in each worker's records
    std::iota(source.begin(), source.end(), size_t(0));
    // Latest post and contributions per operation, worker-major as recorded.
    all_posted.assign(K, 0);
    if (!not_before.empty()) all_posted = not_before;
    for (int w = 0; w < W; ++w) {
      const TimeNs* posts = record.posts.data() + size_t(w) * K;
      const int64_t* bytes = record.bytes.data() + size_t(w) * K;
      for (size_t k = 0; k < K; ++k) {
        all_posted[k] = std::max(all_posted[k], posts[k]);
        contributions[k].add(bytes[k]);
      }
    }
    for (size_t k = 0; k < K; ++k) {
      Operation& op = ops[k];
      op.bucket = record.buckets[k];
      op.communicator = op.bucket.communicator;
      op.all_posted = all_posted[k];
      const Contributions& c = contributions[k];
      if (op.bucket.sparse != policy::SparseAllreduce::kNone) {
        sparse_costs[k] = sparse.cost(op.bucket, c);
        op.cost = noisy(sparse_costs[k].time);
      } else {
        op.cost = noisy(operation_cost(network, op.bucket, c));
      }
    }
    if (auto scheduler = scheme->make_launch_scheduler()) {
      // The scheduler's launch order becomes the issue order.
      std::vector<size_t> order = schedule_launches(ops, *scheduler);
      permute(ops, order);
      permute(contributions, order);
      permute(sparse_costs, order);
      source = std::move(order);  // per-worker records stay in flush order
    }
    events += engine.run(ops);
    if (replan_every) {
      for (size_t k = 0; k < K; ++k) {
        window.collectives[ops[k].bucket.collective].push_back({contributions[k].max, ops[k].end - ops[k].start});
      }
    }

    TimeNs comm_done = 0;
    std::vector<size_t> by_end(K);
    std::iota(by_end.begin(), by_end.end(), 0);
    std::sort(by_end.begin(), by_end.end(), [&](size_t a, size_t b) { return ops[a].end < ops[b].end; });
    decompression.clear();
    std::vector<TimeNs> decompress_ns(K, 0);
    TimeNs decompress_free = 0;
    for (size_t k : by_end) {
      comm_done = std::max(comm_done, ops[k].end);
      // Every worker scatters what it received into its dense copy: all
      // gathered pairs, or a sparse allreduce's result.
      if (ops[k].bucket.collective == Collective::kAllgather) {
        decompress_ns[k] = compression.decompression_ns(ops[k].bucket.elements, contributions[k].sum / 8);
      } else if (sparse_costs[k].result_pairs > 0) {
        decompress_ns[k] = compression.decompression_ns(ops[k].bucket.elements, sparse_costs[k].result_pairs);
      } else {
        continue;
      }
      TimeNs start = std::max(ops[k].end, decompress_free);
      decompress_free = start + decompress_ns[k];
      decompression.emplace_back(start, decompress_free);
      comm_done = std::max(comm_done, decompress_free);
    }
    scratch.clear();
    for (const auto& op : ops) scratch.emplace_back(op.start, op.end);
    communicating.assign(scratch);
    if (forward_plan && forward_plan->wait_for_covering_collectives) {
      covering_done.assign(size_t(L), 0);
      for (const auto& op : ops) {
        for (int t = op.bucket.first_tensor; t < op.bucket.end_tensor; ++t) {
          covering_done[t] = std::max(covering_done[t], op.end);
        }
      }
    }
    previous_comm_done = comm_done;

    // Optimizer, iteration end, and the breakdown of every worker's time.
    TimeNs job_end = 0;
    std::vector<double> wait(K, 0.0), compress_time(K, 0.0), sent(K, 0.0);
    // Per operation, hoisted out of the worker loop: start, the inverse of the
    // bytes per sent element (a power of two, so exact), and the bytes every
    // worker puts on the wire when that does not depend on its own
    // contribution (-1: its own contribution).
    std::vector<TimeNs> op_start(K);
    std::vector<double> per_sent_element(K);
    std::vector<int64_t> wire(K);
    int64_t wire_total = 0;  // this iteration, all workers; integral, so exact in any order
    for (size_t k = 0; k < K; ++k) {
      op_start[k] = ops[k].start;
      per_sent_element[k] = 1.0 / bytes_per_sent_element(ops[k].bucket);
      wire[k] = bytes_on_wire(ops[k].bucket, contributions[k], -1);
      wire_total += wire[k] < 0 ? contributions[k].sum : wire[k] * W;
    }
    if (measured) bytes_sum += double(wire_total);
    // Per-bucket statistics are reported for the last iteration only.
    const bool last = measured && it + 1 == total_iterations;
    for (int w = 0; w < W; ++w) {
      WorkerStreams& s = streams[w];
      // With a gated forward the update runs inside the next forward, and a
      // worker may not even wait for its collectives (ByteScheduler).
      const bool waits = !forward_plan || forward_plan->iteration_waits_for_collectives;
      s.optimizer_start = std::max(s.backward_end, waits ? comm_done : 0);
      for (const auto& job : s.async_jobs) s.optimizer_start = std::max(s.optimizer_start, job.second);
      s.end = s.optimizer_start + (gated ? 0 : scaled(optimizer_ns, s.scale));
      job_end = std::max(job_end, s.end);
      if (!measured) continue;
      const TimeNs* posts = record.posts.data() + size_t(w) * K;
      const TimeNs* compressing = record.compression.data() + size_t(w) * K;
      const int64_t* bytes = record.bytes.data() + size_t(w) * K;
      for (size_t k = 0; last && k < K; ++k) {
        const size_t i = source[k];
        wait[k] += double(op_start[k] - posts[i]);
        compress_time[k] += double(compressing[i]);
        sent[k] += double(bytes[i]) * per_sent_element[k];
      }
      // The tail between backward end and optimizer start: exposed
      // communication while a collective runs, exposed compression while only
      // this worker's compression or decompression runs, sync wait otherwise.
      const TimeNs lo = s.backward_end, hi = s.optimizer_start;
      TimeNs exposed_comm = communicating.within(lo, hi), exposed_compression = 0;
      // Decompression runs serially, so its intervals are already sorted and
      // disjoint; only a worker with asynchronous jobs needs a merge.
      const std::vector<Interval>* busy = &decompression;
      if (!s.async_jobs.empty()) {
        jobs.assign(s.async_jobs.begin(), s.async_jobs.end());
        std::sort(jobs.begin(), jobs.end());
        scratch.clear();
        std::merge(decompression.begin(), decompression.end(), jobs.begin(), jobs.end(), std::back_inserter(scratch));
        merge_sorted_intervals(scratch);
        busy = &scratch;
      }
      auto first_busy = std::lower_bound(busy->begin(), busy->end(), lo,
                                         [](const Interval& iv, TimeNs t) { return iv.second <= t; });
      for (auto iv = first_busy; iv != busy->end() && iv->first < hi; ++iv) {
        TimeNs a = std::max(iv->first, lo), b = std::min(iv->second, hi);
        if (b > a) exposed_compression += (b - a) - communicating.within(a, b);
      }
      if (gated) {  // the forward's waits are exposed communication or sync wait too
        const ForwardStats& f = forward_stats[w];
        sum.forward += double(f.compute);
        sum.optimizer += double(f.optimizer);
        sum.communication_exposed += double(f.exposed);
        sum.sync_wait += double(f.wait);
      } else {
        sum.forward += double(s.backward_start - s.start);
      }
      sum.backward += double(s.backward_end - s.backward_start - s.inline_compression);
      sum.compression += double(s.inline_compression + exposed_compression);
      sum.communication_exposed += double(exposed_comm);
      sum.sync_wait += double((hi - lo) - exposed_comm - exposed_compression);
      sum.optimizer += double(s.end - s.optimizer_start);
      if (timeline && timeline->wants(w, it)) {
        if (!gated) timeline->span(w, Timeline::kCompute, "forward", s.start, s.backward_start);
        timeline->span(w, Timeline::kCompute, "backward", s.backward_start, s.backward_end);
        for (const auto& job : s.inline_jobs) timeline->span(w, Timeline::kCompute, "compression", job.first, job.second);
        for (const auto& job : s.async_jobs) timeline->span(w, Timeline::kCompression, "compression", job.first, job.second);
        for (const auto& d : decompression) timeline->span(w, Timeline::kCompression, "decompression", d.first, d.second);
        if (!gated) timeline->span(w, Timeline::kCompute, "optimizer", s.optimizer_start, s.end);
        for (size_t k = 0; k < K; ++k) {
          const auto& b = ops[k].bucket;
          Json args = {{"bucket", k}, {"tensors", b.tensors()}, {"bytes", record.bytes[w * K + source[k]]}};
          timeline->span(w, Timeline::kCommunication, "wait", record.posts[w * K + source[k]], ops[k].start, args);
          const std::string_view name = b.sparse != policy::SparseAllreduce::kNone
                                            ? policy::sparse_allreduce_name(b.sparse)
                                            : collective_name(b.collective);
          timeline->span(w, Timeline::kCommunication, std::string(name), ops[k].start, ops[k].end, args);
        }
      }
    }
    if (measured) {
      result.iteration_ns.push_back(job_end - previous_job_end);
      std::vector<int64_t> pairs(W);
      for (size_t k = 0; k < K; ++k) {
        double lost = 0;
        if (ops[k].bucket.collective == Collective::kAllgather && ops[k].bucket.alignment == Alignment::kEqualSlices &&
            contributions[k].min != contributions[k].max) {
          for (int w = 0; w < W; ++w) pairs[w] = record.bytes[w * K + source[k]] / 8;
          lost = equal_slices_loss(pairs, ops[k].bucket.elements);
        }
        lost_sum += lost;
        if (it + 1 == total_iterations) {
          result.buckets.push_back({ops[k].bucket, sent[k] / W, compress_time[k] / W * 1e-9, wait[k] / W * 1e-9,
                                    ns_to_seconds(ops[k].end - ops[k].start), ns_to_seconds(decompress_ns[k]), lost});
        }
      }
    }
    previous_job_end = job_end;
    if (replan_every && (it + 1) % replan_every == 0) {
      // Re-plan from what this window measured, then hand out fresh policies.
      window.workers = W;
      window.ready_ns.resize(L);
      for (int t = 0; t < L; ++t) window.ready_ns[t] = TimeNs(std::llround(ready_sum[t] / (double(W) * replan_every)));
      window.compressed_elements = executor.compressed_elements;
      window.compression_ns = executor.compression_ns;
      scheme->replan(window);
      for (int w = 0; w < W; ++w) policies[w] = scheme->make_worker_policy(w);
      std::fill(ready_sum.begin(), ready_sum.end(), 0.0);
      window = {};
      executor.compressed_elements = executor.compression_ns = 0;
    }
  }
  result.plan = scheme->describe();

  const double per_worker_iteration = 1.0 / (double(W) * scenario.iterations);
  const double to_s = 1e-9 * per_worker_iteration;
  result.breakdown = {sum.forward * to_s,     sum.backward * to_s,  sum.compression * to_s,
                      sum.communication_exposed * to_s, sum.sync_wait * to_s, sum.optimizer * to_s};
  result.bytes_sent_per_worker = bytes_sum * per_worker_iteration;
  result.lost_contributions = lost_sum / scenario.iterations;
  result.events = events;
  result.worker_iterations = int64_t(W) * total_iterations;
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace sparsefuse::sim
