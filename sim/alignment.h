// How an allgather of contributions that may differ in size is costed, and
// what the seed code's equal-slice receiver loses (schemes.md §1.6).
#pragma once

#include <cstdint>
#include <vector>

#include "policy/bucket.h"
#include "model/network.h"

namespace sparsefuse::sim {

// Every worker's contribution (bytes) to one operation.
struct Contributions {
  int64_t sum = 0, min = INT64_MAX, max = 0;
  void add(int64_t bytes);
};

// The operation's cost alone on the network. Allgathers by alignment:
// fixed (equal sizes): ring allgather; exchange-counts: an allgather of 8-byte
// counts, then a variable-size gather; pad-to-max: an allreduce (max) of one
// count, then an allgather of the largest contribution; equal-slices: the
// variable-size gather alone (Horovod's negotiation carries the sizes).
model::CollectiveCost operation_cost(const model::NetworkModel& network, const policy::Bucket& bucket, const Contributions& c);

// Bytes a worker puts on the wire: its own contribution, or the maximum when
// padding.
int64_t bytes_on_wire(const policy::Bucket& bucket, const Contributions& c, int64_t own);

// The equal-slice receiver splits the gathered stream of PAIRS[i] pairs per
// worker into P slices of floor(total/P), drops the remainder, and within a
// slice a duplicate index overwrites instead of adding. Pairs of different
// workers in one slice collide with probability 1/ELEMENTS each (uniform,
// independent indices), so a slice holding a_i pairs of worker i loses
// sum_{i<j} a_i a_j / ELEMENTS contributions in expectation.
double equal_slices_loss(const std::vector<int64_t>& pairs, int64_t elements);

}  // namespace sparsefuse::sim
