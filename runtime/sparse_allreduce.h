// Sparse allreduces over the Communicator (policy/bucket.h SparseAllreduce),
// run on the communication thread for a bucket whose payload is this rank's
// selection over the bucket's range: (value, index) pairs, indices relative
// to the range start, ascending. Each leaves the summed result (ascending,
// unique indices) in exchange.gathered_values / gathered_indices; the
// average is that sum / P (apply_sparse_result).
//
// Point-to-point messages travel as a variable gather in which only the
// senders contribute (exchange_round): the data each receiver uses is what
// its sender sent, bit for bit, but every rank receives every message, so
// these collectives move more bytes than MPI_Send would.
//
//  - randomk-shared: every rank selected the same indices (shared seed), so
//    the k values are allreduced densely (allreduce_sum: the library's
//    reduction order);
//  - gtopk: ceil(log2 P) tree rounds: in round s = 1, 2, 4, ..., rank r with
//    r mod 2s == s sends its pairs to r - s, which adds them to its own
//    (receiver's value + sender's value) and keeps the k largest magnitudes
//    (ties: lower index); rank 0's final k pairs then go to every rank;
//  - spardl: the range splits into P blocks of b = ceil(n/P) elements (block
//    j owned by rank j), each block keeping kb = max(1, floor(b density))
//    pairs. Spar-Reduce-Scatter halves the rank group each round (lower half
//    = the first ceil(size/2) ranks): a rank keeps the blocks of its half,
//    sends its pairs in the other half's blocks to its partner (lower rank i
//    -> upper rank min(i, U-1); upper rank j -> lower rank j), adds what it
//    receives in rank order and re-selects kb per kept block. After
//    ceil(log2 P) rounds each rank holds its own block; Spar-All-Gather
//    gathers them (rank order = block order);
//  - topk-dsa: recursive doubling with union (nothing dropped): every rank
//    ends with the sum of all selections, added in the doubling's order.
//    (The simulator's switch to dense messages once a union outgrows them is
//    a cost detail: the runtime always sends pairs.)
//  - oktopk: the rank's pairs come from an exact top-k (exact iterations)
//    or its reused local threshold (runtime/oktopk.h); split-and-reduce
//    sums region j (ceil(n/P) elements) at rank j in rank order; the global
//    selection is the top-k of all reduced values on an exact iteration
//    (its smallest magnitude is kept in exchange.reused_threshold), else
//    the reduced values whose magnitude reaches that threshold; the kept
//    pairs are gathered by every rank. Regions stay equal: a repartition
//    iteration moves nothing (the simulator charges its boundary exchange);
//  - casync-ring (HiPress): no selection comes in; the bucket carries its
//    range dense (exchange.dense) and the ring encodes: K =
//    bucket.partitions partitions (CasyncLayout) go round the ring at once,
//    partition j from rank j to rank j - 1 mod P; each holder adds its own
//    values to what it received (own + received) and keeps the partition's
//    pairs(j) largest magnitudes (ties: lower index), then every rank
//    gathers the finished partitions. The encoder is this exact top-k
//    whatever bucket.compressor says (HiPress re-runs its compressor; a
//    threshold estimator at every hop would leave --check nothing exact to
//    compare, and the simulator still charges bucket.compressor's cost).
//    sent_count is the pairs this rank put on the wire (hops + its
//    finished partition): K pairs(j) summed over partitions on average.
// Entries a merge drops are not returned to any residual (the selection's
// error feedback is the local compressor's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/exchange.h"

namespace sparsefuse::runtime {

struct Pairs {
  std::vector<float> values;
  std::vector<int32_t> indices;  // ascending
  size_t size() const { return indices.size(); }
};

// A + B by index (A's value + B's value where both hold one).
Pairs merge_pairs(const Pairs& a, const Pairs& b);
// The K entries of largest magnitude (ties: lower index), ascending by index.
Pairs largest_pairs(const Pairs& p, int64_t k);

// One round of point-to-point messages: this rank sends OUT to DEST (-1:
// sends nothing). Returns what was sent to this rank, in sender rank order.
// WHAT names the flush in errors (a sender whose pairs disagree with its count).
std::vector<Pairs> exchange_round(Communicator& comm, const Pairs& out, int dest, const std::string& what);

// SparDL's schedule for group [lo, hi) and rank R in it: the half R keeps
// ([keep_lo, keep_hi)) and the rank it sends the other half to.
struct HalvingStep {
  int keep_lo = 0, keep_hi = 0, partner = 0;
};
HalvingStep halving_step(int lo, int hi, int rank);
int ceil_log2(int p);  // rounds of the tree and of the halving
// SparDL's block size and per-block count for a range of N elements.
int64_t spardl_block(int64_t n, int ranks);
int64_t spardl_block_count(int64_t n, int ranks, double density);

// CaSync's partitions of a range of N elements: COUNT = K of ceil(N/K)
// elements each (the last ones shorter or empty), each encoded to
// min(length, exact_count(length, density)) pairs.
struct CasyncLayout {
  CasyncLayout(int64_t n, int partitions, double density);
  int count = 1;
  int64_t begin(int j) const;
  int64_t end(int j) const;
  int64_t pairs(int j) const;

 private:
  int64_t n_ = 0, size_ = 0;
  double density_ = 0;
};

void run_sparse_allreduce(BucketExchange& exchange, Communicator& comm);
// Writes the average (sum / RANKS) into AGGREGATE over the bucket's range
// (0 where the result has no entry).
void apply_sparse_result(const BucketExchange& exchange, const ModelLayout& layout, int ranks, float* aggregate);

}  // namespace sparsefuse::runtime
