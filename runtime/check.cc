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

}  // namespace sparsefuse::runtime
