#pragma once
#include <cstdint>
#include <vector>

namespace sparsefuse::kernels {

// Runs about 2 MB of distinct straight-line code (4096 blocks that
// cannot be merged), once each: what a layer's backward step, which runs
// far more code than a kernel call, leaves in the instruction caches, the
// instruction TLB and the branch predictors. sweep_caches (common.h) does
// the same for data; a call measured "after compute" follows both. Returns
// a value of the blocks' chained arithmetic (the same every call), so that
// none of it is optimised away.
uint64_t sweep_code();

// What a layer's backward step leaves behind for a call measured "after
// compute": a read-and-write sweep of EVICT (sweep_caches) and then one of
// the code. The profiler's after-compute points and runtime/flush_cost
// (the runtime's bookkeeping per flush) both start from it.
void sweep_after_compute(std::vector<uint64_t>& evict);

}  // namespace sparsefuse::kernels
