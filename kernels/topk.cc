#include "kernels/topk.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "kernels/rng.h"

namespace sparsefuse::kernels {
namespace {

// Digit layout of the 31-bit key: 11 / 10 / 10 bits.
constexpr int kShift1 = 20;
constexpr int kBins1 = 1 << 11;
constexpr int kShift2 = 10;
constexpr int kBins2 = 1 << 10;
constexpr int kBins3 = 1 << 10;
constexpr uint32_t kLowMask = (1u << 10) - 1;
// First pass-1 bin that holds NaN/Inf keys (exponent all ones).
constexpr int kFirstNonFiniteBin = static_cast<int>(kNonFiniteKey >> kShift1);

// Pass-1 histogram kept as four interleaved copies so that runs of equal bins
// (common: gradients concentrate in a few binades) do not serialise on one
// counter's store-to-load dependency.
struct Histogram1 {
  uint32_t h[4][kBins1];
  void clear() { std::memset(h, 0, sizeof h); }
  void merge(uint32_t* out) const {
    for (int b = 0; b < kBins1; ++b) out[b] = h[0][b] + h[1][b] + h[2][b] + h[3][b];
  }
};

template <class KeyFn>
void histogram_pass(KeyFn key, int64_t n, uint32_t* hist) {
  Histogram1 hh;
  hh.clear();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint32_t k0 = key(i) >> kShift1;
    const uint32_t k1 = key(i + 1) >> kShift1;
    const uint32_t k2 = key(i + 2) >> kShift1;
    const uint32_t k3 = key(i + 3) >> kShift1;
    ++hh.h[0][k0];
    ++hh.h[1][k1];
    ++hh.h[2][k2];
    ++hh.h[3][k3];
  }
  for (; i < n; ++i) ++hh.h[0][key(i) >> kShift1];
  hh.merge(hist);
}

// Descending scan: the bin b such that (number of items in bins above b) < need
// <= that number + hist[b]. Requires 1 <= need <= total.
int choose_bucket(const uint32_t* hist, int bins, int64_t need, int64_t* above) {
  int64_t cum = 0;
  for (int b = bins - 1; b >= 0; --b) {
    if (cum + hist[b] >= need) {
      *above = cum;
      return b;
    }
    cum += hist[b];
  }
  *above = cum;
  return 0;  // unreachable when need <= total
}

// Where the k-th largest key lies after the pass-1 histogram.
struct Bucket {
  uint32_t bin;    // pass-1 digit of the k-th largest key
  int64_t above;   // items in higher bins (all selected)
  int64_t count;   // items in the bin
};

Bucket locate(const uint32_t* hist1, int64_t k) {
  Bucket b;
  b.bin = static_cast<uint32_t>(choose_bucket(hist1, kBins1, k, &b.above));
  b.count = hist1[b.bin];
  return b;
}

// Exact k-th key among the candidates whose pass-1 digit is b.bin; returns the
// key T and, in *ties, how many entries with key == T are taken (>= 1).
template <class KeyFn>
uint32_t resolve_threshold(KeyFn key, const int32_t* cand, int64_t m, const Bucket& b, int64_t k,
                           int64_t* ties) {
  int64_t need = k - b.above;
  uint32_t h2[kBins2] = {};
  for (int64_t j = 0; j < m; ++j) {
    const uint32_t kk = key(cand[j]);
    if ((kk >> kShift1) == b.bin) ++h2[(kk >> kShift2) & kLowMask];
  }
  int64_t above2;
  const uint32_t b2 = static_cast<uint32_t>(choose_bucket(h2, kBins2, need, &above2));
  need -= above2;
  const uint32_t prefix = (b.bin << 10) | b2;
  uint32_t h3[kBins3] = {};
  for (int64_t j = 0; j < m; ++j) {
    const uint32_t kk = key(cand[j]);
    if ((kk >> kShift2) == prefix) ++h3[kk & kLowMask];
  }
  int64_t above3;
  const uint32_t b3 = static_cast<uint32_t>(choose_bucket(h3, kBins3, need, &above3));
  *ties = need - above3;
  return (prefix << 10) | b3;
}

// Passes 2 and finish of the radix select (see topk.h). hist1 is the pass-1
// histogram; 1 <= k < n. Writes exactly k ascending indices to out.
template <class KeyFn>
void select_from_histogram(KeyFn key, int64_t n, int64_t k, const uint32_t* hist1, int32_t* out,
                           std::vector<int32_t>& cand) {
  const Bucket b = locate(hist1, k);
  const int64_t total = b.above + b.count;
  cand.resize(static_cast<size_t>(total) + 1);  // +1: the branch-free store below
  int32_t* list = cand.data();
  const uint32_t lo = b.bin << kShift1;
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) {
    list[c] = static_cast<int32_t>(i);
    c += key(i) >= lo;
  }
  if (total == k) {  // the whole bucket is taken
    std::memcpy(out, list, static_cast<size_t>(k) * sizeof(int32_t));
    return;
  }
  int64_t ties;
  const uint32_t t = resolve_threshold(key, list, total, b, k, &ties);
  int64_t m = 0;
  for (int64_t j = 0; j < total; ++j) {
    const int32_t i = list[j];
    const uint32_t kk = key(i);
    if (kk > t) {
      out[m++] = i;
    } else if (kk == t && ties > 0) {
      out[m++] = i;
      --ties;
    }
  }
}

struct AbsKeyFn {
  const float* g;
  uint32_t operator()(int64_t i) const { return abs_key(g[i]); }
};

struct RandomKeyFn {
  uint64_t stream;
  uint32_t operator()(int64_t i) const { return randomk_key(stream, static_cast<uint64_t>(i)); }
};

bool has_nonfinite_bins(const uint32_t* hist1) {
  for (int b = kFirstNonFiniteBin; b < kBins1; ++b)
    if (hist1[b]) return true;
  return false;
}

void iota_indices(int32_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(i);
}

void gather(const float* g, const int32_t* idx, int64_t m, float* values) {
  for (int64_t j = 0; j < m; ++j) values[j] = g[idx[j]];
}

}  // namespace

int64_t topk_abs(const float* g, int64_t n, int64_t k, float* values, int32_t* indices,
                 TopkWorkspace* ws) {
  static constexpr char kName[] = "topk_abs";
  check_size(kName, n);
  check_count(kName, k);
  if (k >= n) {
    require_finite(kName, g, n);
    iota_indices(indices, n);
    if (n > 0) std::memcpy(values, g, static_cast<size_t>(n) * sizeof(float));
    return n;
  }
  uint32_t hist1[kBins1];
  const AbsKeyFn key{g};
  histogram_pass(key, n, hist1);
  if (has_nonfinite_bins(hist1)) require_finite(kName, g, n);
  if (k == 0) return 0;
  TopkWorkspace local;
  select_from_histogram(key, n, k, hist1, indices, (ws ? ws : &local)->candidates);
  gather(g, indices, k, values);
  return k;
}

Selection topk_abs(const float* g, int64_t n, int64_t k) {
  check_size("topk_abs", n);
  check_count("topk_abs", k);
  Selection s;
  s.resize(std::min(k, n));
  topk_abs(g, n, k, s.values.data(), s.indices.data());
  return s;
}

uint32_t kth_largest_abs_key(const float* x, int64_t n, int64_t k) {
  static constexpr char kName[] = "kth_largest_abs_key";
  check_size(kName, n);
  if (k < 1 || k > n) throw std::invalid_argument("kth_largest_abs_key: k outside [1, n]");
  uint32_t hist1[kBins1];
  const AbsKeyFn key{x};
  histogram_pass(key, n, hist1);
  if (has_nonfinite_bins(hist1)) require_finite(kName, x, n);
  const Bucket b = locate(hist1, k);
  std::vector<int32_t> cand;
  cand.reserve(static_cast<size_t>(b.count));
  const uint32_t bin = b.bin;
  for (int64_t i = 0; i < n; ++i)
    if ((abs_key(x[i]) >> kShift1) == bin) cand.push_back(static_cast<int32_t>(i));
  int64_t ties;
  return resolve_threshold(key, cand.data(), static_cast<int64_t>(cand.size()), b, k, &ties);
}

int64_t ef_topk(float* residual, const float* grad, int64_t n, int64_t k, float* values,
                int32_t* indices, TopkWorkspace* ws) {
  static constexpr char kName[] = "ef_topk";
  check_size(kName, n);
  check_count(kName, k);
  // Pass 1 fused with the accumulation: acc = r + g is written into residual
  // while its histogram is built.
  uint32_t hist1[kBins1];
  struct AccumulateKey {
    float* r;
    const float* g;
    uint32_t operator()(int64_t i) const {
      const float a = r[i] + g[i];
      r[i] = a;
      return abs_key(a);
    }
  };
  histogram_pass(AccumulateKey{residual, grad}, n, hist1);
  if (has_nonfinite_bins(hist1)) require_finite(kName, residual, n);
  const int64_t m = std::min(k, n);
  if (m == n) {
    iota_indices(indices, n);
  } else if (m > 0) {
    TopkWorkspace local;
    select_from_histogram(AbsKeyFn{residual}, n, m, hist1, indices,
                          (ws ? ws : &local)->candidates);
  }
  for (int64_t j = 0; j < m; ++j) {
    const int32_t i = indices[j];
    values[j] = residual[i];
    residual[i] = 0.0f;
  }
  return m;
}

Selection ef_topk(float* residual, const float* grad, int64_t n, int64_t k) {
  check_size("ef_topk", n);
  check_count("ef_topk", k);
  Selection s;
  s.resize(std::min(k, n));
  ef_topk(residual, grad, n, k, s.values.data(), s.indices.data());
  return s;
}

int64_t randomk(const float* g, int64_t n, int64_t k, const RandomkKey& rk, float* values,
                int32_t* indices, TopkWorkspace* ws) {
  static constexpr char kName[] = "randomk";
  check_size(kName, n);
  check_count(kName, k);
  const int64_t m = std::min(k, n);
  if (m == n) {
    iota_indices(indices, n);
  } else if (m > 0) {
    const RandomKeyFn key{randomk_stream(rk.seed, rk.tensor_id, rk.step)};
    uint32_t hist1[kBins1];
    histogram_pass(key, n, hist1);
    TopkWorkspace local;
    select_from_histogram(key, n, m, hist1, indices, (ws ? ws : &local)->candidates);
  }
  if (g) gather(g, indices, m, values);
  return m;
}

Selection randomk(const float* g, int64_t n, int64_t k, const RandomkKey& key) {
  check_size("randomk", n);
  check_count("randomk", k);
  Selection s;
  s.resize(std::min(k, n));
  randomk(g, n, k, key, s.values.data(), s.indices.data());
  return s;
}

std::vector<int32_t> randomk_indices(int64_t n, int64_t k, const RandomkKey& key) {
  check_size("randomk", n);
  check_count("randomk", k);
  std::vector<int32_t> idx(static_cast<size_t>(std::min(k, n)));
  randomk(nullptr, n, k, key, nullptr, idx.data());
  return idx;
}

// ---------------------------------------------------------------- ADTopk

AdtopkGeometry adtopk_geometry(const std::vector<int64_t>& shape, double rho) {
  static constexpr char kName[] = "adtopk";
  check_density(kName, rho);
  AdtopkGeometry geo;
  int64_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("adtopk: negative dimension in shape");
    if (d != 0 && n > kMaxElements / d) check_size(kName, kMaxElements + int64_t{1});
    n *= d;
  }
  check_size(kName, n);
  geo.n = n;
  if (shape.size() < 2 || n == 0) return geo;
  geo.compress = true;
  geo.d0 = shape[0];
  geo.d1 = shape[1];
  for (size_t i = 2; i < shape.size(); ++i) geo.rest *= shape[i];
  geo.k1 = k_for_density(geo.d1, rho);
  return geo;
}

int64_t adtopk_count(const std::vector<int64_t>& shape, double rho) {
  return adtopk_geometry(shape, rho).count();
}

Selection adtopk(const float* g, const std::vector<int64_t>& shape, double rho) {
  static constexpr char kName[] = "adtopk";
  const AdtopkGeometry geo = adtopk_geometry(shape, rho);
  require_finite(kName, g, geo.n);
  Selection out;
  if (!geo.compress) {
    out.resize(geo.n);
    iota_indices(out.indices.data(), geo.n);
    std::copy(g, g + geo.n, out.values.begin());
    return out;
  }
  const int64_t d1 = geo.d1, rest = geo.rest, k1 = geo.k1;
  out.resize(geo.count());
  const int64_t block = d1 * rest;
  std::vector<uint8_t> chosen(static_cast<size_t>(block));
  std::vector<uint64_t> row(static_cast<size_t>(d1));  // (key << 32) | ~j: larger is better
  int64_t w = 0;
  for (int64_t i0 = 0; i0 < geo.d0; ++i0) {
    const float* base = g + i0 * block;
    if (k1 == d1) {
      std::fill(chosen.begin(), chosen.end(), uint8_t{1});
    } else {
      std::fill(chosen.begin(), chosen.end(), uint8_t{0});
      for (int64_t ir = 0; ir < rest; ++ir) {
        for (int64_t j = 0; j < d1; ++j) {
          const uint32_t kk = abs_key(base[j * rest + ir]);
          row[static_cast<size_t>(j)] =
              (uint64_t{kk} << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(j));
        }
        // Packing (key, ~j) into one integer makes the order total: larger key
        // first, then smaller j.
        std::nth_element(row.begin(), row.begin() + (k1 - 1), row.end(), std::greater<>());
        for (int64_t t = 0; t < k1; ++t) {
          const int64_t j = 0xFFFFFFFFu - static_cast<uint32_t>(row[static_cast<size_t>(t)]);
          chosen[static_cast<size_t>(j * rest + ir)] = 1;
        }
      }
    }
    for (int64_t e = 0; e < block; ++e) {
      if (chosen[static_cast<size_t>(e)]) {
        out.indices[static_cast<size_t>(w)] = static_cast<int32_t>(i0 * block + e);
        out.values[static_cast<size_t>(w)] = base[e];
        ++w;
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- thresholds

Selection select_abs_threshold(const float* g, int64_t n, float thr, bool strict, int64_t limit) {
  check_size("select_abs_threshold", n);
  const int64_t cap = (limit < 0 || limit > n) ? n : limit;
  Selection s;
  std::vector<int32_t> idx;
  idx.reserve(static_cast<size_t>(std::min<int64_t>(cap, 1 << 20)));
  for (int64_t i = 0; i < n && static_cast<int64_t>(idx.size()) < cap; ++i) {
    const float a = std::fabs(g[i]);
    if (strict ? a > thr : a >= thr) idx.push_back(static_cast<int32_t>(i));
  }
  s.indices = std::move(idx);
  s.values.resize(s.indices.size());
  gather(g, s.indices.data(), s.size(), s.values.data());
  return s;
}

int64_t count_abs_threshold(const float* g, int64_t n, float thr, bool strict) {
  check_size("count_abs_threshold", n);
  int64_t c = 0;
  if (strict) {
    for (int64_t i = 0; i < n; ++i) c += std::fabs(g[i]) > thr;
  } else {
    for (int64_t i = 0; i < n; ++i) c += std::fabs(g[i]) >= thr;
  }
  return c;
}

}  // namespace sparsefuse::kernels
