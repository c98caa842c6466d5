// The configurable fusion + sparsification scheme behind every sparse preset
// (DESIGN.md: a scheme is a composition of orthogonal parts). Its plan is
// fixed at construction — buffers, which tensors go dense, which compress on
// the CPU — exactly as the seed systems fix theirs at start-up; per worker, the
// policy then compresses and flushes as tensors arrive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "policy/compression.h"
#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct SparseOptions {
  // Partition: "per-tensor", "single", "fixed-count" (tensors_per_buffer, 0 =
  // SSFusion's floor(L/20)), "ogm" (the seed's three-step routine), "mgs"
  // (OMGS's merge rule on the executor's cost estimates).
  std::string partition = "fixed-count";
  int tensors_per_buffer = 0;
  bool quirks = true;  // reproduce the seed code's defects where it has them
  // Where sparsification sits: "behind" (one selection over the fused
  // buffer), "ahead" (per tensor before fusion), "selective" (SSFusion: the
  // small tensors of each buffer stay dense), "partial" (ADTopk-P: a tensor
  // stays dense when compressing and gathering its selection costs more than
  // sending it dense by the collective it would use).
  std::string placement = "ahead";
  Sparsifier sparsifier = Sparsifier::kTopk;
  double density = 0.01;
  // "fixed-k" (threshold counts truncated/padded to k), "exchange-counts",
  // "pad-to-max", "equal-slices".
  std::string alignment = "exchange-counts";
  // "gpu-inline", "gpu-side", or "cpu-offload" (SSFusion-O's greedy choice of
  // tensors to compress on CPU threads; the others stay inline).
  std::string compress_on = "gpu-inline";
  bool hybrid = false;     // dense part allreduced, sparse part allgathered
  bool concurrent = true;  // hybrid: the two collectives on separate communicators
  std::string error_feedback = "none";  // "none", "tensor", "buffer"
  std::string seed_model_key;           // for the seed cost model; "" = seed::seed_script_model_key(model)
};

// The start-up decisions, for result.json and tests.
struct SparsePlan {
  struct Buffer {
    int first = 0, end = 0;
    bool never_completes = false;  // seed quirk: holds a tensor without gradient
  };
  std::vector<Buffer> buffers;
  std::vector<int> partition_counts;  // as the partition routine returned them
  std::vector<bool> dense;            // per gradient tensor (ahead/selective/partial)
  std::vector<bool> on_cpu;           // per gradient tensor (cpu-offload)
  double tensor_missing_rate = 0;     // expected share of tensors that contribute nothing
  double rows_covered = -1;           // ADTopk: share of rows with a selected element (-1: not ADTopk)
  std::vector<double> effective_density;  // expected selected / elements, per tensor

  Json to_json() const;
};

class SparseScheme : public Scheme {
 public:
  SparseScheme(const GradientModel& model, const CostEstimator& cost, SparseOptions options);
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override;
  const SparsePlan& plan() const { return plan_; }
  const SparseOptions& options() const { return options_; }
  Json describe() const override { return plan_.to_json(); }

 private:
  void plan_buffers(const CostEstimator& cost);
  void plan_dense_and_cpu(const CostEstimator& cost);
  void estimate_convergence_signals();

  const GradientModel& model_;
  SparseOptions options_;
  SparsePlan plan_;
};

}  // namespace sparsefuse::policy
