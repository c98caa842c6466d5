// CUDA compression kernels with the same semantics as the CPU references
// (kernels/topk.h, kernels/pack.h, kernels/estimators.h): ascending int32
// indices, signed values, smaller index wins a tie, NonFiniteError naming the
// first NaN/Inf index. Exact kernels (topk_abs, ef_topk, randomk, adtopk, pack)
// return the same index sets and bit-identical values as the CPU versions.
//
// Pointers are device pointers unless a parameter is a std::vector (host).
// Work is ordered on `stream`. Every call reads a few bytes back to the host
// (counts for exact buffer sizing and the NaN/Inf / bad-index checks), so it
// synchronises `stream` at least once before returning; the outputs are
// complete when it returns.
//
// Top-k on CUDA (docs/kernel-design.md, two-pass radix select, digits 12/12/7 bits of the
// 31-bit key bits(|x|)):
//   pass A: one read; shared-memory 4096-bin histogram of key bits [30:19],
//           merged with global atomics; a one-block kernel scans it and picks
//           the bucket of the k-th key (also counts NaN/Inf keys: bins >= 0xFF0).
//   pass B: one read; cub::DeviceSelect::If (single-pass, decoupled look-back,
//           order preserving) compacts every index whose key is in or above that
//           bucket into a candidate list sized exactly from pass A's counts
//           (never overflows, never a third read).
//   finish: on the candidate list only: 12-bit and 7-bit histograms give the
//           exact k-th key T and the number of ties to take; an order-preserving
//           compaction of the list keeps key > T and ties up to the t-th tie.
// EF top-k fuses acc = residual + grad into pass A. Random-k runs the same select
// on counter-based priorities (no input read until the final gather).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/estimators.h"
#include "kernels/topk.h"

namespace sparsefuse::kernels::cuda {

// A CUDA runtime call failed.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what)
      : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

void check(cudaError_t e, const char* what);

// True when a CUDA device can be used; otherwise false and *reason says why
// (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient ...").
bool device_available(std::string* reason = nullptr);
std::string device_name();

// Owning device array (cudaMalloc / cudaFree).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(int64_t n) { resize(n); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  // Discards the contents.
  void resize(int64_t n) {
    release();
    if (n > 0) {
      void* p = nullptr;
      check(cudaMalloc(&p, static_cast<size_t>(n) * sizeof(T)), "cudaMalloc");
      p_ = static_cast<T*>(p);
    }
    n_ = n;
  }
  // Grows to at least max(n, 1) elements (contents not kept when it grows;
  // never shrinks) and returns data(), never null: the buffers a caller
  // reuses from call to call.
  T* at_least(int64_t n) {
    if (n_ < n || n_ == 0) resize(n > 1 ? n : 1);
    return p_;
  }
  void upload(const std::vector<T>& h) {
    if (static_cast<int64_t>(h.size()) != n_) resize(static_cast<int64_t>(h.size()));
    if (n_) check(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download(int64_t count = -1) const {
    const int64_t m = count < 0 ? n_ : count;
    std::vector<T> h(static_cast<size_t>(m));
    if (m) check(cudaMemcpy(h.data(), p_, static_cast<size_t>(m) * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return h;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  int64_t size() const { return n_; }

 private:
  void release() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  int64_t n_ = 0;
};

// Scratch memory reused between calls (grows, never shrinks) plus a pinned host
// staging area. One per stream; not thread-safe.
class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Device scratch of at least `bytes` for slot s (contents not preserved when
  // it grows). Slots are internal to the kernels.
  void* device(int slot, size_t bytes);
  void* pinned(size_t bytes);
  int sm_count();

  static constexpr int kSlots = 12;

 private:
  struct Buf {
    void* p = nullptr;
    size_t bytes = 0;
  };
  Buf bufs_[kSlots];
  void* host_ = nullptr;
  size_t host_bytes_ = 0;
  int sm_count_ = 0;
};

// A selection in device memory: `size` pairs, indices ascending.
struct DeviceSelection {
  DeviceBuffer<float> values;
  DeviceBuffer<int32_t> indices;
  int64_t size = 0;
};
Selection to_host(const DeviceSelection& s);

// ------------------------------------------------------------------ top-k
// Exactly kernels::topk_abs: writes min(k, n) pairs, returns that count.
int64_t topk_abs(const float* g, int64_t n, int64_t k, float* values, int32_t* indices,
                 Workspace& ws, cudaStream_t stream = nullptr);
// Exactly kernels::ef_topk (residual updated in place).
int64_t ef_topk(float* residual, const float* grad, int64_t n, int64_t k, float* values,
                int32_t* indices, Workspace& ws, cudaStream_t stream = nullptr);
// Exactly kernels::randomk (same priorities, same indices). g may be null
// (then only indices are written).
int64_t randomk(const float* g, int64_t n, int64_t k, const RandomkKey& key, float* values,
                int32_t* indices, Workspace& ws, cudaStream_t stream = nullptr);
// Exactly kernels::kth_largest_abs_key.
uint32_t kth_largest_abs_key(const float* x, int64_t n, int64_t k, Workspace& ws,
                             cudaStream_t stream = nullptr);

// ADTopk per-row top-k, exactly kernels::adtopk. values/indices must hold
// kernels::adtopk_count(shape, rho) entries. One CUDA block per row: three
// shared-memory histogram levels over the row (read through L1/L2), then an
// in-order block-scan compaction; rows with a stride (rank > 2) mark a flag
// array that cub::DeviceSelect::Flagged compacts into global index order.
int64_t adtopk(const float* g, const std::vector<int64_t>& shape, double rho, float* values,
               int32_t* indices, Workspace& ws, cudaStream_t stream = nullptr);

// ---------------------------------------------------------- pack / unpack
// Exactly kernels::pack (same layout; offsets and counts on the host,
// local_indices on the device). Bad local indices raise std::out_of_range.
int64_t pack(const float* buffer, const std::vector<int64_t>& offsets, const int32_t* local_indices,
             const std::vector<int64_t>& counts, float* out_values, int32_t* out_indices,
             Workspace& ws, cudaStream_t stream = nullptr);
// kernels::unpack. deterministic = true (default): one scatter launch per rank, in
// rank order, then the division: bit-identical to the CPU whenever indices are
// distinct within each rank's slice (true of every selector here); with
// duplicates inside one rank those adds race in fp32 order. deterministic = false:
// one atomic scatter launch for all ranks (sums may differ in rounding order).
// Bad indices raise std::out_of_range (dense is then unspecified).
void unpack(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
            int64_t n, float* dense, Workspace& ws, cudaStream_t stream = nullptr,
            bool deterministic = true);
// kernels::unpack_equal_slices; returns the lost-contribution count. Bit-identical
// to the CPU (within a slice only one entry per index lands).
int64_t unpack_equal_slices(const float* values, const int32_t* indices, int64_t len, int P,
                            int64_t n, float* dense, Workspace& ws, cudaStream_t stream = nullptr);

// ------------------------------------------- device-resident payload helpers
// (kernels/cuda/resident.cu.) Unlike everything above, these only enqueue on
// `stream` and return, reading nothing back: indices are trusted (the
// selections above made them).
// acc[i] = acc[i] + x[i] (error feedback's accumulation, the CPU's fp32 add).
void add_into(float* acc, const float* x, int64_t n, cudaStream_t stream);
// dst[indices[j]] = values[j] for j < m (what a selection sends, written over the gradient).
void scatter_values(float* dst, const int32_t* indices, const float* values, int64_t m, cudaStream_t stream);
// dst[indices[j]] = 0 for j < m (error feedback: the sent entries leave the residual).
void zero_at(float* dst, const int32_t* indices, int64_t m, cudaStream_t stream);
// out[i] = i for i < n.
void iota_indices(int32_t* out, int64_t n, cudaStream_t stream);
// indices[j] += by for j < m.
void shift_indices(int32_t* indices, int64_t m, int32_t by, cudaStream_t stream);
// Exactly kernels::average: out[i] = sum[i] / P (for P = 2^k as sum[i] * 2^-k, the same bits).
void average(const float* sum, int64_t n, int P, float* out, cudaStream_t stream);

// ----------------------------------------------------------- estimators
// Same decision logic as kernels::dgc / gaussiank / redsync / sidco
// (kernels/estimators_impl.h). Reductions run in double with atomics, so a
// threshold can differ from the CPU's in its last bits; the selection is always
// exactly the threshold compaction at the returned fp32 threshold.
using DeviceEstimate = EstimateT<DeviceSelection>;
DeviceEstimate dgc(const float* g, int64_t n, double rho, uint64_t seed, Workspace& ws,
                   cudaStream_t stream = nullptr);
DeviceEstimate gaussiank(const float* g, int64_t n, double rho, Workspace& ws,
                         cudaStream_t stream = nullptr);
DeviceEstimate redsync(const float* g, int64_t n, double rho, Workspace& ws,
                       cudaStream_t stream = nullptr);
DeviceEstimate sidco(const float* g, int64_t n, double rho, SidcoFit fit, int stages,
                     Workspace& ws, cudaStream_t stream = nullptr);

// Threshold compaction / count on the device (kernels::select_abs_threshold).
DeviceSelection select_abs_threshold(const float* g, int64_t n, float thr, bool strict,
                                     int64_t limit, Workspace& ws, cudaStream_t stream = nullptr);
int64_t count_abs_threshold(const float* g, int64_t n, float thr, bool strict, Workspace& ws,
                            cudaStream_t stream = nullptr);

// Median over max(reps, 1) calls of fn, each timed with CUDA events recorded on
// the legacy default stream around it, after one untimed warm-up call; in us.
double median_event_time_us(const std::function<void()>& fn, int reps);

// Device-to-device streaming copy of `bytes` (median of `reps` copies timed
// with CUDA events): returns the copy bandwidth in bytes/s counting read +
// write (2 * bytes per copy). Used for the memory floor.
double measure_copy_bandwidth(size_t bytes, int reps, Workspace& ws);

// Synthetic gradient on the device for benchmarks: d[i] = scale * N(0,1) by
// Box-Muller on counter-based uniforms (mix64 of (seed, i)). Deterministic.
void fill_normal(float* d, int64_t n, uint64_t seed, float scale, cudaStream_t stream = nullptr);

}  // namespace sparsefuse::kernels::cuda
