#include "model/gpu_devices.h"

namespace sparsefuse::model {

// Peak memory bandwidths from NVIDIA's datasheets. Measured: the H100 and the
// H200 (profiles/h100-80gb-hbm3.json, profiles/h200-141gb-hbm3e.json: one lent
// machine each, 2026-11-26).
const std::vector<GpuDevice>& gpu_devices() {
  static const std::vector<GpuDevice> table = {
      {"h100", "H100 SXM5 80 GB HBM3", 3350, "h100-80gb-hbm3"},
      {"h200", "H200 SXM 141 GB HBM3e", 4800, "h200-141gb-hbm3e"},
      {"b200", "B200 HBM3e", 8000, ""},
      {"a100-80gb", "A100 SXM4 80 GB HBM2e", 2039, ""},
      {"a100-40gb", "A100 SXM4 40 GB HBM2", 1555, ""},
      {"v100", "V100 SXM2 HBM2", 900, ""},
      {"p100", "P100 SXM2 HBM2", 732, ""},
      {"rtx3090", "GeForce RTX 3090 GDDR6X", 936, ""},
      {"rtx2080ti", "GeForce RTX 2080 Ti GDDR6", 616, ""},
      {"gtx1080ti", "GeForce GTX 1080 Ti GDDR5X", 484, ""},
      {"t4", "T4 GDDR6", 320, ""},
  };
  return table;
}

const GpuDevice* find_gpu_device(const std::string& name) {
  for (const auto& d : gpu_devices()) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

std::string gpu_device_names() {
  std::string all;
  for (const auto& d : gpu_devices()) all += (all.empty() ? "" : ", ") + std::string(d.name);
  return all;
}

const GpuDevice& estimate_reference_device() { return *find_gpu_device("h100"); }

std::string default_compression_profile(const std::string& gpu) {
  if (gpu.empty()) return "seed-8node";
  const GpuDevice* d = find_gpu_device(gpu);
  if (d && *d->measured_profile) return d->measured_profile;
  return "estimate:" + gpu;
}

}  // namespace sparsefuse::model
