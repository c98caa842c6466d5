// The flat network: every pair of workers is joined by links of the same
// latency and bandwidth, and collectives cost what the textbook alpha-beta
// models say (baselines.md §1.1, Thakur/Rabenseifner/Gropp), with the
// reduction arithmetic taken as free. Topologies, NCCL's own model and link
// contention are a later layer over this interface.
#pragma once

#include <string>

#include "common/json_reader.h"
#include "common/time.h"
#include "policy/bucket.h"

namespace sparsefuse::sim {

struct NetworkConfig {
  double latency_us = 5.0;        // alpha: per message
  double bandwidth_gbps = 100.0;  // per link, Gb/s (beta = 8 / bandwidth ns per byte)
  std::string allreduce = "ring";  // "ring" or "tree"
  int64_t tree_segment_bytes = 1 << 20;  // pipeline segment of the tree allreduce

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

class FlatNetwork {
 public:
  FlatNetwork(const NetworkConfig& config, int workers);

  int workers() const { return workers_; }
  CollectiveCost collective_cost(policy::Collective collective, int64_t bytes_per_worker) const;
  TimeNs collective_ns(policy::Collective collective, int64_t bytes_per_worker) const {
    return collective_cost(collective, bytes_per_worker).total();
  }
  // Ring allgather of unequal contributions: every rank receives all blocks
  // but its own, so the slowest receives TOTAL - MIN bytes.
  CollectiveCost allgatherv_cost(int64_t total_bytes, int64_t min_bytes) const;
  // Horovod-style coordination: a recursive-doubling allreduce of a few bytes.
  TimeNs coordination_ns() const;

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

}  // namespace sparsefuse::sim
