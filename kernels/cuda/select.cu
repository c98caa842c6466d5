// CUDA radix select (topk_abs, ef_topk, randomk, kth_largest_abs_key), threshold
// compaction/counting and the reductions the estimators use. Algorithm notes
// are in kernels/cuda/cuda_kernels.h.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <climits>
#include <limits>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/internal.h"
#include "kernels/cuda/small_select.cuh"
#include "kernels/rng.h"

namespace sparsefuse::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr uint32_t kNonFinite = 0x7F800000u;
// Digits of the 31-bit key: A = bits [30:19] (12), B = [18:7] (12), C = [6:0] (7).
constexpr int kShiftA = 19;
constexpr int kBins = 4096;
constexpr int kBitsA = 12;
constexpr int kShiftB = 7;
constexpr int kBitsB = 12;
constexpr uint32_t kMaskB = 0xFFFu;
constexpr int kBitsC = 7;
constexpr uint32_t kMaskC = 0x7Fu;
constexpr int kBinsC = 128;
// First level-A bin holding NaN/Inf keys.
constexpr int kFirstNonFiniteBin = static_cast<int>(kNonFinite >> kShiftA);  // 0xFF0

__device__ __forceinline__ uint32_t dev_abs_key(float x) {
  return __float_as_uint(x) & 0x7FFFFFFFu;
}

struct SelectState {
  uint32_t prefix;        // key >> shift of the digits decided so far
  uint32_t need;          // how many still to take among keys with that prefix
  uint32_t bucket_count;  // keys with that prefix
  uint32_t above;         // level A: keys in higher bins
  uint32_t nonfinite;     // level A: keys in NaN/Inf bins
  uint32_t pad[3];
};

struct Scratch {
  SelectState st;
  unsigned long long first_bad;
  long long num_selected;
  long long num_selected2;
  unsigned long long counter;
  uint32_t hist[kBins];
};

// ------------------------------------------------------------------ key ops

struct AbsKeyOp {
  const float* g;
  __device__ __forceinline__ uint32_t operator()(int64_t i) const { return dev_abs_key(g[i]); }
};

struct HashKeyOp {
  uint64_t stream;
  __device__ __forceinline__ uint32_t operator()(int64_t i) const {
    return randomk_key(stream, static_cast<uint64_t>(i));
  }
};

// Pass A of EF top-k: acc = r + g stored into r; key of acc. Called once per i.
struct AccumulateOp {
  float* r;
  const float* g;
  __device__ __forceinline__ uint32_t operator()(int64_t i) const {
    const float a = r[i] + g[i];
    r[i] = a;
    return dev_abs_key(a);
  }
};

// ------------------------------------------------------------------ kernels

__global__ void init_scratch_kernel(Scratch* s, uint32_t need) {
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) s->hist[b] = 0;
  if (threadIdx.x == 0) {
    s->st = SelectState{0u, need, 0u, 0u, 0u, {0u, 0u, 0u}};
    s->first_bad = ULLONG_MAX;
    s->num_selected = 0;
    s->num_selected2 = 0;
    s->counter = 0;
  }
}

__global__ void clear_hist_kernel(Scratch* s) {
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) s->hist[b] = 0;
}

template <class Op>
__global__ void __launch_bounds__(kThreads) hist_a_kernel(Op op, int64_t n, uint32_t* ghist) {
  __shared__ uint32_t sh[kBins];
  for (int b = threadIdx.x; b < kBins; b += kThreads) sh[b] = 0;
  __syncthreads();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  // Four independent loads in flight per thread.
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint32_t k0 = op(i);
    const uint32_t k1 = op(i + stride);
    const uint32_t k2 = op(i + 2 * stride);
    const uint32_t k3 = op(i + 3 * stride);
    atomicAdd(&sh[k0 >> kShiftA], 1u);
    atomicAdd(&sh[k1 >> kShiftA], 1u);
    atomicAdd(&sh[k2 >> kShiftA], 1u);
    atomicAdd(&sh[k3 >> kShiftA], 1u);
  }
  for (; i < n; i += stride) atomicAdd(&sh[op(i) >> kShiftA], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    const uint32_t c = sh[b];
    if (c) atomicAdd(&ghist[b], c);
  }
}

// Histogram of the next digit over the candidate list, restricted to keys
// whose already-decided digits equal the state's prefix.
template <class Op>
__global__ void __launch_bounds__(kThreads)
    hist_list_kernel(Op op, const int32_t* list, int64_t m, Scratch* s, int match_shift,
                     int bin_shift, uint32_t bin_mask) {
  __shared__ uint32_t sh[kBins];
  __shared__ uint32_t prefix;
  for (int b = threadIdx.x; b < kBins; b += kThreads) sh[b] = 0;
  if (threadIdx.x == 0) prefix = s->st.prefix;
  __syncthreads();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; j < m; j += stride) {
    const uint32_t key = op(list[j]);
    if ((key >> match_shift) == prefix) atomicAdd(&sh[(key >> bin_shift) & bin_mask], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    const uint32_t c = sh[b];
    if (c) atomicAdd(&s->hist[b], c);
  }
}

// One block: scans the histogram from the top bin down and records the bin
// holding the need-th largest key (a descending inclusive scan; exactly one
// bin satisfies exclusive < need <= inclusive).
__global__ void __launch_bounds__(kThreads)
    choose_kernel(Scratch* s, int nbins, int bits, int level) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage ts;
  constexpr int kItems = kBins / kThreads;
  const uint32_t need = s->st.need;
  const uint32_t prefix = s->st.prefix;
  uint32_t items[kItems];
  uint32_t incl[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int bin = nbins - 1 - (static_cast<int>(threadIdx.x) * kItems + j);
    items[j] = bin >= 0 ? s->hist[bin] : 0u;
  }
  Scan(ts).InclusiveSum(items, incl);
  if (level == 1 && threadIdx.x == 0) {
    uint32_t bad = 0;
    for (int b = kFirstNonFiniteBin; b < kBins; ++b) bad += s->hist[b];
    s->st.nonfinite = bad;
  }
  __syncthreads();  // every thread has read need/prefix before they change
  if (need == 0) return;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint32_t excl = incl[j] - items[j];
    if (excl < need && need <= incl[j]) {
      const uint32_t bin = static_cast<uint32_t>(nbins - 1 - (static_cast<int>(threadIdx.x) * kItems + j));
      s->st.prefix = (prefix << bits) | bin;
      s->st.need = need - excl;
      s->st.bucket_count = items[j];
      if (level == 1) s->st.above = excl;
    }
  }
}

__global__ void first_nonfinite_kernel(const float* g, int64_t n, unsigned long long* first) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    if (dev_abs_key(g[i]) >= kNonFinite) atomicMin(first, static_cast<unsigned long long>(i));
}

__global__ void gather_kernel(const float* src, const int32_t* idx, int64_t m, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride)
    out[j] = src[idx[j]];
}

__global__ void take_and_zero_kernel(float* r, const int32_t* idx, int64_t m, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride) {
    const int32_t i = idx[j];
    out[j] = r[i];
    r[i] = 0.0f;
  }
}

__global__ void gather_strided_kernel(const float* src, int64_t start, int64_t step, int64_t m,
                                      float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride)
    out[j] = src[start + j * step];
}

__global__ void map_kernel(const int32_t* outer, const int32_t* inner, int64_t m, int32_t* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride)
    out[j] = outer[inner[j]];
}

__global__ void iota_kernel(int32_t* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<int32_t>(i);
}

__global__ void __launch_bounds__(kThreads)
    stats_kernel(const float* g, int64_t n, float above, bool all, detail::RawStats* out) {
  double sum = 0, sum_abs = 0, sum_sq = 0;
  unsigned long long count = 0;
  float lo = __int_as_float(0x7F800000), hi = 0.0f;
  int bad = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float v = g[i];
    const float a = fabsf(v);
    bad |= dev_abs_key(v) >= kNonFinite;
    if (all || a > above) {
      ++count;
      sum += v;
      sum_abs += a;
      sum_sq += static_cast<double>(v) * v;
      lo = fminf(lo, a);
      hi = fmaxf(hi, a);
    }
  }
  using RD = cub::BlockReduce<double, kThreads>;
  using RU = cub::BlockReduce<unsigned long long, kThreads>;
  using RF = cub::BlockReduce<float, kThreads>;
  using RI = cub::BlockReduce<int, kThreads>;
  __shared__ union {
    typename RD::TempStorage d;
    typename RU::TempStorage u;
    typename RF::TempStorage f;
    typename RI::TempStorage i;
  } ts;
  const double b_sum = RD(ts.d).Sum(sum);
  __syncthreads();
  const double b_abs = RD(ts.d).Sum(sum_abs);
  __syncthreads();
  const double b_sq = RD(ts.d).Sum(sum_sq);
  __syncthreads();
  const unsigned long long b_count = RU(ts.u).Sum(count);
  __syncthreads();
  const float b_lo = RF(ts.f).Reduce(lo, [](float a, float b) { return fminf(a, b); });
  __syncthreads();
  const float b_hi = RF(ts.f).Reduce(hi, [](float a, float b) { return fmaxf(a, b); });
  __syncthreads();
  const int b_bad = RI(ts.i).Reduce(bad, [](int a, int b) { return a | b; });
  if (threadIdx.x == 0) {
    atomicAdd(&out->sum, b_sum);
    atomicAdd(&out->sum_abs, b_abs);
    atomicAdd(&out->sum_sq, b_sq);
    atomicAdd(&out->count, b_count);
    atomicMin(&out->min_bits, __float_as_uint(b_lo));
    atomicMax(&out->max_bits, __float_as_uint(b_hi));
    if (b_bad) atomicOr(&out->nonfinite, 1);
  }
}

__global__ void __launch_bounds__(kThreads)
    sum_log_kernel(const float* g, int64_t n, double scale, double eps, double* out) {
  double s = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    s += log(static_cast<double>(fabsf(g[i])) * scale + eps);
  using RD = cub::BlockReduce<double, kThreads>;
  __shared__ typename RD::TempStorage ts;
  const double b = RD(ts).Sum(s);
  if (threadIdx.x == 0) atomicAdd(out, b);
}

__global__ void __launch_bounds__(kThreads)
    count_kernel(const float* g, int64_t n, float thr, bool strict, unsigned long long* out) {
  unsigned long long c = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float a = fabsf(g[i]);
    c += strict ? (a > thr) : (a >= thr);
  }
  using RU = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename RU::TempStorage ts;
  const unsigned long long b = RU(ts).Sum(c);
  if (threadIdx.x == 0) atomicAdd(out, b);
}

// --------------------------------------------------------------- predicates

template <class Op>
struct AtLeastPred {
  Op op;
  uint32_t lo;
  __device__ __forceinline__ bool operator()(int32_t i) const { return op(i) >= lo; }
};

template <class Op>
struct TiePred {
  Op op;
  const Scratch* s;
  __device__ __forceinline__ bool operator()(int32_t i) const { return op(i) == s->st.prefix; }
};

// key > T, or key == T and i is at or before the t-th tie (ties are listed in
// ascending index order, so this keeps the t smallest-index ties).
template <class Op>
struct FinalPred {
  Op op;
  const Scratch* s;
  const int32_t* ties;
  __device__ __forceinline__ bool operator()(int32_t i) const {
    const uint32_t key = op(i);
    const uint32_t t = s->st.prefix;
    if (key > t) return true;
    if (key != t) return false;
    return i <= ties[s->st.need - 1];
  }
};

struct AbsThresholdPred {
  const float* g;
  float thr;
  bool strict;
  __device__ __forceinline__ bool operator()(int32_t i) const {
    const float a = fabsf(g[i]);
    return strict ? a > thr : a >= thr;
  }
};

// ------------------------------------------------------------------ helpers

template <class In, class Pred>
void select_if(In in, int32_t* out, long long* num, int64_t items, Pred pred, Workspace& ws,
               cudaStream_t stream) {
  size_t bytes = 0;
  check(cub::DeviceSelect::If(nullptr, bytes, in, out, num, items, pred, stream),
        "DeviceSelect::If(size)");
  void* temp = ws.device(detail::kSlotCubTemp, bytes);
  check(cub::DeviceSelect::If(temp, bytes, in, out, num, items, pred, stream), "DeviceSelect::If");
}

int small_grid(int64_t items, Workspace& ws) { return detail::launch_grid(items, kThreads, ws); }

void launch_check(const char* what) { check(cudaGetLastError(), what); }

SelectState read_state(Scratch* s, Workspace& ws, cudaStream_t stream) {
  auto* h = static_cast<SelectState*>(ws.pinned(sizeof(SelectState)));
  check(cudaMemcpyAsync(h, &s->st, sizeof(SelectState), cudaMemcpyDeviceToHost, stream),
        "read state");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return *h;
}

[[noreturn]] void throw_nonfinite(const char* kernel, const float* g, int64_t n, Workspace& ws,
                                  cudaStream_t stream) {
  const int64_t idx = detail::first_nonfinite(g, n, ws, stream);
  float v = std::numeric_limits<float>::quiet_NaN();
  if (idx >= 0) check(cudaMemcpy(&v, g + idx, sizeof v, cudaMemcpyDeviceToHost), "read value");
  throw NonFiniteError(kernel, idx, v);
}

enum class Mode { kSelect, kThreshold };

struct RadixOutcome {
  int64_t m = 0;        // min(k, n)
  uint32_t threshold = 0;  // kThreshold mode: the k-th largest key
};

// The radix select. pass_a is called once per element in pass A (it may have
// side effects, as EF's accumulation); key is the pure key function used
// afterwards. kSelect: writes the m ascending indices to `out` when 0 < m < n
// (the caller handles m == 0 and m == n). kThreshold: returns the k-th key.
// finite_src: the array whose NaN/Inf make the call fail (null: no check).
// n <= small_select::kMaxElements: one block, keys in shared memory.
template <class PassA>
RadixOutcome radix_select_small(PassA pass_a, int64_t n, uint32_t need, RadixOutcome r, int32_t* out,
                                const float* finite_src, const char* kernel, Mode mode, Workspace& ws,
                                cudaStream_t stream) {
  const auto kernel_fn = small_select::select_kernel<PassA>;
  const int bytes = static_cast<int>(n * sizeof(uint32_t));
  if (bytes > 48 * 1024) {  // above the default dynamic shared-memory limit
    check(cudaFuncSetAttribute(kernel_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
          "cudaFuncSetAttribute");
  }
  auto* result = static_cast<small_select::Result*>(ws.device(detail::kSlotScratch, sizeof(Scratch)));
  kernel_fn<<<1, small_select::kThreads, bytes, stream>>>(pass_a, static_cast<int32_t>(n), need,
                                                          mode == Mode::kSelect, out, result);
  launch_check("small_select::select_kernel");
  auto* h = static_cast<small_select::Result*>(ws.pinned(sizeof(small_select::Result)));
  check(cudaMemcpyAsync(h, result, sizeof *h, cudaMemcpyDeviceToHost, stream), "read result");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (h->nonfinite && finite_src) throw_nonfinite(kernel, finite_src, n, ws, stream);
  r.threshold = h->threshold;
  return r;
}

template <class PassA, class Key>
RadixOutcome radix_select(PassA pass_a, Key key, int64_t n, int64_t k, int32_t* out,
                          const float* finite_src, const char* kernel, Mode mode, Workspace& ws,
                          cudaStream_t stream) {
  RadixOutcome r;
  r.m = std::min(k, n);
  const uint32_t need = (r.m > 0 && (r.m < n || mode == Mode::kThreshold)) ? static_cast<uint32_t>(r.m) : 0u;
  if (n <= small_select::kMaxElements) {
    return radix_select_small(pass_a, n, need, r, out, finite_src, kernel, mode, ws, stream);
  }
  auto* s = static_cast<Scratch*>(ws.device(detail::kSlotScratch, sizeof(Scratch)));
  init_scratch_kernel<<<1, kThreads, 0, stream>>>(s, need);
  launch_check("init_scratch_kernel");
  if (n > 0) {
    hist_a_kernel<<<detail::launch_grid(n, kThreads * 4, ws), kThreads, 0, stream>>>(pass_a, n, s->hist);
    launch_check("hist_a_kernel");
  }
  choose_kernel<<<1, kThreads, 0, stream>>>(s, kBins, kBitsA, 1);
  launch_check("choose_kernel");
  const SelectState a = read_state(s, ws, stream);
  if (a.nonfinite && finite_src) throw_nonfinite(kernel, finite_src, n, ws, stream);
  if (need == 0) return r;

  const int64_t total = static_cast<int64_t>(a.above) + a.bucket_count;
  const uint32_t lo = a.prefix << kShiftA;
  const bool direct = mode == Mode::kSelect && total == r.m;  // whole bucket taken
  int32_t* list = direct ? out : static_cast<int32_t*>(ws.device(detail::kSlotList, total * sizeof(int32_t)));
  select_if(thrust::counting_iterator<int32_t>(0), list, &s->num_selected, n, AtLeastPred<Key>{key, lo},
            ws, stream);
  if (direct) return r;

  clear_hist_kernel<<<1, kThreads, 0, stream>>>(s);
  hist_list_kernel<<<small_grid(total, ws), kThreads, 0, stream>>>(key, list, total, s, kShiftA,
                                                                   kShiftB, kMaskB);
  choose_kernel<<<1, kThreads, 0, stream>>>(s, kBins, kBitsB, 2);
  clear_hist_kernel<<<1, kThreads, 0, stream>>>(s);
  hist_list_kernel<<<small_grid(total, ws), kThreads, 0, stream>>>(key, list, total, s, kShiftB, 0,
                                                                   kMaskC);
  choose_kernel<<<1, kThreads, 0, stream>>>(s, kBinsC, kBitsC, 3);
  launch_check("radix finish");
  if (mode == Mode::kThreshold) {
    r.threshold = read_state(s, ws, stream).prefix;
    return r;
  }
  auto* ties = static_cast<int32_t*>(ws.device(detail::kSlotTies, total * sizeof(int32_t)));
  select_if(static_cast<const int32_t*>(list), ties, &s->num_selected2, total, TiePred<Key>{key, s},
            ws, stream);
  select_if(static_cast<const int32_t*>(list), out, &s->num_selected, total,
            FinalPred<Key>{key, s, ties}, ws, stream);
  return r;
}

void sync(cudaStream_t stream) { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

}  // namespace

// ---------------------------------------------------------------- detail API

namespace detail {

int launch_grid(int64_t work_items, int items_per_block, Workspace& ws) {
  const int64_t want = (work_items + items_per_block - 1) / items_per_block;
  const int64_t cap = static_cast<int64_t>(ws.sm_count()) * 8;
  return static_cast<int>(std::max<int64_t>(1, std::min(want, cap)));
}

RawStats abs_stats(const float* g, int64_t n, float above, bool all, Workspace& ws,
                   cudaStream_t stream) {
  auto* out = static_cast<RawStats*>(ws.device(kSlotStats, sizeof(RawStats)));
  RawStats init{};
  init.min_bits = 0x7F800000u;
  auto* h = static_cast<RawStats*>(ws.pinned(sizeof(RawStats)));
  *h = init;
  check(cudaMemcpyAsync(out, h, sizeof(RawStats), cudaMemcpyHostToDevice, stream), "stats init");
  if (n > 0) {
    stats_kernel<<<launch_grid(n, kThreads * 4, ws), kThreads, 0, stream>>>(g, n, above, all, out);
    launch_check("stats_kernel");
  }
  check(cudaMemcpyAsync(h, out, sizeof(RawStats), cudaMemcpyDeviceToHost, stream), "stats read");
  sync(stream);
  return *h;
}

double sum_log(const float* g, int64_t n, double scale, double eps, Workspace& ws,
               cudaStream_t stream) {
  auto* out = static_cast<double*>(ws.device(kSlotStats, sizeof(RawStats)));
  check(cudaMemsetAsync(out, 0, sizeof(double), stream), "memset");
  if (n > 0) {
    sum_log_kernel<<<launch_grid(n, kThreads * 4, ws), kThreads, 0, stream>>>(g, n, scale, eps, out);
    launch_check("sum_log_kernel");
  }
  auto* h = static_cast<double*>(ws.pinned(sizeof(double)));
  check(cudaMemcpyAsync(h, out, sizeof(double), cudaMemcpyDeviceToHost, stream), "sum_log read");
  sync(stream);
  return *h;
}

int64_t first_nonfinite(const float* g, int64_t n, Workspace& ws, cudaStream_t stream) {
  auto* first = static_cast<unsigned long long*>(ws.device(kSlotStats, sizeof(RawStats)));
  check(cudaMemsetAsync(first, 0xFF, sizeof(unsigned long long), stream), "memset");
  if (n > 0) {
    first_nonfinite_kernel<<<launch_grid(n, kThreads * 4, ws), kThreads, 0, stream>>>(g, n, first);
    launch_check("first_nonfinite_kernel");
  }
  auto* h = static_cast<unsigned long long*>(ws.pinned(sizeof(unsigned long long)));
  check(cudaMemcpyAsync(h, first, sizeof *h, cudaMemcpyDeviceToHost, stream), "read first");
  sync(stream);
  return *h == ULLONG_MAX ? -1 : static_cast<int64_t>(*h);
}

void require_finite(const char* kernel, const float* g, int64_t n, Workspace& ws,
                    cudaStream_t stream) {
  if (first_nonfinite(g, n, ws, stream) >= 0) throw_nonfinite(kernel, g, n, ws, stream);
}

void gather(const float* src, const int32_t* idx, int64_t m, float* out, cudaStream_t stream) {
  if (m <= 0) return;
  const int grid = static_cast<int>(std::min<int64_t>((m + kThreads - 1) / kThreads, 65535));
  gather_kernel<<<grid, kThreads, 0, stream>>>(src, idx, m, out);
  launch_check("gather_kernel");
}

void gather_strided(const float* src, int64_t start, int64_t step, int64_t m, float* out,
                    cudaStream_t stream) {
  if (m <= 0) return;
  const int grid = static_cast<int>(std::min<int64_t>((m + kThreads - 1) / kThreads, 65535));
  gather_strided_kernel<<<grid, kThreads, 0, stream>>>(src, start, step, m, out);
  launch_check("gather_strided_kernel");
}

void map_indices(const int32_t* outer, const int32_t* inner, int64_t m, int32_t* out,
                 cudaStream_t stream) {
  if (m <= 0) return;
  const int grid = static_cast<int>(std::min<int64_t>((m + kThreads - 1) / kThreads, 65535));
  map_kernel<<<grid, kThreads, 0, stream>>>(outer, inner, m, out);
  launch_check("map_kernel");
}

void iota(int32_t* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const int grid = static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  iota_kernel<<<grid, kThreads, 0, stream>>>(out, n);
  launch_check("iota_kernel");
}

}  // namespace detail

// ---------------------------------------------------------------- public API

int64_t topk_abs(const float* g, int64_t n, int64_t k, float* values, int32_t* indices,
                 Workspace& ws, cudaStream_t stream) {
  static constexpr char kName[] = "topk_abs";
  check_size(kName, n);
  check_count(kName, k);
  const AbsKeyOp key{g};
  const RadixOutcome r = radix_select(key, key, n, k, indices, g, kName, Mode::kSelect, ws, stream);
  if (r.m == n) {
    detail::iota(indices, n, stream);
    if (n) check(cudaMemcpyAsync(values, g, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
  } else {
    detail::gather(g, indices, r.m, values, stream);
  }
  sync(stream);
  return r.m;
}

int64_t ef_topk(float* residual, const float* grad, int64_t n, int64_t k, float* values,
                int32_t* indices, Workspace& ws, cudaStream_t stream) {
  static constexpr char kName[] = "ef_topk";
  check_size(kName, n);
  check_count(kName, k);
  const RadixOutcome r = radix_select(AccumulateOp{residual, grad}, AbsKeyOp{residual}, n, k, indices,
                                      residual, kName, Mode::kSelect, ws, stream);
  if (r.m == n) {
    detail::iota(indices, n, stream);
    if (n) {
      check(cudaMemcpyAsync(values, residual, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
      check(cudaMemsetAsync(residual, 0, n * sizeof(float), stream), "memset");
    }
  } else if (r.m > 0) {
    const int grid = static_cast<int>(std::min<int64_t>((r.m + kThreads - 1) / kThreads, 65535));
    take_and_zero_kernel<<<grid, kThreads, 0, stream>>>(residual, indices, r.m, values);
    launch_check("take_and_zero_kernel");
  }
  sync(stream);
  return r.m;
}

int64_t randomk(const float* g, int64_t n, int64_t k, const RandomkKey& rk, float* values,
                int32_t* indices, Workspace& ws, cudaStream_t stream) {
  static constexpr char kName[] = "randomk";
  check_size(kName, n);
  check_count(kName, k);
  const int64_t m = std::min(k, n);
  if (m == n) {
    detail::iota(indices, n, stream);
    if (g && n) check(cudaMemcpyAsync(values, g, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
  } else if (m > 0) {
    const HashKeyOp key{randomk_stream(rk.seed, rk.tensor_id, rk.step)};
    radix_select(key, key, n, m, indices, nullptr, kName, Mode::kSelect, ws, stream);
    if (g) detail::gather(g, indices, m, values, stream);
  }
  sync(stream);
  return m;
}

uint32_t kth_largest_abs_key(const float* x, int64_t n, int64_t k, Workspace& ws,
                             cudaStream_t stream) {
  static constexpr char kName[] = "kth_largest_abs_key";
  check_size(kName, n);
  if (k < 1 || k > n) throw std::invalid_argument("kth_largest_abs_key: k outside [1, n]");
  const AbsKeyOp key{x};
  return radix_select(key, key, n, k, nullptr, x, kName, Mode::kThreshold, ws, stream).threshold;
}

int64_t count_abs_threshold(const float* g, int64_t n, float thr, bool strict, Workspace& ws,
                            cudaStream_t stream) {
  check_size("count_abs_threshold", n);
  auto* out = static_cast<unsigned long long*>(ws.device(detail::kSlotStats, sizeof(detail::RawStats)));
  check(cudaMemsetAsync(out, 0, sizeof *out, stream), "memset");
  if (n > 0) {
    count_kernel<<<detail::launch_grid(n, kThreads * 4, ws), kThreads, 0, stream>>>(g, n, thr, strict, out);
    launch_check("count_kernel");
  }
  auto* h = static_cast<unsigned long long*>(ws.pinned(sizeof(unsigned long long)));
  check(cudaMemcpyAsync(h, out, sizeof *h, cudaMemcpyDeviceToHost, stream), "count read");
  sync(stream);
  return static_cast<int64_t>(*h);
}

DeviceSelection select_abs_threshold(const float* g, int64_t n, float thr, bool strict,
                                     int64_t limit, Workspace& ws, cudaStream_t stream) {
  const int64_t count = count_abs_threshold(g, n, thr, strict, ws, stream);
  DeviceSelection s;
  s.indices.resize(count);
  if (count > 0) {
    auto* scratch = static_cast<Scratch*>(ws.device(detail::kSlotScratch, sizeof(Scratch)));
    select_if(thrust::counting_iterator<int32_t>(0), s.indices.data(), &scratch->num_selected, n,
              AbsThresholdPred{g, thr, strict}, ws, stream);
  }
  s.size = (limit >= 0 && limit < count) ? limit : count;
  s.values.resize(s.size);
  detail::gather(g, s.indices.data(), s.size, s.values.data(), stream);
  sync(stream);
  return s;
}

}  // namespace sparsefuse::kernels::cuda
