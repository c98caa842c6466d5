#include "runtime/communicator.h"

#include <algorithm>
#include <stdexcept>

namespace sparsefuse::runtime {

void LoopbackCommunicator::allreduce_sum(const float* send, float* recv, int64_t n) {
  if (send != recv) std::copy(send, send + n, recv);
}

void LoopbackCommunicator::reduce_scatter_sum(const float* in, float* out, int64_t n) { std::copy(in, in + n, out); }

void LoopbackCommunicator::allgather_values(const float* in, float* out, int64_t n) { std::copy(in, in + n, out); }

std::vector<int64_t> LoopbackCommunicator::allgather(const int64_t* mine, int n) {
  return std::vector<int64_t>(mine, mine + n);
}

void LoopbackCommunicator::allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
                                      float* all_values, int32_t* all_indices) {
  if (counts.size() != 1) throw std::logic_error("loopback allgatherv: expected one count");
  std::copy(values, values + counts[0], all_values);
  std::copy(indices, indices + counts[0], all_indices);
}

}  // namespace sparsefuse::runtime
