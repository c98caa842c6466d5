// The threshold estimators on CUDA: the shared decision logic of
// kernels/estimators_impl.h driven by device primitives.
#include <cstring>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/internal.h"
#include "kernels/estimators_impl.h"

namespace sparsefuse::kernels::cuda {
namespace {

class CudaBackend {
 public:
  using Sel = DeviceSelection;

  CudaBackend(const char* kernel, const float* g, int64_t n, Workspace& ws, cudaStream_t stream)
      : g_(g), n_(n), ws_(ws), stream_(stream) {
    check_size(kernel, n);
  }

  int64_t n() const { return n_; }

  void require_finite(const char* kernel) { detail::require_finite(kernel, g_, n_, ws_, stream_); }

  kernels::detail::AbsStats stats(float above) {
    const detail::RawStats r = detail::abs_stats(g_, n_, above, above < 0.0f, ws_, stream_);
    kernels::detail::AbsStats st;
    st.count = static_cast<int64_t>(r.count);
    st.sum = r.sum;
    st.sum_abs = r.sum_abs;
    st.sum_sq = r.sum_sq;
    float lo, hi;
    std::memcpy(&lo, &r.min_bits, sizeof lo);
    std::memcpy(&hi, &r.max_bits, sizeof hi);
    st.min_abs = r.count ? lo : 0.0;
    st.max_abs = r.count ? hi : 0.0;
    st.nonfinite = r.nonfinite != 0;
    return st;
  }

  double mean_log(double scale, double eps) {
    return n_ ? detail::sum_log(g_, n_, scale, eps, ws_, stream_) / static_cast<double>(n_) : 0.0;
  }

  int64_t count(float thr, bool strict) { return count_abs_threshold(g_, n_, thr, strict, ws_, stream_); }

  Sel select(float thr, bool strict, int64_t limit) {
    return select_abs_threshold(g_, n_, thr, strict, limit, ws_, stream_);
  }

  Sel topk(int64_t k) {
    Sel s;
    s.values.resize(k);
    s.indices.resize(k);
    s.size = topk_abs(g_, n_, k, s.values.data(), s.indices.data(), ws_, stream_);
    return s;
  }

  Sel topk_within(Sel in, int64_t k) {
    Sel out;
    const int64_t m = std::min(k, in.size);
    out.values.resize(m);
    out.indices.resize(m);
    DeviceBuffer<int32_t> inner(m);
    out.size = topk_abs(in.values.data(), in.size, k, out.values.data(), inner.data(), ws_, stream_);
    detail::map_indices(in.indices.data(), inner.data(), out.size, out.indices.data(), stream_);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return out;
  }

  Sel all() { return topk(n_); }

  float sample_kth(int64_t start, int64_t stride, int64_t m, int64_t kth) {
    auto* sample = static_cast<float*>(ws_.device(detail::kSlotSample, static_cast<size_t>(m) * sizeof(float)));
    detail::gather_strided(g_, start, stride, m, sample, stream_);
    const uint32_t key = kth_largest_abs_key(sample, m, kth, ws_, stream_);
    float t;
    std::memcpy(&t, &key, sizeof t);
    return t;
  }

 private:
  const float* g_;
  int64_t n_;
  Workspace& ws_;
  cudaStream_t stream_;
};

}  // namespace

DeviceEstimate dgc(const float* g, int64_t n, double rho, uint64_t seed, Workspace& ws,
                   cudaStream_t stream) {
  CudaBackend b("dgc", g, n, ws, stream);
  return kernels::detail::dgc_impl(b, rho, seed);
}

DeviceEstimate gaussiank(const float* g, int64_t n, double rho, Workspace& ws, cudaStream_t stream) {
  CudaBackend b("gaussiank", g, n, ws, stream);
  return kernels::detail::gaussiank_impl(b, rho);
}

DeviceEstimate redsync(const float* g, int64_t n, double rho, Workspace& ws, cudaStream_t stream) {
  CudaBackend b("redsync", g, n, ws, stream);
  return kernels::detail::redsync_impl(b, rho);
}

DeviceEstimate sidco(const float* g, int64_t n, double rho, SidcoFit fit, int stages, Workspace& ws,
                     cudaStream_t stream) {
  CudaBackend b("sidco", g, n, ws, stream);
  return kernels::detail::sidco_impl(b, rho, fit, stages);
}

}  // namespace sparsefuse::kernels::cuda
