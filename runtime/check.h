// --check: what the engine did in an iteration, handed to the independent
// oracle (oracle.h) as plain data: the requests, each bucket as it arrived,
// the averaged gradient and this rank's residual.
#pragma once

#include "runtime/engine.h"
#include "runtime/oracle.h"

namespace sparsefuse::runtime {

// Views into ENGINE's last iteration (valid until its next run_iteration).
IterationRecord iteration_record(const RankEngine& engine, int iteration);

// A record kept past the engine's next iteration: a scheme that defers
// communication (DeAR) has iteration i's average only once the next
// iteration's forward (or RankEngine::complete_deferred) has all-gathered
// it, by which time the engine's own record is gone.
class KeptRecord {
 public:
  explicit KeptRecord(const IterationRecord& record);
  // BUCKETS_ points into the heap buffers of the vectors below: a move keeps them, a copy would not.
  KeptRecord(const KeptRecord&) = delete;
  KeptRecord& operator=(const KeptRecord&) = delete;
  // The kept record, with AGGREGATE (the engine's, now complete) as its average.
  IterationRecord with_aggregate(std::span<const float> aggregate) const;

 private:
  int iteration_;
  std::vector<policy::CompressionRequest> requests_;
  std::vector<WireBucket> buckets_;  // spans into the vectors below
  std::vector<std::vector<int64_t>> counts_;
  std::vector<std::vector<float>> values_;
  std::vector<std::vector<int32_t>> indices_;
  std::vector<float> residual_;
};

}  // namespace sparsefuse::runtime
