// The cost estimates a policy may consult when planning (MG-WFBP's merge rule,
// Horovod's negotiation). The simulator answers from its network model, the
// runtime from measurements; the policy does not know which.
#pragma once

#include <cstdint>

#include "common/time.h"
#include "policy/bucket.h"
#include "policy/compression.h"

namespace sparsefuse::policy {

class CostEstimator {
 public:
  virtual ~CostEstimator() = default;
  virtual int workers() const = 0;
  // Duration of COLLECTIVE where each worker contributes BYTES_PER_WORKER.
  virtual TimeNs collective_ns(Collective collective, int64_t bytes_per_worker) const = 0;
  // One small coordination round among all workers (e.g. Horovod's
  // cache-bit allreduce), modelled as a latency-bound exchange.
  virtual TimeNs coordination_ns() const = 0;
  // Nominal time to compress ELEMENTS at DENSITY on the GPU (no contention).
  virtual TimeNs compression_ns(Sparsifier sparsifier, int64_t elements, double density) const = 0;
  // The same on one CPU thread, including the device-to-host copy.
  virtual TimeNs cpu_compression_ns(Sparsifier sparsifier, int64_t elements, double density) const = 0;
};

}  // namespace sparsefuse::policy
