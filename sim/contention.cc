#include "sim/contention.h"

#include <numeric>

#include "model/netmodel/maxmin.h"

namespace sparsefuse::sim {

LinkContention::LinkContention(const netmodel::Topology& topology) : capacity_(topology.capacities()) {
  std::vector<int> ring(size_t(topology.ranks()));
  std::iota(ring.begin(), ring.end(), 0);
  for (const auto& transfer : topology.ring_transfers(ring)) ring_links_.insert(ring_links_.end(), transfer.begin(), transfer.end());
  if (!ring_links_.empty()) alone_rate_ = netmodel::max_min_rates(capacity_, {netmodel::Flow{ring_links_}})[0];
}

void LinkContention::speeds(int n, std::vector<double>& out) const {
  if (size_t(n) >= cache_.size()) cache_.resize(size_t(n) + 1, 0.0);
  if (ring_links_.empty()) return out.assign(size_t(n), 1.0 / n);  // one rank: nothing crosses a link
  if (cache_[size_t(n)] == 0.0) {
    std::vector<netmodel::Flow> flows(size_t(n), netmodel::Flow{ring_links_});
    cache_[size_t(n)] = netmodel::max_min_rates(capacity_, flows)[0] / alone_rate_;
  }
  out.assign(size_t(n), cache_[size_t(n)]);
}

}  // namespace sparsefuse::sim
