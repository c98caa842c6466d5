// The dense presets: static partitions of the gradients into allreduces.
#include "policy/partition.h"
#include "policy/presets.h"
#include "policy/static_scheme.h"

namespace sparsefuse::policy {
namespace {

std::unique_ptr<Scheme> build_wfbp(const Knobs&, const GradientModel& model, const CostEstimator&) {
  return std::make_unique<StaticBucketScheme>(per_tensor_partition(model));
}

std::unique_ptr<Scheme> build_syncea(const Knobs&, const GradientModel& model, const CostEstimator&) {
  return std::make_unique<StaticBucketScheme>(single_bucket_partition(model));
}

std::unique_ptr<Scheme> build_mgwfbp(const Knobs&, const GradientModel& model, const CostEstimator& cost) {
  return std::make_unique<StaticBucketScheme>(mgwfbp_partition(model, cost));
}

std::unique_ptr<Scheme> build_ddp(const Knobs& k, const GradientModel& model, const CostEstimator&) {
  return std::make_unique<StaticBucketScheme>(
      byte_threshold_partition(model, k.count("first_bucket_bytes"), k.count("bucket_cap_bytes")));
}

const PresetRegistration registration({
    {"wfbp", "dense", "wait-free backprop (Poseidon): one allreduce per tensor, launched when it is ready", "", {},
     Replanning::kAllowed, build_wfbp},
    {"syncea", "dense", "SyncEA: all gradients in one buffer, one allreduce after backward (no overlap)", "", {},
     Replanning::kAllowed, build_syncea},
    {"mgwfbp", "dense", "MG-WFBP: merge adjacent allreduces when waiting beats a start-up (alpha-beta model)",
     "uses the executor's collective costs instead of a fitted alpha + beta x", {}, Replanning::kAllowed,
     build_mgwfbp},
    {"ddp", "dense", "PyTorch DDP: 25 MiB buckets (1 MiB first) in gradient-ready order, launched in order",
     "buckets as rebuilt after the first iteration (ready order) from the start",
     {Knob::count("bucket_cap_bytes", 25ll << 20, "bytes", "bucket size cap"),
      Knob::count("first_bucket_bytes", 1ll << 20, "bytes", "cap of the first bucket")},
     Replanning::kAllowed, build_ddp},
});

}  // namespace
}  // namespace sparsefuse::policy
