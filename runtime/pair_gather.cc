#include "runtime/pair_gather.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace sparsefuse::runtime {

namespace {

// SplitMix64's finaliser: every input bit reaches every output bit.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t pair_checksum(const float* values, const int32_t* indices, int64_t count) {
  uint64_t sum = 0, weighted = 0;
  for (int64_t j = 0; j < count; ++j) {
    uint32_t bits;
    std::memcpy(&bits, &values[j], sizeof bits);
    sum += uint64_t(bits) << 32 | uint32_t(indices[j]);
    weighted += sum;
  }
  return mix(sum ^ mix(weighted ^ uint64_t(count)));
}

std::vector<Announcement> announce(Communicator& comm, const Announcement& mine) {
  const int64_t words[3] = {mine.count, mine.tag, int64_t(mine.checksum)};
  const std::vector<int64_t> all = comm.allgather(words, 3);
  std::vector<Announcement> announced(size_t(comm.size()));
  for (size_t r = 0; r < announced.size(); ++r) announced[r] = {all[3 * r], all[3 * r + 1], uint64_t(all[3 * r + 2])};
  return announced;
}

std::vector<Announcement> announce_pairs(Communicator& comm, const float* values, const int32_t* indices,
                                         int64_t count, int64_t tag) {
  return announce(comm, {count, tag, pair_checksum(values, indices, count)});
}

void verify_pairs(const std::vector<Announcement>& announced, const std::vector<int64_t>& block_counts,
                  const float* values, const int32_t* indices, const std::string& what) {
  int64_t at = 0;
  for (size_t r = 0; r < announced.size(); at += block_counts[r], ++r) {
    const Announcement& a = announced[r];
    if (a.count <= block_counts[r] && pair_checksum(values + at, indices + at, a.count) == a.checksum) continue;
    throw std::runtime_error(fmt::format(
        "rank {}'s pairs in {} are not the {} it announced (checksum {:016x}): its count and its payload disagree",
        r, what, a.count, a.checksum));
  }
}

std::vector<Announcement> gather_pairs(Communicator& comm, const float* values, const int32_t* indices, int64_t count,
                                       int64_t tag, std::vector<float>& out_values, std::vector<int32_t>& out_indices,
                                       const std::string& what) {
  std::vector<Announcement> announced = announce_pairs(comm, values, indices, count, tag);
  std::vector<int64_t> counts(announced.size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) total += counts[r] = announced[r].count;
  out_values.resize(size_t(total));
  out_indices.resize(size_t(total));
  comm.allgatherv(values, indices, counts, out_values.data(), out_indices.data());
  verify_pairs(announced, counts, out_values.data(), out_indices.data(), what);
  return announced;
}

}  // namespace sparsefuse::runtime
