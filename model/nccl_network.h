// Network models on a cluster topology: NCCL's own algorithm x protocol cost
// model (model/netmodel/nccl_model.h) on an NCCL topology summary derived from
// the scenario's topology, or a table of measured collective times
// (model/netmodel/calibrated.h). Both split a collective into latency and
// transfer so concurrent collectives can share bandwidth.
#pragma once

#include <memory>
#include <optional>

#include "model/netmodel/calibrated.h"
#include "model/netmodel/nccl_model.h"
#include "model/netmodel/rings.h"
#include "model/netmodel/topology.h"
#include "model/network.h"

namespace sparsefuse::model {

// What NCCL's tuner would see on TOPOLOGY: nodes x GPUs, NVLink or PCI inside
// a node, and per-channel bandwidths. With CHANNELS = 0 we use 16 channels on
// NVSwitch nodes (NCCL's usual count on Hopper) and 2 otherwise; per channel,
// the intra-node bandwidth is the GPU's switch link shared by the channels
// (at most 20.6 GB/s, NCCL's SM90 NVLink figure) and the inter-node bandwidth
// is the node's NICs shared by the channels (each channel's ring crosses a
// node boundary once). Plus what bounds the time: the node's NICs (tree), the
// bus bandwidth of the CHANNELS rings in ORDER routed over the topology
// (ring), and NVLS on a multicast NVSwitch.
netmodel::NcclTopology nccl_topology(const netmodel::TopologyConfig& topology, int channels,
                                     netmodel::RingOrder order = netmodel::RingOrder::kTopology);

class NcclNetwork : public NetworkModel {
 public:
  NcclNetwork(const NetworkConfig& config, const netmodel::TopologyConfig& topology);
  int workers() const override { return model_.topology().ranks(); }
  CollectiveCost collective_cost(Collective collective, int64_t bytes_per_worker) const override;
  // NCCL has no allgatherv; grouped send/receive moves the gathered total
  // around the ring, costed as an allgather of TOTAL bytes.
  CollectiveCost allgatherv_cost(int64_t total_bytes, int64_t min_bytes) const override;
  TimeNs coordination_ns() const override;
  Json describe() const override;

 private:
  CollectiveCost from_estimate(double time_us, double latency_us) const;
  NetworkConfig config_;
  netmodel::TopologyConfig topology_;
  netmodel::Restriction restriction_;
  netmodel::NcclModel model_;
};

class CalibratedNetwork : public NetworkModel {
 public:
  CalibratedNetwork(const NetworkConfig& config, const std::string& base_dir, int workers);
  int workers() const override { return workers_; }
  CollectiveCost collective_cost(Collective collective, int64_t bytes_per_worker) const override;
  CollectiveCost allgatherv_cost(int64_t total_bytes, int64_t min_bytes) const override;
  TimeNs coordination_ns() const override;
  Json describe() const override;

 private:
  // The smallest measured time is the latency floor; the rest is transfer.
  CollectiveCost lookup(Collective collective, double bytes) const;
  std::string file_;
  netmodel::CalibratedTable table_;
  int workers_;
};

// The network model a scenario asks for ("network.model"); TOPOLOGY is
// required by "nccl" (a flat scenario gets a one-GPU-per-node single switch
// at its bandwidth).
std::unique_ptr<NetworkModel> make_network_model(const NetworkConfig& config,
                                                 const std::optional<netmodel::TopologyConfig>& topology,
                                                 int workers, const std::string& base_dir);

}  // namespace sparsefuse::model
