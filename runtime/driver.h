// Runs a scenario on this rank. The scheme is planned exactly as the
// simulator plans it (model::ScenarioPlan: same presets, same cost estimates
// from the scenario's network and compression models, so the buckets are the
// simulated ones); RankEngine drives it for warm-up + measured iterations,
// every iteration's aggregate is optionally checked by the independent
// Oracle (oracle.h), and the statistics are gathered into the simulator's
// result schema (sim::SimResult, written by its own to_json) plus an
// "executor" object.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/json_reader.h"
#include "runtime/comm_thread.h"
#include "runtime/compressor.h"
#include "runtime/payload_plane.h"
#include "runtime/support.h"
#include "model/plan.h"
#include "model/scenario.h"
#include "model/result.h"

namespace sparsefuse::runtime {

struct RunOptions {
  double time_scale = 1.0;
  bool check = false;
  std::chrono::milliseconds timeout{60'000};
  std::string transport = "mpi";  // for result.json: "mpi", "loopback" or "nccl"
  std::string device = "cpu";     // for result.json: where compression runs ("cpu" or "cuda")
  // The compressor (null: the CPU's), e.g. CudaCompressor for --device cuda.
  std::function<std::unique_ptr<Compressor>(const ModelLayout&)> make_compressor;
  // The device-resident payload plane (null: host memory), e.g.
  // ResidentPayloads for --device cuda; used when resident_refusal accepts
  // the scheme, else the payloads are staged through host memory and the
  // executor's "payloads" says why.
  std::function<std::unique_ptr<PayloadPlane>(const ModelLayout&)> make_plane;
  // Told after every iteration (done, total), for progress reports.
  std::function<void(int, int)> progress;
};

// The scenario's scheme planned for this run (model::ScenarioPlan, as the
// simulator plans it). Bad input for the runtime (InputError, exit 2): a
// worker count other than RANKS, or a scheme the runtime cannot execute
// (runtime/support.h).
std::unique_ptr<model::ScenarioPlan> plan_for_runtime(const model::Scenario& scenario, int ranks);

struct RunOutcome {
  model::RunResult result;  // the same on every rank after the final reduction
  Json executor;
  std::string check_failure;  // "" when --check passed or was off
  Json to_json() const;       // result.json
};

// PLANNED: plan_for_runtime's for SCENARIO (an adaptive scheme re-plans in it).
RunOutcome run_scenario(const model::Scenario& scenario, model::ScenarioPlan& planned, CommThread& comm,
                        const RunOptions& options);

}  // namespace sparsefuse::runtime
