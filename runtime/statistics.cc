#include "runtime/statistics.h"

#include <utility>

#include <fmt/format.h>

#include "common/median.h"
#include "common/provenance.h"
#include "runtime/collective_profile.h"

namespace sparsefuse::runtime {

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

void RankTotals::add(const IterationTimes& t, const std::vector<std::unique_ptr<BucketExchange>>& exchanges) {
  iteration_ns.push_back(double(t.total));
  const double times[] = {double(t.forward), double(t.backward), double(t.compression),
                          double(t.communication_exposed), double(t.optimizer)};
  for (int i = 0; i < 5; ++i) sums[i] += times[i];
  bucket_start.push_back(bucket_operation.size());
  for (const auto& x : exchanges) {
    sums[5] += double(x->bytes_sent());
    sums[6] += double(x->lost);
    bucket_operation.push_back(bucket_fingerprint(x->bucket, 0, x->index));
    bucket_figures.insert(bucket_figures.end(), {double(x->sent_count), double(x->compression_ns),
                                                 double(x->finished - x->started), double(x->decompression_ns)});
  }
}

std::array<double, RankTotals::kPerBucketFigures> RankTotals::bucket_median(size_t k) const {
  if (bucket_start.empty()) throw std::logic_error("per-bucket medians of a run that measured no iteration");
  const size_t last = bucket_start.back(), count = bucket_operation.size() - last;
  if (k >= count) throw std::logic_error(fmt::format("bucket {} of a last iteration that flushed {}", k, count));
  std::array<std::vector<double>, kPerBucketFigures> samples;
  for (size_t i = 0; i < bucket_start.size(); ++i) {
    const size_t begin = bucket_start[i], end = i + 1 < bucket_start.size() ? bucket_start[i + 1] : last + count;
    if (end - begin != count || bucket_operation[begin + k] != bucket_operation[last + k]) continue;
    const double* figures = bucket_figures.data() + (begin + k) * kPerBucketFigures;
    for (size_t f = 0; f < kPerBucketFigures; ++f) samples[f].push_back(figures[f]);
  }
  std::array<double, kPerBucketFigures> medians{};
  for (size_t f = 0; f < kPerBucketFigures; ++f) medians[f] = median(std::move(samples[f]));
  return medians;
}

namespace {

constexpr size_t kPerBucket = RankTotals::kPerBucketFigures;

// The totals summed over ranks, followed by the last iteration's buckets'
// figures (each rank's median over the iterations, RankTotals::bucket_median)
// summed over ranks; iteration times become the slowest rank's.
std::vector<double> reduce_over_ranks(const RankEngine& engine, RankTotals& totals, CommThread& comm,
                                      const RunOptions& options) {
  std::vector<double> summed = totals.sums;
  for (size_t k = 0; k < engine.exchanges().size(); ++k) {
    const auto median = totals.bucket_median(k);
    summed.insert(summed.end(), median.begin(), median.end());
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

Json executor_description(const RankEngine& engine, int P, const RunOptions& options, const ExecutorInfo& info) {
  int unsynchronized = 0;
  for (bool done : engine.synchronized()) unsynchronized += !done;
  return {{"name", "runtime-mpi"},
          {"ranks", P},
          {"transport", options.transport},
          {"device", options.device},
          {"payloads", info.payloads},
          {"host", host_name()},
          {"time_scale", info.time_scale},
          {"timeout_s", double(options.timeout.count()) / 1000.0},
          {"checked", options.check},
          {"unsynchronized_tensors", unsynchronized},
          {"wall_s", info.wall_s},
          {"gradients", info.gradients},
          {"notes",
           {"iteration_time_s is the slowest rank's; breakdown_s and buckets are means over ranks",
            "each bucket figure is the rank's median over the measured iterations that flushed that bucket",
            "sync_wait is not separable in a real run: it is inside communication_exposed and duration_s",
            "every collective runs on one communication thread per rank, in flush order (communicators are not "
            "concurrent)"}}};
}

}  // namespace


RunOutcome summarize_run(const model::Scenario& s, const model::ScenarioPlan& planned, const RankEngine& engine,
                         RankTotals& totals, CommThread& comm, const RunOptions& options, const ExecutorInfo& info) {
  RunOutcome outcome;
  const std::vector<double> summed = reduce_over_ranks(engine, totals, comm, options);
  fill_result(s, planned, engine, totals, summed, comm.size(), options, outcome.result);
  outcome.result.wall_s = info.wall_s;
  outcome.executor = executor_description(engine, comm.size(), options, info);
  return outcome;
}

}  // namespace sparsefuse::runtime
