#include "runtime/sparse_allreduce.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "policy/sparsifier.h"
#include "runtime/pair_gather.h"

namespace sparsefuse::runtime {

using policy::SparseAllreduce;

Pairs merge_pairs(const Pairs& a, const Pairs& b) {
  Pairs out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a.indices[i] < b.indices[j])) {
      out.indices.push_back(a.indices[i]), out.values.push_back(a.values[i++]);
    } else if (i == a.size() || b.indices[j] < a.indices[i]) {
      out.indices.push_back(b.indices[j]), out.values.push_back(b.values[j++]);
    } else {
      out.indices.push_back(a.indices[i]), out.values.push_back(a.values[i++] + b.values[j++]);
    }
  }
  return out;
}

Pairs largest_pairs(const Pairs& p, int64_t k) {
  if (int64_t(p.size()) <= k) return p;
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::nth_element(order.begin(), order.begin() + k, order.end(), [&](size_t x, size_t y) {
    const float ax = std::fabs(p.values[x]), ay = std::fabs(p.values[y]);
    return ax != ay ? ax > ay : p.indices[x] < p.indices[y];
  });
  order.resize(size_t(k));
  std::sort(order.begin(), order.end());  // positions ascend with indices
  Pairs out;
  for (size_t x : order) out.indices.push_back(p.indices[x]), out.values.push_back(p.values[x]);
  return out;
}

std::vector<Pairs> exchange_round(Communicator& comm, const Pairs& out, int dest, const std::string& what) {
  std::vector<float> values;
  std::vector<int32_t> indices;
  const std::vector<Announcement> announced = gather_pairs(comm, out.values.data(), out.indices.data(),
                                                           dest >= 0 ? int64_t(out.size()) : 0, dest, values, indices,
                                                           what);
  std::vector<Pairs> received;
  int64_t at = 0;
  for (const Announcement& a : announced) {
    if (a.tag == comm.rank()) {
      Pairs p;
      p.values.assign(values.begin() + at, values.begin() + at + a.count);
      p.indices.assign(indices.begin() + at, indices.begin() + at + a.count);
      received.push_back(std::move(p));
    }
    at += a.count;
  }
  return received;
}

HalvingStep halving_step(int lo, int hi, int rank) {
  const int lower = (hi - lo + 1) / 2, upper = hi - lo - lower, mid = lo + lower;
  if (rank < mid) return {lo, mid, mid + std::min(rank - lo, upper - 1)};
  return {mid, hi, lo + (rank - mid)};
}

int ceil_log2(int p) {
  int rounds = 0;
  while ((1 << rounds) < p) ++rounds;
  return rounds;
}

int64_t spardl_block(int64_t n, int ranks) { return (n + ranks - 1) / ranks; }

int64_t spardl_block_count(int64_t n, int ranks, double density) {
  return std::max<int64_t>(1, int64_t(std::floor(double(spardl_block(n, ranks)) * density)));
}

CasyncLayout::CasyncLayout(int64_t n, int partitions, double density)
    : count(std::max(1, partitions)), n_(n), size_((n + count - 1) / count), density_(density) {}
int64_t CasyncLayout::begin(int j) const { return std::min(n_, int64_t(j) * size_); }
int64_t CasyncLayout::end(int j) const { return std::min(n_, int64_t(j + 1) * size_); }
int64_t CasyncLayout::pairs(int j) const {
  const int64_t length = end(j) - begin(j);
  return std::min(length, policy::exact_count(length, density_));
}

namespace {

Pairs own_pairs(const BucketExchange& x) { return {x.values, x.indices}; }

void set_result(BucketExchange& x, Pairs result) {
  x.gathered_values = std::move(result.values);
  x.gathered_indices = std::move(result.indices);
}

// Everything every rank sent, concatenated in rank order (COUNTS: per rank).
Pairs gather_all(Communicator& comm, const Pairs& mine, const std::string& what,
                 std::vector<int64_t>* counts_out = nullptr) {
  Pairs all;
  const std::vector<Announcement> announced =
      gather_pairs(comm, mine.values.data(), mine.indices.data(), int64_t(mine.size()), 0, all.values, all.indices, what);
  if (counts_out) {
    counts_out->clear();
    for (const Announcement& a : announced) counts_out->push_back(a.count);
  }
  return all;
}

void gtopk(BucketExchange& x, Communicator& comm) {
  const int P = comm.size(), rank = comm.rank();
  const std::string what = describe_flush(x);
  const int64_t k = int64_t(x.values.size());
  Pairs current = own_pairs(x);
  bool active = true;
  for (int s = 1; s < P; s *= 2) {
    const bool sends = active && rank % (2 * s) == s;
    for (const Pairs& got : exchange_round(comm, current, sends ? rank - s : -1, what)) {
      current = largest_pairs(merge_pairs(current, got), k);
    }
    if (sends) active = false;
  }
  set_result(x, gather_all(comm, rank == 0 ? current : Pairs{}, what));
}

// Keeps, per block of [first_block, end_block), its KB largest entries.
Pairs reselect_blocks(const Pairs& p, int64_t block, int64_t kb) {
  Pairs out, piece;
  for (size_t i = 0; i < p.size();) {
    const int64_t b = p.indices[i] / block;
    piece = {};
    for (; i < p.size() && p.indices[i] / block == b; ++i) {
      piece.values.push_back(p.values[i]), piece.indices.push_back(p.indices[i]);
    }
    Pairs kept = largest_pairs(piece, kb);
    out.values.insert(out.values.end(), kept.values.begin(), kept.values.end());
    out.indices.insert(out.indices.end(), kept.indices.begin(), kept.indices.end());
  }
  return out;
}

void spardl(BucketExchange& x, Communicator& comm, int64_t n) {
  const int P = comm.size(), rank = comm.rank();
  const std::string what = describe_flush(x);
  const int64_t block = spardl_block(n, P), kb = spardl_block_count(n, P, x.bucket.density);
  Pairs current = own_pairs(x);
  // Every rank takes part in every round (the messages are collectives),
  // also once its group is down to itself.
  for (int round = 0, lo = 0, hi = P; round < ceil_log2(P); ++round) {
    if (hi - lo == 1) {
      exchange_round(comm, {}, -1, what);
      continue;
    }
    const HalvingStep step = halving_step(lo, hi, rank);
    Pairs kept, sent;
    for (size_t i = 0; i < current.size(); ++i) {
      const int64_t b = current.indices[i] / block;
      Pairs& to = b >= step.keep_lo && b < step.keep_hi ? kept : sent;
      to.values.push_back(current.values[i]), to.indices.push_back(current.indices[i]);
    }
    for (const Pairs& got : exchange_round(comm, sent, step.partner, what)) kept = merge_pairs(kept, got);
    current = reselect_blocks(kept, block, kb);
    lo = step.keep_lo, hi = step.keep_hi;
  }
  set_result(x, gather_all(comm, current, what));
}

// SparCML's recursive doubling with union (TopkDSA): nothing is dropped, so
// every rank ends with the sum of every selection. With M the largest power
// of two <= P, ranks >= M first hand their pairs to rank - M, the first M
// ranks double (partner = rank xor d, each adding its own + the partner's),
// and the result goes back to the ranks >= M.
void topk_dsa(BucketExchange& x, Communicator& comm) {
  const int P = comm.size(), rank = comm.rank();
  const std::string what = describe_flush(x);
  int m = 1;
  while (2 * m <= P) m *= 2;
  Pairs current = own_pairs(x);
  for (const Pairs& got : exchange_round(comm, current, rank >= m ? rank - m : -1, what)) current = merge_pairs(current, got);
  for (int d = 1; d < m; d *= 2) {
    for (const Pairs& got : exchange_round(comm, current, rank < m ? rank ^ d : -1, what)) current = merge_pairs(current, got);
  }
  for (const Pairs& got : exchange_round(comm, current, rank + m < P ? rank + m : -1, what)) current = got;
  set_result(x, current);
}

// Ok-Topk: split-and-reduce (every rank's pairs in region j, of ceil(n/P)
// elements, summed at rank j in rank order: an all-to-all, here one
// gather), then the global selection: on an exact iteration the top-k of
// every reduced value (gathered), whose smallest magnitude becomes the
// reused global threshold; otherwise each owner keeps its reduced values
// reaching that threshold; the kept pairs are gathered by every rank. The
// regions stay equal (a repartition moves nothing).
void oktopk(BucketExchange& x, Communicator& comm) {
  const int rank = comm.rank();
  const std::string what = describe_flush(x);
  const int64_t region = spardl_block(x.bucket.elements, comm.size());
  std::vector<int64_t> counts;
  const Pairs all = gather_all(comm, own_pairs(x), what, &counts);
  Pairs reduced;
  for (int r = 0, at = 0; r < comm.size(); at += int(counts[r]), ++r) {
    Pairs mine_from_r;
    for (int j = at; j < at + counts[r]; ++j) {
      if (all.indices[j] / region != rank) continue;
      mine_from_r.values.push_back(all.values[j]), mine_from_r.indices.push_back(all.indices[j]);
    }
    reduced = merge_pairs(reduced, mine_from_r);
  }
  if (x.bucket.exact_threshold) {
    Pairs top = largest_pairs(gather_all(comm, reduced, what), x.bucket.sent_elements);
    float smallest = top.size() ? std::fabs(top.values[0]) : 0.0f;
    for (float v : top.values) smallest = std::min(smallest, std::fabs(v));
    *x.reused_threshold = smallest;
    set_result(x, std::move(top));
    return;
  }
  Pairs kept;
  for (size_t j = 0; j < reduced.size(); ++j) {
    if (!(std::fabs(reduced.values[j]) >= *x.reused_threshold)) continue;
    kept.values.push_back(reduced.values[j]), kept.indices.push_back(reduced.indices[j]);
  }
  set_result(x, gather_all(comm, kept, what));
}

// HiPress's CaSync ring: the range's K partitions of ceil(n/K) elements
// travel the ring at once, partition j starting at rank j. The rank holding
// a partition adds its own dense values to what it received (own +
// received) and re-encodes: the partition's CasyncLayout::pairs(j) largest
// magnitudes.
// After P - 1 hops partition j's last holder, rank j - 1 mod P, has the
// whole sum encoded, and every rank gathers the K finished partitions.
void casync_ring(BucketExchange& x, Communicator& comm) {
  const int P = comm.size(), rank = comm.rank();
  const std::string what = describe_flush(x);
  const CasyncLayout parts(x.bucket.elements, x.bucket.partitions, x.bucket.density);
  if (parts.count > P) {
    throw std::logic_error(fmt::format("{}: {} CaSync partitions on {} ranks (SeCoPa plans at most one per rank)", what,
                                       parts.count, P));
  }
  // The partition this rank holds at hop H, or -1.
  auto held = [&](int h) {
    const int j = ((rank - h) % P + P) % P;
    return j < parts.count ? j : -1;
  };
  auto encode = [&](int j, const Pairs& received) {
    Pairs own;
    for (int64_t i = parts.begin(j); i < parts.end(j); ++i) own.values.push_back(x.dense[i]), own.indices.push_back(int32_t(i));
    return largest_pairs(merge_pairs(own, received), parts.pairs(j));
  };
  Pairs current = held(0) >= 0 ? encode(held(0), {}) : Pairs{};
  x.sent_count = 0;
  for (int h = 1; h < P; ++h) {
    const bool sends = held(h - 1) >= 0;
    if (sends) x.sent_count += int64_t(current.size());
    const std::vector<Pairs> got = exchange_round(comm, current, sends ? (rank + 1) % P : -1, what);
    current = held(h) >= 0 ? encode(held(h), got.empty() ? Pairs{} : got.front()) : Pairs{};
  }
  x.sent_count += int64_t(current.size());
  std::vector<int64_t> counts;
  const Pairs all = gather_all(comm, current, what, &counts);
  // The pieces arrive in rank order; partitions are disjoint, so merging them restores index order.
  Pairs result;
  for (int r = 0, at = 0; r < P; at += int(counts[size_t(r)]), ++r) {
    Pairs piece;
    piece.values.assign(all.values.begin() + at, all.values.begin() + at + counts[size_t(r)]);
    piece.indices.assign(all.indices.begin() + at, all.indices.begin() + at + counts[size_t(r)]);
    result = merge_pairs(result, piece);
  }
  set_result(x, std::move(result));
}

}  // namespace

void run_sparse_allreduce(BucketExchange& x, Communicator& comm) {
  const auto& b = x.bucket;
  switch (b.sparse) {
    case SparseAllreduce::kSharedIndices:
      comm.allreduce_sum(x.values.data(), x.values.data(), int64_t(x.values.size()));
      set_result(x, own_pairs(x));
      return;
    case SparseAllreduce::kGTopk:
      gtopk(x, comm);
      return;
    case SparseAllreduce::kSparDL:
      spardl(x, comm, b.elements);
      return;
    case SparseAllreduce::kTopkDsa:
      topk_dsa(x, comm);
      return;
    case SparseAllreduce::kOkTopk:
      if (!x.reused_threshold) throw std::logic_error("Ok-Topk needs the bucket's threshold slot");
      oktopk(x, comm);
      return;
    case SparseAllreduce::kCaSyncRing:
      casync_ring(x, comm);
      return;
    default:
      throw std::logic_error(fmt::format("the runtime has no sparse allreduce \"{}\"",
                                         policy::sparse_allreduce_name(b.sparse)));
  }
}

void apply_sparse_result(const BucketExchange& x, const ModelLayout& layout, int ranks, float* aggregate) {
  float* range = aggregate + layout.offset[x.bucket.first_tensor];
  std::fill(range, range + x.bucket.elements, 0.0f);
  for (size_t j = 0; j < x.gathered_indices.size(); ++j) {
    range[x.gathered_indices[j]] = x.gathered_values[j] / float(ranks);
  }
}

}  // namespace sparsefuse::runtime
