// How long collectives take. Three models share one interface:
//  - flat (this file): every pair of workers joined by links of one latency
//    and bandwidth; the textbook alpha-beta formulas (docs/baseline-systems.md#collective-costs-on-a-flat-network,
//    Thakur/Rabenseifner/Gropp) with the reduction arithmetic taken as free;
//  - nccl (sim/nccl_network.h): NCCL's algorithm x protocol tuning model on
//    the scenario's topology;
//  - calibrated (sim/nccl_network.h): a table of measured times;
//  - seed-table (sim/seed_network.h): the seed code's 8-node table.
#pragma once

#include <string>

#include "common/json_reader.h"
#include "common/time.h"
#include "policy/bucket.h"

namespace sparsefuse::model {

struct NetworkConfig {
  std::string model = "flat";     // "flat", "nccl", "calibrated" or "seed-table"
  double latency_us = 5.0;        // flat: alpha, per message
  double bandwidth_gbps = 100.0;  // flat: per link, Gb/s (beta = 8 / bandwidth ns per byte)
  std::string allreduce = "ring";  // flat: "ring" or "tree"
  int64_t tree_segment_bytes = 1 << 20;  // flat: pipeline segment of the tree allreduce
  double latency_noise_cv = 0.0;  // every collective's latency times lognormal noise (mean 1)
  // nccl: NCCL_ALGO / NCCL_PROTO-style restrictions, channels (0 = derived
  // from the topology), and Horovod-style hierarchical allreduce.
  std::string nccl_algo, nccl_proto;
  int nccl_channels = 0;
  bool hierarchical_allreduce = false;
  // nccl: the rings' order, routed hop by hop over the topology
  // (netmodel/rings.h): "topology" (NCCL's search: node by node, whatever the
  // placement) or "rank" (rank order, as MPI's and Gloo's ring allreduce).
  std::string ring_order = "topology";
  std::string profile;  // calibrated: a profile file with a "collectives" table

  static NetworkConfig parse(const JsonNode& node);
  Json to_json() const;
};

// A collective's time split into its latency terms (alpha) and its transfer
// terms (beta): concurrent collectives share bandwidth, not latency.
struct CollectiveCost {
  TimeNs latency_ns = 0;
  TimeNs transfer_ns = 0;
  TimeNs total() const { return latency_ns + transfer_ns; }
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual int workers() const = 0;
  // Alone on the network; BYTES_PER_WORKER is each worker's contribution.
  virtual CollectiveCost collective_cost(Collective collective, int64_t bytes_per_worker) const = 0;
  TimeNs collective_ns(Collective collective, int64_t bytes_per_worker) const {
    return collective_cost(collective, bytes_per_worker).total();
  }
  // An allgather of unequal contributions (TOTAL bytes, the smallest MIN).
  virtual CollectiveCost allgatherv_cost(int64_t total_bytes, int64_t min_bytes) const = 0;
  // Horovod-style coordination: one small latency-bound exchange.
  virtual TimeNs coordination_ns() const = 0;
  // Which model ran and with what parameters, for result.json.
  virtual Json describe() const = 0;
};

class FlatNetwork : public NetworkModel {
 public:
  FlatNetwork(const NetworkConfig& config, int workers);

  int workers() const override { return workers_; }
  CollectiveCost collective_cost(Collective collective, int64_t bytes_per_worker) const override;
  // Ring allgather of unequal contributions: every rank receives all blocks
  // but its own, so the slowest receives TOTAL - MIN bytes.
  CollectiveCost allgatherv_cost(int64_t total_bytes, int64_t min_bytes) const override;
  // A recursive-doubling allreduce of a few bytes: ceil(log2 p) latencies.
  TimeNs coordination_ns() const override;
  Json describe() const override;

  // The individual textbook formulas, for p workers (exposed for tests).
  double ring_allreduce_ns(double bytes) const;
  double tree_allreduce_ns(double bytes) const;
  double ring_allgather_ns(double bytes_per_rank) const;
  double ring_reduce_scatter_ns(double bytes) const;
  double tree_broadcast_ns(double bytes) const;

 private:
  CollectiveCost split(double total_ns, double latency_ns) const;
  double tree_steps(double bytes) const;    // pipelined tree: 2 (ceil(log2 p) + segments - 1)
  double tree_segment(double bytes) const;  // segment size actually used

  NetworkConfig config_;
  int workers_;
  double alpha_ns_;
  double ns_per_byte_;
};

}  // namespace sparsefuse::model
