// A cluster as a graph (Boost.Graph adjacency_list): GPUs inside nodes joined
// by an NVSwitch or a PCIe switch, NICs (one per GPU or shared), and an
// inter-node fabric (one switch, a two-level fat-tree, or rail-optimized).
// Every cable is two directed links, one per direction, because the two
// directions of a full-duplex link do not share bandwidth.
//
// It answers what contention modelling needs: the links a transfer between
// two ranks crosses (path), their capacities and latencies, and the
// transfers of a ring collective (ring_transfers), to feed max_min_rates.
// Schema, presets and the numbers they use: model/netmodel/README.md.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/json_reader.h"

namespace sparsefuse::netmodel {

enum class IntraKind { kNVSwitch, kPCIe };
enum class FabricKind { kSingleSwitch, kFatTree, kRailOptimized };
enum class Placement { kPacked, kSpread };

struct TopologyConfig {
  std::string preset;  // informational: the preset it started from, if any
  int nodes = 1;
  int gpus_per_node = 1;

  IntraKind intra = IntraKind::kNVSwitch;
  double intra_gbps = 3600;       // per GPU per direction, to the node's switch
  double intra_latency_ns = 250;  // per GPU <-> switch hop

  int nics_per_node = 1;          // GPU i uses NIC floor(i * nics_per_node / gpus_per_node)
  double nic_gbps = 400;          // per NIC per direction
  double nic_pcie_gbps = 512;     // GPU <-> NIC attachment (PCIe Gen5 x16 ~ 64 GB/s)
  double nic_latency_ns = 500;    // GPU <-> NIC hop

  FabricKind fabric = FabricKind::kSingleSwitch;
  int radix = 64;                 // fat-tree switch ports
  double oversubscription = 1.0;  // fat-tree / rail uplinks: downlink bandwidth over uplink bandwidth
  int spines = 1;                 // rail-optimized: spine switches joining the rails
  double fabric_latency_ns = 600; // per NIC <-> switch and switch <-> switch hop

  Placement placement = Placement::kPacked;

  int ranks() const { return nodes * gpus_per_node; }
  Json to_json() const;
};

enum class LinkKind { kIntra, kNicAttach, kFabric };

struct Link {
  int from = 0, to = 0;             // vertex ids
  double capacity_bytes_per_ns = 0; // = GB/s
  double latency_ns = 0;
  LinkKind kind = LinkKind::kFabric;
};

class Topology {
 public:
  explicit Topology(const TopologyConfig& config);
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  const TopologyConfig& config() const { return config_; }
  int ranks() const { return config_.ranks(); }
  int vertices() const;
  int links() const { return int(links_.size()); }
  const Link& link(int id) const { return links_.at(size_t(id)); }
  std::vector<double> capacities() const;  // bytes/ns, indexed by link id
  std::string vertex_name(int vertex) const;  // "node3.gpu5", "node3.nvswitch", "node3.nic1", "leaf2", "spine0", "rail4", "switch"

  int gpu_vertex(int rank) const;  // through the placement
  int node_of(int rank) const;

  // The links from rank A to rank B, in order, on a shortest path by hop
  // count. Equal-cost paths (fat-tree and rail spines) are chosen by a hash
  // of (A, B), like static ECMP: deterministic, and spreading pairs over
  // spines. GPUs are never transit vertices; traffic inside a node stays on
  // the NVSwitch/PCIe switch, traffic between nodes leaves through the
  // sender's NIC (no PXN-style relay). Empty when A == B. Thread-safe.
  std::vector<int> path(int rank_a, int rank_b) const;
  double path_latency_ns(const std::vector<int>& links) const;

  // A ring over RANKS (in ring order) as P transfers, rank[i] -> rank[i+1 mod
  // P]: the links each crosses. In a ring collective all P run at once, so
  // they share links; max_min_rates over them gives each step's rates.
  std::vector<std::vector<int>> ring_transfers(const std::vector<int>& ranks) const;

 private:
  struct Graph;  // the Boost.Graph adjacency_list, kept out of this header

  // Paths inside a node use only intra-node links; paths between nodes use
  // only NIC and fabric links (GPU -> its NIC -> fabric -> NIC -> GPU; no
  // relaying through another GPU or a shared NIC between two local GPUs).
  bool usable(int link, bool within_node) const;
  const std::vector<int>& hops_to(int vertex, bool within_node) const;  // BFS hop counts, cached

  TopologyConfig config_;
  std::unique_ptr<Graph> graph_;
  std::vector<Link> links_;
  std::vector<std::string> names_;
  std::vector<bool> is_gpu_;
  std::vector<int> gpus_;  // vertex of GPU (node, local index), at node * gpus_per_node + local
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::unique_ptr<std::vector<int>>> hops_cache_;  // [vertex * 2 + within_node]
};

// Parses a "topology" object: an optional "preset" whose values the other
// keys override (nested objects key by key). InputError with file and
// pointer for unknown keys, bad values, and a fat-tree too small for the NICs.
TopologyConfig parse_topology(const JsonNode& node);

// The smallest switch radix whose two-level fat-tree holds every NIC of C at
// C's oversubscription (C.radix itself when it suffices).
int fat_tree_radix_needed(const TopologyConfig& c);

std::vector<std::string> topology_preset_names();
// The named preset; InputError (with a suggestion) for an unknown name.
TopologyConfig topology_preset(const std::string& name);
// The network model a topology PRESET implies when the scenario names none:
// "seed-table" for seed-8node, "nccl" otherwise (and for no preset).
std::string preset_network_model(const std::string& preset);

}  // namespace sparsefuse::netmodel
