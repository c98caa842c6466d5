// Rings routed hop by hop: the bus bandwidth they allow, by hand.
#include "model/netmodel/rings.h"

#include <gtest/gtest.h>

namespace sparsefuse::netmodel {
namespace {

// N nodes x G GPUs on NVSwitch (450 GB/s per GPU per direction), K NICs per
// node at NIC_GBPS, GPU-NIC attachment PCIe Gen5 (64 GB/s), one switch.
TopologyConfig cluster(int nodes, int gpus, int nics, double nic_gbps) {
  TopologyConfig c;
  c.nodes = nodes;
  c.gpus_per_node = gpus;
  c.intra = IntraKind::kNVSwitch;
  c.intra_gbps = 3600;
  c.nics_per_node = nics;
  c.nic_gbps = nic_gbps;
  c.nic_pcie_gbps = 512;
  c.fabric = FabricKind::kSingleSwitch;
  return c;
}

// ring_bottleneck at the line rate (fabric scale 1).
double bus(const TopologyConfig& c, int channels, RingOrder order) {
  Topology t(c);
  return ring_bottleneck(t, channel_rings(t, channels, order)).bus_bandwidth_gbs;
}

TEST(Rings, TopologyOrderVisitsNodesInTurnAndRotatesTheEntryGpu) {
  TopologyConfig c = cluster(2, 4, 2, 100);
  c.placement = Placement::kSpread;  // rank r on node r % 2, GPU r / 2
  Topology t(c);
  auto rings = channel_rings(t, 3, RingOrder::kTopology);
  ASSERT_EQ(rings.size(), 3u);
  // Ring 0 enters each node at GPU 0 (NIC 0), ring 1 at GPU 2 (the first
  // behind NIC 1), ring 2 at GPU 0 again. Node 0's GPU i is rank 2i, node 1's 2i + 1.
  EXPECT_EQ(rings[0], (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(rings[1], (std::vector<int>{4, 6, 0, 2, 5, 7, 1, 3}));
  EXPECT_EQ(rings[2], rings[0]);
  EXPECT_EQ(channel_rings(t, 2, RingOrder::kRank)[1], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Rings, ASharedNicCarriesOneRingEdgePerChannel) {
  // 3 nodes x 8 GPUs behind one 100 Gb/s NIC (12.5 GB/s), 2 channels: each
  // ring leaves every node once, so a NIC's uplink carries 2 transfers:
  // bus = 2 x 12.5 / 2 = 12.5 GB/s, the node's NIC (not one GPU's eighth of it).
  TopologyConfig c = cluster(3, 8, 1, 100);
  Topology t(c);
  RingBottleneck b = ring_bottleneck(t, channel_rings(t, 2, RingOrder::kTopology));
  EXPECT_DOUBLE_EQ(b.bus_bandwidth_gbs, 12.5);
  EXPECT_DOUBLE_EQ(b.transfers, 2);
  EXPECT_EQ(t.link(b.link).kind, LinkKind::kFabric);
  EXPECT_DOUBLE_EQ(bus(c, 2, RingOrder::kRank), 12.5);  // packed rank order is node order here
}

TEST(Rings, SpreadPlacementMattersOnlyToRankOrderRings) {
  // 2 nodes x 4 GPUs, one 10 Gb/s NIC (1.25 GB/s) each. Spread placement puts
  // consecutive ranks on different nodes: a rank-order ring crosses nodes at
  // every step, 4 transfers per ring on each NIC: bus = C x 1.25 / 4C = 0.3125.
  TopologyConfig c = cluster(2, 4, 1, 10);
  EXPECT_DOUBLE_EQ(bus(c, 2, RingOrder::kRank), 1.25);
  EXPECT_DOUBLE_EQ(bus(c, 2, RingOrder::kTopology), 1.25);
  c.placement = Placement::kSpread;
  EXPECT_DOUBLE_EQ(bus(c, 2, RingOrder::kRank), 0.3125);
  EXPECT_DOUBLE_EQ(bus(c, 2, RingOrder::kTopology), 1.25);  // NCCL groups by node
}

TEST(Rings, AnOversubscribedLeafLimitsRingsOfMultiNicNodes) {
  // 2 nodes x 4 GPUs x 4 NICs at 100 Gb/s (12.5 GB/s), 4 channels: ring c
  // leaves a node through NIC (c + 3) mod 4 and enters the next through NIC c.
  TopologyConfig c = cluster(2, 4, 4, 100);
  // One switch: every NIC carries one ring edge out: bus = 4 x 12.5 / 1 = 50.
  EXPECT_DOUBLE_EQ(bus(c, 4, RingOrder::kTopology), 50);
  // Fat-tree, radix 8, oversubscription 1: 4 NICs down and 4 spines up per
  // leaf, one node per leaf. Each ring's node-crossing edge is spread over the
  // 4 uplinks (1/4 each), 4 rings: 1 transfer per uplink: still 50.
  c.fabric = FabricKind::kFatTree;
  c.radix = 8;
  EXPECT_DOUBLE_EQ(bus(c, 4, RingOrder::kTopology), 50);
  // Radix 5, oversubscription 2: 4 down, 1 up (1 spine): the single uplink
  // carries all 4 rings' edges: bus = 4 x 12.5 / 4 = 12.5.
  c.radix = 5;
  c.oversubscription = 2;
  EXPECT_DOUBLE_EQ(bus(c, 4, RingOrder::kTopology), 12.5);
}

TEST(Rings, DgxNodesOnAFatTreeSlowDownWithOversubscription) {
  // 16 nodes x 8 GPUs x 8 NICs at 400 Gb/s, radix 64, 16 channels. Each NIC
  // carries 2 ring edges: bus = 16 x 50 / 2 = 400 GB/s unless the core binds.
  // Oversubscription 1 (32 up, 4 nodes per leaf): it does not. 16 (3 up per
  // leaf): a leaf's 16 ring edges out share 3 uplinks: at most 16 x 50 / (16/3) = 150.
  TopologyConfig c = cluster(16, 8, 8, 400);
  c.fabric = FabricKind::kFatTree;
  c.radix = 64;
  double last = 1e300;
  std::vector<double> seen;
  for (double s : {1.0, 4.0, 16.0}) {
    c.oversubscription = s;
    double b = bus(c, 16, RingOrder::kTopology);
    EXPECT_LE(b, last * (1 + 1e-12)) << s;
    last = b;
    seen.push_back(b);
  }
  EXPECT_DOUBLE_EQ(seen[0], 400);
  EXPECT_LE(seen[2], 150 * (1 + 1e-12));
}

TEST(Rings, SpreadLoadSplitsAcrossSpinesAndStaysInTheNode) {
  TopologyConfig c = cluster(16, 1, 1, 100);
  c.fabric = FabricKind::kFatTree;
  c.radix = 8;  // 4 NICs per leaf, 4 spines
  Topology t(c);
  std::vector<double> load(size_t(t.links()), 0.0);
  t.add_spread_load(0, 5, 1.0, load);  // leaf 0 -> leaf 1
  int quarter = 0, whole = 0;
  for (int l = 0; l < t.links(); ++l) {
    if (load[size_t(l)] == 0.25) ++quarter;
    if (load[size_t(l)] == 1.0) ++whole;
  }
  EXPECT_EQ(quarter, 8);  // leaf0 -> each spine, each spine -> leaf1
  EXPECT_EQ(whole, 4);    // gpu -> nic -> leaf, leaf -> nic -> gpu
  // The hashed single path crosses the same NIC links.
  for (int l : t.path(0, 5)) EXPECT_GT(load[size_t(l)], 0);
  TopologyConfig two = cluster(1, 4, 1, 100);
  Topology node(two);
  std::vector<double> inside(size_t(node.links()), 0.0);
  node.add_spread_load(1, 3, 2.0, inside);
  EXPECT_EQ(inside[size_t(node.path(1, 3)[0])], 2.0);
  EXPECT_EQ(inside[size_t(node.path(1, 3)[1])], 2.0);
}

TEST(Rings, TheTransportScalesOnlyFabricLinks) {
  // 3 nodes x 8 GPUs behind one 100 Gb/s NIC: 12.5 GB/s of bus at the line
  // rate, 12.5 x 0.5 at half of it. One node: no fabric link, no change.
  Topology t(cluster(3, 8, 1, 100));
  EXPECT_DOUBLE_EQ(ring_bottleneck(t, channel_rings(t, 2, RingOrder::kTopology), 0.5).bus_bandwidth_gbs, 6.25);
  Topology one(cluster(1, 8, 1, 100));
  // 2 rings, each GPU's switch link carries 2 transfers: 2 x 450 / 2.
  EXPECT_DOUBLE_EQ(ring_bottleneck(one, channel_rings(one, 2, RingOrder::kTopology), 0.5).bus_bandwidth_gbs, 450);
}

TEST(Rings, BadChannelCount) {
  Topology t(cluster(2, 2, 1, 100));
  EXPECT_THROW(channel_rings(t, 0, RingOrder::kTopology), std::invalid_argument);
}

}  // namespace
}  // namespace sparsefuse::netmodel
