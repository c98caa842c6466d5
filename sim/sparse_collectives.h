// Costs of the sparse collectives (baselines.md §1.2, §3.2, §3.5, §3.6,
// §4.3), one function per algorithm, for p workers each contributing k
// (value, int32 index) pairs (8 bytes) selected from n elements. Dense
// collectives (the allgather of TopkA, the allreduce of shared-index
// random-k) are whatever the network model says; the point-to-point
// algorithms use the alpha and beta that the network model's ring allgather
// implies (T(m) = (p-1) alpha + (p-1) m beta), so on the flat network they
// are exactly its latency and bandwidth. Compute on the critical path
// (per-round top-k, merges, threshold passes) is part of the latency term:
// it does not share bandwidth. Top-k times come from the compression cost
// curves; memory passes run at compression.gpu_memory_gbytes_per_s.
//
// "bytes_sent" is what the busiest worker puts on the wire; "result_pairs"
// what every worker then scatter-adds into its dense copy (the simulator
// charges that as decompression). Whether supports grow: TopkA's result is
// the union of p selections (p k pairs); TopkDSA's messages grow by union
// each round (min(2^r k, n) entries, sent dense once that is smaller);
// gTop-k and SparDL re-select after every merge, so nothing grows; Ok-Topk's
// regions receive up to p k/p entries, re-selected to the global k, except
// that an exact-threshold iteration allgathers every reduced value.
#pragma once

#include <functional>

#include "policy/bucket.h"
#include "sim/alignment.h"
#include "model/compression_cost.h"
#include "model/network.h"

namespace sparsefuse::sim {

// A dense collective's cost alone on the network: the network model's answer.
using DenseCost = std::function<model::CollectiveCost(Collective, int64_t bytes_per_worker)>;

struct LinkCost {
  double alpha_ns = 0;     // per message
  double ns_per_byte = 0;  // beta
};
LinkCost infer_link_cost(const DenseCost& dense, int workers);

struct SparseCollectiveCost {
  model::CollectiveCost time;       // latency_ns includes compute_ns
  double bytes_sent = 0;     // by the busiest worker
  int rounds = 0;            // message rounds on the critical path
  TimeNs compute_ns = 0;     // selection, merges and passes on the critical path
  int64_t result_pairs = 0;  // scattered into the dense copy afterwards (0: nothing to scatter)
};

class SparseCollectives {
 public:
  SparseCollectives(DenseCost dense, int workers, const model::CompressionCost& compression);

  // TopkA: ring allgather of K pairs per worker; the union is p K pairs.
  SparseCollectiveCost topk_allgather(int64_t k) const;
  // Random-k with a shared seed: allreduce of K fp32 values.
  SparseCollectiveCost shared_index_allreduce(int64_t k) const;
  // gTop-k: ceil(log2 p) tree-reduction rounds of (alpha + 8k beta), each
  // followed by a top-k of the 2k merged entries, then ceil(log2 p)
  // broadcast rounds of (alpha + 8k beta).
  SparseCollectiveCost gtopk(int64_t k) const;
  // SparDL: blocks of b = ceil(n/p) elements keeping kb = max(1,
  // floor(b density)) pairs. Spar-Reduce-Scatter: ceil(log2 p) rounds, round
  // i sends s_i blocks (s_0 = p - 2^(ceil(log2 p)-1), then halving, sum p-1)
  // and re-selects one block (top-k of b) on the critical path;
  // Spar-All-Gather (one team): Bruck, ceil(log2 p) rounds, (p-1) kb pairs.
  SparseCollectiveCost spardl(int64_t n, double density) const;
  // Ok-Topk with kr = ceil(k/p) pairs per region per worker and regions of
  // ceil(n/p) elements: [threshold-reuse compare of the n local elements,
  // 4n bytes at memory bandwidth, unless EXACT (the worker then ran an exact
  // top-k itself)] + alltoall of counts ((p-1)(alpha + 4 beta)) +
  // split-and-reduce ((p-1) alpha + (p-1) 8kr beta) + region reduction
  // (scatter-add of (p-1) kr pairs into the region) and threshold compare +
  // [EXACT: allgatherv of the u = min(p kr, region) reduced values ((p-1)
  // (alpha + 4u beta)) and a top-k of p u values to k] + balance (allgather
  // of counts, (p-1)(alpha + 4 beta); the balanced regions leave nothing to
  // move) + allgatherv of the kr global pairs per owner ((p-1) alpha + (p-1)
  // 8kr beta) + [REPARTITION: a dense allreduce of p-1 int32 boundaries].
  SparseCollectiveCost oktopk(int64_t n, int64_t k, bool exact, bool repartition) const;
  // SparCML-style recursive doubling with union: ceil(log2 p) rounds, round
  // r sends min(8 min(2^r k, n), 4n) bytes (dense once that is smaller).
  SparseCollectiveCost topk_dsa(int64_t n, int64_t k) const;
  // HiPress CaSync ring, K partitions: policy/hipress.h's SeCoPa T_cpr with
  // the simulator's primitives (decode = the decompression cost, aggregate
  // = a 12-byte-per-element memory pass). Decoding is inside: nothing to
  // scatter afterwards.
  SparseCollectiveCost casync_ring(int64_t n, double density, int partitions, policy::Sparsifier compressor) const;

  // The bucket's algorithm with every worker's contribution C (bytes).
  SparseCollectiveCost cost(const policy::Bucket& bucket, const Contributions& c) const;
  const LinkCost& link() const { return link_; }

 private:
  SparseCollectiveCost from_parts(double latency_ns, double transfer_ns) const;
  double topk_ns(int64_t elements, double density) const;
  double memory_pass_ns(double bytes) const;

  DenseCost dense_;
  int workers_;
  const model::CompressionCost& compression_;
  LinkCost link_;
};

}  // namespace sparsefuse::sim
