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

// Grows BUFFER to at least N elements (contents not kept).
template <class T>
T* at_least(kernels::cuda::DeviceBuffer<T>& buffer, int64_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
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

void NcclCommunicator::begin_timing() { check(cudaEventRecord(start_, stream_), "cudaEventRecord"); }

void NcclCommunicator::end_timing() {
  check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(communication)");
  check(cudaEventElapsedTime(&last_ms_, start_, stop_), "cudaEventElapsedTime");
}

void NcclCommunicator::allreduce_sum(const float* send, float* recv, int64_t n) {
  if (n == 0) return;
  float* d = at_least(send_, n);
  const size_t bytes = size_t(n) * sizeof(float);
  check(cudaMemcpyAsync(d, send, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync(allreduce in)");
  begin_timing();
  nccl_check(ncclAllReduce(d, d, size_t(n), ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce");
  end_timing();
  check(cudaMemcpy(recv, d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(allreduce out)");
}

void NcclCommunicator::reduce_scatter_sum(const float* in, float* out, int64_t n) {
  if (n == 0) return;
  const int64_t total = n * size();
  float* d_in = at_least(send_, total);
  float* d_out = at_least(receive_, n);
  check(cudaMemcpyAsync(d_in, in, size_t(total) * sizeof(float), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(reduce-scatter in)");
  begin_timing();
  nccl_check(ncclReduceScatter(d_in, d_out, size_t(n), ncclFloat, ncclSum, comm_, stream_), "ncclReduceScatter");
  end_timing();
  check(cudaMemcpy(out, d_out, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy(reduce-scatter out)");
}

void NcclCommunicator::allgather_values(const float* in, float* out, int64_t n) {
  if (n == 0) return;
  const int64_t total = n * size();
  float* d_in = at_least(send_, n);
  float* d_out = at_least(receive_, total);
  check(cudaMemcpyAsync(d_in, in, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(allgather in)");
  begin_timing();
  nccl_check(ncclAllGather(d_in, d_out, size_t(n), ncclFloat, comm_, stream_), "ncclAllGather");
  end_timing();
  check(cudaMemcpy(out, d_out, size_t(total) * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy(allgather out)");
}

void NcclCommunicator::allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
                                  float* all_values, int32_t* all_indices) {
  const int P = size(), me = rank();
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t(0)), mine = counts[size_t(me)];
  if (total == 0) return;
  float* d_values = at_least(send_, std::max<int64_t>(mine, 1));
  int32_t* d_indices = at_least(send_indices_, std::max<int64_t>(mine, 1));
  float* all_v = at_least(receive_, total);
  int32_t* all_i = at_least(receive_indices_, total);
  check(cudaMemcpyAsync(d_values, values, size_t(mine) * sizeof(float), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(allgatherv values in)");
  check(cudaMemcpyAsync(d_indices, indices, size_t(mine) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync(allgatherv indices in)");
  begin_timing();
  // Rank r's block is broadcast from r into its place in every rank's output.
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (int64_t r = 0, at = 0; r < P; at += counts[size_t(r)], ++r) {
    if (counts[size_t(r)] == 0) continue;
    nccl_check(ncclBroadcast(d_values, all_v + at, size_t(counts[size_t(r)]), ncclFloat, int(r), comm_, stream_),
               "ncclBroadcast(values)");
    nccl_check(ncclBroadcast(d_indices, all_i + at, size_t(counts[size_t(r)]), ncclInt32, int(r), comm_, stream_),
               "ncclBroadcast(indices)");
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  end_timing();
  check(cudaMemcpy(all_values, all_v, size_t(total) * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy(allgatherv values out)");
  check(cudaMemcpy(all_indices, all_i, size_t(total) * sizeof(int32_t), cudaMemcpyDeviceToHost),
        "cudaMemcpy(allgatherv indices out)");
}

}  // namespace sparsefuse::runtime
