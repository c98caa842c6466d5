// Every variable-size gather of (value, index) pairs in the runtime goes
// through here: each rank first announces its count, a tag the caller
// chooses (a bucket fingerprint, a destination rank) and a checksum of its
// pairs; after the gather every rank checks each block against its sender's
// checksum. A rank whose payload disagrees with the count it announced (a
// short send, a corrupted buffer) then ends the run with an error naming
// that rank, instead of its neighbours' pairs being read as its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/communicator.h"

namespace sparsefuse::runtime {

struct Announcement {
  int64_t count = 0, tag = 0;
  uint64_t checksum = 0;
};

// A plain and a position-weighted (Fletcher-style) 64-bit sum over the
// pairs' bits, mixed with the count: a shifted, missing or changed pair
// changes it. One pass, cheap next to the gather it guards.
uint64_t pair_checksum(const float* values, const int32_t* indices, int64_t count);

// One allgather of every rank's announcement.
std::vector<Announcement> announce(Communicator& comm, const Announcement& mine);
// announce() of (count, tag, checksum of its COUNT pairs).
std::vector<Announcement> announce_pairs(Communicator& comm, const float* values, const int32_t* indices,
                                         int64_t count, int64_t tag);

// Checks the gathered stream: rank r's block starts after the BLOCK_COUNTS
// of the ranks before it, and its first announced count pairs must match its
// checksum (pad-to-max blocks are longer: padding follows). Throws
// std::runtime_error naming the first rank that does not, and WHAT.
void verify_pairs(const std::vector<Announcement>& announced, const std::vector<int64_t>& block_counts,
                  const float* values, const int32_t* indices, const std::string& what);

// announce_pairs, the gather and verify_pairs: every rank's pairs in rank
// order (OUT_VALUES/OUT_INDICES resized to fit), the announcements returned.
std::vector<Announcement> gather_pairs(Communicator& comm, const float* values, const int32_t* indices, int64_t count,
                                       int64_t tag, std::vector<float>& out_values, std::vector<int32_t>& out_indices,
                                       const std::string& what);

}  // namespace sparsefuse::runtime
