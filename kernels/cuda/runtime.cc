// Host-side runtime pieces of the CUDA kernels: errors, device discovery,
// workspace memory.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "kernels/cuda/cuda_kernels.h"

namespace sparsefuse::kernels::cuda {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw CudaError(e, std::string(what) + ": " + cudaGetErrorName(e) + ": " +
                           cudaGetErrorString(e));
  }
}

bool device_available(std::string* reason) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    if (reason) *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return false;
  }
  if (count == 0) {
    if (reason) *reason = "no CUDA device present";
    return false;
  }
  return true;
}

std::string device_name() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  return prop.name;
}

Workspace::Workspace() = default;

Workspace::~Workspace() {
  for (auto& b : bufs_)
    if (b.p) cudaFree(b.p);
  if (host_) cudaFreeHost(host_);
}

void* Workspace::device(int slot, size_t bytes) {
  if (slot < 0 || slot >= kSlots) throw std::logic_error("Workspace: bad slot");
  Buf& b = bufs_[slot];
  if (bytes == 0) bytes = 1;
  if (b.bytes < bytes) {
    if (b.p) check(cudaFree(b.p), "cudaFree");  // synchronises the device
    b.p = nullptr;
    b.bytes = 0;
    const size_t grown = bytes + bytes / 4;  // head-room for the next, similar call
    check(cudaMalloc(&b.p, grown), "cudaMalloc(workspace)");
    b.bytes = grown;
  }
  return b.p;
}

void* Workspace::pinned(size_t bytes) {
  if (host_bytes_ < bytes) {
    if (host_) check(cudaFreeHost(host_), "cudaFreeHost");
    host_ = nullptr;
    host_bytes_ = 0;
    check(cudaMallocHost(&host_, bytes), "cudaMallocHost");
    host_bytes_ = bytes;
  }
  return host_;
}

int Workspace::sm_count() {
  if (sm_count_ == 0) {
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, dev),
          "cudaDeviceGetAttribute");
  }
  return sm_count_;
}

double median_event_time_us(const std::function<void()>& fn, int reps) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<double> t;
  try {
    fn();  // warm-up: workspace growth, first touch
    for (int r = 0; r < std::max(reps, 1); ++r) {
      check(cudaEventRecord(a), "cudaEventRecord");
      fn();
      check(cudaEventRecord(b), "cudaEventRecord");
      check(cudaEventSynchronize(b), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
      t.push_back(ms * 1e3);
    }
  } catch (...) {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    throw;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Selection to_host(const DeviceSelection& s) {
  Selection h;
  h.values = s.values.download(s.size);
  h.indices = s.indices.download(s.size);
  return h;
}

}  // namespace sparsefuse::kernels::cuda
