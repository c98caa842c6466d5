#include "policy/sparse_allreduce.h"

#include "policy/presets.h"

namespace sparsefuse::policy {

std::unique_ptr<Scheme> make_sparse_allreduce_scheme(const GradientModel& model, const CostEstimator& cost,
                                                     SparseAllreduce algorithm, const SparseOptions& partition,
                                                     const PlannedOptions& planned) {
  SparseOptions options = partition;
  options.placement = SparsePlacement::kBehind;
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

std::vector<Knob> sparse_allreduce_knobs() {
  return {Knob::choice("partition", partition_kinds(), PartitionKind::kSingle, "how tensors are grouped into buffers"),
          Knob::count("tensors_per_buffer", 0, "tensors", "fixed-count partition: tensors per buffer (0 = floor(L/20))"),
          Knob::density(),
          Knob::choice("error_feedback", error_feedbacks(), ErrorFeedback::kBuffer, "where residuals are kept")};
}

std::unique_ptr<Scheme> build_sparse_allreduce(SparseAllreduce algorithm, const Knobs& k, const GradientModel& model,
                                               const CostEstimator& cost) {
  SparseOptions partition;
  partition.partition = k.choice("partition", partition_kinds());
  partition.tensors_per_buffer = int(k.count("tensors_per_buffer"));
  partition.quirks = false;
  PlannedOptions planned;
  planned.density = k.number("density");
  planned.error_feedback = k.choice("error_feedback", error_feedbacks()) != ErrorFeedback::kNone;
  // Only Ok-Topk reuses thresholds and re-balances regions.
  planned.exact_every = k.has("exact_every") ? int(k.count("exact_every")) : 0;
  planned.repartition_every = k.has("repartition_every") ? int(k.count("repartition_every")) : 0;
  return make_sparse_allreduce_scheme(model, cost, algorithm, partition, planned);
}

namespace {

std::vector<Knob> oktopk_knobs() {
  std::vector<Knob> knobs = sparse_allreduce_knobs();
  knobs.push_back(Knob::count("exact_every", 128, "iterations", "exact top-k threshold every this many"));
  knobs.push_back(Knob::count("repartition_every", 64, "iterations", "re-balance the regions every this many"));
  return knobs;
}

const PresetRegistration registration({
    {"oktopk", "sparse-allreduce",
     "Ok-Topk: threshold-reuse top-k (exact every 128 its), split-and-reduce over p balanced regions, balance, "
     "allgatherv; regions re-balanced every 64 its",
     "one buffer by default; k selected exactly; balance moves no entries (balanced regions); threshold-reuse "
     "compare costed as a memory pass inside the collective; exact iterations allgather min(p k/p, n/p) values "
     "per region",
     oktopk_knobs(), Replanning::kAllowed, build_sparse_allreduce_preset<SparseAllreduce::kOkTopk>},
    {"spardl", "sparse-allreduce",
     "SparDL: local top-k, Spar-Reduce-Scatter (ceil(log2 p) rounds, re-select each block) + Spar-All-Gather "
     "(Bruck, one team)",
     "one buffer by default; one block top-k per round on the critical path; teams d = 1", sparse_allreduce_knobs(),
     Replanning::kAllowed, build_sparse_allreduce_preset<SparseAllreduce::kSparDL>},
    {"gtopk", "sparse-allreduce",
     "gTop-k: local top-k, tree reduction with a top-k of 2k per round, then tree broadcast",
     "one buffer by default; ceil(log2 p) rounds for any p (the reference needs a power of two)",
     sparse_allreduce_knobs(), Replanning::kAllowed, build_sparse_allreduce_preset<SparseAllreduce::kGTopk>},
    {"randomk-shared", "sparse-allreduce",
     "random-k with a shared seed: the same k indices on every worker, k values allreduced (4 bytes each, no "
     "indices)",
     "one buffer by default; ring allreduce of the values as the network model costs it", sparse_allreduce_knobs(),
     Replanning::kAllowed, build_sparse_allreduce_preset<SparseAllreduce::kSharedIndices>},
});

}  // namespace

}  // namespace sparsefuse::policy
