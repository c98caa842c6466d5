#include "sim/recorder.h"

#include <algorithm>
#include <iterator>

namespace sparsefuse::sim {

namespace {

// Bytes per element a bucket's contribution carries: (value, index) pairs
// for allgathers and sparse allreduces, fp32 values otherwise.
double bytes_per_sent_element(const policy::Bucket& b) {
  const bool pairs = b.collective == Collective::kAllgather ||
                     (b.sparse != policy::SparseAllreduce::kNone && b.sparse != policy::SparseAllreduce::kSharedIndices);
  return pairs ? 8.0 : 4.0;
}

}  // namespace

void Recorder::begin_iteration(const IterationCollectives& c, bool last) {
  last_ = last;
  const size_t K = c.ops.size();
  wait_.assign(K, 0.0);
  compress_time_.assign(K, 0.0);
  sent_.assign(K, 0.0);
  per_sent_element_.resize(K);
  int64_t wire_total = 0;  // all workers; integral, so exact in any order
  for (size_t k = 0; k < K; ++k) {
    // A power of two's inverse, so the per-worker products stay exact.
    per_sent_element_[k] = 1.0 / bytes_per_sent_element(c.ops[k].bucket);
    // The bytes every worker puts on the wire, when that does not depend on
    // its own contribution (-1: its own contribution).
    const int64_t wire = bytes_on_wire(c.ops[k].bucket, c.contributions[k], -1);
    wire_total += wire < 0 ? c.contributions[k].sum : wire * workers_;
  }
  bytes_sum_ += double(wire_total);
}

// The tail between backward end and optimizer start is exposed communication
// while a collective runs, exposed compression while only this worker's
// compression or decompression runs, and sync wait otherwise.
void Recorder::add_worker(int w, const WorkerStreams& s, const FlushRecord& record, const IterationCollectives& c,
                          const ForwardStats* forward) {
  const size_t K = c.ops.size();
  for (size_t k = 0; last_ && k < K; ++k) {
    const size_t i = size_t(w) * K + c.source[k];
    wait_[k] += double(c.ops[k].start - record.posts[i]);
    compress_time_[k] += double(record.compression[i]);
    sent_[k] += double(record.bytes[i]) * per_sent_element_[k];
  }
  const TimeNs lo = s.backward_end, hi = s.optimizer_start;
  const TimeNs exposed_comm = c.communicating.within(lo, hi);
  const TimeNs exposed_comp = exposed_compression(s, c, lo, hi);
  if (forward) {  // the gated forward's waits are exposed communication or sync wait too
    sum_.forward += double(forward->compute);
    sum_.optimizer += double(forward->optimizer);
    sum_.communication_exposed += double(forward->exposed);
    sum_.sync_wait += double(forward->wait);
  } else {
    sum_.forward += double(s.backward_start - s.start);
  }
  sum_.backward += double(s.backward_end - s.backward_start - s.inline_compression);
  sum_.compression += double(s.inline_compression + exposed_comp);
  sum_.communication_exposed += double(exposed_comm);
  sum_.sync_wait += double((hi - lo) - exposed_comm - exposed_comp);
  sum_.optimizer += double(s.end - s.optimizer_start);
}

// Compression and decompression inside [LO, HI) while no collective runs.
TimeNs Recorder::exposed_compression(const WorkerStreams& s, const IterationCollectives& c, TimeNs lo, TimeNs hi) {
  // Decompression intervals are already sorted and disjoint; only a worker
  // with asynchronous jobs needs a merge.
  const std::vector<Interval>* busy = &c.decompression;
  if (!s.async_jobs.empty()) {
    jobs_.assign(s.async_jobs.begin(), s.async_jobs.end());
    std::sort(jobs_.begin(), jobs_.end());
    scratch_.clear();
    std::merge(c.decompression.begin(), c.decompression.end(), jobs_.begin(), jobs_.end(), std::back_inserter(scratch_));
    merge_sorted_intervals(scratch_);
    busy = &scratch_;
  }
  TimeNs exposed = 0;
  auto first = std::lower_bound(busy->begin(), busy->end(), lo, [](const Interval& iv, TimeNs t) { return iv.second <= t; });
  for (auto iv = first; iv != busy->end() && iv->first < hi; ++iv) {
    TimeNs a = std::max(iv->first, lo), b = std::min(iv->second, hi);
    if (b > a) exposed += (b - a) - c.communicating.within(a, b);
  }
  return exposed;
}

void Recorder::end_iteration(TimeNs iteration_ns, const FlushRecord& record, const IterationCollectives& c) {
  iteration_ns_.push_back(iteration_ns);
  const size_t K = c.ops.size();
  std::vector<int64_t> pairs(workers_);
  for (size_t k = 0; k < K; ++k) {
    const Operation& op = c.ops[k];
    double lost = 0;
    if (op.bucket.collective == Collective::kAllgather && op.bucket.alignment == policy::Alignment::kEqualSlices &&
        c.contributions[k].min != c.contributions[k].max) {
      for (int w = 0; w < workers_; ++w) pairs[w] = record.bytes[size_t(w) * K + c.source[k]] / 8;
      lost = equal_slices_loss(pairs, op.bucket.elements);
    }
    lost_sum_ += lost;
    if (last_) {
      buckets_.push_back({op.bucket, sent_[k] / workers_, compress_time_[k] / workers_ * 1e-9,
                          wait_[k] / workers_ * 1e-9, ns_to_seconds(op.end - op.start),
                          ns_to_seconds(c.decompress_ns[k]), lost});
    }
  }
}

void Recorder::timeline_spans(int w, int it, const WorkerStreams& s, const FlushRecord& record,
                              const IterationCollectives& c, bool gated) const {
  if (!timeline_ || !timeline_->wants(w, it)) return;
  Timeline& t = *timeline_;
  if (!gated) t.span(w, Timeline::kCompute, "forward", s.start, s.backward_start);
  t.span(w, Timeline::kCompute, "backward", s.backward_start, s.backward_end);
  for (const auto& job : s.inline_jobs) t.span(w, Timeline::kCompute, "compression", job.first, job.second);
  for (const auto& job : s.async_jobs) t.span(w, Timeline::kCompression, "compression", job.first, job.second);
  for (const auto& d : c.decompression) t.span(w, Timeline::kCompression, "decompression", d.first, d.second);
  if (!gated) t.span(w, Timeline::kCompute, "optimizer", s.optimizer_start, s.end);
  const size_t K = c.ops.size();
  for (size_t k = 0; k < K; ++k) {
    const auto& b = c.ops[k].bucket;
    const size_t i = size_t(w) * K + c.source[k];
    Json args = {{"bucket", k}, {"tensors", b.tensors()}, {"bytes", record.bytes[i]}};
    t.span(w, Timeline::kCommunication, "wait", record.posts[i], c.ops[k].start, args);
    const std::string_view name = b.sparse != policy::SparseAllreduce::kNone ? policy::sparse_allreduce_name(b.sparse)
                                                                            : collective_name(b.collective);
    t.span(w, Timeline::kCommunication, std::string(name), c.ops[k].start, c.ops[k].end, args);
  }
}

void Recorder::finish(int iterations, model::RunResult& result) const {
  const double per_worker_iteration = 1.0 / (double(workers_) * iterations);
  const double to_s = 1e-9 * per_worker_iteration;
  result.iteration_ns = iteration_ns_;
  result.buckets = buckets_;
  result.breakdown = {sum_.forward * to_s,   sum_.backward * to_s,  sum_.compression * to_s,
                      sum_.communication_exposed * to_s, sum_.sync_wait * to_s, sum_.optimizer * to_s};
  result.bytes_sent_per_worker = bytes_sum_ * per_worker_iteration;
  result.lost_contributions = lost_sum_ / iterations;
}

}  // namespace sparsefuse::sim
