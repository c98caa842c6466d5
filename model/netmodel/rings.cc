#include "model/netmodel/rings.h"

#include <limits>
#include <numeric>
#include <stdexcept>

namespace sparsefuse::netmodel {

std::vector<std::vector<int>> channel_rings(const Topology& topology, int channels, RingOrder order) {
  if (channels < 1) throw std::invalid_argument("channel_rings: channels must be positive");
  std::vector<std::vector<int>> rings(static_cast<size_t>(channels));
  const int nodes = topology.config().nodes, gpus = topology.config().gpus_per_node;
  const int nics = topology.config().nics_per_node;
  for (int c = 0; c < channels; ++c) {
    std::vector<int>& ring = rings[size_t(c)];
    ring.reserve(size_t(topology.ranks()));
    if (order == RingOrder::kRank) {
      ring.resize(size_t(topology.ranks()));
      std::iota(ring.begin(), ring.end(), 0);
      continue;
    }
    // First GPU behind NIC (c mod nics): GPU i uses NIC floor(i * nics / gpus).
    const int nic = c % nics;
    const int entry = (nic * gpus + nics - 1) / nics;
    for (int n = 0; n < nodes; ++n) {
      for (int i = 0; i < gpus; ++i) ring.push_back(topology.rank_at(n, (entry + i) % gpus));
    }
  }
  return rings;
}

RingBottleneck ring_bottleneck(const Topology& topology, const std::vector<std::vector<int>>& rings,
                               double fabric_scale) {
  RingBottleneck b;
  b.bus_bandwidth_gbs = std::numeric_limits<double>::infinity();
  std::vector<double> load(size_t(topology.links()), 0.0);
  for (const auto& ring : rings) {
    if (ring.size() < 2) continue;
    for (size_t i = 0; i < ring.size(); ++i) topology.add_spread_load(ring[i], ring[(i + 1) % ring.size()], 1.0, load);
  }
  for (int l = 0; l < topology.links(); ++l) {
    if (load[size_t(l)] <= 0) continue;
    const Link& link = topology.link(l);
    const double capacity = link.capacity_bytes_per_ns * (link.kind == LinkKind::kFabric ? fabric_scale : 1.0);
    const double bus = double(rings.size()) * capacity / load[size_t(l)];
    if (bus < b.bus_bandwidth_gbs) {
      b.bus_bandwidth_gbs = bus;
      b.link = l;
      b.transfers = load[size_t(l)];
    }
  }
  return b;
}

}  // namespace sparsefuse::netmodel
