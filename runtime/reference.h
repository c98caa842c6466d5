// The --check reference: the exact averaged gradient every rank should hold
// after an iteration, recomputed independently of the network. Gradients
// are a pure function of (seed, rank, iteration, tensor) and every
// sparsifier here is deterministic given its key, so this replays each
// rank's compression (with that rank's own error-feedback residual) on the
// iteration's requests and forms the average directly:
//  - allgather with per-rank counts: ((0 + c_0) + c_1 + ...) / P in rank
//    order, where c_r is what rank r sent (0 where it sent nothing) — the
//    same fp32 operations the receiver does, so the match must be exact;
//  - allgather with the seed's equal-slice receiver: every rank's stream
//    rebuilt and passed through kernels::unpack_equal_slices; the aggregate
//    and the lost-contribution count must match exactly;
//  - allreduce: the rank-order sum / P; MPI reduces in its own order, so the
//    match is within a few ulps of sum |c_r| / P.
// It assumes every rank issued the same requests and buckets (true for the
// static schemes the runtime runs, and checked per iteration by fingerprint).
#pragma once

#include <string>
#include <vector>

#include "policy/gradient_model.h"
#include "runtime/compressor.h"
#include "runtime/exchange.h"

namespace sparsefuse::runtime {

class ReferenceAggregate {
 public:
  ReferenceAggregate(const policy::GradientModel& model, const ModelLayout& layout, uint64_t seed, int ranks);

  // Advances every rank's residual through ITERATION's REQUESTS (call once
  // per iteration, in order, from iteration 0) and compares the expected
  // average with AGGREGATE over the tensors the EXCHANGES carried. Returns ""
  // when everything matches, else a description of the first mismatch.
  std::string check(int iteration, const std::vector<policy::CompressionRequest>& requests,
                    const std::vector<std::unique_ptr<BucketExchange>>& exchanges, const std::vector<float>& aggregate);

 private:
  struct Contributions {
    std::vector<std::vector<float>> sent;  // per rank, dense
    std::vector<std::vector<RangeSelection>> selections;
  };
  Contributions contributions(int iteration, const std::vector<policy::CompressionRequest>& requests);
  // The averaged values exchange X must produce into EXPECTED; "" or the mismatch of its lost count.
  std::string expect_exchange(int iteration, const BucketExchange& x, const Contributions& c,
                              std::vector<float>& expected) const;
  std::string compare_exchange(int iteration, const BucketExchange& x, const Contributions& c,
                               const std::vector<float>& expected, const std::vector<float>& aggregate) const;

  const policy::GradientModel& model_;
  const ModelLayout& layout_;
  uint64_t seed_;
  int ranks_;
  Compressor compressor_;
  std::vector<std::vector<float>> residual_;  // per rank
};

}  // namespace sparsefuse::runtime
