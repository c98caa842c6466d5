#include "policy/sparse_allreduce.h"

namespace sparsefuse::policy {

std::unique_ptr<Scheme> make_sparse_allreduce_scheme(const GradientModel& model, const CostEstimator& cost,
                                                     SparseAllreduce algorithm, const SparseOptions& partition,
                                                     const PlannedOptions& planned) {
  SparseOptions options = partition;
  options.placement = "behind";
  options.sparsifier = Sparsifier::kTopk;
  options.density = planned.density;
  SparseScheme partitioner(model, cost, options);
  std::vector<PlannedBuffer> buffers;
  for (const auto& b : partitioner.plan().buffers) {
    PlannedBuffer p;
    p.first = b.first;
    p.end = b.end;
    p.route = Route::kSparseAllreduce;
    p.algorithm = algorithm;
    buffers.push_back(p);
  }
  return std::make_unique<PlannedScheme>(
      model, planned, std::move(buffers),
      nlohmann::json{{"sparse_allreduce", std::string(sparse_allreduce_name(algorithm))}});
}

}  // namespace sparsefuse::policy
