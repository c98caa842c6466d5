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

}  // namespace sparsefuse::policy
