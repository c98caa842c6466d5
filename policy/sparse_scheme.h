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
#include "policy/preset.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

// Where sparsification sits: one selection over the fused buffer (behind),
// per tensor before fusion (ahead), per tensor with the small tensors of each
// buffer dense (selective, SSFusion), or per tensor where compressing and
// gathering costs less than sending dense (partial, ADTopk-P).
enum class SparsePlacement { kBehind, kAhead, kSelective, kPartial };
// How buffers are formed: one tensor each, one buffer, a fixed tensor count
// (0 = SSFusion's floor(L/20)), the seed's three-step routine, or OMGS's
// merge rule on the executor's cost estimates.
enum class PartitionKind { kPerTensor, kSingle, kFixedCount, kOgm, kMgs };
enum class ErrorFeedback { kNone, kTensor, kBuffer };

// The spellings of the sparse knobs' options (functions, so presets may use
// them during static initialisation).
const ChoiceTable<SparsePlacement>& sparse_placements();
const ChoiceTable<PartitionKind>& partition_kinds();
const ChoiceTable<ErrorFeedback>& error_feedbacks();
const ChoiceTable<Alignment>& alignments();
const ChoiceTable<Placement>& compression_placements();  // the "compress_on" knob

struct SparseOptions {
  PartitionKind partition = PartitionKind::kFixedCount;
  int tensors_per_buffer = 0;
  bool quirks = true;  // reproduce the seed code's defects where it has them
  SparsePlacement placement = SparsePlacement::kAhead;
  Sparsifier sparsifier = Sparsifier::kTopk;
  double density = 0.01;
  // kFixed: threshold counts truncated/padded to k.
  Alignment alignment = Alignment::kExchangeCounts;
  // kCpuOffload: SSFusion-O's greedy choice of tensors to compress on CPU
  // threads; the others stay inline.
  Placement compress_on = Placement::kGpuInline;
  bool hybrid = false;     // dense part allreduced, sparse part allgathered
  bool concurrent = true;  // hybrid: the two collectives on separate communicators
  ErrorFeedback error_feedback = ErrorFeedback::kNone;
  std::string seed_model_key;  // for the seed cost model; "" = seed::seed_script_model_key(model)

  // From a sparse preset's knobs (sparse_knobs below).
  static SparseOptions from_knobs(const Knobs& knobs);
};

// The knobs of every preset built on SparseScheme; presets differ in defaults.
std::vector<Knob> sparse_knobs(PartitionKind partition, SparsePlacement placement, Sparsifier sparsifier,
                               Alignment alignment, ErrorFeedback error_feedback,
                               Placement compress_on = Placement::kGpuInline, bool hybrid = false);

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
  void add_buffers(const std::vector<int>& counts);  // consecutive buffers of these tensor counts
  void plan_ogm_buffers();
  void plan_mgs_buffers(const CostEstimator& cost);
  void plan_dense_and_cpu(const CostEstimator& cost);
  void estimate_convergence_signals();

  const GradientModel& model_;
  SparseOptions options_;
  SparsePlan plan_;
};

}  // namespace sparsefuse::policy
