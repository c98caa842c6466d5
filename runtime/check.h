// --check: what the engine did in an iteration, handed to the independent
// oracle (oracle.h) as plain data: the requests, each bucket as it arrived,
// the averaged gradient and this rank's residual.
#pragma once

#include "runtime/engine.h"
#include "runtime/oracle.h"

namespace sparsefuse::runtime {

// Views into ENGINE's last iteration (valid until its next run_iteration).
IterationRecord iteration_record(const RankEngine& engine, int iteration);

}  // namespace sparsefuse::runtime
