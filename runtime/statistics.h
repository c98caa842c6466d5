// The run statistics both executors share — the replay (`sparsefuse run`,
// driver.h) and a real training loop (training.h): the once-per-iteration
// agreement of the ranks on their bucket sequences, the sums over the
// measured iterations, their reduction over ranks, and result.json's
// contents (the simulator's schema plus an "executor" object).
#pragma once

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

  void add(const IterationTimes& times, const std::vector<std::unique_ptr<BucketExchange>>& exchanges);
};

// What the executor says about itself in result.json.
struct ExecutorInfo {
  double time_scale = 1.0;
  std::string gradients;  // where the gradients came from
  std::string payloads;   // "host", "device" (a payload plane) or "host-staged (why not on the device)"
  double wall_s = 0;
};

// Reduces TOTALS and the last iteration's buckets over ranks (a collective:
// every rank calls it) and fills the outcome. S.iterations must be the
// number of measured iterations TOTALS holds.
RunOutcome summarize_run(const model::Scenario& s, const model::ScenarioPlan& planned, const RankEngine& engine,
                         RankTotals& totals, CommThread& comm, const RunOptions& options, const ExecutorInfo& info);

}  // namespace sparsefuse::runtime
