// The discrete-event simulator. Each iteration runs in two stages:
//  1. every worker replays its own streams — forward, backward tensor by
//     tensor, compression on the compute stream, a side stream or CPU
//     threads — and its policy decides flushes. These worker-local events are
//     processed in order without the global queue: a worker's streams depend
//     only on its own start time.
//  2. the collectives every worker posted are resolved on the global event
//     queue (CommunicationEngine), then each worker decompresses and runs its
//     optimizer once its communication is done.
// Workers interact only through collectives, so this ordering is exact for
// the schemes modelled and keeps 1024 workers x 100 iterations well under a
// second.
#pragma once

#include <functional>
#include <vector>

#include "model/result.h"
#include "model/scenario.h"
#include "sim/timeline.h"

namespace sparsefuse::sim {

// Called after every simulated iteration with (done, total), for progress
// reports on long runs.
using ProgressHook = std::function<void(int done, int total)>;

// How the engine computes, not what: every option gives the same result.
struct EngineOptions {
  // With compute.comm_interference > 0, guess each iteration's collectives
  // by partial passes that replay only the workers likely to post last
  // (sim/simulator.cc); off, every pass replays every worker. For tests.
  bool partial_passes = true;
};

model::RunResult simulate(const model::Scenario& scenario, Timeline* timeline = nullptr,
                          const ProgressHook& progress = {}, const EngineOptions& options = {});

}  // namespace sparsefuse::sim
