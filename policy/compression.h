// What a policy asks its executor to do besides flushing: compress a range of
// tensors. The executor answers when the result is ready and how many
// elements were selected (the simulator from cost curves and count models,
// the runtime by running the kernel), so the policy stays executor-agnostic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/time.h"
#include "policy/scheme.h"
#include "policy/sparsifier.h"

namespace sparsefuse::policy {

enum class Placement { kGpuInline, kGpuSideStream, kCpuOffload };
std::string placement_name(Placement p);

struct CompressionRequest {
  int first_tensor = 0;
  int end_tensor = 0;
  int64_t elements = 0;
  Sparsifier sparsifier = Sparsifier::kTopk;
  double density = 1.0;
  int64_t expected_count = 0;  // the count an exact method selects (k)
  bool align_to_expected = false;  // threshold methods truncated/padded to k (fixed-k alignment)
  Placement placement = Placement::kGpuInline;
  bool error_feedback = false;  // fused residual update: 12 bytes of traffic per element
};

struct CompressionOutcome {
  TimeNs done = 0;       // when values and indices are ready to communicate
  int64_t selected = 0;  // elements selected on this worker
};

// A worker's executor, as seen by its policy.
class WorkerContext : public FlushSink {
 public:
  virtual CompressionOutcome compress(const CompressionRequest& request, TimeNs now) = 0;
};

}  // namespace sparsefuse::policy
