// Radix select of one small tensor in one thread block: the same result as the
// multi-kernel path in select.cu (the need largest keys, ties resolved towards
// the smallest indices, indices written in ascending order), with one launch
// instead of a dozen and no host round trip in between.
//
// Why: the multi-kernel path costs about 90 us on an H100 whatever the size
// (launches, CUB's select passes, a host synchronisation to size the candidate
// list), which is 700x the memory floor at 1e5 elements and dominates
// layer-wise compression of models with many small tensors. Here the keys sit
// in shared memory, so the four 8-bit digit passes and the ordered compaction
// never touch device memory again.
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

namespace sparsefuse::kernels::cuda::small_select {

constexpr int kThreads = 1024;
// Keys held in dynamic shared memory: 128 KiB of the 227 KiB a Hopper block can have.
constexpr int64_t kMaxElements = 32768;
constexpr uint32_t kNonFiniteKey = 0x7F800000u;  // |x| bits of +Inf; NaN keys are above

struct Result {
  uint32_t threshold;  // the need-th largest key (when need > 0)
  uint32_t nonfinite;  // keys of NaN/Inf elements seen
};

// key_of(i) is called exactly once per element (EF top-k accumulates into the
// residual there). need == 0: only the keys and the non-finite count. write
// == false: only the threshold (kth_largest). Launch with one block of
// kThreads and n * 4 bytes of dynamic shared memory.
template <class KeyOf>
__global__ void __launch_bounds__(kThreads)
    select_kernel(KeyOf key_of, int32_t n, uint32_t need, bool write, int32_t* out, Result* result) {
  extern __shared__ uint32_t keys[];
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ uint32_t hist[256];
  __shared__ uint32_t prefix, remaining, nonfinite;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    prefix = 0;
    remaining = need;
    nonfinite = 0;
  }
  __syncthreads();
  uint32_t bad = 0;
  for (int32_t i = tid; i < n; i += kThreads) {
    const uint32_t k = key_of(i);
    keys[i] = k;
    bad += (k & 0x7FFFFFFFu) >= kNonFiniteKey;
  }
  if (bad) atomicAdd(&nonfinite, bad);
  // Digits from the top: after pass p, prefix holds the key's bits above
  // `shift` and remaining how many keys equal to it are still to be taken.
  for (int shift = 24; need > 0 && shift >= 0; shift -= 8) {
    if (tid < 256) hist[tid] = 0;
    __syncthreads();
    const uint32_t decided = prefix;
    for (int32_t i = tid; i < n; i += kThreads) {
      const uint32_t k = keys[i];
      if (shift == 24 || (k >> (shift + 8)) == decided) atomicAdd(&hist[(k >> shift) & 0xFFu], 1u);
    }
    __syncthreads();
    // Descending inclusive scan over the bins: exactly one bin has
    // exclusive < remaining <= inclusive.
    const uint32_t want = remaining;
    const uint32_t count = tid < 256 ? hist[255 - tid] : 0u;
    uint32_t inclusive;
    Scan(scan).InclusiveSum(count, inclusive);
    __syncthreads();  // every thread has read `remaining` and `prefix`
    if (tid < 256 && inclusive - count < want && want <= inclusive) {
      prefix = (decided << 8) | static_cast<uint32_t>(255 - tid);
      remaining = want - (inclusive - count);
    }
    __syncthreads();
  }
  __syncthreads();
  if (need > 0 && write) {
    // Ordered compaction: an element's slot is the number of larger keys
    // before it plus the number of taken ties before it.
    const uint32_t t = prefix, ties_taken = remaining;
    uint32_t above_base = 0, tie_base = 0;
    for (int32_t base = 0; base < n; base += kThreads) {
      const int32_t i = base + tid;
      const uint32_t k = i < n ? keys[i] : 0u;
      const bool above = i < n && k > t, tie = i < n && k == t;
      // Two 16-bit counters in one word: a chunk holds at most 1024 of each.
      uint32_t before, chunk;
      Scan(scan).ExclusiveSum((above ? 0x10000u : 0u) | (tie ? 1u : 0u), before, chunk);
      const uint32_t ties_before = tie_base + (before & 0xFFFFu);
      if (above || (tie && ties_before < ties_taken)) {
        out[above_base + (before >> 16) + min(ties_before, ties_taken)] = i;
      }
      above_base += chunk >> 16;
      tie_base += chunk & 0xFFFFu;
      __syncthreads();  // the scan's storage is reused
    }
  }
  if (tid == 0) *result = Result{prefix, nonfinite};
}

}  // namespace sparsefuse::kernels::cuda::small_select
