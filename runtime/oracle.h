// The --check oracle: an independent, deliberately naive recomputation of
// what every rank should hold after an iteration. It shares no code with the
// engine's compressor, packing or exchange (Compressor, kernels::topk_abs,
// ef_topk, randomk, adtopk, pack, unpack, the estimators): it regenerates
// every rank's raw gradient (runtime/gradients.h), keeps every rank's
// error-feedback residual with its own arithmetic, selects with its own
// sort-based selections (oracle_select.h), decides on its own which tensors a
// bucket carries, and scatters and averages plainly.
//
// Per iteration, for every rank r and compression request q (x = the
// gradient, or acc = residual + gradient in one fp32 add with error feedback):
//  - exact sparsifiers (top-k, random-k, ADTopk, ADTopk-I): the oracle's own
//    selection of x must equal, index for index and bit for bit, the pairs
//    rank r put on the wire for q;
//  - threshold sparsifiers (DGC, Gaussiank, RedSync, SIDCo): the pairs rank r
//    sent are taken as its selection S, their values must be x's bit for bit,
//    and S must satisfy oracle::check_threshold_selection (an exact threshold
//    set, DGC's index-order prefix, or the aligned count);
//  - error feedback: the new residual is acc with S set to +0; on this rank,
//    element for element, sent + the engine's new residual == gradient + old
//    residual (both in fp32), and the engine's residual must equal the oracle's.
// Then the expected average, bucket by bucket:
//  - allgather with per-rank counts: ((0 + c_0) + c_1 + ...) / P in rank
//    order over the elements the bucket carries, which is exactly the
//    receiver's fp32 arithmetic: the match must be exact;
//  - allgather with the equal-slice receiver: the ranks' pair streams
//    concatenated, cut into P slices of len / P (the tail lost), the last entry
//    per index within a slice landing; the lost count and values must match
//    exactly;
//  - allreduce: the rank-order sum / P. Exact for P <= 2 (one fp32 add is
//    commutative); for P > 2 the library's reduction order is its own and the
//    bound is |got - expected| <= (P - 1) eps sum_r |c_r| / P + eps |expected|
//    (both sums within (P - 1)/2 eps sum |c_r| of the true sum, plus the two
//    divisions' roundings);
//  - sparse allreduce: each rank's contribution over the bucket's range is
//    its selection (the oracle's own, as above; Ok-Topk between exact
//    iterations: every element of x whose magnitude reaches the rank's
//    local threshold, the smallest magnitude of its last exact top-k, the
//    residual keeping the rest), and the sum is oracle_sparse.h's dense
//    replay of the algorithm, / P: exact for gtopk, spardl and oktopk, the
//    allreduce bound for topk-dsa and randomk-shared;
//  - partitions (ByteScheduler: dense allreduces over part of one
//    uncompressed tensor, Bucket::first_element): the allreduce rule per
//    element; a tensor's partitions must tile it, no element twice or left out;
//  - elements no bucket carried must be 0.
//  - reduce-scatter (DeAR: each rank keeps the average of its shard, and the
//    next iteration's forward all-gathers the shards): checked as an
//    allreduce, once the all-gather has landed (the driver checks DeAR's
//    iteration i after iteration i + 1, or after the run's last all-gathers).
// Buckets of other kinds have no rule here: check() reports them instead of
// passing them.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "policy/bucket.h"
#include "policy/compression.h"
#include "policy/gradient_model.h"
#include "runtime/gradients.h"

namespace sparsefuse::runtime {

// One flushed bucket as this rank saw it once its collective was done.
struct WireBucket {
  policy::Bucket bucket;
  int index = 0;  // its place in the iteration's flush sequence
  // Allgather: pairs per rank as gathered (pad-to-max: after padding), and
  // every rank's (value, index) pairs, rank-major, indices relative to the
  // start of the bucket's first tensor.
  std::span<const int64_t> counts;
  std::span<const float> values;
  std::span<const int32_t> indices;
  int64_t lost = 0;  // equal-slice receiver: contributions the engine dropped
};

struct IterationRecord {
  int iteration = 0;
  std::span<const policy::CompressionRequest> requests;  // as the policy made them, the same on every rank
  std::vector<WireBucket> buckets;                        // in flush order
  std::span<const float> aggregate;                       // this rank's averaged gradient
  std::span<const float> residual;                        // this rank's residual after the iteration
};

class Oracle {
 public:
  Oracle(const policy::GradientModel& model, const ModelLayout& layout, uint64_t seed, int ranks, int rank);

  // Call once per iteration, in order from iteration 0 (the residuals carry
  // over). Returns "" when everything matches, else the first mismatch,
  // naming the iteration, the rank or flush, the tensor and the element.
  std::string check(const IterationRecord& record);

 private:
  struct Iteration;
  bool wire_selection(const Iteration& it, int rank, const policy::CompressionRequest& q,
                      std::vector<int32_t>& index, std::vector<float>& value) const;
  std::vector<int32_t> exact_selection(int iteration, const policy::CompressionRequest& q,
                                       const std::vector<float>& x) const;
  std::string first_difference(int rank, const policy::CompressionRequest& q, const std::vector<float>& x,
                               const std::vector<int32_t>& ours, const std::vector<int32_t>& sent,
                               const std::vector<float>& sent_values) const;
  std::string check_sent_threshold(int rank, const policy::CompressionRequest& q, const std::vector<float>& x,
                                   const std::vector<int32_t>& sent, const std::vector<float>& values) const;
  std::string select(Iteration& it, int rank, const policy::CompressionRequest& q);
  std::string check_own_residual(const Iteration& it, std::span<const float> engine) const;
  std::string expect_bucket(Iteration& it, const WireBucket& b);
  std::string expect_partition(Iteration& it, const WireBucket& b);
  std::string check_partitions_tile(const Iteration& it) const;
  void expect_average(Iteration& it, const std::vector<std::vector<float>>& source, int64_t begin, int64_t end,
                      bool reduction) const;
  std::string oktopk_selections(Iteration& it);
  std::string oktopk_reuse(Iteration& it, const policy::Bucket& b, int rank);
  std::string expect_sparse(Iteration& it, const WireBucket& b);
  std::string expect_equal_slices(Iteration& it, const WireBucket& b, const std::vector<int>& carried) const;
  std::string compare(const Iteration& it, std::span<const float> aggregate) const;
  std::string where(int64_t element) const;  // "tensor T (NAME) element E"

  const policy::GradientModel& model_;
  const ModelLayout& layout_;
  uint64_t seed_;
  int ranks_, rank_;
  std::vector<std::vector<float>> residual_;  // per rank, the oracle's own
  // Ok-Topk, carried from exact iterations to the others.
  struct OkTopkLocal {
    float threshold = 0.0f;
    bool error_feedback = false;
  };
  std::map<std::pair<int, int>, OkTopkLocal> oktopk_local_;  // (rank, bucket's first tensor)
  std::map<int, float> oktopk_global_;                       // bucket's first tensor
};

}  // namespace sparsefuse::runtime
