#include "runtime/check.h"

namespace sparsefuse::runtime {

IterationRecord iteration_record(const RankEngine& engine, int iteration) {
  IterationRecord record;
  record.iteration = iteration;
  record.requests = engine.requests();
  for (const auto& x : engine.exchanges()) {
    record.buckets.push_back({x->bucket, x->index, x->counts, x->gathered_values, x->gathered_indices, x->lost});
  }
  record.aggregate = engine.aggregate();
  record.residual = engine.residual();
  return record;
}

KeptRecord::KeptRecord(const IterationRecord& record)
    : iteration_(record.iteration), requests_(record.requests.begin(), record.requests.end()),
      residual_(record.residual.begin(), record.residual.end()) {
  for (const WireBucket& b : record.buckets) {
    counts_.emplace_back(b.counts.begin(), b.counts.end());
    values_.emplace_back(b.values.begin(), b.values.end());
    indices_.emplace_back(b.indices.begin(), b.indices.end());
    buckets_.push_back({b.bucket, b.index, counts_.back(), values_.back(), indices_.back(), b.lost});
  }
}

IterationRecord KeptRecord::with_aggregate(std::span<const float> aggregate) const {
  return {iteration_, requests_, buckets_, aggregate, residual_};
}

}  // namespace sparsefuse::runtime
