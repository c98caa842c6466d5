// The rings a ring collective runs on a cluster topology, routed hop by hop,
// and the bus bandwidth they allow. A ring collective moves its buffer
// around C rings (NCCL's channels) at once, 1/C of the data each; every
// transfer of every ring crosses the links of its route, so a link carrying
// L transfers at capacity B gives the collective a bus bandwidth of at most
// C x B / L. Shared NICs, a leaf's few uplinks in an oversubscribed fat-tree
// and a ring order that crosses nodes at every step all show up as a
// heavily loaded link.
#pragma once

#include <vector>

#include "model/netmodel/topology.h"

namespace sparsefuse::netmodel {

enum class RingOrder {
  // As NCCL's topology search builds them: every ring visits the nodes in
  // order and all of a node's GPUs in a row, so each ring crosses each node
  // boundary once whatever the rank placement. Ring c enters every node at
  // the first GPU behind NIC (c mod NICs per node) and walks the node's GPUs
  // from there, so successive rings leave through successive NICs.
  kTopology,
  // Ranks in rank order (0, 1, ..., P-1), every ring alike: MPI's and Gloo's
  // ring allreduce. With spread placement every step crosses nodes.
  kRank,
};

// CHANNELS rings of all ranks, in ring order.
std::vector<std::vector<int>> channel_rings(const Topology& topology, int channels, RingOrder order);

struct RingBottleneck {
  double bus_bandwidth_gbs = 0;  // C x min over links of capacity / transfers (infinite: no link)
  int link = -1;                 // the bottleneck link (-1: none)
  double transfers = 0;          // transfers on it, summed over rings (fractional with ECMP)
};

// The bus bandwidth RINGS allow on TOPOLOGY, each ring carrying an equal
// share; traffic between nodes spread over equal-cost fabric paths
// (Topology::add_spread_load). Fabric links (NIC to switch and between
// switches) count at FABRIC_SCALE x their line rate: the fraction the
// transport achieves (Transport::achievable_gbps).
RingBottleneck ring_bottleneck(const Topology& topology, const std::vector<std::vector<int>>& rings,
                               double fabric_scale = 1.0);

}  // namespace sparsefuse::netmodel
