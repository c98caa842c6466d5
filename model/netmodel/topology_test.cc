#include "model/netmodel/topology.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "common/input_error.h"
#include "model/netmodel/maxmin.h"

namespace sparsefuse::netmodel {
namespace {

// Two nodes x 2 GPUs on NVSwitch, one NIC per GPU, one switch. Vertices, in
// construction order: node0.gpu0 0, node0.gpu1 1, node0.nvswitch 2,
// node0.nic0 3, node0.nic1 4, node1.* 5-9 likewise, switch 10. Links, two per
// cable (there, back): node0 gpu0-nvs 0/1, gpu1-nvs 2/3, gpu0-nic0 4/5,
// gpu1-nic1 6/7; node1 the same at 8-15; nic-switch 16/17 (node0.nic0),
// 18/19 (node0.nic1), 20/21 (node1.nic0), 22/23 (node1.nic1).
TopologyConfig two_by_two() {
  TopologyConfig c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  c.intra = IntraKind::kNVSwitch;
  c.intra_gbps = 3600;
  c.nics_per_node = 2;
  c.nic_gbps = 400;
  c.nic_pcie_gbps = 512;
  c.fabric = FabricKind::kSingleSwitch;
  return c;
}

using Links = std::vector<int>;

TEST(Topology, PathsAndCapacitiesOnTwoNodes) {
  Topology t(two_by_two());
  EXPECT_EQ(t.ranks(), 4);
  EXPECT_EQ(t.vertices(), 11);
  EXPECT_EQ(t.links(), 24);
  EXPECT_EQ(t.vertex_name(7), "node1.nvswitch");
  EXPECT_EQ(t.vertex_name(10), "switch");
  EXPECT_EQ(t.path(0, 1), (Links{0, 3}));             // through the NVSwitch
  EXPECT_EQ(t.path(0, 2), (Links{4, 16, 21, 13}));    // gpu0 - nic0 - switch - nic0' - gpu0'
  EXPECT_EQ(t.path(1, 2), (Links{6, 18, 21, 13}));
  EXPECT_EQ(t.path(3, 3), Links{});
  // Capacities in bytes/ns (= GB/s): 3600 Gb/s = 450, 512 Gb/s = 64, 400 Gb/s = 50.
  EXPECT_DOUBLE_EQ(t.link(0).capacity_bytes_per_ns, 450);
  EXPECT_DOUBLE_EQ(t.link(4).capacity_bytes_per_ns, 64);
  EXPECT_DOUBLE_EQ(t.link(16).capacity_bytes_per_ns, 50);
  EXPECT_EQ(t.link(16).from, 3);
  EXPECT_EQ(t.link(16).to, 10);
  EXPECT_EQ(t.link(17).from, 10);
  EXPECT_EQ(t.link(4).kind, LinkKind::kNicAttach);
  EXPECT_EQ(t.capacities().size(), 24u);
  // Latency: 500 (gpu-nic) + 600 + 600 (fabric hops) + 500 = 2200 ns.
  EXPECT_DOUBLE_EQ(t.path_latency_ns(t.path(0, 2)), 2200);
  EXPECT_DOUBLE_EQ(t.path_latency_ns(t.path(0, 1)), 500);
}

TEST(Topology, SpreadPlacementPutsNeighbouringRanksOnDifferentNodes) {
  TopologyConfig c = two_by_two();
  c.placement = Placement::kSpread;
  Topology t(c);
  // rank r -> node r % 2, GPU r / 2: rank 1 is node1.gpu0.
  EXPECT_EQ(t.node_of(1), 1);
  EXPECT_EQ(t.gpu_vertex(1), 5);
  EXPECT_EQ(t.path(0, 1), (Links{4, 16, 21, 13}));
  EXPECT_EQ(t.path(0, 2), (Links{0, 3}));
}

TEST(Topology, RingTransfersShareASharedNic) {
  TopologyConfig c = two_by_two();
  c.nics_per_node = 1;  // both GPUs of a node behind node.nic0
  Topology t(c);
  // Ring 0 -> 2 -> 1 -> 3 -> 0: every transfer crosses nodes, and each
  // node's NIC uplink carries two of them at once.
  auto transfers = t.ring_transfers({0, 2, 1, 3});
  ASSERT_EQ(transfers.size(), 4u);
  for (const auto& path : transfers) EXPECT_EQ(path.size(), 4u);
  std::vector<Flow> flows;
  for (const auto& path : transfers) flows.push_back({path});
  // NIC 400 Gb/s = 50 B/ns shared by two transfers each way: 25 each.
  for (double r : max_min_rates(t.capacities(), flows)) EXPECT_DOUBLE_EQ(r, 25);
  // Packed ring 0 -> 1 -> 2 -> 3: only 1 -> 2 and 3 -> 0 cross, in opposite
  // directions: nothing shared; the intra hops run at 450, the cross ones at 50.
  flows.clear();
  for (const auto& path : t.ring_transfers({0, 1, 2, 3})) flows.push_back({path});
  std::vector<double> r = max_min_rates(t.capacities(), flows);
  EXPECT_EQ(r, (std::vector<double>{450, 50, 450, 50}));
  EXPECT_TRUE(t.ring_transfers({2}).empty());
}

TEST(Topology, FatTreeUsesSpinesAcrossLeavesAndSpreadsPairs) {
  TopologyConfig c;
  c.nodes = 16;
  c.gpus_per_node = 1;
  c.nics_per_node = 1;
  c.fabric = FabricKind::kFatTree;
  c.radix = 8;  // oversubscription 1: 4 down, 4 up per leaf; 16 NICs -> 4 leaves, 4 spines
  Topology t(c);
  // Same leaf (NICs 0-3): gpu - nic - leaf - nic - gpu.
  EXPECT_EQ(t.path(0, 3).size(), 4u);
  std::set<std::string> spines_used;
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      if (a / 4 == b / 4) continue;
      Links p = t.path(a, b);
      ASSERT_EQ(p.size(), 6u);  // gpu - nic - leaf - spine - leaf - nic - gpu
      std::string spine = t.vertex_name(t.link(p[2]).to);
      EXPECT_EQ(spine.rfind("spine", 0), 0u) << spine;
      EXPECT_EQ(t.vertex_name(t.link(p[3]).to), "leaf" + std::to_string(b / 4));
      EXPECT_EQ(t.path(a, b), p);  // deterministic
      spines_used.insert(spine);
    }
  }
  EXPECT_EQ(spines_used.size(), 4u);  // the hash spreads pairs over every spine
}

TEST(Topology, FatTreeOversubscriptionSetsUplinkCount) {
  TopologyConfig c;
  c.nodes = 12;
  c.gpus_per_node = 1;
  c.fabric = FabricKind::kFatTree;
  c.radix = 8;
  c.oversubscription = 3;  // 8 / (1 + 3) = 2 up, 6 down: 12 NICs -> 2 leaves, 2 spines
  Topology t(c);
  int spines = 0, leaves = 0;
  for (int v = 0; v < t.vertices(); ++v) {
    spines += t.vertex_name(v).rfind("spine", 0) == 0;
    leaves += t.vertex_name(v).rfind("leaf", 0) == 0;
  }
  EXPECT_EQ(spines, 2);
  EXPECT_EQ(leaves, 2);
}

TEST(Topology, RailOptimizedKeepsRailsApart) {
  TopologyConfig c = two_by_two();
  c.fabric = FabricKind::kRailOptimized;
  Topology t(c);
  // Same rail: gpu0 - nic0 - rail0 - nic0' - gpu0'.
  Links same = t.path(0, 2);
  ASSERT_EQ(same.size(), 4u);
  EXPECT_EQ(t.vertex_name(t.link(same[1]).to), "rail0");
  // Across rails: through the spine (GPUs are not transit, so no detour via node1's NVSwitch).
  Links cross = t.path(0, 3);
  ASSERT_EQ(cross.size(), 6u);
  EXPECT_EQ(t.vertex_name(t.link(cross[1]).to), "rail0");
  EXPECT_EQ(t.vertex_name(t.link(cross[2]).to), "spine0");
  EXPECT_EQ(t.vertex_name(t.link(cross[3]).to), "rail1");
  // Rail-spine bundle: 2 nodes x 400 Gb/s / (oversubscription 1 x 1 spine) = 800 Gb/s = 100 B/ns.
  EXPECT_DOUBLE_EQ(t.link(cross[2]).capacity_bytes_per_ns, 100);
}

TEST(Topology, DgxPresetRingOverTwoNodes) {
  TopologyConfig c = topology_preset("dgx-h200-ib400");
  c.nodes = 2;
  Topology t(c);
  EXPECT_EQ(t.ranks(), 16);
  EXPECT_EQ(t.path(0, 8).size(), 4u);   // node0.gpu0 -> node1.gpu0 on rail 0
  EXPECT_EQ(t.path(0, 15).size(), 6u);  // rail 0 -> spine -> rail 7
  EXPECT_EQ(t.path(0, 7).size(), 2u);   // NVSwitch
  std::vector<int> ring(16);
  for (int r = 0; r < 16; ++r) ring[size_t(r)] = r;
  std::vector<Flow> flows;
  for (const auto& path : t.ring_transfers(ring)) flows.push_back({path});
  std::vector<double> rate = max_min_rates(t.capacities(), flows);
  // Intra-node hops at 450 GB/s; the two node-crossing transfers (7 -> 8 and
  // 15 -> 0) cross rails through the spine and are limited by their 400 Gb/s
  // NIC = 50 GB/s.
  for (int i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(rate[size_t(i)], i == 7 || i == 15 ? 50 : 450) << i;
}

TEST(Topology, PathIsThreadSafe) {
  TopologyConfig c;
  c.nodes = 32;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  c.fabric = FabricKind::kFatTree;
  c.radix = 64;
  Topology t(c);
  std::vector<Links> expected;
  for (int b = 0; b < 256; b += 7) expected.push_back(t.path(5, b));
  Topology fresh(c);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      size_t i = 0;
      for (int b = 0; b < 256; b += 7, ++i) mismatches[size_t(k)] += fresh.path(5, b) != expected[i];
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

Json parse_json(const std::string& text) { return Json::parse(text); }

std::string parse_error(const std::string& text) {
  Json j = parse_json(text);
  try {
    parse_topology(JsonNode(j, "s.json", "/topology"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Topology, PresetsAndJsonOverrides) {
  EXPECT_EQ(topology_preset_names(),
            (std::vector<std::string>{"dgx-h200-ib400", "ethernet-10g", "ethernet-25g", "ib-56g", "seed-8node"}));
  Json j = parse_json(R"({"preset": "dgx-h200-ib400", "nodes": 4, "fabric": {"kind": "fat-tree", "radix": 64}})");
  TopologyConfig c = parse_topology(JsonNode(j, "s.json", "/topology"));
  EXPECT_EQ(c.preset, "dgx-h200-ib400");
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(c.intra_gbps, 3600);  // 450 GB/s per GPU per direction
  EXPECT_DOUBLE_EQ(c.nic_gbps, 400);
  EXPECT_EQ(c.fabric, FabricKind::kFatTree);
  EXPECT_EQ(c.radix, 64);
  EXPECT_DOUBLE_EQ(c.fabric_latency_ns, 500);  // kept from the preset

  // Every preset survives to_json -> parse_topology unchanged.
  for (const auto& name : topology_preset_names()) {
    TopologyConfig p = topology_preset(name);
    Json pj = p.to_json();
    TopologyConfig back = parse_topology(JsonNode(pj, "", ""));
    EXPECT_EQ(back.to_json(), pj) << name;
  }
  // ethernet-10g on 2 nodes: 10 Gb/s = 1.25 B/ns; latency 1000 + 2500 + 2500 + 1000 ns.
  TopologyConfig eth = topology_preset("ethernet-10g");
  eth.nodes = 2;
  Topology t(eth);
  Links p = t.path(0, 1);
  EXPECT_EQ(p.size(), 4u);
  EXPECT_DOUBLE_EQ(t.link(p[1]).capacity_bytes_per_ns, 1.25);
  EXPECT_DOUBLE_EQ(t.path_latency_ns(p), 7000);
  EXPECT_THROW(topology_preset("nope"), InputError);
}

TEST(Topology, BadJsonNamesFileAndPointer) {
  EXPECT_EQ(parse_error(R"({"preset": "dgx-h200"})"),
            "s.json: at /topology/preset: unknown topology preset \"dgx-h200\"; did you mean \"dgx-h200-ib400\"?");
  EXPECT_EQ(parse_error(R"({"nodse": 2})"),
            "s.json: at /topology/nodse: unknown key \"nodse\"; did you mean \"nodes\"?");
  EXPECT_EQ(parse_error(R"({"fabric": {"kind": "torus"}})"),
            "s.json: at /topology/fabric/kind: expected one of \"single-switch\", \"fat-tree\", \"rail-optimized\", "
            "got \"torus\"");
  EXPECT_EQ(parse_error(R"({"gpus_per_node": 4, "nic": {"per_node": 8}})"),
            "s.json: at /topology/nic/per_node: expected an integer in [1, 4], got 8");
  EXPECT_NE(parse_error(R"({"intra": {"bandwidth_gbps": 0}})").find("at /topology/intra/bandwidth_gbps: expected a number > 0"),
            std::string::npos);
  EXPECT_EQ(parse_error(R"({"intra": 5})"), "s.json: at /topology/intra: expected an object, got the number 5");
  EXPECT_EQ(parse_error(R"({"nodes": 9, "fabric": {"kind": "fat-tree", "radix": 4}})"),
            "s.json: at /topology/fabric/radix: a two-level fat-tree of radix 4 with oversubscription 1 (2 NICs per "
            "leaf, 2 spines) connects at most 8 NICs; this topology has 9");
  EXPECT_NE(parse_error(R"({"placement": "scattered"})").find("expected one of \"packed\", \"spread\""),
            std::string::npos);
  EXPECT_EQ(parse_error(R"({"nic": {"transport": {"kind": "udp"}}})"),
            "s.json: at /topology/nic/transport/kind: expected one of \"rdma\", \"efa\", \"tcp\", got \"udp\"");
  EXPECT_EQ(parse_error(R"({"nic": {"transport": {"efficiency": 1.5}}})"),
            "s.json: at /topology/nic/transport/efficiency: expected a number > 0 and <= 1, got 1.5");
  EXPECT_NE(parse_error(R"({"nic": {"transport": {"kind": "tcp", "sockts": 2}}})").find("at /topology/nic/transport/sockts"),
            std::string::npos);
}

TEST(Topology, TransportDefaultsPerKindAndOverrides) {
  auto parse = [](const char* text) {
    Json j = parse_json(text);
    return parse_topology(JsonNode(j, "s.json", "/topology")).transport;
  };
  Transport rdma = parse(R"({"preset": "dgx-h200-ib400"})");
  EXPECT_EQ(rdma.kind, TransportKind::kRdma);
  EXPECT_DOUBLE_EQ(rdma.efficiency, 0.96);
  EXPECT_DOUBLE_EQ(rdma.message_latency_us, 0);
  // A kind alone brings that kind's defaults, not the preset's figures.
  Transport tcp = parse(R"({"preset": "dgx-h200-ib400", "nic": {"transport": {"kind": "tcp"}}})");
  EXPECT_EQ(tcp.kind, TransportKind::kTcp);
  EXPECT_DOUBLE_EQ(tcp.efficiency, transport_defaults(TransportKind::kTcp).efficiency);
  EXPECT_EQ(tcp.sockets, 1);
  // One socket stream of 20 Gb/s caps a 100 Gb/s NIC; 0.9 x 10 Gb/s binds on 10 Gb/s.
  EXPECT_DOUBLE_EQ(tcp.achievable_gbps(100), 20);
  EXPECT_DOUBLE_EQ(tcp.achievable_gbps(10), 9);
  Transport efa = parse(R"({"nic": {"transport": {"kind": "efa", "efficiency": 0.5, "message_latency_us": 40}}})");
  EXPECT_DOUBLE_EQ(efa.efficiency, 0.5);
  EXPECT_DOUBLE_EQ(efa.message_latency_us, 40);
  EXPECT_DOUBLE_EQ(efa.achievable_gbps(400), 200);
  EXPECT_EQ(parse(R"({"preset": "ethernet-10g"})").kind, TransportKind::kTcp);
}

}  // namespace
}  // namespace sparsefuse::netmodel
