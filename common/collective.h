// The collective operations, one name for every layer: the policies choose
// them, the network models cost them, the runtime's communicators run them.
#pragma once

#include <string_view>

namespace sparsefuse {

enum class Collective { kAllreduce, kAllgather, kReduceScatter, kBroadcast };

// "allreduce", "allgather", "reduce_scatter", "broadcast": the names result
// files, timelines and calibrated tables use.
constexpr std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce: return "allreduce";
    case Collective::kAllgather: return "allgather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kBroadcast: return "broadcast";
  }
  return "unknown";
}

}  // namespace sparsefuse
