// What one run of a scheme produced, simulated or real: the schema of
// result.json. The simulator (sim/simulator.h) and the runtime
// (runtime/driver.h) both fill it, so validation compares like with like.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/time.h"
#include "policy/bucket.h"

namespace sparsefuse::model {

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

struct RunResult {
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
  // Simulator work: events through the global event queue (collectives
  // starting, transfers ending), and worker-local steps processed without it
  // (tensors ready, flushes posted, gated forward stages).
  uint64_t queue_events = 0;
  uint64_t worker_steps = 0;
  // Compute interference (sim/simulator.cc): backward/collective passes run,
  // summed over iterations, and iterations whose passes did not settle.
  uint64_t interference_passes = 0;
  uint64_t interference_partial_passes = 0;
  uint64_t interference_unsettled = 0;
  double wall_s = 0;
  int64_t worker_iterations = 0;

  double mean_iteration_s() const;
  double throughput() const { return double(samples_per_iteration) / mean_iteration_s(); }
  // TIMING=false leaves out the "simulator" timing fields (for comparisons).
  Json to_json(bool timing = true) const;
};

}  // namespace sparsefuse::model
