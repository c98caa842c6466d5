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
enum class TransportKind { kRdma, kEfa, kTcp };

// How the NICs move bytes between nodes. NCCL's tuner constants describe
// InfiniBand verbs; other transports cost more per message and reach less of
// the line rate. Defaults per kind: transport_defaults() and the README.
struct Transport {
  TransportKind kind = TransportKind::kRdma;
  double efficiency = 0.96;         // achievable fraction of the NIC's line rate
  double message_latency_us = 0;    // added to every network step (NCCL's graph.latencyInter)
  int sockets = 0;                  // tcp: socket threads x sockets per thread (0: not a socket transport)
  double socket_gbps = 0;           // tcp: what one socket stream moves, Gb/s
  // What one NIC direction achieves, Gb/s.
  double achievable_gbps(double line_gbps) const;
};
Transport transport_defaults(TransportKind kind);

struct TopologyConfig {
  std::string preset;  // informational: the preset it started from, if any
  std::string gpu;     // the GPU model ("h200"; model/gpu_devices.h), "" = unnamed: sets the compression costs
  int nodes = 1;
  int gpus_per_node = 1;

  IntraKind intra = IntraKind::kNVSwitch;
  double intra_gbps = 3600;       // per GPU per direction, to the node's switch
  double intra_latency_ns = 250;  // per GPU <-> switch hop
  bool intra_nvls = true;         // NVSwitch with multicast and in-switch reduction (Hopper and later): NCCL's NVLS

  int nics_per_node = 1;          // GPU i uses NIC floor(i * nics_per_node / gpus_per_node)
  double nic_gbps = 400;          // per NIC per direction
  double nic_pcie_gbps = 512;     // GPU <-> NIC attachment (PCIe Gen5 x16 ~ 64 GB/s)
  double nic_latency_ns = 500;    // GPU <-> NIC hop
  Transport transport;            // what a NIC achieves between nodes

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
  int rank_at(int node, int local_gpu) const;  // the inverse of the placement
  int nic_of(int local_gpu) const { return local_gpu * config_.nics_per_node / config_.gpus_per_node; }

  // The links from rank A to rank B, in order, on a shortest path by hop
  // count. Equal-cost paths (fat-tree and rail spines) are chosen by a hash
  // of (A, B), like static ECMP: deterministic, and spreading pairs over
  // spines. GPUs are never transit vertices; traffic inside a node stays on
  // the NVSwitch/PCIe switch, traffic between nodes leaves through the
  // sender's NIC (no PXN-style relay). Empty when A == B. Thread-safe.
  std::vector<int> path(int rank_a, int rank_b) const;
  double path_latency_ns(const std::vector<int>& links) const;

  // Adds WEIGHT to LOAD[link] for every link a transfer from rank A to rank
  // B crosses, the traffic split evenly over every shortest path at each
  // equal-cost choice (fluid ECMP: NCCL opens several queue pairs per
  // connection and fabrics spread them, so a transfer's bytes use every
  // spine rather than one hashed path). LOAD has one entry per link.
  void add_spread_load(int rank_a, int rank_b, double weight, std::vector<double>& load) const;

  // A ring over RANKS (in ring order) as P transfers, rank[i] -> rank[i+1 mod
  // P]: the links each crosses. In a ring collective all P run at once, so
  // they share links; max_min_rates over them gives each step's rates.
  std::vector<std::vector<int>> ring_transfers(const std::vector<int>& ranks) const;

 private:
  struct Graph;  // the Boost.Graph adjacency_list, kept out of this header

  // Paths inside a node are GPU -> node switch -> GPU; paths between nodes
  // are GPU -> its NIC -> edge switch -> (fabric) -> edge switch -> NIC -> GPU
  // (no relaying through another GPU or a shared NIC between two local
  // GPUs). Only the fabric part has choices: breadth-first hop counts to each
  // edge switch over switch vertices, cached per switch (a handful, however
  // many GPUs).
  const std::vector<int>& hops_to_switch(int vertex) const;
  // The next links on shortest paths from switch V towards switch TARGET, in
  // edge insertion order.
  void fabric_next(int v, const std::vector<int>& hops, std::vector<std::pair<int, int>>& next) const;

  TopologyConfig config_;
  std::unique_ptr<Graph> graph_;
  std::vector<Link> links_;
  std::vector<std::string> names_;
  std::vector<bool> is_switch_;
  std::vector<int> gpus_;  // vertex of GPU (node, local index), at node * gpus_per_node + local
  // Per vertex (-1 where it does not apply): a GPU's link up to its node
  // switch and back down, a GPU's link to its NIC and back, a NIC's link to
  // its edge switch and back, a NIC's edge switch.
  std::vector<int> intra_up_, intra_down_, nic_up_, nic_down_, edge_up_, edge_down_, edge_of_;
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::unique_ptr<std::vector<int>>> hops_cache_;  // [switch vertex]
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
