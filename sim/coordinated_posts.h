// Coordinated schemes (Horovod's negotiation, RGMerge-dynamic): once every
// worker has reported its ready tensors, the coordinator decides the
// collectives for all of them. This component owns turning those decisions
// into each worker's posts: a worker posts once its own copy of a flush's
// last tensor is ready and the negotiation is over, after running the
// flush's selection when it compresses.
#pragma once

#include <vector>

#include "policy/scheme.h"
#include "sim/backward_stage.h"
#include "sim/worker.h"

namespace sparsefuse::sim {

// Resolves COORDINATOR's flushes for iteration IT into RECORD (buckets as
// worker 0 sees them, then every worker's posts, bytes and compression) and
// NOT_BEFORE (per flush, the end of its negotiation).
void post_coordinated_flushes(policy::Coordinator& coordinator, int it, const BackwardStage& backward,
                              std::vector<WorkerStreams>& streams, WorkerExecutor& executor, FlushRecord& record,
                              std::vector<TimeNs>& not_before);

}  // namespace sparsefuse::sim
