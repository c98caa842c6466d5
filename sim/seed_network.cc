#include "sim/seed_network.h"

#include <cmath>

#include "policy/seed/seed_cost.h"

namespace sparsefuse::sim {

namespace {

TimeNs table_ns(double bytes) {
  // Python's int(bytes / 1024), as the seed code truncates its KB argument.
  const double kb = std::trunc(bytes / 1024.0);
  return TimeNs(std::llround(policy::seed::seed_tc_at_kb_s(kb) * 1e9));
}

}  // namespace

CollectiveCost SeedTableNetwork::collective_cost(policy::Collective, int64_t bytes_per_worker) const {
  if (workers_ <= 1 || bytes_per_worker <= 0) return {};
  CollectiveCost c;
  c.latency_ns = table_ns(0);
  c.transfer_ns = table_ns(double(bytes_per_worker)) - c.latency_ns;
  return c;
}

CollectiveCost SeedTableNetwork::allgatherv_cost(int64_t total_bytes, int64_t) const {
  return collective_cost(policy::Collective::kAllgather, total_bytes / workers_);
}

TimeNs SeedTableNetwork::coordination_ns() const {
  return collective_cost(policy::Collective::kAllreduce, 8).total();
}

Json SeedTableNetwork::describe() const {
  return {{"model", "seed-table"},
          {"table", "seed code's local_8_nodes communication table, at bytes per worker / 1024 KB"},
          {"measured_workers", kSeedTableWorkers}};
}

}  // namespace sparsefuse::sim
