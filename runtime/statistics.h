// The run statistics both executors share — the replay (`sparsefuse run`,
// driver.h) and a real training loop (training.h): the once-per-iteration
// agreement of the ranks on their bucket sequences, the sums over the
// measured iterations, their reduction over ranks, and result.json's
// contents (the simulator's schema plus an "executor" object).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "model/plan.h"
#include "model/result.h"
#include "model/scenario.h"
#include "runtime/comm_thread.h"
#include "runtime/driver.h"
#include "runtime/engine.h"

namespace sparsefuse::runtime {

// Once per iteration, off the clock: every rank's flush count and a hash of
// its bucket sequence must agree (else std::runtime_error), and a failed
// check on any rank stops every rank. Returns how many ranks failed.
int agree_after_iteration(CommThread& comm, const RunOptions& options, int iteration,
                          const std::vector<std::unique_ptr<BucketExchange>>& exchanges, bool failed);

// This rank's sums over the measured iterations.
struct RankTotals {
  // forward, backward, compression, exposed communication, optimizer (ns), bytes sent, lost contributions
  std::vector<double> sums = std::vector<double>(7, 0.0);
  std::vector<double> iteration_ns;
  // Every measured iteration's buckets: each one's operation (bucket_fingerprint
  // at iteration 0, its index) and its kPerBucketFigures figures (sent count,
  // compression, collective duration, decompression: ns), iteration after
  // iteration; bucket_start[i] is iteration i's first bucket.
  static constexpr size_t kPerBucketFigures = 4;
  std::vector<uint64_t> bucket_operation;
  std::vector<double> bucket_figures;
  std::vector<size_t> bucket_start;

  void add(const IterationTimes& times, const std::vector<std::unique_ptr<BucketExchange>>& exchanges);
  // Bucket K of the last iteration: each figure's median over the measured
  // iterations whose bucket K was the same operation (at least the last).
  std::array<double, kPerBucketFigures> bucket_median(size_t k) const;
};

// What the executor says about itself in result.json.
struct ExecutorInfo {
  double time_scale = 1.0;
  std::string gradients;  // where the gradients came from
  std::string payloads;   // "host", "device" (a payload plane) or "host-staged (why not on the device)"
  double wall_s = 0;
};

// Reduces TOTALS and the last iteration's buckets (each figure the median
// over the measured iterations that flushed the same bucket: one iteration's
// would let a single preemption of the process decide it) over ranks (a collective:
// every rank calls it) and fills the outcome. S.iterations must be the
// number of measured iterations TOTALS holds.
RunOutcome summarize_run(const model::Scenario& s, const model::ScenarioPlan& planned, const RankEngine& engine,
                         RankTotals& totals, CommThread& comm, const RunOptions& options, const ExecutorInfo& info);

}  // namespace sparsefuse::runtime
