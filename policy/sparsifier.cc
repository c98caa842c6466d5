#include "policy/sparsifier.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sparsefuse::policy {

const std::vector<std::string>& sparsifier_names() {
  static const std::vector<std::string> names = {"topk",  "dgc",     "gaussiank", "redsync",
                                                 "sidco", "randomk", "adtopk",    "adtopk-i"};
  return names;
}

std::string sparsifier_name(Sparsifier s) { return sparsifier_names()[size_t(s)]; }

Sparsifier parse_sparsifier(const std::string& name) {
  const auto& names = sparsifier_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw std::invalid_argument("unknown sparsifier " + name);
  return Sparsifier(it - names.begin());
}

CountBand count_band(Sparsifier s) {
  switch (s) {
    case Sparsifier::kDgc: return {0.7, 1.3};
    case Sparsifier::kGaussiank: return {2.0 / 3.0, 4.0 / 3.0};
    case Sparsifier::kRedsync: return {1.0, 2.0};
    case Sparsifier::kSidco: return {0.8, 1.2};
    default: return {};
  }
}

int64_t exact_count(int64_t elements, double density) {
  return std::max<int64_t>(1, int64_t(std::floor(double(elements) * density)));
}

int64_t adtopk_count(int64_t elements, int64_t row_length, double density) {
  if (row_length <= 0) return elements;
  int64_t rows = elements / row_length;
  return rows * std::max<int64_t>(1, int64_t(std::floor(double(row_length) * density)));
}

}  // namespace sparsefuse::policy
