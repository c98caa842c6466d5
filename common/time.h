// Simulated and measured time is integer nanoseconds everywhere inside
// sparsefuse; conversion to seconds happens only at output.
#pragma once

#include <cmath>
#include <cstdint>

namespace sparsefuse {

using TimeNs = int64_t;

// std::llround without the library call (it dominates the simulator's
// per-tensor loop): rounds half away from zero, exactly as llround, for
// |x| < 2^52, where truncation and the fraction are exact; larger values
// take llround itself. common_test compares the two.
inline TimeNs round_ns(double x) {
  constexpr double kExact = 4503599627370496.0;  // 2^52
  if (!(x > -kExact && x < kExact)) return TimeNs(std::llround(x));
  const TimeNs i = TimeNs(x);  // truncates toward zero
  const double fraction = x - double(i);
  // Branch-free: the fraction is as often above one half as below it.
  return i + TimeNs(fraction >= 0.5) - TimeNs(fraction <= -0.5);
}

// A nominal duration on a worker running at SCALE times the nominal time.
inline TimeNs scaled_ns(TimeNs nominal, double scale) { return round_ns(double(nominal) * scale); }

inline TimeNs seconds_to_ns(double seconds) { return TimeNs(std::llround(seconds * 1e9)); }
inline double ns_to_seconds(TimeNs ns) { return double(ns) * 1e-9; }

}  // namespace sparsefuse
