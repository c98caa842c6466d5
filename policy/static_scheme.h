// Schemes whose buckets are fixed before training (WFBP, DDP, SyncEA,
// MG-WFBP): a worker flushes a bucket as soon as its last tensor is ready.
// Buckets are contiguous in backward order and ready times are monotone, so
// this also launches buckets strictly in order, as DDP requires.
#pragma once

#include <memory>
#include <vector>

#include "policy/scheme.h"

namespace sparsefuse::policy {

class StaticBucketScheme : public Scheme {
 public:
  explicit StaticBucketScheme(std::vector<Bucket> buckets);
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override;
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_closed_by_;  // tensor index -> bucket it completes, or -1
};

}  // namespace sparsefuse::policy
