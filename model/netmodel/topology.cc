#include "model/netmodel/topology.h"

#include <algorithm>
#include <deque>
#include <optional>

#include <boost/graph/adjacency_list.hpp>
#include <fmt/format.h>

#include "common/input_error.h"
#include "common/rng.h"

namespace sparsefuse::netmodel {

struct EdgeProps {
  int link = 0;
};
using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, EdgeProps>;

struct Topology::Graph {
  BoostGraph g;
};

namespace {

const char* transport_name(TransportKind k) {
  return k == TransportKind::kRdma ? "rdma" : k == TransportKind::kEfa ? "efa" : "tcp";
}

const char* intra_name(IntraKind k) { return k == IntraKind::kNVSwitch ? "nvswitch" : "pcie"; }
const char* fabric_name(FabricKind k) {
  return k == FabricKind::kSingleSwitch ? "single-switch" : k == FabricKind::kFatTree ? "fat-tree" : "rail-optimized";
}

// Fat-tree shape for radix k and oversubscription s = down / up ports per leaf.
struct FatTreeShape {
  int up = 0, down = 0, leaves = 0;
};
FatTreeShape fat_tree_shape(const TopologyConfig& c) {
  FatTreeShape f;
  f.up = int(double(c.radix) / (1.0 + c.oversubscription));
  f.down = c.radix - f.up;
  int nics = c.nodes * c.nics_per_node;
  f.leaves = f.up >= 1 ? (nics + f.down - 1) / f.down : 0;
  return f;
}

}  // namespace

int fat_tree_radix_needed(const TopologyConfig& c) {
  TopologyConfig t = c;
  for (;; ++t.radix) {
    const FatTreeShape f = fat_tree_shape(t);
    if (f.up >= 1 && f.leaves <= t.radix) return t.radix;
  }
}

namespace {

struct PresetEntry {
  const char* name;
  const char* description;
  TopologyConfig config;
  const char* network_model = "nccl";  // the collective cost model the preset implies
};

const std::vector<PresetEntry>& presets() {
  static const std::vector<PresetEntry> table = [] {
    std::vector<PresetEntry> t;
    TopologyConfig dgx;
    dgx.preset = "dgx-h200-ib400";
    dgx.gpu = "h200";
    dgx.gpus_per_node = 8;
    dgx.intra = IntraKind::kNVSwitch;
    dgx.intra_gbps = 3600;  // NVLink 4: 900 GB/s per GPU both ways = 450 GB/s per direction
    dgx.intra_latency_ns = 250;
    dgx.nics_per_node = 8;  // one 400 Gb/s NDR NIC per GPU
    dgx.nic_gbps = 400;
    dgx.nic_pcie_gbps = 512;  // PCIe Gen5 x16
    dgx.nic_latency_ns = 500;
    dgx.fabric = FabricKind::kRailOptimized;
    dgx.spines = 1;
    dgx.oversubscription = 1;
    dgx.fabric_latency_ns = 500;
    t.push_back({"dgx-h200-ib400", "8 H200 per node on NVSwitch, eight 400 Gb/s NICs, rail-optimized", dgx});

    auto single = [](const char* name, double gbps, double nic_latency, double hop_latency) {
      TopologyConfig c;
      c.preset = name;
      c.gpus_per_node = 1;
      c.intra = IntraKind::kPCIe;
      c.intra_gbps = 128;  // unused with one GPU per node
      c.intra_nvls = false;
      c.nics_per_node = 1;
      c.nic_gbps = gbps;
      c.nic_pcie_gbps = 128;  // PCIe Gen3 x16
      c.nic_latency_ns = nic_latency;
      c.fabric = FabricKind::kSingleSwitch;
      c.fabric_latency_ns = hop_latency;
      if (gbps <= 25) c.transport = transport_defaults(TransportKind::kTcp);  // Ethernet without RDMA
      return c;
    };
    t.push_back({"ethernet-10g", "one GPU per node, 10 Gb/s Ethernet, one switch", single("ethernet-10g", 10, 1000, 2500)});
    t.push_back({"ethernet-25g", "one GPU per node, 25 Gb/s Ethernet, one switch", single("ethernet-25g", 25, 1000, 2000)});
    t.push_back({"ib-56g", "one GPU per node, 56 Gb/s FDR InfiniBand, one switch", single("ib-56g", 56, 500, 300)});
    // The seed papers' 8-node cluster: its links as ib-56g, but collective
    // times from the seed code's measured table (sim/seed_network.h).
    t.push_back({"seed-8node", "the seed papers' 8 one-GPU nodes; collective times from the seed code's table",
                 single("seed-8node", 56, 500, 300), "seed-table"});
    return t;
  }();
  return table;
}

std::optional<TopologyConfig> find_preset(const std::string& name) {
  for (const auto& p : presets()) {
    if (name == p.name) return p.config;
  }
  return std::nullopt;
}

std::string unknown_preset_message(const std::string& name) {
  auto names = topology_preset_names();
  std::string hint = nearest_name(name, names);
  if (hint.empty() && !name.empty()) {  // "dgx-h200" for "dgx-h200-ib400": a unique prefix
    for (const auto& n : names) {
      if (n.rfind(name, 0) == 0) hint = hint.empty() ? n : "-";
    }
    if (hint == "-") hint.clear();
  }
  if (!hint.empty()) return fmt::format("unknown topology preset \"{}\"; did you mean \"{}\"?", name, hint);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return fmt::format("unknown topology preset \"{}\"; presets: {}", name, all);
}

template <typename Enum>
Enum parse_enum(const JsonNode& node, const std::vector<std::pair<const char*, Enum>>& choices) {
  std::string text = node.as_string();
  std::vector<std::string> names;
  for (const auto& [n, value] : choices) {
    if (text == n) return value;
    names.push_back(n);
  }
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + ("\"" + n + "\"");
  node.fail(fmt::format("expected one of {}, got \"{}\"", all, text));
}

// The transport after the user's keys: a kind other than the preset's starts
// from that kind's defaults, so {"kind": "tcp"} alone gives the TCP figures.
// MERGED is the merged "nic/transport" (for pointers and values); the user's
// own keys decide which fields were given.
Transport parse_transport(const JsonNode& merged, const JsonNode& user_topology, const Transport& base) {
  merged.check_keys({"kind", "efficiency", "message_latency_us", "sockets", "socket_gbps"});
  const TransportKind kind = parse_enum<TransportKind>(
      merged.child("kind"), {{"rdma", TransportKind::kRdma}, {"efa", TransportKind::kEfa}, {"tcp", TransportKind::kTcp}});
  Transport t = kind == base.kind ? base : transport_defaults(kind);
  Json given = Json::object();
  if (user_topology.json().contains("nic") && user_topology.json()["nic"].is_object() &&
      user_topology.json()["nic"].contains("transport") && user_topology.json()["nic"]["transport"].is_object()) {
    given = user_topology.json()["nic"]["transport"];
  }
  if (given.contains("efficiency")) t.efficiency = merged.child("efficiency").as_number(0, 1, true);
  if (given.contains("message_latency_us")) t.message_latency_us = merged.child("message_latency_us").as_number(0, 1e9);
  if (given.contains("sockets")) t.sockets = int(merged.child("sockets").as_int(0, 1024));
  if (given.contains("socket_gbps")) t.socket_gbps = merged.child("socket_gbps").as_number(0, 1e9);
  return t;
}

}  // namespace

Json TopologyConfig::to_json() const {
  Json j = {{"nodes", nodes},
            {"gpus_per_node", gpus_per_node},
            {"intra",
             {{"kind", intra_name(intra)},
              {"bandwidth_gbps", intra_gbps},
              {"latency_ns", intra_latency_ns},
              {"nvls", intra_nvls}}},
            {"nic",
             {{"per_node", nics_per_node},
              {"bandwidth_gbps", nic_gbps},
              {"pcie_gbps", nic_pcie_gbps},
              {"latency_ns", nic_latency_ns},
              {"transport",
               {{"kind", transport_name(transport.kind)},
                {"efficiency", transport.efficiency},
                {"message_latency_us", transport.message_latency_us},
                {"sockets", transport.sockets},
                {"socket_gbps", transport.socket_gbps}}}}},
            {"fabric",
             {{"kind", fabric_name(fabric)},
              {"radix", radix},
              {"oversubscription", oversubscription},
              {"spines", spines},
              {"latency_ns", fabric_latency_ns}}},
            {"placement", placement == Placement::kPacked ? "packed" : "spread"}};
  if (!preset.empty()) j["preset"] = preset;
  if (!gpu.empty()) j["gpu"] = gpu;
  return j;
}

Transport transport_defaults(TransportKind kind) {
  Transport t;
  t.kind = kind;
  switch (kind) {
    case TransportKind::kRdma:  // InfiniBand / RoCE verbs: what NCCL's constants describe
      t.efficiency = 0.96;
      t.message_latency_us = 0;
      break;
    case TransportKind::kEfa:  // AWS EFA (SRD through libfabric and the aws-ofi-nccl plugin)
      t.efficiency = 0.94;
      t.message_latency_us = 22;
      break;
    case TransportKind::kTcp:  // kernel TCP sockets (NCCL's socket transport, MPI over Ethernet)
      t.efficiency = 0.9;
      t.message_latency_us = 8;
      t.sockets = 1;
      t.socket_gbps = 20;
      break;
  }
  return t;
}

double Transport::achievable_gbps(double line_gbps) const {
  double rate = line_gbps * efficiency;
  if (sockets > 0 && socket_gbps > 0) rate = std::min(rate, sockets * socket_gbps);
  return rate;
}

std::string preset_network_model(const std::string& preset) {
  for (const auto& p : presets()) {
    if (preset == p.name) return p.network_model;
  }
  return "nccl";
}

std::vector<std::string> topology_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

TopologyConfig topology_preset(const std::string& name) {
  auto config = find_preset(name);
  if (!config) throw InputError("", "", unknown_preset_message(name));
  return *config;
}

TopologyConfig parse_topology(const JsonNode& node) {
  node.check_keys({"preset", "gpu", "nodes", "gpus_per_node", "intra", "nic", "fabric", "placement"});
  // Start from the preset (or the defaults) and lay the given keys over it,
  // nested objects key by key; then validate the result. Pointers are the
  // same in both documents, so errors still point into the user's file.
  TopologyConfig base;
  if (auto p = node.optional_child("preset")) {
    auto found = find_preset(p->as_string());
    if (!found) p->fail(unknown_preset_message(p->as_string()));
    base = *found;
  }
  Json merged = base.to_json();
  merged.erase("preset");
  Json user = node.json();
  user.erase("preset");
  for (const char* section : {"intra", "nic", "fabric"}) {
    if (user.contains(section)) JsonNode(user[section], node.file(), node.pointer() + "/" + section).expect_object();
  }
  merged.merge_patch(user);
  JsonNode m(merged, node.file(), node.pointer());

  TopologyConfig c;
  c.preset = base.preset;
  if (m.has("gpu")) c.gpu = m.child("gpu").as_string();  // the scenario checks the name (model/gpu_devices.h)
  c.nodes = int(m.child("nodes").as_int(1, 1 << 20));
  c.gpus_per_node = int(m.child("gpus_per_node").as_int(1, 1024));
  if (int64_t(c.nodes) * c.gpus_per_node > (1 << 22)) {
    m.child("nodes").fail(fmt::format("{} nodes x {} GPUs is more than {} GPUs", c.nodes, c.gpus_per_node, 1 << 22));
  }
  JsonNode intra = m.child("intra");
  intra.check_keys({"kind", "bandwidth_gbps", "latency_ns", "nvls"});
  c.intra = parse_enum<IntraKind>(intra.child("kind"), {{"nvswitch", IntraKind::kNVSwitch}, {"pcie", IntraKind::kPCIe}});
  c.intra_gbps = intra.child("bandwidth_gbps").as_number(0, 1e9, true);
  c.intra_latency_ns = intra.child("latency_ns").as_number(0, 1e12);
  c.intra_nvls = intra.child("nvls").as_bool();

  JsonNode nic = m.child("nic");
  nic.check_keys({"per_node", "bandwidth_gbps", "pcie_gbps", "latency_ns", "transport"});
  c.nics_per_node = int(nic.child("per_node").as_int(1, c.gpus_per_node));
  c.nic_gbps = nic.child("bandwidth_gbps").as_number(0, 1e9, true);
  c.nic_pcie_gbps = nic.child("pcie_gbps").as_number(0, 1e9, true);
  c.nic_latency_ns = nic.child("latency_ns").as_number(0, 1e12);
  c.transport = parse_transport(nic.child("transport"), node, base.transport);

  JsonNode fabric = m.child("fabric");
  fabric.check_keys({"kind", "radix", "oversubscription", "spines", "latency_ns"});
  c.fabric = parse_enum<FabricKind>(fabric.child("kind"), {{"single-switch", FabricKind::kSingleSwitch},
                                                           {"fat-tree", FabricKind::kFatTree},
                                                           {"rail-optimized", FabricKind::kRailOptimized}});
  c.radix = int(fabric.child("radix").as_int(2, 1 << 16));
  c.oversubscription = fabric.child("oversubscription").as_number(1, 1e6);
  c.spines = int(fabric.child("spines").as_int(1, 1 << 16));
  c.fabric_latency_ns = fabric.child("latency_ns").as_number(0, 1e12);
  c.placement = parse_enum<Placement>(m.child("placement"), {{"packed", Placement::kPacked}, {"spread", Placement::kSpread}});

  if (c.fabric == FabricKind::kFatTree && c.nodes > 1) {
    FatTreeShape f = fat_tree_shape(c);
    if (f.up < 1) {
      fabric.child("oversubscription").fail(fmt::format("leaves no uplink on a radix-{} leaf switch", c.radix));
    }
    if (f.leaves > c.radix) {
      fabric.child("radix").fail(fmt::format(
          "a two-level fat-tree of radix {} with oversubscription {} ({} NICs per leaf, {} spines) connects at most "
          "{} NICs; this topology has {}",
          c.radix, c.oversubscription, f.down, f.up, c.radix * f.down, c.nodes * c.nics_per_node));
    }
  }
  return c;
}

Topology::Topology(const TopologyConfig& config) : config_(config), graph_(std::make_unique<Graph>()) {
  const TopologyConfig& c = config_;
  if (c.nodes < 1 || c.gpus_per_node < 1 || c.nics_per_node < 1 || c.nics_per_node > c.gpus_per_node) {
    throw std::invalid_argument("Topology: invalid node shape (use parse_topology to validate input)");
  }
  BoostGraph& g = graph_->g;
  auto vertex = [&](std::string name, bool is_switch) {
    int v = int(boost::add_vertex(g));
    names_.push_back(std::move(name));
    is_switch_.push_back(is_switch);
    for (auto* per_vertex : {&intra_up_, &intra_down_, &nic_up_, &nic_down_, &edge_up_, &edge_down_, &edge_of_}) {
      per_vertex->push_back(-1);
    }
    return v;
  };
  // One cable: link A -> B then B -> A; returns the id of A -> B.
  auto cable = [&](int a, int b, double gbps, double latency_ns, LinkKind kind) {
    const int first = int(links_.size());
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      int id = int(links_.size());
      links_.push_back({from, to, gbps / 8.0, latency_ns, kind});  // Gb/s -> bytes/ns
      boost::add_edge(size_t(from), size_t(to), EdgeProps{id}, g);
    }
    return first;
  };
  auto nic_cable = [&](int nic, int edge) {
    edge_up_[size_t(nic)] = cable(nic, edge, c.nic_gbps, c.fabric_latency_ns, LinkKind::kFabric);
    edge_down_[size_t(nic)] = edge_up_[size_t(nic)] + 1;
    edge_of_[size_t(nic)] = edge;
  };

  const int N = c.nodes, G = c.gpus_per_node, K = c.nics_per_node;
  std::vector<int> nic_vertex(size_t(N) * K);
  for (int n = 0; n < N; ++n) {
    std::vector<int> gpus;
    for (int i = 0; i < G; ++i) gpus.push_back(vertex(fmt::format("node{}.gpu{}", n, i), false));
    gpus_.insert(gpus_.end(), gpus.begin(), gpus.end());
    if (G > 1) {
      int sw = vertex(fmt::format("node{}.{}", n, intra_name(c.intra)), false);  // not a fabric switch
      for (int v : gpus) {
        intra_up_[size_t(v)] = cable(v, sw, c.intra_gbps, c.intra_latency_ns, LinkKind::kIntra);
        intra_down_[size_t(v)] = intra_up_[size_t(v)] + 1;
      }
    }
    if (N > 1) {  // NICs matter only between nodes
      for (int j = 0; j < K; ++j) nic_vertex[size_t(n) * K + j] = vertex(fmt::format("node{}.nic{}", n, j), false);
      for (int i = 0; i < G; ++i) {
        int v = gpus[size_t(i)];
        nic_up_[size_t(v)] = cable(v, nic_vertex[size_t(n) * K + size_t(nic_of(i))], c.nic_pcie_gbps, c.nic_latency_ns,
                                   LinkKind::kNicAttach);
        nic_down_[size_t(v)] = nic_up_[size_t(v)] + 1;
      }
    }
  }
  if (N > 1) {
    if (c.fabric == FabricKind::kSingleSwitch) {
      int sw = vertex("switch", true);
      for (int v : nic_vertex) nic_cable(v, sw);
    } else if (c.fabric == FabricKind::kFatTree) {
      FatTreeShape f = fat_tree_shape(c);
      if (f.up < 1 || f.leaves > c.radix) throw std::invalid_argument("Topology: fat-tree too small for its NICs");
      std::vector<int> leaves, spines;
      for (int l = 0; l < f.leaves; ++l) leaves.push_back(vertex(fmt::format("leaf{}", l), true));
      for (size_t i = 0; i < nic_vertex.size(); ++i) nic_cable(nic_vertex[i], leaves[i / size_t(f.down)]);
      if (f.leaves > 1) {  // one leaf needs no spine
        for (int s = 0; s < f.up; ++s) spines.push_back(vertex(fmt::format("spine{}", s), true));
        for (int leaf : leaves) {
          for (int spine : spines) cable(leaf, spine, c.nic_gbps, c.fabric_latency_ns, LinkKind::kFabric);
        }
      }
    } else {
      // Rail r joins NIC r of every node. Cross-rail traffic goes through
      // the spines; each rail-spine bundle is modelled as one link carrying
      // the rail's NIC bandwidth / (oversubscription x spines).
      std::vector<int> rails;
      for (int r = 0; r < K; ++r) rails.push_back(vertex(fmt::format("rail{}", r), true));
      for (int n = 0; n < N; ++n) {
        for (int r = 0; r < K; ++r) nic_cable(nic_vertex[size_t(n) * K + r], rails[size_t(r)]);
      }
      if (K > 1) {
        const double bundle = double(N) * c.nic_gbps / (c.oversubscription * c.spines);
        std::vector<int> spines;
        for (int s = 0; s < c.spines; ++s) spines.push_back(vertex(fmt::format("spine{}", s), true));
        for (int rail : rails) {
          for (int spine : spines) cable(rail, spine, bundle, c.fabric_latency_ns, LinkKind::kFabric);
        }
      }
    }
  }
  hops_cache_.resize(names_.size());
}

Topology::~Topology() = default;

Topology::Topology(Topology&& other) noexcept
    : config_(std::move(other.config_)),
      graph_(std::move(other.graph_)),
      links_(std::move(other.links_)),
      names_(std::move(other.names_)),
      is_switch_(std::move(other.is_switch_)),
      gpus_(std::move(other.gpus_)),
      intra_up_(std::move(other.intra_up_)),
      intra_down_(std::move(other.intra_down_)),
      nic_up_(std::move(other.nic_up_)),
      nic_down_(std::move(other.nic_down_)),
      edge_up_(std::move(other.edge_up_)),
      edge_down_(std::move(other.edge_down_)),
      edge_of_(std::move(other.edge_of_)),
      hops_cache_(std::move(other.hops_cache_)) {}

Topology& Topology::operator=(Topology&& other) noexcept {
  config_ = std::move(other.config_);
  graph_ = std::move(other.graph_);
  links_ = std::move(other.links_);
  names_ = std::move(other.names_);
  is_switch_ = std::move(other.is_switch_);
  gpus_ = std::move(other.gpus_);
  intra_up_ = std::move(other.intra_up_);
  intra_down_ = std::move(other.intra_down_);
  nic_up_ = std::move(other.nic_up_);
  nic_down_ = std::move(other.nic_down_);
  edge_up_ = std::move(other.edge_up_);
  edge_down_ = std::move(other.edge_down_);
  edge_of_ = std::move(other.edge_of_);
  hops_cache_ = std::move(other.hops_cache_);
  return *this;
}

int Topology::vertices() const { return int(names_.size()); }

std::vector<double> Topology::capacities() const {
  std::vector<double> out;
  for (const Link& l : links_) out.push_back(l.capacity_bytes_per_ns);
  return out;
}

std::string Topology::vertex_name(int vertex) const { return names_.at(size_t(vertex)); }

int Topology::node_of(int rank) const {
  if (rank < 0 || rank >= ranks()) throw std::out_of_range("Topology: rank out of range");
  return config_.placement == Placement::kPacked ? rank / config_.gpus_per_node : rank % config_.nodes;
}

int Topology::gpu_vertex(int rank) const {
  int node = node_of(rank);
  int local = config_.placement == Placement::kPacked ? rank % config_.gpus_per_node : rank / config_.nodes;
  return gpus_[size_t(node) * size_t(config_.gpus_per_node) + size_t(local)];
}

int Topology::rank_at(int node, int local_gpu) const {
  if (node < 0 || node >= config_.nodes || local_gpu < 0 || local_gpu >= config_.gpus_per_node) {
    throw std::out_of_range("Topology: node or GPU out of range");
  }
  return config_.placement == Placement::kPacked ? node * config_.gpus_per_node + local_gpu
                                                 : local_gpu * config_.nodes + node;
}

const std::vector<int>& Topology::hops_to_switch(int target) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto& slot = hops_cache_[size_t(target)];
  if (!slot) {
    // Breadth-first from TARGET over switch-to-switch links. Every cable is
    // a pair of opposite links, so hops from TARGET equal hops to it.
    auto hops = std::make_unique<std::vector<int>>(names_.size(), -1);
    std::deque<int> queue = {target};
    (*hops)[size_t(target)] = 0;
    while (!queue.empty()) {
      int v = queue.front();
      queue.pop_front();
      for (auto [e, end] = boost::out_edges(size_t(v), graph_->g); e != end; ++e) {
        int w = int(boost::target(*e, graph_->g));
        if (is_switch_[size_t(w)] && (*hops)[size_t(w)] < 0) {
          (*hops)[size_t(w)] = (*hops)[size_t(v)] + 1;
          queue.push_back(w);
        }
      }
    }
    slot = std::move(hops);
  }
  return *slot;
}

void Topology::fabric_next(int v, const std::vector<int>& hops, std::vector<std::pair<int, int>>& next) const {
  next.clear();
  for (auto [e, end] = boost::out_edges(size_t(v), graph_->g); e != end; ++e) {
    int w = int(boost::target(*e, graph_->g));
    if (is_switch_[size_t(w)] && hops[size_t(w)] == hops[size_t(v)] - 1) next.push_back({graph_->g[*e].link, w});
  }
  if (next.empty()) throw std::logic_error("Topology: broken shortest-path table");
}

std::vector<int> Topology::path(int rank_a, int rank_b) const {
  const int src = gpu_vertex(rank_a), dst = gpu_vertex(rank_b);
  std::vector<int> links;
  if (src == dst) return links;
  if (node_of(rank_a) == node_of(rank_b)) return {intra_up_[size_t(src)], intra_down_[size_t(dst)]};
  const int nic_a = links_[size_t(nic_up_[size_t(src)])].to, nic_b = links_[size_t(nic_up_[size_t(dst)])].to;
  links.push_back(nic_up_[size_t(src)]);
  links.push_back(edge_up_[size_t(nic_a)]);
  const int target = edge_of_[size_t(nic_b)];
  const std::vector<int>& hops = hops_to_switch(target);
  uint64_t state = (uint64_t(uint32_t(rank_a)) << 32) | uint32_t(rank_b);
  std::vector<std::pair<int, int>> next;  // (link, vertex)
  for (int v = edge_of_[size_t(nic_a)]; v != target;) {
    fabric_next(v, hops, next);
    const auto& pick = next.size() == 1 ? next[0] : next[splitmix64(state) % next.size()];
    links.push_back(pick.first);
    v = pick.second;
  }
  links.push_back(edge_down_[size_t(nic_b)]);
  links.push_back(nic_down_[size_t(dst)]);
  return links;
}

void Topology::add_spread_load(int rank_a, int rank_b, double weight, std::vector<double>& load) const {
  const int src = gpu_vertex(rank_a), dst = gpu_vertex(rank_b);
  if (src == dst) return;
  if (node_of(rank_a) == node_of(rank_b)) {
    load[size_t(intra_up_[size_t(src)])] += weight;
    load[size_t(intra_down_[size_t(dst)])] += weight;
    return;
  }
  const int nic_a = links_[size_t(nic_up_[size_t(src)])].to, nic_b = links_[size_t(nic_up_[size_t(dst)])].to;
  for (int l : {nic_up_[size_t(src)], edge_up_[size_t(nic_a)], edge_down_[size_t(nic_b)], nic_down_[size_t(dst)]}) {
    load[size_t(l)] += weight;
  }
  const int target = edge_of_[size_t(nic_b)];
  const std::vector<int>& hops = hops_to_switch(target);
  // Level by level towards TARGET: each vertex splits its share evenly over
  // its next hops (equal-cost paths have equal length, so levels align).
  std::vector<std::pair<int, double>> level = {{edge_of_[size_t(nic_a)], weight}}, below;
  std::vector<std::pair<int, int>> next;
  while (level.front().first != target) {
    below.clear();
    for (auto [v, share] : level) {
      fabric_next(v, hops, next);
      for (auto [link, w] : next) {
        load[size_t(link)] += share / double(next.size());
        auto it = std::find_if(below.begin(), below.end(), [w = w](const auto& p) { return p.first == w; });
        if (it == below.end()) below.push_back({w, share / double(next.size())});
        else it->second += share / double(next.size());
      }
    }
    level.swap(below);
  }
}

double Topology::path_latency_ns(const std::vector<int>& path_links) const {
  double sum = 0;
  for (int l : path_links) sum += links_.at(size_t(l)).latency_ns;
  return sum;
}

std::vector<std::vector<int>> Topology::ring_transfers(const std::vector<int>& ring) const {
  std::vector<std::vector<int>> transfers;
  if (ring.size() < 2) return transfers;
  for (size_t i = 0; i < ring.size(); ++i) transfers.push_back(path(ring[i], ring[(i + 1) % ring.size()]));
  return transfers;
}

}  // namespace sparsefuse::netmodel
