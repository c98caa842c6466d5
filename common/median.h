#pragma once
// The one median every benchmark, profiler and report uses (header only, no
// dependencies: the statically linked kernel profiler includes it too).
#include <algorithm>
#include <vector>

namespace sparsefuse {

// The median of VALUES, the mean of the two middle ones for an even count.
// VALUES must not be empty.
inline double median(std::vector<double> values) {
  const auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1) return *middle;
  return (*std::max_element(values.begin(), middle) + *middle) / 2;
}

}  // namespace sparsefuse
