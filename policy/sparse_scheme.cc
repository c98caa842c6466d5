#include "policy/sparse_scheme.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policy/partition.h"
#include "policy/seed/ogm_partition.h"
#include "policy/seed/seed_cost.h"
#include "policy/seed/ssfusion_select.h"

namespace sparsefuse::policy {

namespace {

bool is_adtopk(Sparsifier s) { return s == Sparsifier::kAdtopk || s == Sparsifier::kAdtopkI; }

// ADTopk's check_not_ef: no residual on the classifier ("fc*", "classifier.6").
bool excluded_from_ef(const std::string& name, Sparsifier s) {
  return (is_adtopk(s) && (name.rfind("fc", 0) == 0 || name.find(".fc") != std::string::npos)) ||
         name.find("classifier.6") != std::string::npos;
}

double normal_tail(double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); }  // P(Z > x)

}  // namespace

const ChoiceTable<SparsePlacement>& sparse_placements() {
  static const ChoiceTable<SparsePlacement> table = {{"behind", SparsePlacement::kBehind},
                                                        {"ahead", SparsePlacement::kAhead},
                                                        {"selective", SparsePlacement::kSelective},
                                                        {"partial", SparsePlacement::kPartial}};
  return table;
}
const ChoiceTable<PartitionKind>& partition_kinds() {
  static const ChoiceTable<PartitionKind> table = {{"per-tensor", PartitionKind::kPerTensor},
                                                    {"single", PartitionKind::kSingle},
                                                    {"fixed-count", PartitionKind::kFixedCount},
                                                    {"ogm", PartitionKind::kOgm},
                                                    {"mgs", PartitionKind::kMgs}};
  return table;
}
const ChoiceTable<ErrorFeedback>& error_feedbacks() {
  static const ChoiceTable<ErrorFeedback> table = {
    {"none", ErrorFeedback::kNone}, {"tensor", ErrorFeedback::kTensor}, {"buffer", ErrorFeedback::kBuffer}};
  return table;
}
const ChoiceTable<Alignment>& alignments() {
  static const ChoiceTable<Alignment> table = {{"fixed-k", Alignment::kFixed},
                                            {"exchange-counts", Alignment::kExchangeCounts},
                                            {"pad-to-max", Alignment::kPadToMax},
                                            {"equal-slices", Alignment::kEqualSlices}};
  return table;
}
const ChoiceTable<Placement>& compression_placements() {
  static const ChoiceTable<Placement> table = {{"gpu-inline", Placement::kGpuInline},
                                                       {"gpu-side", Placement::kGpuSideStream},
                                                       {"cpu-offload", Placement::kCpuOffload}};
  return table;
}

SparseOptions SparseOptions::from_knobs(const Knobs& k) {
  SparseOptions o;
  o.partition = k.choice("partition", partition_kinds());
  o.tensors_per_buffer = int(k.count("tensors_per_buffer"));
  o.quirks = k.flag("quirks");
  o.placement = k.choice("placement", sparse_placements());
  o.sparsifier = k.sparsifier();
  o.density = k.number("density");
  o.alignment = k.choice("alignment", alignments());
  o.compress_on = k.choice("compress_on", compression_placements());
  o.hybrid = k.flag("hybrid");
  o.concurrent = k.flag("concurrent");
  o.error_feedback = k.choice("error_feedback", error_feedbacks());
  o.seed_model_key = k.text("seed_model_key");
  return o;
}

std::vector<Knob> sparse_knobs(PartitionKind partition, SparsePlacement placement, Sparsifier sparsifier,
                               Alignment alignment, ErrorFeedback error_feedback, Placement compress_on, bool hybrid) {
  // ADTopk presets are defined by their sparsifier: a scenario-wide one does not replace it.
  const bool intrinsic_sparsifier = sparsifier == Sparsifier::kAdtopk || sparsifier == Sparsifier::kAdtopkI;
  return {Knob::choice("partition", partition_kinds(), partition, "how tensors are grouped into buffers"),
          Knob::count("tensors_per_buffer", 0, "tensors", "fixed-count partition: tensors per buffer (0 = floor(L/20))"),
          Knob::flag("quirks", true, "reproduce the seed code's defects (partition off-by-one, incomplete buffers)"),
          Knob::choice("placement", sparse_placements(), placement, "where sparsification sits relative to fusion"),
          Knob::sparsifier(sparsifier, !intrinsic_sparsifier),
          Knob::density(),
          Knob::choice("alignment", alignments(), alignment, "how workers' differing counts are aligned"),
          Knob::choice("compress_on", compression_placements(), compress_on, "where selections run"),
          Knob::flag("hybrid", hybrid, "dense tensors allreduced, sparse ones allgathered"),
          Knob::flag("concurrent", true, "hybrid: the two collectives on separate communicators"),
          Knob::choice("error_feedback", error_feedbacks(), error_feedback, "where residuals are kept"),
          Knob::text("seed_model_key", "", "the seed cost table's model key (\"\" = from the model name)")};
}

SparseScheme::SparseScheme(const GradientModel& model, const CostEstimator& cost, SparseOptions options)
    : model_(model), options_(std::move(options)) {
  if (options_.seed_model_key.empty()) options_.seed_model_key = seed::seed_script_model_key(model.model);
  plan_buffers(cost);
  plan_dense_and_cpu(cost);
  estimate_convergence_signals();
}

void SparseScheme::add_buffers(const std::vector<int>& counts) {
  int first = 0;
  for (int c : counts) {
    plan_.buffers.push_back({first, first + c, false});
    first += c;
  }
}

void SparseScheme::plan_buffers(const CostEstimator& cost) {
  const int L = model_.size();
  switch (options_.partition) {
    case PartitionKind::kPerTensor: add_buffers(std::vector<int>(L, 1)); break;
    case PartitionKind::kSingle: add_buffers({L}); break;
    case PartitionKind::kFixedCount: {
      int per = options_.tensors_per_buffer > 0 ? options_.tensors_per_buffer : seed::ssfusion_tensors_per_buffer(L);
      plan_.partition_counts = seed::fixed_count_partition(L, per);
      add_buffers(plan_.partition_counts);
      break;
    }
    case PartitionKind::kOgm: plan_ogm_buffers(); break;
    case PartitionKind::kMgs: plan_mgs_buffers(cost); break;
  }
  if (plan_.partition_counts.empty()) {
    for (const auto& b : plan_.buffers) plan_.partition_counts.push_back(b.end - b.first);
  }
}

void SparseScheme::plan_ogm_buffers() {
  if (!options_.quirks) {
    plan_.partition_counts = seed::ogm_partition(model_.elements, options_.density, options_.seed_model_key, false);
    add_buffers(plan_.partition_counts);
  } else {
    // The seed partitions the whole parameter list, pooler included, and
    // its grouping helper puts counts[0] - 1 tensors in buffer 0. A buffer
    // holding a tensor without gradient never completes (docs/seed-systems.md#tensor-order-and-incomplete-buffers),
    // so its tensors are never synchronised.
    plan_.partition_counts = seed::ogm_partition(model_.inventory_elements, options_.density,
                                                 options_.seed_model_key, true);
    std::vector<int> grad_position(model_.inventory_elements.size() + 1, 0);
    for (size_t i = 0, g = 0; i < model_.inventory_elements.size(); ++i) {
      grad_position[i] = int(g);
      if (model_.inventory_has_grad[i]) ++g;
      grad_position[i + 1] = int(g);
    }
    int inv_first = 0;
    for (size_t b = 0; b < plan_.partition_counts.size(); ++b) {
      int count = plan_.partition_counts[b] - (b == 0 ? 1 : 0);
      int inv_end = std::min<int>(inv_first + count, int(model_.inventory_elements.size()));
      bool complete = true;
      for (int i = inv_first; i < inv_end; ++i) complete &= bool(model_.inventory_has_grad[i]);
      if (grad_position[inv_end] > grad_position[inv_first]) {
        plan_.buffers.push_back({grad_position[inv_first], grad_position[inv_end], !complete});
      }
      inv_first = inv_end;
    }
  }
}

void SparseScheme::plan_mgs_buffers(const CostEstimator& cost) {
  const int L = model_.size();
  // OMGS's merge rule (docs/baseline-systems.md#dense-fusion-and-scheduling-baselines), walking from the output side:
  // merge the next tensor into the current group when the extra waiting it
  // causes (t_w) is less than the start-up it saves (t_save). Backward and
  // sparsification share the GPU; sparse communication is an allgather of
  // k pairs.
  auto ts = [&](int64_t n) { return double(cost.compression_ns(options_.sparsifier, n, options_.density)); };
  auto tc = [&](int64_t n) {
    return double(cost.collective_ns(Collective::kAllgather, 8 * exact_count(n, options_.density)));
  };
  auto tb = [&](int j) { return double(model_.ready_ns[j] - (j ? model_.ready_ns[j - 1] : 0)); };
  int first = 0;
  int64_t group = model_.elements[0];
  double clock = tb(0), comm_free = 0;
  for (int j = 0; j + 1 < L; ++j) {
    double sparsified = clock + ts(group);
    double wait = std::max(0.0, comm_free - sparsified);
    int64_t next = model_.elements[j + 1];
    double t_w = tb(j + 1) + ts(group + next) - ts(group) - ts(next) - wait;
    double t_save = tc(group) + tc(next) - tc(group + next);
    if (t_w < t_save) {
      group += next;
      clock += tb(j + 1);
    } else {
      plan_.buffers.push_back({first, j + 1, false});
      comm_free = std::max(comm_free, sparsified) + tc(group);
      clock = sparsified + tb(j + 1);
      first = j + 1;
      group = next;
    }
  }
  plan_.buffers.push_back({first, L, false});
}

void SparseScheme::plan_dense_and_cpu(const CostEstimator& cost) {
  const int L = model_.size();
  plan_.dense.assign(L, false);
  plan_.on_cpu.assign(L, false);
  std::vector<int> counts;
  for (const auto& b : plan_.buffers) counts.push_back(b.end - b.first);
  if (options_.placement == SparsePlacement::kSelective) {
    plan_.dense = seed::ssfusion_select(model_.elements, counts, options_.density, options_.seed_model_key,
                                        options_.quirks)
                      .dense;
  } else if (options_.placement == SparsePlacement::kPartial) {
    for (int t = 0; t < L; ++t) {
      int64_t n = model_.elements[t];
      int64_t k = is_adtopk(options_.sparsifier) ? adtopk_count(n, model_.row_length[t], options_.density)
                                                 : exact_count(n, options_.density);
      // A dense tensor is allreduced with hybrid collectives, else it rides
      // in the allgather as values.
      TimeNs dense = options_.hybrid ? cost.collective_ns(Collective::kAllreduce, 4 * n)
                                     : cost.collective_ns(Collective::kAllgather, 4 * n);
      TimeNs sparse = cost.compression_ns(options_.sparsifier, n, options_.density) +
                      cost.collective_ns(Collective::kAllgather, 8 * k);
      plan_.dense[t] = dense <= sparse;
    }
  }
  if (is_adtopk(options_.sparsifier) && options_.placement != SparsePlacement::kBehind) {
    for (int t = 0; t < L; ++t) plan_.dense[t] = plan_.dense[t] || model_.row_length[t] == 0;
  }
  if (options_.compress_on == Placement::kCpuOffload) {
    // The seed's walk with the trace's per-tensor backward times (the seed's
    // size-proportional T_bwd is 0 for most models) and the executor's GPU
    // and CPU cost curves (the seed has no CPU model).
    auto backward_s = [&](int t) { return double(model_.ready_ns[t] - (t ? model_.ready_ns[t - 1] : 0)) * 1e-9; };
    auto gpu_s = [&](int64_t n) { return double(cost.compression_ns(options_.sparsifier, n, options_.density)) * 1e-9; };
    auto cpu_s = [&](int64_t n) {
      return double(cost.cpu_compression_ns(options_.sparsifier, n, options_.density)) * 1e-9;
    };
    plan_.on_cpu = seed::ssfusion_offload(model_.elements, counts, plan_.dense, backward_s, gpu_s, cpu_s);
  }
}

// Expected selection under the gradient-magnitude model: each tensor's
// elements ~ N(0, rms^2). A selection of K over a fused buffer keeps the
// elements above one threshold theta (solved by bisection), so tensor t
// expects n_t * 2Q(theta/rms_t) elements and contributes nothing with
// probability (1 - 2Q(theta/rms_t))^n_t. Per-tensor selection always sends
// at least one element per tensor; ADTopk at least one per row.
void SparseScheme::estimate_convergence_signals() {
  const int L = model_.size();
  plan_.effective_density.assign(L, 1.0);
  double missing = 0;
  for (const auto& b : plan_.buffers) {
    if (b.never_completes) {
      for (int t = b.first; t < b.end; ++t) plan_.effective_density[t] = 0, missing += 1;
      continue;
    }
    if (options_.density >= 1.0) continue;
    if (options_.placement == SparsePlacement::kBehind) {
      int64_t total = 0;
      for (int t = b.first; t < b.end; ++t) total += model_.elements[t];
      double k = double(exact_count(total, options_.density));
      auto expected = [&](double theta) {
        double s = 0;
        for (int t = b.first; t < b.end; ++t) s += model_.elements[t] * 2 * normal_tail(theta / model_.grad_rms[t]);
        return s;
      };
      double lo = 0, hi = 1;
      while (expected(hi) > k) hi *= 2;
      for (int i = 0; i < 100; ++i) {
        double mid = 0.5 * (lo + hi);
        (expected(mid) > k ? lo : hi) = mid;
      }
      for (int t = b.first; t < b.end; ++t) {
        double p = 2 * normal_tail(hi / model_.grad_rms[t]);
        plan_.effective_density[t] = p;
        missing += std::exp(double(model_.elements[t]) * std::log1p(-std::min(p, 1.0 - 1e-300)));
      }
    } else {
      for (int t = b.first; t < b.end; ++t) {
        if (plan_.dense[t]) continue;
        int64_t n = model_.elements[t];
        int64_t k = is_adtopk(options_.sparsifier) ? adtopk_count(n, model_.row_length[t], options_.density)
                                                   : exact_count(n, options_.density);
        plan_.effective_density[t] = double(k) / double(n);
      }
    }
  }
  plan_.tensor_missing_rate = missing / L;
  if (is_adtopk(options_.sparsifier) && options_.density < 1.0) {
    // ADTopk keeps at least one element per row. ADTopk-I does so every other
    // iteration; in the others a global top-k covers a row of d1 elements
    // with probability 1 - (1 - rho)^d1 when selection is spread evenly.
    double rows = 0, covered_by_topk = 0;
    for (int t = 0; t < L; ++t) {
      if (plan_.dense[t] || model_.row_length[t] == 0) continue;
      double r = double(model_.elements[t] / model_.row_length[t]);
      rows += r;
      covered_by_topk += r * -std::expm1(double(model_.row_length[t]) * std::log1p(-options_.density));
    }
    plan_.rows_covered = options_.sparsifier == Sparsifier::kAdtopk || rows == 0 ? 1.0 : 0.5 + 0.5 * covered_by_topk / rows;
  }
}

Json SparsePlan::to_json() const {
  int dense_count = 0, cpu_count = 0, lost = 0;
  for (bool d : dense) dense_count += d;
  for (bool c : on_cpu) cpu_count += c;
  for (const auto& b : buffers) lost += b.never_completes ? b.end - b.first : 0;
  double mean_density = 0;
  for (double d : effective_density) mean_density += d;
  Json out = {{"partition_counts", partition_counts},
          {"buffers", buffers.size()},
          {"dense_tensors", dense_count},
          {"cpu_offloaded_tensors", cpu_count},
          {"unsynchronized_tensors", lost},
          {"tensor_missing_rate", tensor_missing_rate},
          {"mean_effective_density", effective_density.empty() ? 0.0 : mean_density / effective_density.size()}};
  if (rows_covered >= 0) out["adtopk_rows_covered"] = rows_covered;
  return out;
}

namespace {

class SparseWorker : public WorkerPolicy {
 public:
  SparseWorker(const GradientModel& model, const SparseOptions& options, const SparsePlan& plan)
      : model_(model), options_(options), plan_(plan), alignment_(options.alignment),
        placement_(options.compress_on) {
    buffer_of_.assign(model.size(), -1);
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      for (int t = plan.buffers[b].first; t < plan.buffers[b].end; ++t) buffer_of_[t] = int(b);
    }
  }

  void begin_iteration(int iteration) override { iteration_ = iteration; }

  void on_tensor_ready(int t, TimeNs now, FlushSink& sink) override {
    auto& context = static_cast<WorkerContext&>(sink);
    const int b = buffer_of_[t];
    const auto& buffer = plan_.buffers[b];
    if (t == buffer.first) state_ = {};
    const int64_t n = model_.elements[t];
    const bool sparse_ahead = options_.placement != SparsePlacement::kBehind;
    if (sparse_ahead && !plan_.dense[t]) {
      CompressionOutcome out = context.compress(tensor_request(t), now);
      state_.sparse_ready = std::max(state_.sparse_ready, out.done);
      state_.selected += out.selected;
      state_.sparse_elements += n;
    } else if (sparse_ahead && !options_.hybrid) {
      // Dense tensors travel in the allgather as (value, index) pairs, as the
      // seed's selective path does.
      state_.selected += n;
      state_.sparse_elements += n;
      state_.dense_in_sparse += n;
      state_.sparse_ready = std::max(state_.sparse_ready, now);
    } else {
      state_.dense_elements += n;
    }
    if (t + 1 != buffer.end || buffer.never_completes) return;
    flush_buffer(b, now, context);
  }

 private:
  struct BufferState {
    TimeNs sparse_ready = 0;
    int64_t selected = 0, sparse_elements = 0, dense_in_sparse = 0, dense_elements = 0;
  };

  Sparsifier effective_sparsifier() const {
    // ADTopk-I alternates per-dimension and global top-k every iteration.
    if (options_.sparsifier == Sparsifier::kAdtopkI) return iteration_ % 2 == 0 ? Sparsifier::kAdtopk : Sparsifier::kTopk;
    return options_.sparsifier;
  }

  CompressionRequest tensor_request(int t) const {
    CompressionRequest r;
    r.first_tensor = t;
    r.end_tensor = t + 1;
    r.elements = model_.elements[t];
    r.sparsifier = effective_sparsifier();
    r.density = options_.density;
    r.expected_count = r.sparsifier == Sparsifier::kAdtopk
                           ? adtopk_count(r.elements, model_.row_length[t], options_.density)
                           : exact_count(r.elements, options_.density);
    r.align_to_expected = options_.alignment == Alignment::kFixed;
    r.placement = plan_.on_cpu[t] ? Placement::kCpuOffload
                                  : (placement_ == Placement::kCpuOffload ? Placement::kGpuInline : placement_);
    r.error_feedback = options_.error_feedback == ErrorFeedback::kTensor && !excluded_from_ef(model_.names[t], r.sparsifier);
    return r;
  }

  Bucket make_bucket(const SparsePlan::Buffer& buffer, Collective collective, int64_t elements, int64_t dense,
                     int64_t sent) const {
    Bucket bucket;
    bucket.first_tensor = buffer.first;
    bucket.end_tensor = buffer.end;
    bucket.elements = elements;
    bucket.dense_elements = dense;
    bucket.sent_elements = sent;
    bucket.collective = collective;
    bucket.alignment = collective == Collective::kAllgather ? alignment_ : Alignment::kFixed;
    // An allgather moves fp32 values plus int32 indices, a bucket sent dense
    // as pairs too: the runtime sends its indices (runtime/exchange.cc), and
    // an allgather of values alone would need a receiver that knows every
    // rank sent everything.
    bucket.bytes_per_worker = sent * (collective == Collective::kAllgather ? 8 : 4);
    return bucket;
  }

  void flush_buffer(int b, TimeNs now, WorkerContext& context) {
    const auto& buffer = plan_.buffers[b];
    if (options_.density >= 1.0 && options_.placement == SparsePlacement::kBehind) {  // the seed's dense path: allreduce the buffer
      context.flush(make_bucket(buffer, Collective::kAllreduce, state_.dense_elements, state_.dense_elements,
                                state_.dense_elements), now);
      return;
    }
    if (options_.placement == SparsePlacement::kBehind) {
      CompressionRequest r;
      r.first_tensor = buffer.first;
      r.end_tensor = buffer.end;
      r.elements = state_.dense_elements;
      r.sparsifier = effective_sparsifier();
      r.density = options_.density;
      r.expected_count = exact_count(r.elements, options_.density);
      r.align_to_expected = options_.alignment == Alignment::kFixed;
      r.placement = placement_ == Placement::kCpuOffload ? Placement::kGpuInline : placement_;
      r.error_feedback = options_.error_feedback == ErrorFeedback::kBuffer;
      CompressionOutcome out = context.compress(r, now);
      context.flush(make_bucket(buffer, Collective::kAllgather, r.elements, 0, out.selected), out.done);
      return;
    }
    Bucket sparse = make_bucket(buffer, Collective::kAllgather, state_.sparse_elements, state_.dense_in_sparse,
                                state_.selected);
    Bucket dense = make_bucket(buffer, Collective::kAllreduce, state_.dense_elements, state_.dense_elements,
                               state_.dense_elements);
    dense.communicator = options_.concurrent ? 1 : 0;
    const bool has_sparse = state_.sparse_elements > 0, has_dense = state_.dense_elements > 0;
    // SSFusion-I's interleaving: alternate which sub-buffer goes first.
    if (has_dense && b % 2 == 0) context.flush(dense, now);
    if (has_sparse) context.flush(sparse, std::max(now, state_.sparse_ready));
    if (has_dense && b % 2 == 1) context.flush(dense, now);
  }

  const GradientModel& model_;
  const SparseOptions& options_;
  const SparsePlan& plan_;
  Alignment alignment_;
  Placement placement_;
  std::vector<int> buffer_of_;
  BufferState state_;
  int iteration_ = 0;
};

}  // namespace

std::unique_ptr<WorkerPolicy> SparseScheme::make_worker_policy(int /*rank*/) const {
  return std::make_unique<SparseWorker>(model_, options_, plan_);
}

}  // namespace sparsefuse::policy
