#include "policy/planned_scheme.h"

#include <stdexcept>

#include "policy/partition.h"

namespace sparsefuse::policy {

namespace {

class PlannedWorker : public WorkerPolicy {
 public:
  PlannedWorker(const PlannedOptions& options, const std::vector<PlannedBuffer>& buffers,
                const std::vector<Bucket>& dense, const std::vector<int64_t>& k, const std::vector<int>& closed_by)
      : options_(options), buffers_(buffers), dense_(dense), k_(k), closed_by_(closed_by) {}

  void begin_iteration(int iteration) override { iteration_ = iteration; }

  void on_tensor_ready(int tensor, TimeNs now, FlushSink& sink) override {
    const int b = closed_by_[tensor];
    if (b < 0) return;
    const PlannedBuffer& buffer = buffers_[b];
    Bucket bucket = dense_[b];
    if (buffer.route == Route::kDense || options_.density >= 1.0) {
      sink.flush(bucket, now);
      return;
    }
    auto& context = static_cast<WorkerContext&>(sink);
    const int64_t n = bucket.elements;
    bucket.dense_elements = 0;
    bucket.density = options_.density;
    CompressionRequest r;
    r.first_tensor = buffer.first;
    r.end_tensor = buffer.end;
    r.elements = n;
    r.sparsifier = options_.sparsifier;
    r.density = options_.density;
    r.expected_count = k_[b];
    r.placement = buffer.placement;
    r.error_feedback = options_.error_feedback;
    if (buffer.route == Route::kAllgather) {
      CompressionOutcome out = context.compress(r, now);
      bucket.collective = Collective::kAllgather;
      bucket.alignment = count_band(r.sparsifier).exact() ? Alignment::kFixed : Alignment::kExchangeCounts;
      bucket.sent_elements = out.selected;
      bucket.bytes_per_worker = 8 * out.selected;
      context.flush(bucket, out.done);
      return;
    }
    // Sparse allreduces select exactly k (Ok-Topk's threshold keeps its count
    // near k; modelled as k).
    bucket.sparse = buffer.algorithm;
    bucket.partitions = buffer.partitions;
    bucket.compressor = options_.sparsifier;
    bucket.sent_elements = r.expected_count;
    bucket.bytes_per_worker = 8 * r.expected_count;
    TimeNs post = now;
    switch (buffer.algorithm) {
      case SparseAllreduce::kSharedIndices:  // the same k indices everywhere: values only
        r.sparsifier = Sparsifier::kRandomk;
        post = context.compress(r, now).done;
        bucket.bytes_per_worker = 4 * r.expected_count;
        break;
      case SparseAllreduce::kOkTopk:
        bucket.exact_threshold = options_.exact_every > 0 && iteration_ % options_.exact_every == 0;
        bucket.repartition = options_.repartition_every > 0 && iteration_ % options_.repartition_every == 0;
        if (bucket.exact_threshold) {
          r.sparsifier = Sparsifier::kTopk;
          r.align_to_expected = true;
          post = context.compress(r, now).done;
        }
        break;
      case SparseAllreduce::kCaSyncRing:  // encoding happens inside the ring
        break;
      default:  // gTop-k, SparDL, TopkDSA: an exact local top-k first
        r.sparsifier = Sparsifier::kTopk;
        r.align_to_expected = true;
        post = context.compress(r, now).done;
        break;
    }
    context.flush(bucket, post);
  }

 private:
  const PlannedOptions& options_;
  const std::vector<PlannedBuffer>& buffers_;
  const std::vector<Bucket>& dense_;
  const std::vector<int64_t>& k_;
  const std::vector<int>& closed_by_;
  int iteration_ = 0;
};

}  // namespace

PlannedScheme::PlannedScheme(const GradientModel& model, PlannedOptions options, std::vector<PlannedBuffer> buffers,
                             nlohmann::json description)
    : options_(options), buffers_(std::move(buffers)), description_(std::move(description)) {
  closed_by_.assign(model.size(), -1);
  int expected_first = 0;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (buffers_[b].first != expected_first || buffers_[b].end <= expected_first || buffers_[b].end > model.size()) {
      throw std::logic_error("planned buffers must be non-empty, contiguous and in backward order");
    }
    closed_by_[buffers_[b].end - 1] = int(b);
    expected_first = buffers_[b].end;
    dense_.push_back(dense_bucket(model, buffers_[b].first, buffers_[b].end, Collective::kAllreduce));
    k_.push_back(exact_count(dense_.back().elements, options_.density));
  }
  if (expected_first != model.size()) throw std::logic_error("planned buffers must cover every tensor");
}

std::unique_ptr<WorkerPolicy> PlannedScheme::make_worker_policy(int /*rank*/) const {
  return std::make_unique<PlannedWorker>(options_, buffers_, dense_, k_, closed_by_);
}

nlohmann::json PlannedScheme::describe() const {
  int dense = 0, gathered = 0, sparse_allreduce = 0, on_cpu = 0;
  std::vector<int> counts;
  for (const auto& b : buffers_) {
    counts.push_back(b.end - b.first);
    dense += b.route == Route::kDense;
    gathered += b.route == Route::kAllgather;
    sparse_allreduce += b.route == Route::kSparseAllreduce;
    on_cpu += b.route == Route::kAllgather && b.placement == Placement::kCpuOffload;
  }
  nlohmann::json d = {{"buffers", buffers_.size()},
                      {"partition_counts", counts},
                      {"dense_buffers", dense},
                      {"allgather_buffers", gathered},
                      {"sparse_allreduce_buffers", sparse_allreduce},
                      {"cpu_offloaded_buffers", on_cpu}};
  for (auto it = description_.begin(); it != description_.end(); ++it) d[it.key()] = it.value();
  return d;
}

}  // namespace sparsefuse::policy
