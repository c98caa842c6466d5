// The discrete-event simulator. Each iteration runs in two stages:
//  1. every worker replays its compute stream (forward, then backward tensor
//     by tensor) and its policy decides flushes — worker-local events, handled
//     without the global queue because a worker's stream depends only on its
//     own start time;
//  2. the collectives all workers posted are resolved on the global event
//     queue (CommunicationEngine), then each worker runs its optimizer once
//     its communication is done.
// Workers interact only through collectives, so this is exact for the
// schemes modelled, and keeps 1024 workers x 100 iterations well under a second.
#pragma once

#include <memory>
#include <vector>

#include "common/json_reader.h"
#include "common/time.h"
#include "policy/bucket.h"
#include "sim/scenario.h"
#include "sim/timeline.h"

namespace sparsefuse::sim {

struct Breakdown {  // per-iteration means over workers and measured iterations, seconds
  double forward = 0, backward = 0, compression = 0, communication_exposed = 0, sync_wait = 0, optimizer = 0;
};

struct BucketRecord {
  policy::Bucket bucket;
  double sync_wait_s = 0;  // mean over workers of (start - own post)
  double duration_s = 0;
};

struct SimResult {
  Json scenario;
  std::string provenance;  // of the trace: analytic or measured
  int64_t samples_per_iteration = 0;
  std::vector<TimeNs> iteration_ns;  // measured iterations only
  Breakdown breakdown;
  std::vector<BucketRecord> buckets;  // first measured iteration, flush order
  uint64_t events = 0;
  double wall_s = 0;
  int64_t worker_iterations = 0;

  double mean_iteration_s() const;
  double throughput() const { return double(samples_per_iteration) / mean_iteration_s(); }
  // TIMING=false leaves out the "simulator" timing fields (for comparisons).
  Json to_json(bool timing = true) const;
};

SimResult simulate(const Scenario& scenario, Timeline* timeline = nullptr);

}  // namespace sparsefuse::sim
