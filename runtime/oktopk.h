// Ok-Topk's threshold reuse on one rank (policy/sparse_allreduce.h): on an
// exact iteration the policy asks for an exact local top-k, whose smallest
// selected magnitude becomes this rank's local threshold for the bucket; on
// the other iterations nothing is requested and the rank selects every
// element whose |acc| reaches that threshold (acc = residual + gradient
// with error feedback, as the compressor's; the residual keeps what was not
// sent). The global threshold (the smallest magnitude of the global top-k
// on an exact iteration) is kept here too, for the collective
// (runtime/sparse_allreduce.h) to reuse.
#pragma once

#include <map>

#include "kernels/common.h"

namespace sparsefuse::runtime {

class OkTopkThresholds {
 public:
  // Exact iteration: SELECTION (the exact top-k) of the bucket starting at tensor FIRST.
  void remember_local(int first, const kernels::Selection& selection, bool error_feedback);
  // Whether an exact iteration has set the bucket's local threshold.
  bool knows(int first) const { return local_.count(first) > 0; }
  // Other iterations: the selection over the N elements of GRAD (and
  // RESIDUAL, updated in place when the exact iteration used error feedback).
  kernels::Selection reuse_local(int first, const float* grad, float* residual, int64_t n) const;
  // The bucket's global threshold slot (the communication thread reads and
  // writes it; std::map keeps the slot's address fixed).
  float* global(int first) { return &global_[first]; }

 private:
  struct Local {
    float threshold = 0.0f;
    bool error_feedback = false;
  };
  std::map<int, Local> local_;
  std::map<int, float> global_;
};

}  // namespace sparsefuse::runtime
