#include "policy/compression.h"

namespace sparsefuse::policy {

std::string placement_name(Placement p) {
  switch (p) {
    case Placement::kGpuInline: return "gpu-inline";
    case Placement::kGpuSideStream: return "gpu-side";
    case Placement::kCpuOffload: return "cpu-offload";
  }
  return "unknown";
}

}  // namespace sparsefuse::policy
