// A bucket is one fused collective: a contiguous range of gradient tensors (in
// backward order) communicated together. Every worker must flush the same
// sequence of buckets; the executors check this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sparsefuse::policy {

enum class Collective { kAllreduce, kAllgather, kReduceScatter, kBroadcast };
std::string_view collective_name(Collective c);

// How workers whose selected counts differ are aligned in an allgather
// (schemes.md §1.6): counts are equal by construction (fixed k), exchanged
// first (a small allgather, then a variable-size gather), padded to the
// maximum, or gathered variably and split by the receiver into equal slices
// as the seed code does, which loses contributions.
enum class Alignment { kFixed, kExchangeCounts, kPadToMax, kEqualSlices };
std::string_view alignment_name(Alignment a);

struct Bucket {
  int first_tensor = 0;
  int end_tensor = 0;  // one past the last tensor
  int64_t elements = 0;        // gradient elements the bucket covers
  int64_t dense_elements = 0;  // of those, sent without sparsification
  int64_t sent_elements = 0;   // this worker's elements on the wire
  int64_t bytes_per_worker = 0;  // this worker's contribution
  Collective collective = Collective::kAllreduce;
  Alignment alignment = Alignment::kFixed;
  int communicator = 0;  // collectives on one communicator run in issue order

  int tensors() const { return end_tensor - first_tensor; }
  // Workers' contributions may differ in size (threshold sparsifiers); the
  // operation is the same if it covers the same tensors the same way.
  bool same_operation(const Bucket& other) const {
    return first_tensor == other.first_tensor && end_tensor == other.end_tensor &&
           collective == other.collective && communicator == other.communicator &&
           alignment == other.alignment;
  }
};

}  // namespace sparsefuse::policy
