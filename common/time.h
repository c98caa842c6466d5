// Simulated and measured time is integer nanoseconds everywhere inside
// sparsefuse; conversion to seconds happens only at output.
#pragma once

#include <cmath>
#include <cstdint>

namespace sparsefuse {

using TimeNs = int64_t;

inline TimeNs seconds_to_ns(double seconds) { return TimeNs(std::llround(seconds * 1e9)); }
inline double ns_to_seconds(TimeNs ns) { return double(ns) * 1e-9; }

}  // namespace sparsefuse
