#include "sim/alignment.h"

#include <algorithm>
#include <numeric>

namespace sparsefuse::sim {

using policy::Alignment;

void Contributions::add(int64_t bytes) {
  sum += bytes;
  min = std::min(min, bytes);
  max = std::max(max, bytes);
}

static model::CollectiveCost plus(model::CollectiveCost a, model::CollectiveCost b) {
  return {a.latency_ns + b.latency_ns, a.transfer_ns + b.transfer_ns};
}

model::CollectiveCost operation_cost(const model::NetworkModel& network, const policy::Bucket& b, const Contributions& c) {
  if (b.collective != Collective::kAllgather) return network.collective_cost(b.collective, c.max);
  switch (b.alignment) {
    case Alignment::kFixed:
      return c.min == c.max ? network.collective_cost(Collective::kAllgather, c.max)
                            : network.allgatherv_cost(c.sum, c.min);
    case Alignment::kExchangeCounts:
      return plus(network.collective_cost(Collective::kAllgather, 8), network.allgatherv_cost(c.sum, c.min));
    case Alignment::kPadToMax:
      return plus(network.collective_cost(Collective::kAllreduce, 8),
                  network.collective_cost(Collective::kAllgather, c.max));
    case Alignment::kEqualSlices:
      return network.allgatherv_cost(c.sum, c.min);
  }
  return {};
}

int64_t bytes_on_wire(const policy::Bucket& b, const Contributions& c, int64_t own) {
  return b.collective == Collective::kAllgather && b.alignment == Alignment::kPadToMax ? c.max : own;
}

double equal_slices_loss(const std::vector<int64_t>& pairs, int64_t elements) {
  const int64_t P = int64_t(pairs.size());
  const int64_t total = std::accumulate(pairs.begin(), pairs.end(), int64_t(0));
  const int64_t slice = total / P;
  if (slice == 0) return double(total);
  double lost = double(total - slice * P);
  size_t worker = 0;
  int64_t worker_end = pairs[0], position = 0;
  for (int64_t j = 0; j < P; ++j) {
    const int64_t slice_end = (j + 1) * slice;
    double sum = 0, sum_sq = 0;
    while (position < slice_end) {
      while (position >= worker_end) worker_end += pairs[++worker];
      double take = double(std::min(worker_end, slice_end) - position);
      sum += take;
      sum_sq += take * take;
      position += int64_t(take);
    }
    lost += (sum * sum - sum_sq) / 2 / double(elements);
  }
  return lost;
}

}  // namespace sparsefuse::sim
