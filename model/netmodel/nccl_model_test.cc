// Expected values are worked out by hand from the formulas of docs/baseline-systems.md
// §1.3 (and the assumptions in nccl_model.h), shown in the comments; the
// code under test is not used to produce them.
#include "model/netmodel/nccl_model.h"

#include <gtest/gtest.h>

#include "common/input_error.h"

namespace sparsefuse::netmodel {
namespace {

constexpr double kKiB4 = 4096, kMiB = 1048576, kMiB256 = 268435456;

// Topology A: one node of 8 Hopper GPUs on NVLink, 4 channels of 20 GB/s.
NcclTopology one_node() {
  NcclTopology t;
  t.nodes = 1;
  t.gpus_per_node = 8;
  t.intra = IntraLink::kNVLink;
  t.bw_intra_gbs = 20;
  t.bw_inter_gbs = 12;
  t.channels = 4;
  t.arch = GpuArch::kHopper;
  t.cpu = CpuVendor::kIntel;
  return t;
}

// Topology B: 4 such nodes (32 ranks) joined by a network of 12 GB/s per channel.
NcclTopology four_nodes() {
  NcclTopology t = one_node();
  t.nodes = 4;
  return t;
}

const Candidate& find(const CollectiveEstimate& e, Algorithm a, Protocol p) {
  for (const auto& c : e.candidates) {
    if (c.algorithm == a && c.protocol == p) return c;
  }
  throw std::logic_error("no such candidate");
}

void expect_candidate(const NcclModel& m, Collective coll, Algorithm a, Protocol p, double bytes, double latency,
                      double bandwidth, double time) {
  Candidate c = m.candidate(coll, a, p, bytes);
  SCOPED_TRACE(std::string(name(a)) + "/" + name(p) + " at " + std::to_string(bytes) + " B");
  EXPECT_NEAR(c.latency_us, latency, 1e-9 * latency);
  EXPECT_NEAR(c.bandwidth_gbs, bandwidth, 1e-9 * bandwidth);
  EXPECT_NEAR(c.time_us, time, 1e-9 * time);
}

// One node, allreduce. p = 8, nsteps = 2(p-1) = 14, busBw = 4 x 20 = 80 GB/s.
// Ring bandwidth (algBw = busBw' x p / nsteps = x 8/14):
//   LL     min(llMaxBw Hopper 1-node 141, 0.5 x 80) = 40        -> 22.857142857
//   LL128  min(0.92 x 80 = 73.6, 4 x 36.7 = 146.8) = 73.6       -> 42.057142857
//   Simple 80                                                   -> 45.714285714
// Ring latency = baseLat + 14 x hwLat[NVLink][Ring]:
//   LL 6.6 + 14 x 0.6 = 15.0; LL128 14 + 14 x 1.9 = 40.6; Simple 8.4 + 14 x 3.4 = 56.0
// Tree bus: min(0.92 x 80 = 73.6, 4 x perChMaxTreeBw 38.7 = 154.8) = 73.6, then
//   LL     min(73.6 / 3.8, 141) = 19.368421 x 0.5 = 9.684210526
//   LL128  min(73.6 x 7/9 = 57.2444, 146.8) x 0.5 = 28.622222222
//   Simple 73.6 x 0.5 = 36.8
// Tree latency = baseLat + 2 x (7 x hwLat[NVLink][Tree] + 0):
//   LL 6.8 + 14 x 0.6 = 15.2; LL128 14 + 14 x 1.25 = 31.5; Simple 8.4 + 14 x 4 = 64.4
// Tree correction (our table): 4 KiB -> bucket log2(4096/64) = 6: LL 0.8, LL128 0.9,
// Simple 0.9; 1 MiB -> bucket 14: 0.4, 0.6, 0.5; 256 MiB -> bucket 22: 1.0.
TEST(NcclModel, OneNodeAllreduceCandidatesByHand) {
  NcclModel m(one_node());
  const auto AR = Collective::kAllreduce;
  const auto Ring = Algorithm::kRing, Tree = Algorithm::kTree;
  const auto LL = Protocol::kLL, LL128 = Protocol::kLL128, Simple = Protocol::kSimple;
  // time = latency + bytes / (1000 x bandwidth)
  // 4 KiB: ring LL 15 + 4096/22857.14 = 15.1792; LL128 40.6 + 0.0973913 = 40.6973913;
  //        Simple 56 + 0.0896 = 56.0896
  expect_candidate(m, AR, Ring, LL, kKiB4, 15.0, 22.857142857142858, 15.1792);
  expect_candidate(m, AR, Ring, LL128, kKiB4, 40.6, 42.05714285714286, 40.69739130434783);
  expect_candidate(m, AR, Ring, Simple, kKiB4, 56.0, 45.714285714285715, 56.0896);
  // tree 4 KiB: LL bw 9.6842105 x 0.8 = 7.7473684: 15.2 + 0.5286957 = 15.7286957
  //             LL128 28.622222 x 0.9 = 25.76: 31.5 + 0.1590062 = 31.6590062
  //             Simple 36.8 x 0.9 = 33.12: 64.4 + 0.1236715 = 64.5236715
  expect_candidate(m, AR, Tree, LL, kKiB4, 15.2, 7.747368421052632, 15.728695652173911);
  expect_candidate(m, AR, Tree, LL128, kKiB4, 31.5, 25.76, 31.659006211180124);
  expect_candidate(m, AR, Tree, Simple, kKiB4, 64.4, 33.12, 64.52367149758454);
  // 1 MiB: ring LL 15 + 1048576 x 14 / 320000 = 15 + 45.8752 = 60.8752
  //        LL128 40.6 + 1048576 x 14 / 588800 = 40.6 + 24.9321739 = 65.5321739
  //        Simple 56 + 1048576 x 14 / 640000 = 56 + 22.9376 = 78.9376
  expect_candidate(m, AR, Ring, LL, kMiB, 15.0, 22.857142857142858, 60.8752);
  expect_candidate(m, AR, Ring, LL128, kMiB, 40.6, 42.05714285714286, 65.53217391304348);
  expect_candidate(m, AR, Ring, Simple, kMiB, 56.0, 45.714285714285715, 78.9376);
  // tree 1 MiB: LL128 28.622222 x 0.6 = 17.173333: 31.5 + 61.0583851 = 92.5583851
  //             Simple 36.8 x 0.5 = 18.4: 64.4 + 56.9878261 = 121.3878261
  expect_candidate(m, AR, Tree, LL128, kMiB, 31.5, 17.173333333333332, 92.55838509316771);
  expect_candidate(m, AR, Tree, Simple, kMiB, 64.4, 18.4, 121.38782608695652);
  // 256 MiB: ring Simple 56 + 268435456 x 14 / 640000 = 56 + 5872.0256 = 5928.0256
  //          ring LL128 40.6 + 268435456 x 14 / 588800 = 40.6 + 6382.6365217 = 6423.2365217
  //          tree Simple (correction 1.0) 64.4 + 268435456 / 36800 = 64.4 + 7294.4417391 = 7358.8417391
  expect_candidate(m, AR, Ring, Simple, kMiB256, 56.0, 45.714285714285715, 5928.0256);
  expect_candidate(m, AR, Ring, LL128, kMiB256, 40.6, 42.05714285714286, 6423.236521739131);
  expect_candidate(m, AR, Tree, Simple, kMiB256, 64.4, 36.8, 7358.841739130435);
}

TEST(NcclModel, OneNodeAllreduceSelection) {
  NcclModel m(one_node());
  // Minima of the tables above: ring LL below 1 MiB, ring Simple at 256 MiB.
  CollectiveEstimate small = m.estimate(Collective::kAllreduce, kKiB4);
  EXPECT_EQ(small.algorithm, "ring");
  EXPECT_EQ(small.protocol, "LL");
  EXPECT_NEAR(small.time_us, 15.1792, 1e-9);
  CollectiveEstimate mid = m.estimate(Collective::kAllreduce, kMiB);
  EXPECT_EQ(mid.algorithm + "/" + mid.protocol, "ring/LL");
  EXPECT_NEAR(mid.time_us, 60.8752, 1e-9);
  CollectiveEstimate large = m.estimate(Collective::kAllreduce, kMiB256);
  EXPECT_EQ(large.algorithm + "/" + large.protocol, "ring/Simple");
  EXPECT_NEAR(large.time_us, 5928.0256, 1e-7);
  EXPECT_EQ(large.candidates.size(), 8u);
  EXPECT_TRUE(find(large, Algorithm::kTree, Protocol::kLL).enabled);
}

// Four nodes, allreduce. p = 32, ppn = 8, N = 4 (> 2: bwInter and the third cap column).
// busBw = 4 x 12 = 48. nsteps = 62, nInterSteps = 2(N-1) = 6, intra steps 56.
// Ring bandwidth (x 32/62): LL min(llMaxBw Intel >2 nodes 20.4, 24) = 20.4 -> 10.529032;
//   LL128 min(44.16, 146.8) = 44.16 -> 22.792258; Simple 48 -> 24.774194.
// Ring latency: intraLat = max(hwLat NVLink Ring, netOverhead 1 (x3 Simple)):
//   LL max(0.6, 1) = 1; LL128 max(1.9, 1) = 1.9; Simple max(3.4, 3) = 3.4.
//   interLat = hwLat NET Ring (ppn > 1): 2.7, 4.0, 14.0.
//   LL 6.6 + 56 x 1 + 6 x 2.7 = 78.8; LL128 14 + 56 x 1.9 + 6 x 4 = 144.4;
//   Simple 8.4 + 56 x 3.4 + 6 x 14 = 282.8, x 1.4 (plateau) once bytes / (4 x 32) >= 64.
// Tree bus: min(0.92 x 48 = 44.16, 4 x 36 = 144) = 44.16, then
//   LL min(44.16 / 3.8 = 11.621053, 20.4) x 0.5 = 5.810526; LL128 min(44.16 x 120/128 = 41.4,
//   4 x 29 = 116) x 0.5 = 20.7; Simple 22.08.
// Tree latency = baseLat + 2 x (7 x hwLat NVLink Tree + log2(4) x hwLat NET Tree):
//   LL 6.8 + 2 x (4.2 + 10) = 35.2; LL128 14 + 2 x (8.75 + 17) = 65.5; Simple 8.4 + 2 x (28 + 28) = 120.4
TEST(NcclModel, FourNodeAllreduceByHand) {
  NcclModel m(four_nodes());
  const auto AR = Collective::kAllreduce;
  const auto Ring = Algorithm::kRing, Tree = Algorithm::kTree;
  const auto LL = Protocol::kLL, LL128 = Protocol::kLL128, Simple = Protocol::kSimple;
  // 4 KiB (4096 / 128 = 32 < 64: no plateau):
  //   ring LL 78.8 + 4096 x 62 / 652800 = 78.8 + 0.3890196 = 79.1890196
  //   ring Simple 282.8 + 4096 x 62 / 1536000 = 282.8 + 0.1653333 = 282.9653333
  //   tree LL 5.810526 x 0.8 = 4.648421: 35.2 + 0.8811594 = 36.0811594   <- the minimum
  //   tree LL128 20.7 x 0.9 = 18.63: 65.5 + 0.2198604 = 65.7198604
  expect_candidate(m, AR, Ring, LL, kKiB4, 78.8, 10.529032258064516, 79.18901960784314);
  expect_candidate(m, AR, Ring, Simple, kKiB4, 282.8, 24.774193548387096, 282.9653333333333);
  expect_candidate(m, AR, Tree, LL, kKiB4, 35.2, 4.648421052631579, 36.08115942028986);
  expect_candidate(m, AR, Tree, LL128, kKiB4, 65.5, 18.63, 65.7198604401503);
  CollectiveEstimate small = m.estimate(AR, kKiB4);
  EXPECT_EQ(small.algorithm + "/" + small.protocol, "tree/LL");
  // 1 MiB (plateau applies to ring Simple: 282.8 x 1.4 = 395.92):
  //   ring LL 78.8 + 1048576 x 62 / 652800 = 78.8 + 99.5890196 = 178.3890196
  //   ring LL128 144.4 + 1048576 x 62 / 1413120 = 144.4 + 46.0057971 = 190.4057971
  //   ring Simple 395.92 + 1048576 x 62 / 1536000 = 395.92 + 42.3253333 = 438.2453333
  //   tree LL128 20.7 x 0.6 = 12.42: 65.5 + 84.4264090 = 149.9264090   <- the minimum
  //   tree Simple 22.08 x 0.5 = 11.04: 120.4 + 94.9797101 = 215.3797101
  expect_candidate(m, AR, Ring, LL, kMiB, 78.8, 10.529032258064516, 178.38901960784312);
  expect_candidate(m, AR, Ring, LL128, kMiB, 144.4, 22.79225806451613, 190.40579710144928);
  expect_candidate(m, AR, Ring, Simple, kMiB, 395.92, 24.774193548387096, 438.24533333333335);
  expect_candidate(m, AR, Tree, LL128, kMiB, 65.5, 12.42, 149.92640901771335);
  expect_candidate(m, AR, Tree, Simple, kMiB, 120.4, 11.04, 215.37971014492754);
  EXPECT_EQ(m.estimate(AR, kMiB).algorithm + "/" + m.estimate(AR, kMiB).protocol, "tree/LL128");
  // 256 MiB: ring Simple 395.92 + 268435456 x 62 / 1536000 = 395.92 + 10835.2853333 = 11231.2053333 <- min
  //          ring LL128 144.4 + 268435456 x 62 / 1413120 = 144.4 + 11777.4840580 = 11921.8840580
  //          tree Simple 120.4 + 268435456 / 22080 = 120.4 + 12157.4028986 = 12277.8028986
  expect_candidate(m, AR, Ring, Simple, kMiB256, 395.92, 24.774193548387096, 11231.205333333333);
  expect_candidate(m, AR, Ring, LL128, kMiB256, 144.4, 22.79225806451613, 11921.884057971014);
  expect_candidate(m, AR, Tree, Simple, kMiB256, 120.4, 22.08, 12277.802898550724);
  CollectiveEstimate large = m.estimate(AR, kMiB256);
  EXPECT_EQ(large.algorithm + "/" + large.protocol, "ring/Simple");
  EXPECT_NEAR(large.time_us, 11231.205333333333, 1e-6);
}

TEST(NcclModel, PlateauStartsAt64BytesPerChannelAndRank) {
  NcclModel m(four_nodes());
  // 4 channels x 32 ranks x 64 B = 8192 B.
  EXPECT_NEAR(m.candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, 8191).latency_us, 282.8, 1e-9);
  EXPECT_NEAR(m.candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, 8192).latency_us, 395.92, 1e-9);
  // Not for allgather, not on one node.
  EXPECT_NEAR(m.candidate(Collective::kAllgather, Algorithm::kRing, Protocol::kSimple, kMiB).latency_us, 145.6, 1e-9);
  NcclModel single(one_node());
  EXPECT_NEAR(single.candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, kMiB).latency_us, 56.0, 1e-9);
}

// Allgather / reduce-scatter are ring-only. Four nodes: nsteps = p-1 = 31,
// nInterSteps = N-1 = 3, intra steps 28; algBw = busBw' x 32/31.
//   LL 20.4 -> 21.058065, lat 6.6 + 28 x 1 + 3 x 2.7 = 42.7
//   LL128 44.16 -> 45.584516, lat 14 + 28 x 1.9 + 3 x 4 = 79.2
//   Simple 48 -> 49.548387, lat 8.4 + 28 x 3.4 + 3 x 14 = 145.6
// 1 MiB: LL 42.7 + 1048576 x 31 / 652800 = 42.7 + 49.7945098 = 92.4945098 <- min
//        LL128 79.2 + 1048576 x 31 / 1413120 = 79.2 + 23.0028986 = 102.2028986
//        Simple 145.6 + 1048576 x 31 / 1536000 = 145.6 + 21.1626667 = 166.7626667
TEST(NcclModel, AllgatherAndReduceScatterAreRingOnly) {
  NcclModel m(four_nodes());
  for (Collective c : {Collective::kAllgather, Collective::kReduceScatter}) {
    SCOPED_TRACE(std::string(collective_name(c)));
    expect_candidate(m, c, Algorithm::kRing, Protocol::kLL, kMiB, 42.7, 21.058064516129033, 92.49450980392157);
    expect_candidate(m, c, Algorithm::kRing, Protocol::kLL128, kMiB, 79.2, 45.584516129032255, 102.20289855072464);
    expect_candidate(m, c, Algorithm::kRing, Protocol::kSimple, kMiB, 145.6, 49.54838709677419, 166.76266666666666);
    CollectiveEstimate e = m.estimate(c, kMiB);
    EXPECT_EQ(e.algorithm + "/" + e.protocol, "ring/LL");
    EXPECT_FALSE(find(e, Algorithm::kTree, Protocol::kSimple).enabled);
  }
  // One node, 4 KiB: nsteps 7, LL algBw 40 x 8/7 = 45.714286, lat 6.6 + 7 x 0.6 = 10.8,
  // time 10.8 + 4096 x 7 / 320000 = 10.8896.
  NcclModel single(one_node());
  EXPECT_NEAR(single.estimate(Collective::kAllgather, kKiB4).time_us, 10.8896, 1e-9);
}

// One GPU per node (ppn = 1), 16 nodes on PCI, 2 channels of 1.25 GB/s:
// every ring step is an inter-node step and uses the Tree row of the NET table:
//   ring LL latency 6.6 + 30 x 5.0 = 156.6; Simple 8.4 + 30 x 14 = 428.4 (1 KiB: below the
//   plateau threshold 2 x 16 x 64 = 2048 B). LL128 is off on PCI.
TEST(NcclModel, OneRankPerNodeUsesTreeNetLatency) {
  NcclTopology t;
  t.nodes = 16;
  t.gpus_per_node = 1;
  t.intra = IntraLink::kPCI;
  t.bw_intra_gbs = 1.25;
  t.bw_inter_gbs = 1.25;
  t.channels = 2;
  NcclModel m(t);
  EXPECT_NEAR(m.candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kLL, 1024).latency_us, 156.6, 1e-9);
  EXPECT_NEAR(m.candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, 1024).latency_us, 428.4, 1e-9);
  CollectiveEstimate e = m.estimate(Collective::kAllreduce, 1024);
  const Candidate& ll128 = find(e, Algorithm::kRing, Protocol::kLL128);
  EXPECT_FALSE(ll128.enabled);
  EXPECT_NE(ll128.why_disabled.find("LL128"), std::string::npos);
}

TEST(NcclModel, RestrictionsNarrowTheChoice) {
  // NCCL_PROTO=^LL on one node at 1 MiB: next best is ring LL128 (65.5321739, above).
  Restriction no_ll;
  no_ll.restrict_protocols("^LL");
  CollectiveEstimate e = NcclModel(one_node(), no_ll).estimate(Collective::kAllreduce, kMiB);
  EXPECT_EQ(e.algorithm + "/" + e.protocol, "ring/LL128");
  EXPECT_NEAR(e.time_us, 65.53217391304348, 1e-9);
  // NCCL_ALGO=allreduce:tree: tree LL128 (92.5583851) beats tree Simple and tree LL.
  Restriction tree;
  tree.restrict_algorithms("allreduce:tree");
  e = NcclModel(one_node(), tree).estimate(Collective::kAllreduce, kMiB);
  EXPECT_EQ(e.algorithm + "/" + e.protocol, "tree/LL128");
  // ...and allgather is untouched by an allreduce-only entry.
  EXPECT_EQ(NcclModel(one_node(), tree).estimate(Collective::kAllgather, kMiB).algorithm, "ring");
  // Tree for everything leaves allgather with nothing.
  Restriction tree_all;
  tree_all.restrict_algorithms("TREE");
  EXPECT_THROW(NcclModel(one_node(), tree_all).estimate(Collective::kAllgather, kMiB), InputError);
  // Bad names are input errors.
  Restriction bad;
  EXPECT_THROW(bad.restrict_protocols("LL256"), InputError);
  EXPECT_THROW(bad.restrict_algorithms("allreduce:collnet"), InputError);
  EXPECT_THROW(bad.restrict_algorithms("broadcast:ring"), InputError);
}

TEST(NcclModel, LL128DefaultRulesAndExplicitEnable) {
  NcclTopology pci = one_node();
  pci.intra = IntraLink::kPCI;
  auto ll128 = [](const NcclTopology& t, const Restriction& r) {
    return NcclModel(t, r).candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kLL128, kMiB).enabled;
  };
  EXPECT_TRUE(ll128(one_node(), {}));
  EXPECT_FALSE(ll128(pci, {}));
  NcclTopology far_nic = four_nodes();
  far_nic.net_allows_ll128 = false;
  EXPECT_FALSE(ll128(far_nic, {}));
  far_nic.nodes = 1;  // the network path does not matter inside a node
  EXPECT_TRUE(ll128(far_nic, {}));
  NcclTopology mixed = one_node();
  mixed.mixed_compute_capability = true;
  EXPECT_TRUE(ll128(mixed, {}));  // Hopper: allowed
  mixed.arch = GpuArch::kAmpere;
  EXPECT_FALSE(ll128(mixed, {}));
  Restriction named;
  named.restrict_protocols("LL128,Simple");
  EXPECT_TRUE(ll128(pci, named));
}

// Small messages run on fewer channels: Simple needs 64 B x 512 threads =
// 32768 B per channel, ring LL 8 B x 8 ranks x 512 = 32768 B per channel.
TEST(NcclModel, ChannelReductionForSmallMessages) {
  NcclModel m(one_node());
  EXPECT_EQ(m.channels_used(Algorithm::kRing, Protocol::kSimple, 4096), 1);
  EXPECT_EQ(m.channels_used(Algorithm::kRing, Protocol::kSimple, 65536), 2);
  EXPECT_EQ(m.channels_used(Algorithm::kRing, Protocol::kSimple, 131072), 4);
  EXPECT_EQ(m.channels_used(Algorithm::kRing, Protocol::kLL, 98304), 3);
  EXPECT_EQ(m.channels_used(Algorithm::kTree, Protocol::kLL128, 4096), 1);  // 8 x 640 = 5120 per channel
  // 4 KiB picks ring LL on 1 of 4 channels: 15 + 4096 / (1000 x 22.857143 / 4) = 15.7168.
  CollectiveEstimate e = m.estimate(Collective::kAllreduce, kKiB4);
  EXPECT_EQ(e.channels_used, 1);
  EXPECT_NEAR(e.reduced_time_us, 15.7168, 1e-9);
}

// Hierarchical allreduce on four nodes at 256 MiB:
//  intra reduce-scatter on {1 node, 8 ranks}: nsteps 7; Simple algBw 80 x 8/7 = 91.428571,
//   lat 8.4 + 7 x 3.4 = 32.2: 32.2 + 268435456 x 7 / 640000 = 32.2 + 2936.0128 = 2968.2128
//   (LL128 27.3 + 3191.318 = 3218.618, LL 10.8 + 5872.026 = 5882.826): Simple wins; the
//   allgather is the same.
//  inter allreduce of 256 MiB / 8 = 32 MiB on {4 nodes, 1 rank each}; the 8 such allreduces (one
//   per local GPU) share the node's network, 4 x 12 = 48 GB/s, so each has 4 x 12 / 8 = 6 GB/s bus:
//   ring Simple: algBw 6 x 4/6 = 4, lat (8.4 + 6 x 14) x 1.4 = 129.36:
//     129.36 + 33554432 / 4000 = 129.36 + 8388.608 = 8517.968  <- min
//   ring LL128: 5.52 x 4/6 = 3.68, lat 14 + 6 x 8.5 = 65: 65 + 9118.052 = 9183.052
//   tree Simple: 5.52 x 0.5 = 2.76, lat 8.4 + 2 x 2 x 14 = 64.4: 64.4 + 12157.403 = 12221.803
//  total 2 x 2968.2128 + 8517.968 = 14454.3936 (flat allreduce: 11231.2053; this network is
//  slow inside the node, 80 GB/s, so the two extra phases cost more than they save).
TEST(NcclModel, HierarchicalAllreduceByHand) {
  HierarchicalEstimate h = hierarchical_allreduce(four_nodes(), kMiB256);
  EXPECT_NEAR(h.reduce_scatter.time_us, 2968.2128, 1e-7);
  EXPECT_EQ(h.reduce_scatter.protocol, "Simple");
  EXPECT_NEAR(h.allgather.time_us, 2968.2128, 1e-7);
  EXPECT_NEAR(h.allreduce.time_us, 8517.968, 1e-7);
  EXPECT_EQ(h.allreduce.algorithm + "/" + h.allreduce.protocol, "ring/Simple");
  EXPECT_NEAR(h.time_us, 14454.3936, 1e-6);
  Json j = h.to_json();
  EXPECT_EQ(j["allreduce"]["algorithm"], "ring");
  EXPECT_EQ(j["reduce_scatter"]["candidates"].size(), 8u);  // tree and ring x 3 protocols, NVLS, NVLSTree
  // One node: no inter-node phase.
  HierarchicalEstimate one = hierarchical_allreduce(one_node(), kMiB256);
  EXPECT_EQ(one.allreduce.time_us, 0);
  EXPECT_NEAR(one.time_us, 2 * 2968.2128, 1e-6);
}

TEST(NcclModel, SingleRankCostsNothingAndJsonListsCandidates) {
  NcclTopology t = one_node();
  t.gpus_per_node = 1;
  CollectiveEstimate e = NcclModel(t).estimate(Collective::kAllreduce, kMiB);
  EXPECT_EQ(e.time_us, 0);
  EXPECT_EQ(e.algorithm, "none");
  Json j = NcclModel(one_node()).estimate(Collective::kAllgather, kMiB).to_json();
  EXPECT_EQ(j["candidates"].size(), 8u);
  EXPECT_EQ(j["candidates"][0]["why_disabled"], "tree implements allreduce only");
  EXPECT_TRUE(j.contains("reduced_time_us"));
}

TEST(NcclModel, TreeCorrectionTableIsWithinTheReferenceRange) {
  for (const auto& row : kDefaultTreeCorrection) {
    for (double f : row) {
      EXPECT_GE(f, 0.4);
      EXPECT_LE(f, 1.0);
    }
  }
}

}  // namespace
}  // namespace sparsefuse::netmodel

namespace sparsefuse::netmodel {
namespace {

// NVLS on one NVSwitch node of 8 GPUs with 450 GB/s NVLink per direction:
// algorithm bandwidth 0.6 x 450 = 270 GB/s after 52 us.
NcclTopology nvls_node() {
  NcclTopology t = one_node();
  t.nvls = true;
  t.nvls_bandwidth_gbs = kNvlsEfficiency * 450;
  return t;
}

TEST(NcclModel, NvlsByHandWinsLargeAllreducesOnOneNode) {
  NcclModel m(nvls_node());
  // 256 MiB: NVLS 52 + 268435456 / 270000 = 52 + 994.2054 = 1046.2054, against
  // ring Simple 5928.0256 (OneNodeAllreduceCandidatesByHand).
  CollectiveEstimate large = m.estimate(Collective::kAllreduce, kMiB256);
  EXPECT_EQ(large.algorithm + "/" + large.protocol, "nvls/Simple");
  EXPECT_NEAR(large.time_us, 52 + 268435456.0 / 270000.0, 1e-9);
  EXPECT_NEAR(large.reduced_time_us, large.time_us, 1e-9);  // no channel reduction, no NIC
  // 4 KiB: NVLS 52.015 loses to ring LL 15.1792.
  EXPECT_EQ(m.estimate(Collective::kAllreduce, kKiB4).algorithm, "ring");
}

TEST(NcclModel, NvlsOnlyWhereTheModelHasIt) {
  const double bytes = kMiB256;
  auto nvls_enabled = [&](NcclTopology t, Collective c, const Restriction& r = {}) {
    return NcclModel(t, r).candidate(c, Algorithm::kNvls, Protocol::kSimple, bytes).enabled;
  };
  EXPECT_TRUE(nvls_enabled(nvls_node(), Collective::kAllreduce));
  EXPECT_FALSE(nvls_enabled(one_node(), Collective::kAllreduce));  // no multicast switch
  EXPECT_FALSE(nvls_enabled(nvls_node(), Collective::kAllgather));
  NcclTopology two = nvls_node();
  two.nodes = 2;
  EXPECT_FALSE(nvls_enabled(two, Collective::kAllreduce));
  Restriction r;
  r.restrict_algorithms("^nvls");
  EXPECT_FALSE(nvls_enabled(nvls_node(), Collective::kAllreduce, r));
  EXPECT_FALSE(NcclModel(nvls_node()).candidate(Collective::kAllreduce, Algorithm::kNvls, Protocol::kLL, bytes).enabled);
  EXPECT_EQ(NcclModel(nvls_node(), r).estimate(Collective::kAllreduce, bytes).algorithm, "ring");
}

// NVLSTree across nodes like the NVLS node (8 GPUs, 270 GB/s NVLS each), the
// node's NICs carrying 376 GB/s together, 22 us of inter-node latency.
// Latency 52 + 2 x log2(N) x (20.9 + 2 x 22) = 52 + 129.8 N=2 / 52 + 259.6 N=4.
// Bandwidth min(270, 376) = 270 at two nodes; min(270, 376 / 2) = 188 at four.
TEST(NcclModel, NvlsTreeByHandAcrossNodes) {
  NcclTopology t = nvls_node();
  t.nodes = 2;
  t.node_nic_gbs = 376;
  t.latency_inter_us = 22;
  const double gib = 1073741824.0;
  Candidate two = NcclModel(t).candidate(Collective::kAllreduce, Algorithm::kNvlsTree, Protocol::kSimple, gib);
  ASSERT_TRUE(two.enabled) << two.why_disabled;
  EXPECT_NEAR(two.latency_us, 181.8, 1e-9);
  EXPECT_NEAR(two.bandwidth_gbs, 270.0, 1e-12);
  EXPECT_NEAR(two.time_us, 181.8 + gib / 270000.0, 1e-6);
  CollectiveEstimate e = NcclModel(t).estimate(Collective::kAllreduce, gib);
  EXPECT_EQ(e.algorithm + "/" + e.protocol, "nvlstree/Simple");
  EXPECT_NEAR(e.reduced_time_us, two.time_us, 1e-6);  // no channel reduction, its own NIC cap
  t.nodes = 4;
  Candidate four = NcclModel(t).candidate(Collective::kAllreduce, Algorithm::kNvlsTree, Protocol::kSimple, gib);
  EXPECT_NEAR(four.latency_us, 311.6, 1e-9);
  EXPECT_NEAR(four.bandwidth_gbs, 188.0, 1e-12);
}

TEST(NcclModel, NvlsTreeOnlyAcrossNodesOfNvlsSwitches) {
  auto enabled = [](NcclTopology t, Collective c, const Restriction& r = {}) {
    return NcclModel(t, r).candidate(c, Algorithm::kNvlsTree, Protocol::kSimple, 1e9).enabled;
  };
  NcclTopology two = nvls_node();
  two.nodes = 2;
  EXPECT_TRUE(enabled(two, Collective::kAllreduce));
  EXPECT_FALSE(enabled(nvls_node(), Collective::kAllreduce));  // one node: NVLS alone
  EXPECT_FALSE(enabled(four_nodes(), Collective::kAllreduce));  // no multicast switch
  EXPECT_FALSE(enabled(two, Collective::kAllgather));
  EXPECT_FALSE(NcclModel(two).candidate(Collective::kAllreduce, Algorithm::kNvlsTree, Protocol::kLL128, 1e9).enabled);
  Restriction r;
  r.restrict_algorithms("^nvlstree");
  EXPECT_FALSE(enabled(two, Collective::kAllreduce, r));
  EXPECT_TRUE(NcclModel(two, r).candidate(Collective::kAllreduce, Algorithm::kRing, Protocol::kSimple, 1e9).enabled);
  r = {};
  r.restrict_algorithms("nvls");  // NCCL's names: "nvls" does not include NVLSTree
  EXPECT_FALSE(enabled(two, Collective::kAllreduce, r));
}

TEST(NcclModel, RoutedRingBandwidthBoundsTheTimeNotTheChoice) {
  // Four nodes (FourNodeAllreduceByHand): ring Simple at 256 MiB is
  // 395.92 + 268435456 / 24774.194 us by the tuner. Routed rings that allow
  // only 10 GB/s of bus bandwidth make the ring's algorithm bandwidth
  // 10 x 32/62 = 5.1612903 GB/s: 395.92 + 268435456 / 5161.2903 us.
  NcclTopology t = four_nodes();
  Restriction r;
  r.restrict_algorithms("ring");
  r.restrict_protocols("simple");
  const double tuner = NcclModel(t, r).estimate(Collective::kAllreduce, kMiB256).reduced_time_us;
  EXPECT_NEAR(tuner, 282.8 * 1.4 + 268435456.0 / (1000.0 * 48 * 32 / 62), 1e-6);
  t.ring_bus_gbs = 10;
  CollectiveEstimate e = NcclModel(t, r).estimate(Collective::kAllreduce, kMiB256);
  EXPECT_NEAR(e.time_us, tuner, 1e-6);  // the tuner's own prediction is unchanged
  EXPECT_NEAR(e.reduced_time_us, 282.8 * 1.4 + 268435456.0 / (1000.0 * 10 * 32 / 62), 1e-6);
}

}  // namespace
}  // namespace sparsefuse::netmodel
