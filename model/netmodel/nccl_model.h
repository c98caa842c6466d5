// NCCL's own cost model for collectives, rewritten from the description in
// docs/baseline-systems.md#nccls-tuning-model (NCCL v2.30.7 tuning constants):
// for every enabled (algorithm, protocol) NCCL predicts
//     time_us = latency_us * lat_count + bytes / (1000 * bandwidth_GBps)
// and runs the cheapest. Replicating it, rather than a flat alpha-beta line,
// is what makes small buckets pay LL/LL128 latencies and large ones run at
// Simple bandwidth, as on real clusters.
//
// Scope: Ring and Tree with LL, LL128 and Simple, for allreduce, allgather and
// reduce-scatter (Tree is allreduce-only, as in NCCL), NVLS (NVSwitch
// multicast/in-switch reduction) allreduce on one node and NVLSTree (NVLS
// inside each node, a tree between nodes) allreduce across nodes. CollNet and
// PAT are not modelled. Plus a hierarchical allreduce built from three NCCL
// calls.
//
// Assumptions where the reference is silent or gives only a range (each one is
// a field of NcclTopology or a documented constant, so it can be calibrated):
//  * treeCorrectionFactor: the reference gives only "0.4-1.0, dipping to
//    ~0.4-0.6 around 64 KB-1 MB" over 24 buckets (64 B ... 512 MB). We use
//    our own table kDefaultTreeCorrection (nccl_model.cc): 1.0 up to 1 KiB,
//    falling linearly to a floor over 64 KiB-1 MiB (LL 0.4, LL128 0.6,
//    Simple 0.5), rising back to 1.0 by 32-64 MiB. Bucket =
//    floor(log2(bytes / 64)) clamped to [0, 23].
//  * Tree latency uses floor(log2(nodes)) inter-node hops (whole tree levels);
//    the reference writes log2 N.
//  * perChMaxTreeLL128Bw is given for Hopper only ({36.7, 36.7, 29}); for
//    Ampere we use 20 and for Blackwell 40 in every column, i.e. each
//    architecture's Ring LL128 per-channel cap.
//  * Network-side llMaxBw rows: ARM CPUs use the Intel row (the reference
//    names only Intel and AMD rows); the 1-node entry is always the GPU row.
//  * LL128 is enabled by default when the intra-node path is NVLink-class,
//    the network path qualifies (net_allows_ll128; set false for NICs behind
//    the CPU), and compute capabilities are uniform or >= sm90. A restriction
//    that names LL128 explicitly (not "^LL128") enables it regardless, like
//    setting NCCL_PROTO by hand.
//  * Ties between candidates go to the first in the order Tree, Ring and LL,
//    LL128, Simple (a strict "less than" scan in that order).
//  * NVLS is our own alpha-beta line, not NCCL's tuner table (which the
//    reference does not give): every GPU sends its buffer to the switch once
//    and receives the reduced result once, so the algorithm bandwidth is a
//    fraction kNvlsEfficiency of the GPU's NVLink bandwidth per direction,
//    after a fixed kNvlsLatencyUs. Both were fitted on the DGX H100
//    nccl-tests table at >= 4 MiB (tests/fidelity/); the 8 x H200 table is
//    held out. Simple protocol only, allreduce only, one node only.
//  * NVLSTree is the same kind of line, for more than one node: NVLS reduces
//    inside each node while the node's share crosses the network in a tree,
//    pipelined, so the algorithm bandwidth is the smaller of the NVLS one and
//    what the node's NICs carry (node_nic_gbs at two nodes, where each sends
//    the buffer once each way; half of it beyond, where a node is inside one
//    of the two binary trees); latency kNvlsLatencyUs plus NCCL's
//    2 x log2(nodes) network hops at kNvlsTreeNetLatencyUs + 2 x
//    latency_inter_us (NCCL's NVLSTree NET latency, plus its flush). Nothing
//    is fitted for it. As with NVLS, the same line chooses and times it.
//  * Channel reduction for small messages (channels_used): thread counts per
//    channel are taken as 512 (LL), 640 (LL128), 512 (Simple); the reference
//    gives only the per-thread byte thresholds. time_us is NCCL's prediction
//    (which assumes all channels); reduced_time_us scales the bandwidth by
//    the fraction of channels actually used, which is closer to what runs.
#pragma once

#include "common/collective.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"

namespace sparsefuse::netmodel {

enum class Algorithm { kTree, kRing, kNvls, kNvlsTree };  // NCCL's scan order
enum class Protocol { kLL, kLL128, kSimple };
enum class IntraLink { kNVLink, kPCI };
enum class GpuArch { kAmpere, kHopper, kBlackwell };
enum class CpuVendor { kIntel, kAmd, kArm };

const char* name(Algorithm a);   // "tree", "ring", "nvls", "nvlstree"
const char* name(Protocol p);    // "LL", "LL128", "Simple"

// NVLS: algorithm bandwidth = kNvlsEfficiency x the GPU's NVLink bandwidth
// per direction; latency kNvlsLatencyUs (fitted, see above).
constexpr double kNvlsEfficiency = 0.6;
constexpr double kNvlsLatencyUs = 52.0;
// NCCL v2.30.7's network latency of one NVLSTree hop (Simple), microseconds.
constexpr double kNvlsTreeNetLatencyUs = 20.9;

constexpr int kTreeCorrectionBuckets = 24;
using TreeCorrectionTable = std::array<std::array<double, kTreeCorrectionBuckets>, 3>;  // [protocol][bucket]
extern const TreeCorrectionTable kDefaultTreeCorrection;

// What NCCL's tuner knows about the communicator after its topology search.
struct NcclTopology {
  int nodes = 1;
  int gpus_per_node = 8;         // ranks per node (ppn); ranks = nodes * gpus_per_node
  IntraLink intra = IntraLink::kNVLink;
  double bw_intra_gbs = 20.6;    // per channel, GB/s (graph.bwIntra; SM90 NVLink 20.6)
  double bw_inter_gbs = 12.0;    // per channel, GB/s (graph.bwInter; 12 = 100 Gb/s NIC)
  int channels = 16;             // nChannels
  GpuArch arch = GpuArch::kHopper;
  CpuVendor cpu = CpuVendor::kIntel;
  double latency_inter_us = 0;   // graph.latencyInter
  std::optional<double> net_overhead_us;  // NCCL_NET_OVERHEAD; default 1 (Intel/ARM) or 2 (AMD)
  bool net_allows_ll128 = true;  // network path <= PXB (<= PXN on Hopper+)
  bool mixed_compute_capability = false;
  bool pure_tree_pattern = false;  // graph pattern is a plain tree: Tree bandwidth x 0.85
  TreeCorrectionTable tree_correction = kDefaultTreeCorrection;
  // What the node's NICs carry together per direction, GB/s (0: not known, no
  // cap). NCCL's tuner prices ring steps at bw_intra at <= 2 nodes, so it
  // never sees a NIC shared by several GPUs; the time a tree allreduce takes
  // is nevertheless bounded by it. Used only for the time, never for
  // choosing the algorithm and protocol.
  double node_nic_gbs = 0;
  // The bus bandwidth NCCL's rings allow once routed hop by hop over the
  // cluster (netmodel/rings.h), GB/s (0: not known, no cap). Like
  // node_nic_gbs, it bounds the time of a ring collective, not the choice.
  double ring_bus_gbs = 0;
  // NVLS: the node's NVSwitch does multicast and in-switch reduction (Hopper
  // and later); nvls_bandwidth_gbs is the NVLS algorithm bandwidth.
  bool nvls = false;
  double nvls_bandwidth_gbs = 0;

  int ranks() const { return nodes * gpus_per_node; }
};

// NCCL_ALGO / NCCL_PROTO style restriction. Syntax: an optional "^" (exclude
// the listed names instead of keeping only them) then comma-separated names,
// case-insensitive; entries may be prefixed by a collective and ';'-separated,
// e.g. "allreduce:tree;allgather:ring" or "^LL128". InputError (naming
// WHERE) on unknown names.
struct Restriction {
  // allowed[collective][algorithm] / [collective][protocol]; explicit[...] marks
  // protocols named positively (used to force LL128 on).
  std::array<std::array<bool, 4>, 3> algorithm{
      {{true, true, true, true}, {true, true, true, true}, {true, true, true, true}}};
  std::array<std::array<bool, 3>, 3> protocol{{{true, true, true}, {true, true, true}, {true, true, true}}};
  std::array<std::array<bool, 3>, 3> protocol_named{};

  void restrict_algorithms(const std::string& spec, const std::string& where = "NCCL_ALGO");
  void restrict_protocols(const std::string& spec, const std::string& where = "NCCL_PROTO");
};

struct Candidate {
  Algorithm algorithm = Algorithm::kTree;
  Protocol protocol = Protocol::kLL;
  bool enabled = false;     // supported, allowed by the restriction and by LL128 rules
  std::string why_disabled;
  double latency_us = 0;    // after the plateau correction
  double bandwidth_gbs = 0; // algorithm bandwidth, after every refinement and the tree correction
  double time_us = 0;       // latency_us * lat_count + bytes / (1000 * bandwidth_gbs)
};

struct CollectiveEstimate {
  double time_us = 0;   // NCCL's predicted time of the chosen candidate
  std::string algorithm, protocol;
  double latency_us = 0, bandwidth_gbs = 0;
  int channels_used = 0;       // after NCCL's small-message channel reduction
  double reduced_time_us = 0;  // time_us with bandwidth scaled by channels_used / channels,
                               // then capped by the NIC bottleneck (bottleneck_bandwidth_gbs)
  std::vector<Candidate> candidates;  // every (algorithm, protocol), in scan order

  Json to_json() const;  // for result.json
};

class NcclModel {
 public:
  explicit NcclModel(NcclTopology topology, Restriction restriction = {});

  const NcclTopology& topology() const { return topology_; }

  // BYTES is NCCL's nBytes: the per-rank buffer for allreduce; count x ranks x
  // element size (the whole gathered / scattered buffer) for allgather and
  // reduce-scatter. LAT_COUNT is the number of pipelined operations charged
  // latency (1 for a lone call).
  CollectiveEstimate estimate(Collective collective, double bytes, int lat_count = 1) const;
  Candidate candidate(Collective collective, Algorithm algorithm, Protocol protocol, double bytes,
                      int lat_count = 1) const;

  // The size-independent table NCCL builds once per communicator (before the
  // tree correction and plateau factor), as printed with NCCL_DEBUG_SUBSYS=TUNING.
  double base_latency_us(Collective collective, Algorithm algorithm, Protocol protocol) const;
  double base_bandwidth_gbs(Collective collective, Algorithm algorithm, Protocol protocol) const;
  int channels_used(Algorithm algorithm, Protocol protocol, double bytes) const;
  // The algorithm bandwidth the cluster allows, whatever the tuner thinks
  // (infinity where nothing is known): a ring moves steps/ranks x bytes over
  // every ring edge, so ring_bus_gbs x ranks/steps; a tree sends bytes up and
  // receives bytes down through each node's NICs (node_nic_gbs, with more
  // than one node); NVLS stays inside the node's switch (no cap), and
  // NVLSTree's own bandwidth already holds the NICs.
  double bottleneck_bandwidth_gbs(Collective collective, Algorithm algorithm) const;

 private:
  bool ll128_enabled_by_default() const;
  // NVLS (one node) or NVLSTree (several nodes).
  Candidate nvls_candidate(Collective collective, Algorithm algorithm, Protocol protocol, double bytes,
                           int lat_count) const;

  NcclTopology topology_;
  Restriction restriction_;
};

// Two-level allreduce (Horovod's hierarchical allreduce): reduce-scatter
// inside each node over its gpus_per_node ranks, allreduce of bytes /
// gpus_per_node across nodes (one rank per node; with one NIC per GPU the
// gpus_per_node of them run in parallel on separate rails, so one is charged),
// then allgather inside each node. Each phase is an NCCL call modelled by
// NcclModel on the matching sub-communicator: the intra phases on
// {1 node, g ranks}; the inter phase on {N nodes, 1 rank each}, whose
// per-channel bandwidth is bw_inter_gbs (no intra-node hop exists there).
struct HierarchicalEstimate {
  double time_us = 0;
  CollectiveEstimate reduce_scatter, allreduce, allgather;  // unused phases stay zero
  Json to_json() const;
};
HierarchicalEstimate hierarchical_allreduce(const NcclTopology& topology, double bytes,
                                            const Restriction& restriction = {});

}  // namespace sparsefuse::netmodel
