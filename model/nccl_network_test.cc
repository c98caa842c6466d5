// The time a collective takes is set by its real
// bottleneck, not by NCCL's tuner estimate (which, at <= 2 nodes, prices
// every ring step at the intra-node bandwidth). Expected values by hand.
#include "model/nccl_network.h"

#include <gtest/gtest.h>

namespace sparsefuse::model {
namespace {

// Two PCIe nodes of 4 GPUs; the 4 GPUs of a node share one 10 Gb/s NIC.
netmodel::TopologyConfig two_pcie_nodes_one_10g_nic() {
  netmodel::TopologyConfig t;
  t.nodes = 2;
  t.gpus_per_node = 4;
  t.intra = netmodel::IntraKind::kPCIe;
  t.intra_gbps = 96;  // 12 GB/s per GPU
  t.nics_per_node = 1;
  t.nic_gbps = 10;    // 1.25 GB/s per node, shared by its 4 GPUs
  t.transport.efficiency = 1;  // the whole line rate, for round numbers
  return t;
}

TEST(NcclNetworkBottleneck, SharedNicLimitsTwoNodeRing) {
  NetworkConfig config;
  config.model = "nccl";
  config.nccl_algo = "ring";
  NcclNetwork net(config, two_pcie_nodes_one_10g_nic());
  ASSERT_EQ(net.workers(), 8);
  const int64_t m = 256ll << 20;  // 256 MiB per rank
  // A ring allreduce over 8 ranks moves 2 * 7/8 * m through every ring edge;
  // each channel's ring leaves each node once, so every byte of an edge that
  // crosses nodes goes through the node's single NIC at 1.25 GB/s:
  // 2 * 7/8 * 268435456 / 1.25 ns = 375809638 ns (~0.376 s), plus latencies
  // of at most a few hundred microseconds.
  const double nic_bound_ns = 2.0 * 7.0 / 8.0 * double(m) / 1.25;
  CollectiveCost c = net.collective_cost(Collective::kAllreduce, m);
  EXPECT_GE(double(c.transfer_ns), nic_bound_ns * 0.999);
  EXPECT_LE(double(c.total()), nic_bound_ns + 1e6);
}

TEST(NcclNetworkBottleneck, SharedNicLimitsTwoNodeTree) {
  // A tree allreduce sends m up and receives m down through each node's NIC:
  // 268435456 / 1.25 ns = 214748365 ns.
  NetworkConfig config;
  config.model = "nccl";
  config.nccl_algo = "tree";
  NcclNetwork net(config, two_pcie_nodes_one_10g_nic());
  const int64_t m = 256ll << 20;
  CollectiveCost c = net.collective_cost(Collective::kAllreduce, m);
  EXPECT_GE(double(c.transfer_ns), double(m) / 1.25 * 0.999);
  EXPECT_LE(double(c.total()), double(m) / 1.25 + 1e6);
}

TEST(NcclNetworkBottleneck, FastNicLeavesNcclEstimateAlone) {
  // With 8 x 400 Gb/s NICs per node the NIC is not the bottleneck: the time
  // stays NCCL's estimate (the cap changes nothing).
  netmodel::TopologyConfig t = two_pcie_nodes_one_10g_nic();
  t.nics_per_node = 4;
  t.nic_gbps = 400;
  NetworkConfig config;
  config.model = "nccl";
  NcclNetwork net(config, t);
  netmodel::NcclModel tuner(nccl_topology(t, 0));
  const double m = double(64ll << 20);
  auto e = tuner.estimate(Collective::kAllreduce, m);
  CollectiveCost c = net.collective_cost(Collective::kAllreduce, int64_t(m));
  EXPECT_NEAR(double(c.total()), e.reduced_time_us * 1e3, 2.0);
}


TEST(NcclNetworkBottleneck, RingThroughSharedNicsBeyondTwoNodes) {
  // 3 nodes x 8 NVSwitch GPUs, one 100 Gb/s NIC per node (12.5 GB/s). NCCL's
  // rings cross each node boundary once per channel, so the ring's bus
  // bandwidth is the node's NIC: 256 MiB per rank takes 2 x 23/24 x
  // 268435456 / 12.5 ns = 41.16 ms (+ latencies). Giving each GPU an eighth
  // of the NIC would make it 8 x slower.
  netmodel::TopologyConfig t = two_pcie_nodes_one_10g_nic();
  t.nodes = 3;
  t.gpus_per_node = 8;
  t.intra = netmodel::IntraKind::kNVSwitch;
  t.intra_gbps = 2400;
  t.nic_gbps = 100;
  NetworkConfig config;
  config.model = "nccl";
  config.nccl_algo = "ring";
  NcclNetwork net(config, t);
  const int64_t m = 256ll << 20;
  const double bound_ns = 2.0 * 23.0 / 24.0 * double(m) / 12.5;
  CollectiveCost c = net.collective_cost(Collective::kAllreduce, m);
  EXPECT_GE(double(c.transfer_ns), bound_ns * 0.999);
  EXPECT_LE(double(c.total()), bound_ns * 1.01);
}

TEST(NcclNetworkBottleneck, PlacementAndOversubscriptionWhereRingsFeelThem) {
  const int64_t m = 64ll << 20;
  NetworkConfig config;
  config.model = "nccl";
  config.nccl_algo = "ring";
  auto ring_ns = [&](const netmodel::TopologyConfig& t, const char* order) {
    NetworkConfig c = config;
    c.ring_order = order;
    return double(NcclNetwork(c, t).collective_cost(Collective::kAllreduce, m).transfer_ns);
  };
  // Rank-order rings over spread ranks cross the shared NIC 4 times per
  // ring: 4 x slower than packed (1.25 GB/s against 0.3125 GB/s of bus
  // bandwidth; netmodel rings_test). NCCL's own rings do not care.
  netmodel::TopologyConfig packed = two_pcie_nodes_one_10g_nic(), spread = packed;
  spread.placement = netmodel::Placement::kSpread;
  EXPECT_NEAR(ring_ns(spread, "rank") / ring_ns(packed, "rank"), 4.0, 1e-3);
  EXPECT_NEAR(ring_ns(spread, "topology") / ring_ns(packed, "topology"), 1.0, 1e-6);
  // Four 100 Gb/s NICs per node: behind one switch, 50 GB/s of bus; on a
  // radix-5 fat-tree with oversubscription 2 (one uplink per leaf), 12.5.
  netmodel::TopologyConfig nics = packed;
  nics.nics_per_node = 4;
  nics.nic_gbps = 100;
  nics.intra = netmodel::IntraKind::kNVSwitch;
  nics.intra_gbps = 3600;
  config.nccl_channels = 4;
  netmodel::TopologyConfig tree = nics;
  tree.fabric = netmodel::FabricKind::kFatTree;
  tree.radix = 5;
  tree.oversubscription = 2;
  EXPECT_NEAR(ring_ns(tree, "topology") / ring_ns(nics, "topology"), 4.0, 1e-3);
}

}  // namespace
}  // namespace sparsefuse::model
