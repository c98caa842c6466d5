// The discrete-event simulator. Each iteration runs in two stages:
//  1. every worker replays its own streams — forward, backward tensor by
//     tensor, compression on the compute stream, a side stream or CPU
//     threads — and its policy decides flushes. These worker-local events are
//     processed in order without the global queue: a worker's streams depend
//     only on its own start time.
//  2. the collectives every worker posted are resolved on the global event
//     queue (CommunicationEngine), then each worker decompresses and runs its
//     optimizer once its communication is done.
// Workers interact only through collectives, so this ordering is exact for
// the schemes modelled and keeps 1024 workers x 100 iterations well under a
// second.
#pragma once

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
  policy::Bucket bucket;         // worker 0's view
  double sent_elements = 0;      // mean over workers
  double compression_s = 0;      // mean over workers
  double sync_wait_s = 0;        // mean over workers of (start - own post)
  double duration_s = 0;         // start to end
  double decompression_s = 0;    // zero-fill + scatter-add after an allgather
  double lost_contributions = 0; // equal-slices receiver
};

struct SimResult {
  Json scenario;
  Json plan;               // the scheme's start-up decisions
  Json network;            // the network model used and its parameters
  std::string provenance;  // of the trace: analytic or measured
  std::string compression_costs;  // where compression times came from
  int64_t samples_per_iteration = 0;
  std::vector<TimeNs> iteration_ns;  // measured iterations only
  Breakdown breakdown;
  std::vector<BucketRecord> buckets;  // last iteration (the final plan of adaptive schemes), flush order
  double bytes_sent_per_worker = 0;   // per iteration, mean over workers
  double lost_contributions = 0;      // per iteration
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
