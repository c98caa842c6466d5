#include "sim/collective_stage.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/launch_order.h"

namespace sparsefuse::sim {

namespace {
constexpr uint64_t kLatencyNoiseStream = 3;  // variability.cc uses 1 and 2
}  // namespace

CollectiveStage::CollectiveStage(const model::Scenario& scenario, const model::ScenarioPlan& plan,
                                 const Contention& contention)
    : workers_(scenario.workers),
      latency_noise_cv_(scenario.network.latency_noise_cv),
      network_(*plan.network),
      compression_(plan.compression),
      latency_noise_(stream_seed(scenario.seed, kLatencyNoiseStream)),
      sparse_([this](Collective c, int64_t bytes) { return network_.collective_cost(c, bytes); }, scenario.workers,
              plan.compression),
      engine_(contention) {}

model::CollectiveCost CollectiveStage::noisy(model::CollectiveCost cost) {
  if (latency_noise_cv_ > 0) {
    cost.latency_ns = TimeNs(std::llround(double(cost.latency_ns) * latency_noise_.lognormal_mean_one(latency_noise_cv_)));
  }
  return cost;
}

model::CollectiveCost CollectiveStage::deferred_cost(const policy::Bucket& b) {
  Contributions c;
  c.sum = b.bytes_per_worker * workers_;
  c.min = c.max = b.bytes_per_worker;
  return noisy(operation_cost(network_, b, c));
}

uint64_t CollectiveStage::run(const FlushRecord& record, const std::vector<TimeNs>& not_before,
                              const policy::Scheme& scheme, IterationCollectives& out) {
  build(record, not_before, out);
  if (auto scheduler = scheme.make_launch_scheduler()) {
    // The scheduler's launch order becomes the issue order.
    std::vector<size_t> order = schedule_launches(out.ops, *scheduler);
    permute(out.ops, order);
    permute(out.contributions, order);
    permute(out.sparse_costs, order);
    out.source = std::move(order);  // per-worker records stay in flush order
  }
  const uint64_t events = engine_.run(out.ops);
  decompress(out);
  std::vector<Interval> spans;
  for (const auto& op : out.ops) spans.emplace_back(op.start, op.end);
  out.communicating.assign(std::move(spans));
  return events;
}

// Latest post and contributions per operation, from the worker-major records.
void CollectiveStage::build(const FlushRecord& record, const std::vector<TimeNs>& not_before,
                            IterationCollectives& out) {
  const size_t K = record.buckets.size();
  out.ops.assign(K, Operation{});
  out.contributions.assign(K, Contributions{});
  out.sparse_costs.assign(K, SparseCollectiveCost{});
  out.source.resize(K);
  std::iota(out.source.begin(), out.source.end(), size_t(0));
  std::vector<TimeNs> all_posted = not_before.empty() ? std::vector<TimeNs>(K, 0) : not_before;
  for (int w = 0; w < workers_; ++w) {
    const TimeNs* posts = record.posts.data() + size_t(w) * K;
    const int64_t* bytes = record.bytes.data() + size_t(w) * K;
    for (size_t k = 0; k < K; ++k) {
      all_posted[k] = std::max(all_posted[k], posts[k]);
      out.contributions[k].add(bytes[k]);
    }
  }
  for (size_t k = 0; k < K; ++k) {
    Operation& op = out.ops[k];
    op.bucket = record.buckets[k];
    op.communicator = op.bucket.communicator;
    op.all_posted = all_posted[k];
    if (op.bucket.sparse != policy::SparseAllreduce::kNone) {
      out.sparse_costs[k] = sparse_.cost(op.bucket, out.contributions[k]);
      op.cost = noisy(out.sparse_costs[k].time);
    } else {
      op.cost = noisy(operation_cost(network_, op.bucket, out.contributions[k]));
    }
  }
}

// Every worker scatters what it received into its dense copy — all gathered
// pairs, or a sparse allreduce's result — one operation at a time, in the
// order the operations end.
void CollectiveStage::decompress(IterationCollectives& out) const {
  const size_t K = out.ops.size();
  std::vector<size_t> by_end(K);
  std::iota(by_end.begin(), by_end.end(), size_t(0));
  std::sort(by_end.begin(), by_end.end(), [&](size_t a, size_t b) { return out.ops[a].end < out.ops[b].end; });
  out.decompression.clear();
  out.decompress_ns.assign(K, 0);
  out.done = 0;
  TimeNs free = 0;
  for (size_t k : by_end) {
    const Operation& op = out.ops[k];
    out.done = std::max(out.done, op.end);
    if (op.bucket.collective == Collective::kAllgather) {
      out.decompress_ns[k] = compression_.decompression_ns(op.bucket.elements, out.contributions[k].sum / 8);
    } else if (out.sparse_costs[k].result_pairs > 0) {
      out.decompress_ns[k] = compression_.decompression_ns(op.bucket.elements, out.sparse_costs[k].result_pairs);
    } else {
      continue;
    }
    TimeNs start = std::max(op.end, free);
    free = start + out.decompress_ns[k];
    out.decompression.emplace_back(start, free);
    out.done = std::max(out.done, free);
  }
}

}  // namespace sparsefuse::sim
