#include "policy/bucket.h"

namespace sparsefuse::policy {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce: return "allreduce";
    case Collective::kAllgather: return "allgather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kBroadcast: return "broadcast";
  }
  return "unknown";
}

std::string_view alignment_name(Alignment a) {
  switch (a) {
    case Alignment::kFixed: return "fixed";
    case Alignment::kExchangeCounts: return "exchange-counts";
    case Alignment::kPadToMax: return "pad-to-max";
    case Alignment::kEqualSlices: return "equal-slices";
  }
  return "unknown";
}

}  // namespace sparsefuse::policy
