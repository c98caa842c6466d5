// Ranks must execute the same plan: a rank started with another scenario
// file, other --set options or another trace would post other collectives
// (or the same ones with other sizes), which MPI either hangs on or answers
// with garbage. So before the first iteration every rank's fingerprint of
// what it is about to run is exchanged, and a difference ends the run at
// start-up, naming the ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "model/scenario.h"
#include "runtime/comm_thread.h"

namespace sparsefuse::runtime {

// FNV-1a over the resolved scenario (scheme included, as planned) and the
// trace's tensors (name, elements, ready time): what the plan is made from.
uint64_t run_fingerprint(const model::Scenario& scenario);

// Every rank's fingerprint, rank-major, after one allgather of FINGERPRINT
// (within TIMEOUT: a dead peer is a CommTimeout, not a hang).
std::vector<int64_t> exchange_fingerprints(CommThread& comm, uint64_t fingerprint, std::chrono::milliseconds timeout);

// Empty when every rank's fingerprint is rank 0's; otherwise which ranks
// differ, e.g. "rank 1 (fingerprint 5f3a...) differs from rank 0 (9c01...)".
std::string disagreement(const std::vector<int64_t>& fingerprints);

}  // namespace sparsefuse::runtime
