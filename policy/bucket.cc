#include "policy/bucket.h"

namespace sparsefuse::policy {

std::string_view alignment_name(Alignment a) {
  switch (a) {
    case Alignment::kFixed: return "fixed";
    case Alignment::kExchangeCounts: return "exchange-counts";
    case Alignment::kPadToMax: return "pad-to-max";
    case Alignment::kEqualSlices: return "equal-slices";
  }
  return "unknown";
}

std::string_view sparse_allreduce_name(SparseAllreduce a) {
  switch (a) {
    case SparseAllreduce::kNone: return "none";
    case SparseAllreduce::kSharedIndices: return "shared-index-allreduce";
    case SparseAllreduce::kGTopk: return "gtopk";
    case SparseAllreduce::kSparDL: return "spardl";
    case SparseAllreduce::kOkTopk: return "oktopk";
    case SparseAllreduce::kTopkDsa: return "topk-dsa";
    case SparseAllreduce::kCaSyncRing: return "casync-ring";
  }
  return "unknown";
}

bool dense_reduction(const Bucket& b) {
  return (b.collective == Collective::kAllreduce || b.collective == Collective::kReduceScatter) &&
         b.sparse == SparseAllreduce::kNone;
}

bool packs_pairs(const Bucket& b) { return !dense_reduction(b) && b.sparse != SparseAllreduce::kCaSyncRing; }

}  // namespace sparsefuse::policy
