#include "model/nccl_network.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/seed_network.h"

namespace sparsefuse::model {


netmodel::NcclTopology nccl_topology(const netmodel::TopologyConfig& t, int channels, netmodel::RingOrder order) {
  netmodel::NcclTopology n;
  n.nodes = t.nodes;
  n.gpus_per_node = t.gpus_per_node;
  const bool nvswitch = t.intra == netmodel::IntraKind::kNVSwitch;
  n.intra = nvswitch ? netmodel::IntraLink::kNVLink : netmodel::IntraLink::kPCI;
  n.channels = channels > 0 ? channels : (nvswitch && t.gpus_per_node > 1 ? 16 : 2);
  n.bw_intra_gbs = std::min(20.6, t.intra_gbps / 8.0 / n.channels);
  // NCCL's tuner sees the line rate; the time is bounded by what the transport achieves.
  n.bw_inter_gbs = t.nic_gbps / 8.0 * t.nics_per_node / n.channels;
  const double achieved = t.transport.achievable_gbps(t.nic_gbps) / t.nic_gbps;
  n.node_nic_gbs = t.nic_gbps / 8.0 * t.nics_per_node * achieved;
  n.latency_inter_us = t.transport.message_latency_us;
  n.nvls = nvswitch && t.intra_nvls;
  n.nvls_bandwidth_gbs = netmodel::kNvlsEfficiency * t.intra_gbps / 8.0;
  if (t.ranks() > 1) {
    const netmodel::Topology routed(t);
    n.ring_bus_gbs =
        netmodel::ring_bottleneck(routed, netmodel::channel_rings(routed, n.channels, order), achieved).bus_bandwidth_gbs;
  }
  return n;
}

// NCCL_ALGO / NCCL_PROTO as the scenario gives them (none: NCCL's defaults).
static netmodel::Restriction restriction_of(const NetworkConfig& config) {
  netmodel::Restriction r;
  if (!config.nccl_algo.empty()) r.restrict_algorithms(config.nccl_algo, "network.nccl_algo");
  if (!config.nccl_proto.empty()) r.restrict_protocols(config.nccl_proto, "network.nccl_proto");
  return r;
}

NcclNetwork::NcclNetwork(const NetworkConfig& config, const netmodel::TopologyConfig& topology)
    : config_(config), topology_(topology), restriction_(restriction_of(config)),
      model_(nccl_topology(topology, config.nccl_channels,
                           config.ring_order == "rank" ? netmodel::RingOrder::kRank : netmodel::RingOrder::kTopology),
             restriction_) {}

// NCCL predicts latency + bytes / bandwidth; we charge the bandwidth of the
// channels a small message actually uses (reduced_time_us).
CollectiveCost NcclNetwork::from_estimate(double time_us, double latency_us) const {
  CollectiveCost c;
  c.latency_ns = TimeNs(std::llround(latency_us * 1e3));
  c.transfer_ns = std::max<TimeNs>(0, TimeNs(std::llround(time_us * 1e3)) - c.latency_ns);
  return c;
}

CollectiveCost NcclNetwork::collective_cost(Collective collective, int64_t bytes_per_worker) const {
  if (workers() <= 1 || bytes_per_worker <= 0) return {};
  const double p = workers(), m = double(bytes_per_worker);
  switch (collective) {
    case Collective::kAllreduce: {
      if (config_.hierarchical_allreduce && topology_.nodes > 1 && topology_.gpus_per_node > 1) {
        auto h = netmodel::hierarchical_allreduce(model_.topology(), m, restriction_);
        double latency = h.reduce_scatter.latency_us + h.allreduce.latency_us + h.allgather.latency_us;
        return from_estimate(h.time_us, latency);
      }
      auto e = model_.estimate(Collective::kAllreduce, m);
      return from_estimate(e.reduced_time_us, e.latency_us);
    }
    case Collective::kAllgather: {
      auto e = model_.estimate(Collective::kAllgather, m * p);
      return from_estimate(e.reduced_time_us, e.latency_us);
    }
    case Collective::kReduceScatter: {
      auto e = model_.estimate(Collective::kReduceScatter, m);
      return from_estimate(e.reduced_time_us, e.latency_us);
    }
    case Collective::kBroadcast: {  // NCCL's ring broadcast pipelines the buffer once around the ring
      auto e = model_.estimate(Collective::kAllgather, m);
      return from_estimate(e.reduced_time_us, e.latency_us);
    }
  }
  return {};
}

CollectiveCost NcclNetwork::allgatherv_cost(int64_t total_bytes, int64_t) const {
  if (workers() <= 1 || total_bytes <= 0) return {};
  auto e = model_.estimate(Collective::kAllgather, double(total_bytes));
  return from_estimate(e.reduced_time_us, e.latency_us);
}

TimeNs NcclNetwork::coordination_ns() const { return workers() <= 1 ? 0 : collective_cost(Collective::kAllreduce, 8).total(); }

Json NcclNetwork::describe() const {
  const auto& t = model_.topology();
  Json j = {{"model", "nccl"},
            {"topology", topology_.to_json()},
            {"nccl", {{"nodes", t.nodes}, {"gpus_per_node", t.gpus_per_node}, {"channels", t.channels},
                      {"bw_intra_gbs_per_channel", t.bw_intra_gbs}, {"bw_inter_gbs_per_channel", t.bw_inter_gbs},
                      {"ring_order", config_.ring_order}, {"routed_ring_bus_gbs", t.ring_bus_gbs},
                      {"node_nic_gbs", t.node_nic_gbs}, {"nvls", t.nvls},
                      {"hierarchical_allreduce", config_.hierarchical_allreduce}}}};
  // What NCCL would pick at a few sizes, so a reader can see the regime switches.
  Json picks = Json::array();
  for (double bytes : {4096.0, 1048576.0, 268435456.0}) {
    auto e = model_.estimate(Collective::kAllreduce, bytes);
    picks.push_back({{"bytes", bytes}, {"algorithm", e.algorithm}, {"protocol", e.protocol}, {"time_us", e.reduced_time_us}});
  }
  j["allreduce_choices"] = picks;
  return j;
}

CalibratedNetwork::CalibratedNetwork(const NetworkConfig& config, const std::string& base_dir, int workers)
    : workers_(workers) {
  std::filesystem::path path(config.profile);
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  file_ = path.string();
  table_ = netmodel::CalibratedTable::load(file_);
}

CollectiveCost CalibratedNetwork::lookup(Collective collective, double bytes) const {
  if (workers_ <= 1 || bytes <= 0) return {};
  CollectiveCost c;
  double total = table_.time_us(collective, workers_, bytes);
  double floor = std::min(total, table_.time_us(collective, workers_, 1.0));
  c.latency_ns = TimeNs(std::llround(floor * 1e3));
  c.transfer_ns = TimeNs(std::llround(total * 1e3)) - c.latency_ns;
  return c;
}

CollectiveCost CalibratedNetwork::collective_cost(Collective collective, int64_t bytes_per_worker) const {
  const double m = double(bytes_per_worker);
  switch (collective) {
    case Collective::kAllreduce: return lookup(Collective::kAllreduce, m);
    case Collective::kAllgather: return lookup(Collective::kAllgather, m * workers_);
    case Collective::kReduceScatter: return lookup(Collective::kReduceScatter, m);
    case Collective::kBroadcast: return lookup(Collective::kAllgather, m);
  }
  return {};
}

CollectiveCost CalibratedNetwork::allgatherv_cost(int64_t total_bytes, int64_t) const {
  return lookup(Collective::kAllgather, double(total_bytes));
}

TimeNs CalibratedNetwork::coordination_ns() const { return collective_cost(Collective::kAllreduce, 8).total(); }

Json CalibratedNetwork::describe() const { return {{"model", "calibrated"}, {"profile", file_}}; }

std::unique_ptr<NetworkModel> make_network_model(const NetworkConfig& config,
                                                 const std::optional<netmodel::TopologyConfig>& topology,
                                                 int workers, const std::string& base_dir) {
  if (config.model == "calibrated") return std::make_unique<CalibratedNetwork>(config, base_dir, workers);
  if (config.model == "seed-table") return std::make_unique<SeedTableNetwork>(workers);
  if (config.model == "nccl") {
    netmodel::TopologyConfig t;
    if (topology) {
      t = *topology;
    } else {  // the flat scenario as a cluster of one-GPU nodes on one switch
      t.nodes = workers;
      t.gpus_per_node = 1;
      t.nic_gbps = config.bandwidth_gbps;
      t.fabric = netmodel::FabricKind::kSingleSwitch;
    }
    return std::make_unique<NcclNetwork>(config, t);
  }
  return std::make_unique<FlatNetwork>(config, workers);
}

}  // namespace sparsefuse::model
