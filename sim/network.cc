#include "sim/network.h"

#include <cmath>

namespace sparsefuse::sim {

NetworkConfig NetworkConfig::parse(const JsonNode& node) {
  node.check_keys({"latency_us", "bandwidth_gbps", "allreduce", "tree_segment_bytes"});
  NetworkConfig c;
  c.latency_us = node.get_number("latency_us", c.latency_us, 0, 1e9);
  c.bandwidth_gbps = node.get_number("bandwidth_gbps", c.bandwidth_gbps, 0, 1e9, /*min_exclusive=*/true);
  c.allreduce = node.get_string("allreduce", c.allreduce);
  if (c.allreduce != "ring" && c.allreduce != "tree") {
    node.child("allreduce").fail("expected \"ring\" or \"tree\", got \"" + c.allreduce + "\"");
  }
  c.tree_segment_bytes = node.get_int("tree_segment_bytes", c.tree_segment_bytes, 1, int64_t(1) << 40);
  return c;
}

Json NetworkConfig::to_json() const {
  return {{"latency_us", latency_us}, {"bandwidth_gbps", bandwidth_gbps}, {"allreduce", allreduce},
          {"tree_segment_bytes", tree_segment_bytes}};
}

FlatNetwork::FlatNetwork(const NetworkConfig& config, int workers)
    : config_(config), workers_(workers), alpha_ns_(config.latency_us * 1e3),
      ns_per_byte_(8.0 / config.bandwidth_gbps) {}

static double ceil_log2(int p) { return std::ceil(std::log2(double(p))); }

double FlatNetwork::ring_allreduce_ns(double m) const {
  const double p = workers_;
  return 2 * (p - 1) * alpha_ns_ + 2 * (p - 1) / p * m * ns_per_byte_;
}

// Pipelined binary tree reduce followed by broadcast, message cut into
// segments of at most tree_segment_bytes: 2 (ceil(log2 p) + segments - 1)
// steps of (alpha + segment * beta).
double FlatNetwork::tree_allreduce_ns(double m) const {
  double segments = std::max(1.0, std::ceil(m / double(config_.tree_segment_bytes)));
  double segment = m / segments;
  return 2 * (ceil_log2(workers_) + segments - 1) * (alpha_ns_ + segment * ns_per_byte_);
}

double FlatNetwork::ring_allgather_ns(double m) const {
  const double p = workers_;
  return (p - 1) * alpha_ns_ + (p - 1) * m * ns_per_byte_;
}

double FlatNetwork::ring_reduce_scatter_ns(double m) const {
  const double p = workers_;
  return (p - 1) * alpha_ns_ + (p - 1) / p * m * ns_per_byte_;
}

// Binomial tree: ceil(log2 p) rounds, each sending the whole message.
double FlatNetwork::tree_broadcast_ns(double m) const {
  return ceil_log2(workers_) * (alpha_ns_ + m * ns_per_byte_);
}

TimeNs FlatNetwork::collective_ns(policy::Collective collective, int64_t bytes_per_worker) const {
  if (workers_ <= 1) return 0;
  const double m = double(bytes_per_worker);
  double ns = 0;
  switch (collective) {
    case policy::Collective::kAllreduce:
      ns = config_.allreduce == "tree" ? tree_allreduce_ns(m) : ring_allreduce_ns(m);
      break;
    case policy::Collective::kAllgather: ns = ring_allgather_ns(m); break;
    case policy::Collective::kReduceScatter: ns = ring_reduce_scatter_ns(m); break;
    case policy::Collective::kBroadcast: ns = tree_broadcast_ns(m); break;
  }
  return TimeNs(std::llround(ns));
}

TimeNs FlatNetwork::coordination_ns() const {
  return workers_ <= 1 ? 0 : TimeNs(std::llround(ceil_log2(workers_) * alpha_ns_));
}

}  // namespace sparsefuse::sim
