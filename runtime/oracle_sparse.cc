#include "runtime/oracle_sparse.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/oracle_select.h"

namespace sparsefuse::runtime::oracle {

using policy::SparseAllreduce;
using Dense = std::vector<float>;

namespace {

// Zeroes all of V[lo, hi) but its K largest magnitudes (ties: lower index).
void keep_largest(Dense& v, int64_t lo, int64_t hi, int64_t k) {
  if (hi <= lo) return;
  const std::vector<int32_t> kept = sorted_topk(v.data() + lo, hi - lo, k);
  std::vector<bool> keep(size_t(hi - lo), false);
  for (int32_t i : kept) keep[size_t(i)] = true;
  for (int64_t i = lo; i < hi; ++i) v[size_t(i)] = keep[size_t(i - lo)] ? v[size_t(i)] : 0.0f;
}

void add_into(Dense& to, const Dense& from, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) to[size_t(i)] = to[size_t(i)] + from[size_t(i)];
}

Dense rank_order_sum(const policy::Bucket& b, const std::vector<Dense>& v) {
  Dense sum(size_t(b.elements), 0.0f);
  for (const Dense& c : v) add_into(sum, c, 0, b.elements);
  return sum;
}

Dense gtopk(const policy::Bucket& b, std::vector<Dense> v) {
  const int P = int(v.size());
  for (int s = 1; s < P; s *= 2) {
    for (int r = 0; r + s < P; r += 2 * s) {
      add_into(v[size_t(r)], v[size_t(r + s)], 0, b.elements);
      keep_largest(v[size_t(r)], 0, b.elements, b.sent_elements);
    }
  }
  return v[0];
}

// One rank's place in a SparDL round: the blocks it keeps and the rank it
// sends the rest to (-1: its group is down to itself).
struct Halving {
  int keep_lo, keep_hi, partner;
};

Halving halve(int lo, int hi, int r) {
  if (hi - lo == 1) return {lo, hi, -1};
  const int lower = (hi - lo + 1) / 2, upper = hi - lo - lower, mid = lo + lower;
  return r < mid ? Halving{lo, mid, mid + std::min(r - lo, upper - 1)} : Halving{mid, hi, lo + (r - mid)};
}

Dense spardl(const policy::Bucket& b, std::vector<Dense> v) {
  const int P = int(v.size());
  const int64_t n = b.elements, block = (n + P - 1) / P;
  const int64_t kb = std::max<int64_t>(1, int64_t(std::floor(double(block) * b.density)));
  auto at = [&](int blk) { return std::min(n, int64_t(blk) * block); };
  std::vector<Halving> step(size_t(P), Halving{0, P, -1});
  for (bool more = P > 1; more;) {
    for (int r = 0; r < P; ++r) step[size_t(r)] = halve(step[size_t(r)].keep_lo, step[size_t(r)].keep_hi, r);
    std::vector<Dense> next(size_t(P), Dense(size_t(n), 0.0f));
    more = false;
    for (int r = 0; r < P; ++r) {
      const Halving& h = step[size_t(r)];
      add_into(next[size_t(r)], v[size_t(r)], at(h.keep_lo), at(h.keep_hi));
      for (int s = 0; s < P; ++s) {
        if (step[size_t(s)].partner == r) add_into(next[size_t(r)], v[size_t(s)], at(h.keep_lo), at(h.keep_hi));
      }
      if (h.partner < 0) continue;
      for (int blk = h.keep_lo; blk < h.keep_hi; ++blk) keep_largest(next[size_t(r)], at(blk), at(blk + 1), kb);
      more = more || h.keep_hi - h.keep_lo > 1;
    }
    v = std::move(next);
  }
  Dense sum(size_t(n), 0.0f);
  for (int r = 0; r < P; ++r) std::copy(v[size_t(r)].begin() + at(r), v[size_t(r)].begin() + at(r + 1), sum.begin() + at(r));
  return sum;
}

Dense oktopk(const policy::Bucket& b, const std::vector<Dense>& v, float& threshold) {
  Dense sum = rank_order_sum(b, v);
  if (b.exact_threshold) {
    const std::vector<int32_t> top = sorted_topk(sum.data(), b.elements, b.sent_elements);
    threshold = top.empty() ? 0.0f : std::fabs(sum[size_t(top[0])]);
    for (int32_t i : top) threshold = std::min(threshold, std::fabs(sum[size_t(i)]));
    keep_largest(sum, 0, b.elements, b.sent_elements);
    return sum;
  }
  for (float& x : sum) x = std::fabs(x) >= threshold ? x : 0.0f;
  return sum;
}

// HiPress's ring, restated: K = b.partitions parts of ceil(n / K) elements;
// part j visits ranks j, j + 1, ..., j + P - 1 (mod P), each adding its own
// values to what arrived (own + arrived) and keeping the part's min(length,
// max(1, floor(length * density))) largest magnitudes.
Dense casync(const policy::Bucket& b, const std::vector<Dense>& v) {
  const int P = int(v.size());
  const int K = std::max(1, b.partitions);
  const int64_t n = b.elements, size = (n + K - 1) / K;
  Dense sum(size_t(n), 0.0f);
  for (int j = 0; j < K; ++j) {
    const int64_t lo = std::min(n, j * size), hi = std::min(n, (j + 1) * size);
    const int64_t keep = std::min(hi - lo, std::max<int64_t>(1, int64_t(std::floor(double(hi - lo) * b.density))));
    Dense part(size_t(n), 0.0f);
    for (int h = 0; h < P; ++h) {
      const Dense& own = v[size_t((j + h) % P)];
      for (int64_t i = lo; i < hi; ++i) part[size_t(i)] = own[size_t(i)] + part[size_t(i)];
      keep_largest(part, lo, hi, keep);
    }
    std::copy(part.begin() + lo, part.begin() + hi, sum.begin() + lo);
  }
  return sum;
}

}  // namespace

std::vector<float> sparse_allreduce_sum(const policy::Bucket& b, const std::vector<Dense>& contributions,
                                        float& global_threshold) {
  switch (b.sparse) {
    case SparseAllreduce::kSharedIndices:
    case SparseAllreduce::kTopkDsa:
      return rank_order_sum(b, contributions);
    case SparseAllreduce::kGTopk:
      return gtopk(b, contributions);
    case SparseAllreduce::kSparDL:
      return spardl(b, contributions);
    case SparseAllreduce::kOkTopk:
      return oktopk(b, contributions, global_threshold);
    case SparseAllreduce::kCaSyncRing:
      return casync(b, contributions);
    default:
      throw std::logic_error(fmt::format("the oracle has no rule for the sparse allreduce \"{}\"",
                                         policy::sparse_allreduce_name(b.sparse)));
  }
}

bool sparse_allreduce_exact(const policy::Bucket& b) {
  return b.sparse == SparseAllreduce::kGTopk || b.sparse == SparseAllreduce::kSparDL ||
         b.sparse == SparseAllreduce::kOkTopk || b.sparse == SparseAllreduce::kCaSyncRing;
}

}  // namespace sparsefuse::runtime::oracle
