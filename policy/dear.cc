#include "policy/dear.h"
#include "policy/presets.h"

#include <algorithm>

namespace sparsefuse::policy {

namespace {

class DearWorker : public WorkerPolicy {
 public:
  DearWorker(const std::vector<Bucket>& groups, const std::vector<int>& closed_by)
      : groups_(groups), closed_by_(closed_by) {}
  void on_tensor_ready(int tensor, TimeNs now, FlushSink& sink) override {
    if (int g = closed_by_[tensor]; g >= 0) sink.flush(groups_[g], now);
  }

 private:
  const std::vector<Bucket>& groups_;
  const std::vector<int>& closed_by_;
};

}  // namespace

DearScheme::DearScheme(const GradientModel& model, const CostEstimator& cost, DearOptions options) {
  const int L = model.size();
  const int64_t p = std::max(1, cost.workers());
  auto add_group = [&](int first, int end) {
    Bucket rs;
    rs.first_tensor = first;
    rs.end_tensor = end;
    for (int t = first; t < end; ++t) rs.elements += model.elements[t];
    const int64_t per_rank = (rs.elements + p - 1) / p;  // padded to a multiple of p
    rs.dense_elements = rs.sent_elements = rs.elements;
    rs.collective = Collective::kReduceScatter;
    rs.bytes_per_worker = per_rank * p * model.bytes_per_element;
    reduce_scatters_.push_back(rs);
    ForwardStage stage;
    stage.first_tensor = first;
    stage.end_tensor = end;
    stage.has_deferred = true;
    stage.deferred = rs;
    stage.deferred.collective = Collective::kAllgather;
    stage.deferred.bytes_per_worker = per_rank * model.bytes_per_element;  // each rank's reduced shard
    plan_.stages.push_back(stage);
  };
  // Forward order walks the backward order from its end.
  int end = L;
  int64_t bytes = 0;
  for (int t = L - 1; t >= 0; --t) {
    if (t + 1 < end && bytes + model.bytes(t) >= options.fusion_threshold_bytes) {
      add_group(t + 1, end);
      end = t + 1;
      bytes = 0;
    }
    bytes += model.bytes(t);
  }
  add_group(0, end);
  closed_by_.assign(L, -1);
  for (size_t g = 0; g < reduce_scatters_.size(); ++g) closed_by_[reduce_scatters_[g].end_tensor - 1] = int(g);
  plan_.wait_for_covering_collectives = false;
  plan_.iteration_waits_for_collectives = true;
}

std::unique_ptr<WorkerPolicy> DearScheme::make_worker_policy(int /*rank*/) const {
  return std::make_unique<DearWorker>(reduce_scatters_, closed_by_);
}

nlohmann::json DearScheme::describe() const {
  std::vector<int> counts;
  for (const auto& g : reduce_scatters_) counts.push_back(g.tensors());
  return {{"groups", reduce_scatters_.size()}, {"tensors_per_group_forward_order", counts}};
}

namespace {

std::unique_ptr<Scheme> build_dear(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  return std::make_unique<DearScheme>(model, cost, DearOptions{k.count("fusion_threshold_bytes")});
}

const PresetRegistration registration({
    {"dear", "scheduling",
     "DeAR: per fused group (<25 MB, forward order) a reduce-scatter in backward and an all-gather in the next "
     "forward, group i+1's launched when group i's forward starts; update per group inline",
     "groups of tensors (not modules), 25 MB taken as MiB; per-tensor forward times from the trace; optimizer "
     "time split by elements, run before each group's forward; iteration 0 has no all-gather or update; no "
     "Bayesian tuning of the threshold",
     {Knob::count("fusion_threshold_bytes", 25ll << 20, "bytes", "largest fused group")}, Replanning::kPlansItself,
     build_dear},
});

}  // namespace

}  // namespace sparsefuse::policy
