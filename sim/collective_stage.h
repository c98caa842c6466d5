// Stage 2 of a simulated iteration: the collectives every worker posted. It
// owns turning the flush records into operations (contributions, costs from
// the network model with latency noise, sparse-allreduce costs), the launch
// order a scheduler imposes, running them on the communication engine
// (communicators in issue order, shared links), and the serial decompression
// that follows each allgather or sparse allreduce.
#pragma once

#include <cstdint>
#include <vector>

#include "common/rng.h"
#include "model/plan.h"
#include "model/scenario.h"
#include "policy/scheme.h"
#include "sim/alignment.h"
#include "sim/communication.h"
#include "sim/intervals.h"
#include "sim/sparse_collectives.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

// One iteration's resolved collectives.
struct IterationCollectives {
  std::vector<Operation> ops;  // launch order
  std::vector<Contributions> contributions;
  std::vector<SparseCollectiveCost> sparse_costs;
  std::vector<size_t> source;  // ops[k]'s entry in each worker's flush records (flush order)
  std::vector<TimeNs> decompress_ns;
  std::vector<Interval> decompression;  // serial, so sorted and disjoint
  CoveredTime communicating;            // while any collective runs
  TimeNs done = 0;                      // the last collective's or decompression's end
};

class CollectiveStage {
 public:
  CollectiveStage(const model::Scenario& scenario, const model::ScenarioPlan& plan, const Contention& contention);

  // Resolves the collectives of RECORD (every worker's flushes, worker-major;
  // NOT_BEFORE: coordinated flushes' earliest start, else empty) into OUT.
  // Returns the events processed.
  uint64_t run(const FlushRecord& record, const std::vector<TimeNs>& not_before, const policy::Scheme& scheme,
               IterationCollectives& out);

  // A collective with equal contributions from every worker, alone on the
  // network (DeAR's all-gathers in the next forward).
  model::CollectiveCost deferred_cost(const policy::Bucket& bucket);

  // The latency-noise stream's state, to replay a pass with the same draws.
  const Rng& latency_noise() const { return latency_noise_; }
  void set_latency_noise(const Rng& state) { latency_noise_ = state; }

 private:
  void build(const FlushRecord& record, const std::vector<TimeNs>& not_before, IterationCollectives& out);
  void decompress(IterationCollectives& out) const;
  model::CollectiveCost noisy(model::CollectiveCost cost);

  const int workers_;
  const double latency_noise_cv_;
  const model::NetworkModel& network_;
  const model::CompressionCost& compression_;
  Rng latency_noise_;
  SparseCollectives sparse_;
  CommunicationEngine engine_;
};

}  // namespace sparsefuse::sim
