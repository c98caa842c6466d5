// topk-dsa: TopkDSA, SparCML's sparse allreduce (recursive doubling whose
// supports grow by union: round r exchanges up to 2^r k pairs, switching to
// dense values once that is smaller). Its cost is SparseCollectives::topk_dsa
// (sim/sparse_collectives.cc); this file is the whole preset, the worked
// example of docs/adding-a-scheme.md.
#include "policy/presets.h"
#include "policy/sparse_allreduce.h"

namespace sparsefuse::policy {
namespace {

const PresetRegistration registration({
    {"topk-dsa", "sparse-allreduce",
     "TopkDSA (SparCML): local top-k, then ceil(log2 p) recursive-doubling rounds whose messages carry the union "
     "of the partners' supports (dense values once that is smaller)",
     "one buffer by default; supports modelled as disjoint (no index overlap), so round r sends min(2^r k, n) "
     "entries; no dynamic switch of the reduction algorithm",
     sparse_allreduce_knobs(), Replanning::kAllowed, build_sparse_allreduce_preset<SparseAllreduce::kTopkDsa>},
});

}  // namespace
}  // namespace sparsefuse::policy
