#include "runtime/nccl_communicator.h"

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace sparsefuse::runtime {

using kernels::cuda::check;

namespace {

void nccl_check(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) {
    throw std::runtime_error(fmt::format("{} failed: {}", call, ncclGetErrorString(result)));
  }
}

}  // namespace

std::string NcclCommunicator::nccl_version() {
  int version = 0;
  ncclGetVersion(&version);
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

int NcclCommunicator::device_for(int rank) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1) throw kernels::cuda::CudaError(cudaErrorNoDevice, "no CUDA device");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return (local && *local ? std::atoi(local) : rank) % devices;
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> host) : host_(std::move(host)) {
  device_ = device_for(host_->rank());
  check(cudaSetDevice(device_), "cudaSetDevice");
  // The unique id travels as int64 words through the host communicator.
  constexpr int kWords = int((sizeof(ncclUniqueId) + 7) / 8);
  int64_t words[kWords] = {};
  ncclUniqueId id;
  if (host_->rank() == 0) {
    nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memcpy(words, &id, sizeof id);
  }
  const std::vector<int64_t> all = host_->allgather(words, kWords);
  std::memcpy(&id, all.data(), sizeof id);  // rank 0's
  nccl_check(ncclCommInitRank(&comm_, host_->size(), id, host_->rank()), "ncclCommInitRank");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate(communication)");
  check(cudaEventCreate(&start_), "cudaEventCreate");
  check(cudaEventCreate(&stop_), "cudaEventCreate");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(comm_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

// Copies N elements between host and device: in on the communication stream
// (ordered before the collective), out synchronously (the caller reads them next).
template <class T>
void NcclCommunicator::copy_in(T* device, const T* host, int64_t n, const char* what) {
  check(cudaMemcpyAsync(device, host, size_t(n) * sizeof(T), cudaMemcpyHostToDevice, stream_), what);
}

template <class T>
void NcclCommunicator::copy_out(T* host, const T* device, int64_t n, const char* what) {
  check(cudaMemcpy(host, device, size_t(n) * sizeof(T), cudaMemcpyDeviceToHost), what);
}

// Enqueues LAUNCH (the NCCL calls) between the two timing events and waits.
template <class Launch>
void NcclCommunicator::timed(Launch launch) {
  check(cudaEventRecord(start_, stream_), "cudaEventRecord");
  launch();
  check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(communication)");
  check(cudaEventElapsedTime(&last_ms_, start_, stop_), "cudaEventElapsedTime");
}

void NcclCommunicator::allreduce_sum(const float* send, float* recv, int64_t n) {
  if (n == 0) return;
  float* d = send_.at_least(n);
  copy_in(d, send, n, "cudaMemcpyAsync(allreduce in)");
  device_allreduce_sum(d, n);
  copy_out(recv, d, n, "cudaMemcpy(allreduce out)");
}

void NcclCommunicator::device_allreduce_sum(float* data, int64_t n) {
  if (n == 0) return;
  timed([&] { nccl_check(ncclAllReduce(data, data, size_t(n), ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce"); });
}

void NcclCommunicator::reduce_scatter_sum(const float* in, float* out, int64_t n) {
  if (n == 0) return;
  const int64_t total = n * size();
  float* d_in = send_.at_least(total);
  float* d_out = receive_.at_least(n);
  copy_in(d_in, in, total, "cudaMemcpyAsync(reduce-scatter in)");
  device_reduce_scatter_sum(d_in, d_out, n);
  copy_out(out, d_out, n, "cudaMemcpy(reduce-scatter out)");
}

void NcclCommunicator::device_reduce_scatter_sum(const float* in, float* out, int64_t n) {
  if (n == 0) return;
  timed([&] {
    nccl_check(ncclReduceScatter(in, out, size_t(n), ncclFloat, ncclSum, comm_, stream_), "ncclReduceScatter");
  });
}

void NcclCommunicator::allgather_values(const float* in, float* out, int64_t n) {
  if (n == 0) return;
  const int64_t total = n * size();
  float* d_in = send_.at_least(n);
  float* d_out = receive_.at_least(total);
  copy_in(d_in, in, n, "cudaMemcpyAsync(allgather in)");
  device_allgather_values(d_in, d_out, n);
  copy_out(out, d_out, total, "cudaMemcpy(allgather out)");
}

void NcclCommunicator::device_allgather_values(const float* in, float* out, int64_t n) {
  if (n == 0) return;
  timed([&] { nccl_check(ncclAllGather(in, out, size_t(n), ncclFloat, comm_, stream_), "ncclAllGather"); });
}

void NcclCommunicator::allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
                                  float* all_values, int32_t* all_indices) {
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t(0)), mine = counts[size_t(rank())];
  if (total == 0) return;
  float* d_values = send_.at_least(mine);
  int32_t* d_indices = send_indices_.at_least(mine);
  float* all_v = receive_.at_least(total);
  int32_t* all_i = receive_indices_.at_least(total);
  copy_in(d_values, values, mine, "cudaMemcpyAsync(allgatherv values in)");
  copy_in(d_indices, indices, mine, "cudaMemcpyAsync(allgatherv indices in)");
  device_allgatherv(d_values, d_indices, counts, all_v, all_i);
  copy_out(all_values, all_v, total, "cudaMemcpy(allgatherv values out)");
  copy_out(all_indices, all_i, total, "cudaMemcpy(allgatherv indices out)");
}

void NcclCommunicator::device_allgatherv(const float* values, const int32_t* indices,
                                         const std::vector<int64_t>& counts, float* all_values,
                                         int32_t* all_indices) {
  if (std::accumulate(counts.begin(), counts.end(), int64_t(0)) == 0) return;
  // Rank r's block is broadcast from r into its place in every rank's output.
  timed([&] {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int64_t r = 0, at = 0; r < size(); at += counts[size_t(r)], ++r) {
      if (counts[size_t(r)] == 0) continue;
      nccl_check(ncclBroadcast(values, all_values + at, size_t(counts[size_t(r)]), ncclFloat, int(r), comm_, stream_),
                 "ncclBroadcast(values)");
      nccl_check(
          ncclBroadcast(indices, all_indices + at, size_t(counts[size_t(r)]), ncclInt32, int(r), comm_, stream_),
          "ncclBroadcast(indices)");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  });
}

}  // namespace sparsefuse::runtime
