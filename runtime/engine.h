// A rank's executor for one scheme: the policy::WorkerContext the policy
// talks to, with real time, real gradients, real kernels and real
// collectives. Per iteration it
//  1. generates the rank's synthetic gradient (before the iteration clock
//     starts: it stands in for backward's compute, whose timing is replayed);
//  2. replays forward and backward on steady_clock: tensor t becomes ready
//     (trace offset) x time scale after the previous one, counted from when
//     the rank's thread was free again, so inline compression delays later
//     tensors as on a GPU's compute stream, and calls on_tensor_ready with the
//     nanoseconds since the iteration start;
//  3. runs compress() with the CPU kernels on this thread and hands each
//     flushed bucket to the communication thread (CommThread), which runs the
//     collectives in flush order while backward goes on;
//  4. after backward, waits for each bucket's collective in turn (with a
//     timeout) and scatters it into the averaged gradient while later ones
//     still run, then replays the optimizer.
// Only schemes with per-worker policies, no forward plan and FIFO launches
// can run here (runtime/support.h rejects the others up front).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "common/time.h"
#include "policy/compression.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"
#include "runtime/comm_thread.h"
#include "runtime/compressor.h"
#include "runtime/exchange.h"
#include "runtime/gradients.h"

namespace sparsefuse::runtime {

struct EngineConfig {
  uint64_t seed = 1;
  double time_scale = 1.0;         // multiplies every replayed compute time
  TimeNs forward_ns = 0;           // the trace's, batch-scaled (time_scale not applied)
  TimeNs optimizer_ns = 0;
  std::chrono::milliseconds timeout{60'000};  // for the collectives of one iteration
  // The compressor (null: the CPU's; --device cuda: CudaCompressor).
  std::function<std::unique_ptr<Compressor>(const ModelLayout&)> make_compressor;
};

// One iteration on this rank, in nanoseconds. compression counts selection,
// packing and decompression; communication_exposed is the rest of the time
// between backward's end and the optimizer (waiting for collectives,
// including for slower ranks: a real run cannot tell sync wait apart from
// transfer).
struct IterationTimes {
  TimeNs total = 0, forward = 0, backward = 0, compression = 0, communication_exposed = 0, optimizer = 0;
};

class RankEngine : public policy::WorkerContext {
 public:
  RankEngine(const policy::GradientModel& model, const ModelLayout& layout, const policy::Scheme& scheme,
             CommThread& comm, EngineConfig config);

  IterationTimes run_iteration(int iteration);

  // The last iteration's state, for checking and results.
  const std::vector<float>& aggregate() const { return aggregate_; }  // averaged; unsynchronised tensors are 0
  const std::vector<policy::CompressionRequest>& requests() const { return requests_; }
  const std::vector<std::unique_ptr<BucketExchange>>& exchanges() const { return exchanges_; }
  const std::vector<bool>& synchronized() const { return synchronized_; }  // per tensor, by some bucket
  const std::vector<float>& residual() const { return residual_; }  // error feedback, after the iteration

  policy::CompressionOutcome compress(const policy::CompressionRequest& request, TimeNs now) override;
  void flush(const policy::Bucket& bucket, TimeNs when) override;

 private:
  using Clock = std::chrono::steady_clock;
  TimeNs since_start() const;
  void wait_until(TimeNs at) const;  // ns since the iteration start
  TimeNs scaled(TimeNs trace_ns) const;

  const policy::GradientModel& model_;
  const ModelLayout& layout_;
  CommThread& comm_;
  EngineConfig config_;
  std::unique_ptr<policy::WorkerPolicy> policy_;
  std::unique_ptr<Compressor> compressor_;

  std::vector<float> gradient_, send_, residual_, aggregate_;
  std::vector<int> compressed_by_;
  std::vector<RangeSelection> selections_;
  std::vector<policy::CompressionRequest> requests_;
  std::vector<std::unique_ptr<BucketExchange>> exchanges_;
  std::vector<bool> synchronized_;
  Clock::time_point start_;
  int iteration_ = 0;
  TimeNs pending_compression_ = 0, inline_compression_ = 0;
};

}  // namespace sparsefuse::runtime
