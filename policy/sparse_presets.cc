// The presets built on SparseScheme (policy/sparse_scheme.h): the generic
// sparse baselines and the seed systems (FGBuff, RGMerge, SAFusion, SSFusion,
// ADTopk and their variants). docs/seed-schemes.md says what each reproduces.
#include "policy/presets.h"
#include "policy/sparse_scheme.h"

namespace sparsefuse::policy {
namespace {

using A = Alignment;
using E = ErrorFeedback;
using P = PartitionKind;
using S = SparsePlacement;
using Z = Sparsifier;

std::unique_ptr<Scheme> build_sparse(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  return std::make_unique<SparseScheme>(model, cost, SparseOptions::from_knobs(k));
}

Preset sparse(std::string name, std::string family, std::string summary, std::string deviation,
              std::vector<Knob> knobs) {
  return {std::move(name), std::move(family), std::move(summary), std::move(deviation), std::move(knobs),
          Replanning::kAllowed, build_sparse};
}

const PresetRegistration generic({
    sparse("topk-layerwise", "sparse", "per-tensor top-k + allgather of values and int32 indices (Horovod + GRACE style)",
           "int32 indices (GRACE sends int64)", sparse_knobs(P::kPerTensor, S::kAhead, Z::kTopk, A::kExchangeCounts, E::kTensor)),
    sparse("omgs", "sparse",
           "OMGS-SGD: merged-gradient sparsification, groups by its merge rule, top-k per group + allgather",
           "merge rule evaluated on the executor's cost estimates, not OMGS's fitted P102 constants",
           sparse_knobs(P::kMgs, S::kBehind, Z::kTopk, A::kExchangeCounts, E::kBuffer)),
    sparse("syncea-topk", "sparse", "SyncEA with one top-k over the single buffer after backward, then allgather", "",
           sparse_knobs(P::kSingle, S::kBehind, Z::kTopk, A::kExchangeCounts, E::kBuffer)),
});

const PresetRegistration seed({
    sparse("fgbuff", "seed", "FGBuff: seed three-step partition (quirks on), dense copy, one top-k per buffer, allgather",
           "quirks=false: corrected routine, pooler skipped, every buffer completes",
           sparse_knobs(P::kOgm, S::kBehind, Z::kTopk, A::kEqualSlices, E::kNone)),
    sparse("rgmerge", "seed", "RGMerge: the same code base as FGBuff (static quantity-based partition)",
           "identical to fgbuff, as the seed code is; see rgmerge-dynamic for what its README describes",
           sparse_knobs(P::kOgm, S::kBehind, Z::kTopk, A::kEqualSlices, E::kNone)),
    sparse("saf", "seed", "SAF: sparsify each tensor ahead of fusion (DGC), floor(L/20) tensors per buffer, allgather",
           "reconstructed (no runnable seed optimizer); receiver splits in equal slices as the seed code",
           sparse_knobs(P::kFixedCount, S::kAhead, Z::kDgc, A::kEqualSlices, E::kTensor)),
    sparse("safusion-inter", "seed", "SAFusion-Inter: SAF + inter-worker alignment (same count per tensor on every worker)",
           "alignment by truncating/padding each tensor's selection to k",
           sparse_knobs(P::kFixedCount, S::kAhead, Z::kDgc, A::kFixed, E::kTensor)),
    sparse("safusion", "seed", "SAFusion: SAFusion-Inter + adaptive buffer sizing by the seed three-step routine",
           "reconstructed data path (docs/seed-schemes.md)", sparse_knobs(P::kOgm, S::kAhead, Z::kDgc, A::kFixed, E::kTensor)),
    sparse("ssfusion", "seed", "SSFusion: floor(L/20) tensors per buffer, selective sparsification (small tensors dense), DGC",
           "dense tensors ride in the allgather as pairs, as in the seed code",
           sparse_knobs(P::kFixedCount, S::kSelective, Z::kDgc, A::kEqualSlices, E::kNone)),
    sparse("ssfusion-o", "seed", "SSFusion-O: SSFusion + greedy CPU offload of compression (seed walk)",
           "CPU cost from a measured CPU profile (the seed has none); asynchronous copies",
           sparse_knobs(P::kFixedCount, S::kSelective, Z::kDgc, A::kEqualSlices, E::kNone, Placement::kCpuOffload)),
    sparse("ssfusion-i", "seed", "SSFusion-I: dense sub-buffer allreduce + sparse sub-buffer allgather, interleaved",
           "reconstructed: the two collectives run concurrently on separate communicators, order alternating",
           sparse_knobs(P::kFixedCount, S::kSelective, Z::kDgc, A::kEqualSlices, E::kNone, Placement::kGpuInline, true)),
    sparse("adtopk", "seed", "ADTopk: per-tensor all-dimension top-k (k1 per row along dim 1), 1-D tensors dense",
           "density as configured (the seed hard-codes 0.01)",
           sparse_knobs(P::kPerTensor, S::kAhead, Z::kAdtopk, A::kFixed, E::kTensor)),
    sparse("adtopk-i", "seed", "ADTopk-I: alternate ADTopk and global top-k every iteration", "",
           sparse_knobs(P::kPerTensor, S::kAhead, Z::kAdtopkI, A::kFixed, E::kTensor)),
    sparse("adtopk-p", "seed", "ADTopk-P: partial sparsification, tensors whose compression does not pay stay dense",
           "intended spec (the seed selects nothing): dense iff allreduce <= compress + allgather",
           sparse_knobs(P::kPerTensor, S::kPartial, Z::kAdtopk, A::kFixed, E::kTensor)),
    sparse("adtopk-h", "seed", "ADTopk-H: partial sparsification + hybrid collectives (dense allreduce, sparse allgather)",
           "intended spec (the seed routes everything to allgather)",
           sparse_knobs(P::kPerTensor, S::kPartial, Z::kAdtopk, A::kFixed, E::kTensor, Placement::kGpuInline, true)),
});

}  // namespace
}  // namespace sparsefuse::policy
