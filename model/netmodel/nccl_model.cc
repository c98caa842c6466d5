#include "model/netmodel/nccl_model.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "common/input_error.h"

namespace sparsefuse::netmodel {

// Our own table (see the header): linear fall from 1.0 to a floor held over
// 64 KiB-1 MiB, linear recovery to 1.0. Rows: LL, LL128, Simple; column b is
// for messages of [64 * 2^b, 64 * 2^(b+1)) bytes.
const TreeCorrectionTable kDefaultTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.4,
     0.4, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6,
     0.6, 0.6, 0.6, 0.7, 0.8, 0.9, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.5,
     0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0},
}};

namespace {

// v2.30.7 constants (docs/baseline-systems.md#nccls-tuning-model), microseconds; [algorithm][protocol].
constexpr double kBaseLat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
enum Hw { kHwNVLink, kHwPCI, kHwNet };
constexpr double kHwLat[3][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLink
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCI
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // NET
};

// Bandwidth caps, GB/s. Columns: 1 node, 2 nodes, more than 2 nodes.
double ll_max_bw(GpuArch arch, CpuVendor cpu, int column) {
  if (column == 0) return arch == GpuArch::kAmpere ? 87.7 : arch == GpuArch::kHopper ? 141.0 : 282.0;
  if (cpu == CpuVendor::kAmd) return column == 1 ? 22.5 : 19.0;
  return column == 1 ? 39.0 : 20.4;  // Intel; ARM assumed alike
}
double per_channel_max_tree_bw(GpuArch arch, int column) {
  constexpr double table[3][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
  return table[int(arch)][column];
}
double per_channel_max_ring_ll128_bw(GpuArch arch) {
  return arch == GpuArch::kAmpere ? 20.0 : arch == GpuArch::kHopper ? 36.7 : 40.0;
}
double per_channel_max_tree_ll128_bw(GpuArch arch, int column) {
  if (arch == GpuArch::kHopper) return column == 2 ? 29.0 : 36.7;
  return per_channel_max_ring_ll128_bw(arch);  // assumption, see the header
}

int node_column(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

int tree_correction_bucket(double bytes) {
  int b = 0;
  while (b + 1 < kTreeCorrectionBuckets && 64.0 * double(int64_t(1) << (b + 1)) <= bytes) ++b;
  return b;
}

int floor_log2(int n) {
  int k = 0;
  while ((int64_t(1) << (k + 1)) <= n) ++k;
  return k;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) {
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// Applies one NCCL_ALGO / NCCL_PROTO specification to ALLOWED[collective][item].
template <size_t N>
void apply_restriction(const std::string& spec, const std::string& where, const std::vector<std::string>& names,
                       std::array<std::array<bool, N>, 3>& allowed, std::array<std::array<bool, N>, 3>* named) {
  for (const std::string& entry : split(spec, ';')) {
    std::vector<int> collectives = {0, 1, 2};
    std::string list = entry;
    if (size_t colon = entry.find(':'); colon != std::string::npos) {
      std::string c = lower(entry.substr(0, colon));
      if (c == "allreduce") collectives = {0};
      else if (c == "allgather") collectives = {1};
      else if (c == "reducescatter" || c == "reduce_scatter") collectives = {2};
      else throw InputError(where, "", fmt::format("unknown collective \"{}\" in \"{}\"", c, spec));
      list = entry.substr(colon + 1);
    }
    bool exclude = !list.empty() && list[0] == '^';
    if (exclude) list.erase(0, 1);
    std::array<bool, N> listed{};
    for (const std::string& item : split(list, ',')) {
      auto it = std::find(names.begin(), names.end(), lower(item));
      if (it == names.end()) {
        std::string all;
        for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
        throw InputError(where, "", fmt::format("unknown name \"{}\" in \"{}\"; expected some of {}", item, spec, all));
      }
      listed[size_t(it - names.begin())] = true;
    }
    for (int c : collectives) {
      for (size_t i = 0; i < N; ++i) {
        allowed[c][i] = exclude ? allowed[c][i] && !listed[i] : listed[i];
        if (named && !exclude) (*named)[c][i] = listed[i];
      }
    }
  }
}

}  // namespace

const char* name(Algorithm a) {
  static const char* const names[] = {"tree", "ring", "nvls", "nvlstree"};
  return names[int(a)];
}
const char* name(Protocol p) { return p == Protocol::kLL ? "LL" : p == Protocol::kLL128 ? "LL128" : "Simple"; }

void Restriction::restrict_algorithms(const std::string& spec, const std::string& where) {
  apply_restriction<4>(spec, where, {"tree", "ring", "nvls", "nvlstree"}, algorithm, nullptr);
}

void Restriction::restrict_protocols(const std::string& spec, const std::string& where) {
  apply_restriction<3>(spec, where, {"ll", "ll128", "simple"}, protocol, &protocol_named);
}

NcclModel::NcclModel(NcclTopology topology, Restriction restriction)
    : topology_(std::move(topology)), restriction_(restriction) {
  if (topology_.nodes < 1 || topology_.gpus_per_node < 1 || topology_.channels < 1 ||
      !(topology_.bw_intra_gbs > 0) || !(topology_.bw_inter_gbs > 0)) {
    throw std::invalid_argument("NcclModel: nodes, gpus_per_node, channels and bandwidths must be positive");
  }
}

bool NcclModel::ll128_enabled_by_default() const {
  if (topology_.intra != IntraLink::kNVLink) return false;
  if (topology_.nodes > 1 && !topology_.net_allows_ll128) return false;
  if (topology_.mixed_compute_capability && topology_.arch < GpuArch::kHopper) return false;
  return true;
}

double NcclModel::base_bandwidth_gbs(Collective collective, Algorithm algorithm, Protocol protocol) const {
  const NcclTopology& t = topology_;
  const int column = node_column(t.nodes);
  const double nch = t.channels;
  double bus = nch * (t.nodes <= 2 ? t.bw_intra_gbs : t.bw_inter_gbs);
  if (algorithm == Algorithm::kRing) {
    if (protocol == Protocol::kLL) bus = std::min(ll_max_bw(t.arch, t.cpu, column), 0.5 * bus);
    if (protocol == Protocol::kLL128) bus = std::min(0.92 * bus, nch * per_channel_max_ring_ll128_bw(t.arch));
    const int p = t.ranks();
    const int steps = collective == Collective::kAllreduce ? 2 * (p - 1) : p - 1;
    return bus * double(p) / double(steps);
  }
  // Tree (allreduce only).
  bus = std::min(0.92 * bus, nch * per_channel_max_tree_bw(t.arch, column));
  if (protocol == Protocol::kLL) bus = std::min(bus / 3.8, ll_max_bw(t.arch, t.cpu, column));
  if (protocol == Protocol::kLL128) {
    bus = std::min(bus * (t.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * per_channel_max_tree_ll128_bw(t.arch, column));
  }
  if (t.pure_tree_pattern) bus *= 0.85;
  return bus * 0.5;
}

double NcclModel::base_latency_us(Collective collective, Algorithm algorithm, Protocol protocol) const {
  const NcclTopology& t = topology_;
  const int a = int(algorithm), p = int(protocol);
  const int intra_hw = t.intra == IntraLink::kNVLink ? kHwNVLink : kHwPCI;
  // With one rank per node every step crosses the network: NCCL then uses
  // the Tree row of the NET table for both algorithms.
  double inter = kHwLat[kHwNet][t.gpus_per_node == 1 ? int(Algorithm::kTree) : a][p] + t.latency_inter_us;
  if (protocol == Protocol::kSimple) inter += t.latency_inter_us;  // flush
  double intra = kHwLat[intra_hw][a][p];
  if (algorithm == Algorithm::kRing) {
    const int ranks = t.ranks();
    const bool allreduce = collective == Collective::kAllreduce;
    const int steps = allreduce ? 2 * (ranks - 1) : ranks - 1;
    const int inter_steps = t.nodes > 1 ? (allreduce ? 2 * (t.nodes - 1) : t.nodes - 1) : 0;
    if (t.nodes > 1) {
      double overhead = t.net_overhead_us.value_or(t.cpu == CpuVendor::kAmd ? 2.0 : 1.0);
      if (protocol == Protocol::kSimple) overhead *= 3;
      intra = std::max(intra, overhead);
    }
    return kBaseLat[a][p] + double(steps - inter_steps) * intra + double(inter_steps) * inter;
  }
  return kBaseLat[a][p] + 2.0 * (double(t.gpus_per_node - 1) * intra + double(floor_log2(t.nodes)) * inter);
}

int NcclModel::channels_used(Algorithm algorithm, Protocol protocol, double bytes) const {
  if (algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree) {
    return topology_.channels;  // the switch and the NICs, not the channels, set their speed
  }
  const double threads = protocol == Protocol::kLL128 ? 640 : 512;
  double per_thread = protocol == Protocol::kSimple ? 64 : 8;
  if (protocol == Protocol::kLL && algorithm == Algorithm::kRing) per_thread *= topology_.ranks();
  int nc = topology_.channels;
  while (nc > 1 && bytes < double(nc) * threads * per_thread) --nc;
  return nc;
}

Candidate NcclModel::candidate(Collective collective, Algorithm algorithm, Protocol protocol, double bytes,
                               int lat_count) const {
  Candidate c;
  c.algorithm = algorithm;
  c.protocol = protocol;
  const int ci = int(collective);
  if (algorithm == Algorithm::kTree && collective != Collective::kAllreduce) {
    c.why_disabled = "tree implements allreduce only";
    return c;
  }
  if (algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree) {
    return nvls_candidate(collective, algorithm, protocol, bytes, lat_count);
  }
  if (!restriction_.algorithm[ci][int(algorithm)]) {
    c.why_disabled = "excluded by the algorithm restriction";
  } else if (!restriction_.protocol[ci][int(protocol)]) {
    c.why_disabled = "excluded by the protocol restriction";
  } else if (protocol == Protocol::kLL128 && !ll128_enabled_by_default() &&
             !restriction_.protocol_named[ci][int(Protocol::kLL128)]) {
    c.why_disabled = "LL128 is off by default on this path (PCI, NIC path or mixed compute capability)";
  }
  c.enabled = c.why_disabled.empty();
  c.latency_us = base_latency_us(collective, algorithm, protocol);
  c.bandwidth_gbs = base_bandwidth_gbs(collective, algorithm, protocol);
  if (algorithm == Algorithm::kTree) {
    c.bandwidth_gbs *= topology_.tree_correction[int(protocol)][tree_correction_bucket(bytes)];
  }
  // Ring/Simple allreduce across nodes plateaus once each channel x rank
  // slice reaches 64 B (every modelled architecture is sm80+: factor 1.4).
  if (algorithm == Algorithm::kRing && protocol == Protocol::kSimple && collective == Collective::kAllreduce &&
      topology_.nodes > 1 && bytes / (double(topology_.channels) * topology_.ranks()) >= 64) {
    c.latency_us *= 1.4;
  }
  c.time_us = c.latency_us * lat_count + bytes / (1000.0 * c.bandwidth_gbs);
  return c;
}

Candidate NcclModel::nvls_candidate(Collective collective, Algorithm algorithm, Protocol protocol, double bytes,
                                    int lat_count) const {
  const NcclTopology& t = topology_;
  const bool tree = algorithm == Algorithm::kNvlsTree;
  Candidate c;
  c.algorithm = algorithm;
  c.protocol = protocol;
  const int ci = int(collective);
  if (collective != Collective::kAllreduce) {
    c.why_disabled = tree ? "NVLSTree is modelled for allreduce only" : "NVLS is modelled for allreduce only";
  } else if (protocol != Protocol::kSimple) {
    c.why_disabled = tree ? "NVLSTree runs the Simple protocol only" : "NVLS runs the Simple protocol only";
  } else if (!t.nvls || !(t.nvls_bandwidth_gbs > 0)) {
    c.why_disabled = "no NVSwitch with multicast (NVLS) on this node";
  } else if (t.gpus_per_node < 2) {
    c.why_disabled = "NVLS needs several GPUs on a node";
  } else if (!tree && t.nodes != 1) {
    c.why_disabled = "NVLS alone is modelled on one node (across nodes: NVLSTree)";
  } else if (tree && t.nodes < 2) {
    c.why_disabled = "NVLSTree runs across nodes (NCCL disables it on one)";
  } else if (!restriction_.algorithm[ci][int(algorithm)]) {
    c.why_disabled = "excluded by the algorithm restriction";
  } else if (!restriction_.protocol[ci][int(protocol)]) {
    c.why_disabled = "excluded by the protocol restriction";
  }
  c.enabled = c.why_disabled.empty();
  c.latency_us = kNvlsLatencyUs;
  c.bandwidth_gbs = t.nvls_bandwidth_gbs;
  if (tree) {
    c.latency_us += 2.0 * double(floor_log2(t.nodes)) * (kNvlsTreeNetLatencyUs + 2.0 * t.latency_inter_us);
    // Two nodes exchange the buffer once each way; beyond two, a node is
    // inside one of NCCL's two binary trees and its NICs carry twice that
    // (NCCL's tuner likewise doubles its network bandwidth at <= 2 nodes).
    if (t.node_nic_gbs > 0) c.bandwidth_gbs = std::min(c.bandwidth_gbs, t.node_nic_gbs * (t.nodes <= 2 ? 1.0 : 0.5));
  }
  c.time_us = c.bandwidth_gbs > 0 ? c.latency_us * lat_count + bytes / (1000.0 * c.bandwidth_gbs)
                                  : std::numeric_limits<double>::infinity();
  return c;
}

CollectiveEstimate NcclModel::estimate(Collective collective, double bytes, int lat_count) const {
  CollectiveEstimate e;
  if (topology_.ranks() <= 1) {
    e.algorithm = e.protocol = "none";
    e.channels_used = 0;
    return e;
  }
  const Candidate* best = nullptr;
  for (Algorithm a : {Algorithm::kTree, Algorithm::kRing}) {
    for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
      e.candidates.push_back(candidate(collective, a, p, bytes, lat_count));
    }
  }
  for (Algorithm a : {Algorithm::kNvls, Algorithm::kNvlsTree}) {
    e.candidates.push_back(candidate(collective, a, Protocol::kSimple, bytes, lat_count));
  }
  for (const Candidate& c : e.candidates) {
    if (c.enabled && (!best || c.time_us < best->time_us)) best = &c;
  }
  if (!best) {
    throw InputError("NCCL_ALGO / NCCL_PROTO", "",
                     fmt::format("the restriction leaves no algorithm and protocol for {}", collective_name(collective)));
  }
  e.time_us = best->time_us;
  e.algorithm = name(best->algorithm);
  e.protocol = name(best->protocol);
  e.latency_us = best->latency_us;
  e.bandwidth_gbs = best->bandwidth_gbs;
  e.channels_used = channels_used(best->algorithm, best->protocol, bytes);
  const double used_gbs = std::min(best->bandwidth_gbs * e.channels_used / double(topology_.channels),
                                   bottleneck_bandwidth_gbs(collective, best->algorithm));
  e.reduced_time_us = best->latency_us * lat_count + bytes / (1000.0 * used_gbs);
  return e;
}

double NcclModel::bottleneck_bandwidth_gbs(Collective collective, Algorithm algorithm) const {
  const NcclTopology& t = topology_;
  const double none = std::numeric_limits<double>::infinity();
  if (algorithm == Algorithm::kTree) return t.nodes > 1 && t.node_nic_gbs > 0 ? t.node_nic_gbs : none;
  if (algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree || !(t.ring_bus_gbs > 0)) return none;
  const int p = t.ranks();
  const int steps = collective == Collective::kAllreduce ? 2 * (p - 1) : p - 1;
  return t.ring_bus_gbs * double(p) / double(steps);
}

Json CollectiveEstimate::to_json() const {
  Json all = Json::array();
  for (const Candidate& c : candidates) {
    Json j = {{"algorithm", name(c.algorithm)},
              {"protocol", name(c.protocol)},
              {"enabled", c.enabled},
              {"latency_us", c.latency_us},
              {"bandwidth_gbs", c.bandwidth_gbs},
              {"time_us", c.time_us}};
    if (!c.enabled) j["why_disabled"] = c.why_disabled;
    all.push_back(j);
  }
  return {{"time_us", time_us},
          {"algorithm", algorithm},
          {"protocol", protocol},
          {"latency_us", latency_us},
          {"bandwidth_gbs", bandwidth_gbs},
          {"channels_used", channels_used},
          {"reduced_time_us", reduced_time_us},
          {"candidates", all}};
}

HierarchicalEstimate hierarchical_allreduce(const NcclTopology& topology, double bytes,
                                            const Restriction& restriction) {
  HierarchicalEstimate h;
  const int g = topology.gpus_per_node;
  if (g > 1) {
    NcclTopology intra = topology;
    intra.nodes = 1;
    intra.ring_bus_gbs = 0;  // the world's routed rings say nothing about a node's own
    NcclModel model(intra, restriction);
    h.reduce_scatter = model.estimate(Collective::kReduceScatter, bytes);
    h.allgather = model.estimate(Collective::kAllgather, bytes);
  }
  if (topology.nodes > 1) {
    // The g inter-node allreduces (one per local GPU) run at once and share
    // the node's NICs: each gets 1/g of them.
    NcclTopology inter = topology;
    inter.gpus_per_node = 1;
    inter.bw_inter_gbs = topology.bw_inter_gbs / g;
    inter.bw_intra_gbs = inter.bw_inter_gbs;  // <= 2 nodes NCCL reads bwIntra; here it is the network
    inter.node_nic_gbs = topology.node_nic_gbs / g;
    inter.ring_bus_gbs = inter.node_nic_gbs;  // one ring edge per node crosses its NICs
    h.allreduce = NcclModel(inter, restriction).estimate(Collective::kAllreduce, bytes / g);
  }
  h.time_us = h.reduce_scatter.time_us + h.allreduce.time_us + h.allgather.time_us;
  return h;
}

Json HierarchicalEstimate::to_json() const {
  return {{"time_us", time_us},
          {"reduce_scatter", reduce_scatter.to_json()},
          {"allreduce", allreduce.to_json()},
          {"allgather", allgather.to_json()}};
}

}  // namespace sparsefuse::netmodel
