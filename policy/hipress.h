// HiPress (docs/baseline-systems.md#compression-systems): CaSync's compression-aware ring and SeCoPa's
// per-gradient choice of compress-or-not and partition count K.
//
// SeCoPa's ring models, for a gradient of x elements over N workers cut into
// K partitions that travel the ring in parallel:
//   T_orig(K) = 2(N-1) T_send(dense x/K) + (N-1) T_aggr(x/K)
//   T_cpr(K)  = 2(N-1) T_send(compressed x/K) + N T_enc(x/K)
//               + N T_dec(compressed x/K) + (N-1) T_aggr(x/K)
// and a gradient is compressed iff min_K T_cpr < min_K T_orig. HiPress's
// quantisers have a fixed ratio r; our compressors are sparsifiers, so a
// compressed partition of e elements is k = max(1, floor(e * density))
// (value, int32 index) pairs, 8 k bytes. The primitive costs are the
// executor's: T_send(b) = alpha + beta b (inferred from its allgather),
// T_enc = its GPU compression time, T_dec = zero-fill + scatter-add and
// T_aggr = a 12-byte-per-element add, both memory passes. The simulator
// costs a CaSync collective with the same function and its own primitives
// (sim/sparse_collectives.h), so the planner and the executor share one
// formula. Not modelled: the PS variant, CompLL's quantisers, pipelining
// across gradients beyond the simulator's FIFO communicator.
#pragma once

#include <functional>
#include <memory>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct CasyncPrimitives {
  std::function<double(double bytes)> send;                  // one message between neighbours
  std::function<double(int64_t elements)> encode;            // compress a partition
  std::function<double(int64_t elements, int64_t pairs)> decode;
  std::function<double(int64_t elements)> aggregate;         // add two dense partitions
};

// The pairs a compressed partition of a gradient of X elements in K parts carries.
int64_t casync_partition_pairs(int64_t x, int partitions, double density);

// Each split into (latency + compute, transfer) so concurrent transfers can share bandwidth.
struct CasyncTime {
  double fixed_ns = 0;     // alpha terms, encode, decode, aggregate
  double transfer_ns = 0;  // beta terms
  double total() const { return fixed_ns + transfer_ns; }
};
CasyncTime secopa_ring_orig(int workers, int partitions, int64_t x, const CasyncPrimitives& prims);
CasyncTime secopa_ring_cpr(int workers, int partitions, int64_t x, double density, const CasyncPrimitives& prims);

struct SecopaChoice {
  bool compress = false;
  int partitions = 1;
  double orig_ns = 0, cpr_ns = 0;  // the two minima
};
// K ranges over [1, min(N, x, MAX_PARTITIONS)] (MAX_PARTITIONS 0: no extra cap).
SecopaChoice secopa_choose(int workers, int64_t x, double density, const CasyncPrimitives& prims,
                           int max_partitions = 0);

struct HipressOptions {
  Sparsifier sparsifier = Sparsifier::kDgc;  // Ring-DGC
  double density = 0.01;
  double memory_gbytes_per_s = 900;  // T_dec and T_aggr in the planner
  int max_partitions = 0;
};

// Per gradient tensor: compressed ones use the CaSync ring with their K, the
// others a dense allreduce.
std::unique_ptr<Scheme> make_hipress_scheme(const GradientModel& model, const CostEstimator& cost,
                                            const HipressOptions& options);

}  // namespace sparsefuse::policy
