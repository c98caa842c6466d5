// The GPUs a scenario can name (`topology.gpu`), with what the simulator needs
// to cost compression on them: a measured kernel profile where one exists,
// otherwise the memory bandwidth an estimate scales by (docs/simulator-model.md,
// "Compression costs by GPU").
#pragma once

#include <string>
#include <vector>

namespace sparsefuse::model {

struct GpuDevice {
  const char* name;
  const char* description;
  double memory_gbytes_per_s;    // datasheet peak
  const char* measured_profile;  // built-in profile measured on it, or ""
};

const std::vector<GpuDevice>& gpu_devices();
const GpuDevice* find_gpu_device(const std::string& name);
std::string gpu_device_names();  // "h100, h200, ..." for messages

// The device whose measured profile estimates stand on.
const GpuDevice& estimate_reference_device();

// The compression profile a scenario gets when it names none: the GPU's
// measured profile, else "estimate:GPU", else (no GPU named) the seed tables.
std::string default_compression_profile(const std::string& gpu);

}  // namespace sparsefuse::model
