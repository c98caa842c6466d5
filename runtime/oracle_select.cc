#include "runtime/oracle_select.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

namespace sparsefuse::runtime::oracle {

uint32_t magnitude_key(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7FFFFFFFu;
}

namespace {

// The first min(k, n) indices by (key descending, index ascending), ascending.
template <class Key>
std::vector<int32_t> keep_largest(int64_t n, int64_t k, Key key) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const uint32_t ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });
  order.resize(static_cast<size_t>(std::clamp<int64_t>(k, 0, n)));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

std::vector<int32_t> sorted_topk(const float* x, int64_t n, int64_t k) {
  return keep_largest(n, k, [x](int32_t i) { return magnitude_key(x[i]); });
}

std::vector<int32_t> sorted_randomk(const std::vector<uint32_t>& priority, int64_t k) {
  return keep_largest(int64_t(priority.size()), k, [&priority](int32_t i) { return priority[size_t(i)]; });
}

std::vector<int32_t> sorted_adtopk(const float* x, const std::vector<int64_t>& shape, double density) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int32_t> out;
  if (shape.size() < 2 || n == 0) {
    out.resize(size_t(n));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  const int64_t d0 = shape[0], d1 = shape[1], rest = n / (d0 * d1);
  const int64_t k1 = std::clamp<int64_t>(int64_t(std::floor(density * double(d1))), 1, d1);
  std::vector<float> row(static_cast<size_t>(d1));
  for (int64_t i0 = 0; i0 < d0; ++i0) {
    for (int64_t r = 0; r < rest; ++r) {
      const int64_t base = i0 * d1 * rest + r;
      for (int64_t j = 0; j < d1; ++j) row[size_t(j)] = x[base + j * rest];
      for (int32_t j : sorted_topk(row.data(), d1, k1)) out.push_back(int32_t(base + j * rest));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The magnitude whose key is KEY.
float key_magnitude(uint32_t key) {
  float v;
  std::memcpy(&v, &key, sizeof v);
  return v;
}

// The first index below LIMIT that S leaves out although its key is above M
// (or equal to it, with OR_EQUAL), described; "" if none.
std::string unselected_above(const float* x, int64_t n, const std::vector<int32_t>& s, uint32_t m, bool or_equal,
                             int64_t limit) {
  size_t j = 0;
  for (int64_t i = 0; i < std::min(n, limit); ++i) {
    if (j < s.size() && s[j] == i) {
      ++j;
      continue;
    }
    const uint32_t key = magnitude_key(x[i]);
    if (key > m || (or_equal && key == m)) {
      return fmt::format("local index {} ({:.9g}) is not selected although its magnitude is {} the smallest "
                         "selected one ({:.9g})",
                         i, x[i], key > m ? "above" : "equal to", key_magnitude(m));
    }
  }
  return "";
}

}  // namespace

std::string check_threshold_selection(ThresholdRule rule, const float* x, int64_t n, int64_t k,
                                      const std::vector<int32_t>& s) {
  if (rule == ThresholdRule::kTopSet || rule == ThresholdRule::kCountOnly) {
    if (int64_t(s.size()) != std::min(k, n)) {
      return fmt::format("{} elements selected, but the selection is aligned to k = {}", s.size(), std::min(k, n));
    }
    if (rule == ThresholdRule::kCountOnly) return "";
  }
  if (s.empty()) return "";
  uint32_t m = 0xFFFFFFFFu;
  for (int32_t i : s) m = std::min(m, magnitude_key(x[i]));
  switch (rule) {
    case ThresholdRule::kExactSet: return unselected_above(x, n, s, m, true, n);
    case ThresholdRule::kTopSet: return unselected_above(x, n, s, m, false, n);
    case ThresholdRule::kPrefix: {
      if (int64_t(s.size()) > k) return fmt::format("{} elements selected, more than k = {}", s.size(), k);
      if (unselected_above(x, n, s, m, true, int64_t(s.back()) + 1).empty()) return "";
      if (int64_t(s.size()) == std::min(k, n)) return unselected_above(x, n, s, m, false, n);
      return unselected_above(x, n, s, m, true, int64_t(s.back()) + 1);
    }
    case ThresholdRule::kCountOnly: break;
  }
  return "";
}

}  // namespace sparsefuse::runtime::oracle
