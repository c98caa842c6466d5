// A bucket is one fused collective: a contiguous range of gradient tensors (in
// backward order) communicated together. Every worker must flush the same
// sequence of buckets; the executors check this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/collective.h"
#include "policy/sparsifier.h"

namespace sparsefuse::policy {


// How workers whose selected counts differ are aligned in an allgather
// (docs/seed-systems.md#alignment-and-the-equal-slices-receiver): counts are equal by construction (fixed k), exchanged
// first (a small allgather, then a variable-size gather), padded to the
// maximum, or gathered variably and split by the receiver into equal slices
// as the seed code does, which loses contributions.
enum class Alignment { kFixed, kExchangeCounts, kPadToMax, kEqualSlices };
std::string_view alignment_name(Alignment a);

// Sparse allreduce families (docs/baseline-systems.md#sparse-collectives). A
// bucket that uses one is a kAllreduce whose contribution is this worker's
// selection; sim/sparse_collectives costs it (anything else that reads only
// `collective` sees an allreduce of bytes_per_worker). kSharedIndices:
// random-k with a shared seed, the k values allreduced densely (4 bytes
// each, no indices); kGTopk: tree reduction with a top-k per round, then a
// broadcast; kSparDL: Spar-Reduce-Scatter + Spar-All-Gather; kOkTopk:
// split-and-reduce, balance, allgatherv; kTopkDsa: SparCML-style recursive
// doubling whose supports grow by union; kCaSyncRing: HiPress's
// compression-aware ring (decode, merge, re-encode at every hop).
enum class SparseAllreduce { kNone, kSharedIndices, kGTopk, kSparDL, kOkTopk, kTopkDsa, kCaSyncRing };
std::string_view sparse_allreduce_name(SparseAllreduce a);

struct Bucket {
  int first_tensor = 0;
  int end_tensor = 0;  // one past the last tensor
  int64_t elements = 0;        // gradient elements the bucket covers
  // A partition of one tensor (ByteScheduler): the offset of its first
  // element within first_tensor; it covers [first_element, first_element +
  // elements) of that tensor. 0 for every bucket that covers whole tensors.
  int64_t first_element = 0;
  int64_t dense_elements = 0;  // of those, sent without sparsification
  int64_t sent_elements = 0;   // this worker's elements on the wire
  int64_t bytes_per_worker = 0;  // this worker's contribution
  Collective collective = Collective::kAllreduce;
  Alignment alignment = Alignment::kFixed;
  int communicator = 0;  // collectives on one communicator run in issue order
  // Sparse allreduces only (see SparseAllreduce).
  SparseAllreduce sparse = SparseAllreduce::kNone;
  double density = 0;                         // of the selection
  Sparsifier compressor = Sparsifier::kTopk;  // CaSync: the compressor re-run at every hop
  int partitions = 1;                         // CaSync: SeCoPa's partition count K
  bool exact_threshold = false;               // Ok-Topk: thresholds recomputed exactly this iteration
  bool repartition = false;                   // Ok-Topk: regions re-balanced this iteration
  // Schemes with a launch scheduler (ByteScheduler): higher launches first.
  int priority = 0;

  int tensors() const { return end_tensor - first_tensor; }
  // Workers' contributions may differ in size (threshold sparsifiers); the
  // operation is the same if it covers the same tensors the same way.
  bool same_operation(const Bucket& other) const {
    return first_tensor == other.first_tensor && end_tensor == other.end_tensor &&
           first_element == other.first_element && collective == other.collective && communicator == other.communicator &&
           alignment == other.alignment && sparse == other.sparse && partitions == other.partitions &&
           exact_threshold == other.exact_threshold && repartition == other.repartition;
  }
};

// A dense allreduce or reduce-scatter: fp32 values the collective reduces.
bool dense_reduction(const Bucket& b);
// A payload the worker packs as (index, value) pairs before the collective:
// allgathers (sparse, or dense as pairs) and the sparse allreduces, except
// CaSync's ring, which encodes hop by hop.
bool packs_pairs(const Bucket& b);

}  // namespace sparsefuse::policy
