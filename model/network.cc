#include "model/network.h"

#include "model/netmodel/nccl_model.h"

#include <cmath>

namespace sparsefuse::model {

NetworkConfig NetworkConfig::parse(const JsonNode& node) {
  node.check_keys({"model", "latency_us", "bandwidth_gbps", "allreduce", "tree_segment_bytes", "latency_noise_cv",
                   "nccl_algo", "nccl_proto", "nccl_channels", "hierarchical_allreduce", "profile", "ring_order"});
  NetworkConfig c;
  c.model = node.get_string("model", c.model);
  if (c.model != "flat" && c.model != "nccl" && c.model != "calibrated" && c.model != "seed-table") {
    node.child("model").fail("expected \"flat\", \"nccl\", \"calibrated\" or \"seed-table\", got \"" + c.model +
                             "\"");
  }
  c.latency_noise_cv = node.get_number("latency_noise_cv", 0.0, 0.0, 10.0);
  c.nccl_algo = node.get_string("nccl_algo", "");
  c.nccl_proto = node.get_string("nccl_proto", "");
  // Validate the restriction syntax here, where the JSON pointer is known.
  for (const char* key : {"nccl_algo", "nccl_proto"}) {
    const std::string& spec = std::string(key) == "nccl_algo" ? c.nccl_algo : c.nccl_proto;
    if (spec.empty()) continue;
    try {
      netmodel::Restriction r;
      if (std::string(key) == "nccl_algo") r.restrict_algorithms(spec, "");
      else r.restrict_protocols(spec, "");
    } catch (const InputError& e) {
      node.child(key).fail(e.problem());
    }
  }
  c.nccl_channels = int(node.get_int("nccl_channels", 0, 0, 64));
  c.hierarchical_allreduce = node.get_bool("hierarchical_allreduce", false);
  c.ring_order = node.get_string("ring_order", c.ring_order);
  if (c.ring_order != "topology" && c.ring_order != "rank") {
    node.child("ring_order").fail("expected \"topology\" or \"rank\", got \"" + c.ring_order + "\"");
  }
  c.profile = node.get_string("profile", "");
  if (c.model == "calibrated" && c.profile.empty()) {
    node.fail("model \"calibrated\" needs \"profile\": a file with a measured \"collectives\" table");
  }
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
  Json j = {{"model", model},
            {"latency_us", latency_us},
            {"bandwidth_gbps", bandwidth_gbps},
            {"allreduce", allreduce},
            {"tree_segment_bytes", tree_segment_bytes},
            {"latency_noise_cv", latency_noise_cv},
            {"hierarchical_allreduce", hierarchical_allreduce},
            {"nccl_channels", nccl_channels},
            {"ring_order", ring_order}};
  if (!nccl_algo.empty()) j["nccl_algo"] = nccl_algo;
  if (!nccl_proto.empty()) j["nccl_proto"] = nccl_proto;
  if (!profile.empty()) j["profile"] = profile;
  return j;
}

Json FlatNetwork::describe() const {
  return {{"model", "flat"}, {"latency_us", config_.latency_us}, {"bandwidth_gbps", config_.bandwidth_gbps},
          {"allreduce", config_.allreduce}};
}

static double ceil_log2(int p) { return std::ceil(std::log2(double(p))); }

FlatNetwork::FlatNetwork(const NetworkConfig& config, int workers)
    : config_(config), workers_(workers), alpha_ns_(config.latency_us * 1e3),
      ns_per_byte_(8.0 / config.bandwidth_gbps) {}

double FlatNetwork::ring_allreduce_ns(double m) const {
  const double p = workers_;
  return 2 * (p - 1) * alpha_ns_ + 2 * (p - 1) / p * m * ns_per_byte_;
}

// Pipelined binary tree reduce followed by broadcast, message cut into
// segments of at most tree_segment_bytes: 2 (ceil(log2 p) + segments - 1)
// steps of (alpha + segment * beta).
double FlatNetwork::tree_allreduce_ns(double m) const { return tree_steps(m) * (alpha_ns_ + tree_segment(m) * ns_per_byte_); }

double FlatNetwork::tree_steps(double m) const {
  return 2 * (ceil_log2(workers_) + std::max(1.0, std::ceil(m / double(config_.tree_segment_bytes))) - 1);
}

double FlatNetwork::tree_segment(double m) const {
  return m / std::max(1.0, std::ceil(m / double(config_.tree_segment_bytes)));
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

// Rounds the total once (so a lone collective costs exactly round(total)) and
// gives the latency its rounded share.
CollectiveCost FlatNetwork::split(double total_ns, double latency_ns) const {
  CollectiveCost c;
  TimeNs total = TimeNs(std::llround(total_ns));
  c.latency_ns = std::min(total, TimeNs(std::llround(latency_ns)));
  c.transfer_ns = total - c.latency_ns;
  return c;
}

CollectiveCost FlatNetwork::collective_cost(Collective collective, int64_t bytes_per_worker) const {
  if (workers_ <= 1) return {};
  const double m = double(bytes_per_worker);
  switch (collective) {
    case Collective::kAllreduce:
      return config_.allreduce == "tree" ? split(tree_allreduce_ns(m), tree_steps(m) * alpha_ns_)
                                         : split(ring_allreduce_ns(m), ring_allreduce_ns(0));
    case Collective::kAllgather: return split(ring_allgather_ns(m), ring_allgather_ns(0));
    case Collective::kReduceScatter: return split(ring_reduce_scatter_ns(m), ring_reduce_scatter_ns(0));
    case Collective::kBroadcast: return split(tree_broadcast_ns(m), tree_broadcast_ns(0));
  }
  return {};
}

CollectiveCost FlatNetwork::allgatherv_cost(int64_t total_bytes, int64_t min_bytes) const {
  if (workers_ <= 1) return {};
  double latency = ring_allgather_ns(0);
  return split(latency + double(total_bytes - min_bytes) * ns_per_byte_, latency);
}

TimeNs FlatNetwork::coordination_ns() const {
  return workers_ <= 1 ? 0 : TimeNs(std::llround(ceil_log2(workers_) * alpha_ns_));
}

}  // namespace sparsefuse::model
