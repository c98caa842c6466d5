#include "model/compute_config.h"

namespace sparsefuse::model {

ComputeConfig ComputeConfig::parse(const JsonNode& node, bool gpu_cluster) {
  node.check_keys({"comm_interference"});
  ComputeConfig c;
  // Above 10 (compute 11x slower) is no longer interference but a typo.
  c.comm_interference = node.get_number("comm_interference", gpu_cluster ? kMeasuredGpuSlowdown : 0.0, 0.0, 10.0);
  return c;
}

Json ComputeConfig::to_json() const { return {{"comm_interference", comm_interference}}; }

}  // namespace sparsefuse::model
