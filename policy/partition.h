// Static partitions of the gradient tensors into contiguous buckets (dense
// allreduce), one function per published rule. Each returns buckets covering
// every tensor exactly once, in backward order.
#pragma once

#include <vector>

#include "policy/bucket.h"
#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"

namespace sparsefuse::policy {

// Bucket over tensors [first, end) with dense fp32 contribution.
Bucket dense_bucket(const GradientModel& model, int first, int end, Collective collective);

// WFBP: one bucket per tensor.
std::vector<Bucket> per_tensor_partition(const GradientModel& model);

// SyncEA: everything in one bucket.
std::vector<Bucket> single_bucket_partition(const GradientModel& model);

// PyTorch DDP (reducer.cpp, after the first-iteration rebuild in ready order):
// add tensors in order and close the bucket once its size reaches the current
// limit; the first bucket's limit is FIRST_BUCKET_BYTES, later ones CAP_BYTES.
std::vector<Bucket> byte_threshold_partition(const GradientModel& model, int64_t first_bucket_bytes,
                                             int64_t cap_bytes);

// MG-WFBP (Shi et al.): walking from the output side, merge tensor j's
// allreduce into j+1's when j+1 becomes ready before j's allreduce would end
// and either j's allreduce could not have started yet or waiting for j+1 costs
// less than one start-up latency. Uses the nominal ready times and COST.
std::vector<Bucket> mgwfbp_partition(const GradientModel& model, const CostEstimator& cost);

}  // namespace sparsefuse::policy
