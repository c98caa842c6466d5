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
    // at_high: the share of calls returning exactly k, 0.61-0.77 measured on
    // Gaussian, Laplace, Student-t and bf16 gradients (count_band_test.cc);
    // it is the chance that the sampled threshold, or the first lowered one,
    // lets at least k elements through.
    case Sparsifier::kDgc: return {0.8, 1.0, 0.71};
    case Sparsifier::kGaussiank: return {2.0 / 3.0, 4.0 / 3.0};
    case Sparsifier::kRedsync: return {1.0, 2.0};
    case Sparsifier::kSidco: return {0.8, 1.2};
    default: return {};
  }
}

int64_t banded_count(const CountBand& band, int64_t k, int64_t elements, double u) {
  if (band.exact()) return k;
  if (!(u >= 0.0 && u < 1.0)) throw std::invalid_argument("banded_count: u must be in [0, 1)");
  const double f = u < band.at_high ? band.high
                                    : band.low + (u - band.at_high) / (1.0 - band.at_high) * (band.high - band.low);
  return std::clamp<int64_t>(std::llround(double(k) * f), 1, elements);
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
