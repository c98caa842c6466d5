#pragma once
#include <cstdint>

namespace sparsefuse::kernels {

// Runs about 2 MB of distinct straight-line code (4096 blocks that
// cannot be merged), once each: what a layer's backward step, which runs
// far more code than a kernel call, leaves in the instruction caches, the
// instruction TLB and the branch predictors. sweep_caches (common.h) does
// the same for data; a call measured "after compute" follows both. Returns
// a value of the blocks' chained arithmetic (the same every call), so that
// none of it is optimised away.
uint64_t sweep_code();

}  // namespace sparsefuse::kernels
