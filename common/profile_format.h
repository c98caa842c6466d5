// The kernel profile format ("sparsefuse-profile/1") as its writer
// (kernels/profiler) and its reader (model/compression_cost) share it.
#pragma once

#include <cstdint>

namespace sparsefuse {

// ADTopk's row length of a profile point that names no "row": profiles
// before rows were measured (2026-11-27 20:49) viewed every tensor as rows
// of 1000, and GPU profiles still do.
inline constexpr int64_t kProfileAdtopkRow = 1000;

}  // namespace sparsefuse
