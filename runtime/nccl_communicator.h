// Communicator over NCCL on CUDA devices (`sparsefuse run --device cuda`).
// A host communicator (MpiCommunicator under mpirun, LoopbackCommunicator for
// one rank alone) starts it and carries the small host-side collectives (the
// int64 counts and fingerprints, the double statistics, barriers): rank 0's
// ncclGetUniqueId reaches every rank through the host communicator's
// allgather (MPI_Allgather under mpirun), then ncclCommInitRank. The fp32
// collectives run in NCCL on the communication stream over device buffers
// (grown, never shrunk): the payload is copied in, reduced or gathered, and
// copied back before the call returns (the Communicator interface is
// host-pointer based); device_allreduce_sum and device_allgatherv run the same
// collectives on device memory the caller owns, without copies. allgatherv is one NCCL group of per-rank broadcasts
// (values, then indices). Each device collective is timed with CUDA events
// around the NCCL call alone (last_collective_ms). Used from one thread only,
// like every communicator (CommThread).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "runtime/communicator.h"

namespace sparsefuse::runtime {

class NcclCommunicator : public Communicator {
 public:
  // Takes over HOST (already started) and uses device_for(rank). Throws
  // kernels::cuda::CudaError or std::runtime_error (naming the NCCL call).
  explicit NcclCommunicator(std::unique_ptr<Communicator> host);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  void allreduce_sum(const float* send, float* recv, int64_t n) override;
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override;
  void allgather_values(const float* in, float* out, int64_t n) override;
  void allreduce_sum(double* data, int64_t n) override { host_->allreduce_sum(data, n); }
  void allreduce_max(double* data, int64_t n) override { host_->allreduce_max(data, n); }
  std::vector<int64_t> allgather(const int64_t* mine, int n) override { return host_->allgather(mine, n); }
  void allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts, float* all_values,
                  int32_t* all_indices) override;
  void barrier() override { host_->barrier(); }

  // The same collectives over device memory (the device-resident payload
  // path, runtime/resident_payloads.h): no staging copies. They run on
  // stream() and return once it has finished them; work another stream
  // produced must be ordered before them (cudaStreamWaitEvent on stream()).
  void device_allreduce_sum(float* data, int64_t n);  // in place
  void device_reduce_scatter_sum(const float* in, float* out, int64_t n);  // in: n * size(), out: n
  void device_allgather_values(const float* in, float* out, int64_t n);    // in: n, out: n * size()
  void device_allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
                         float* all_values, int32_t* all_indices);
  cudaStream_t stream() const { return stream_; }

  int device() const { return device_; }
  // The device rank RANK uses: local_rank % devices, local_rank being
  // OMPI_COMM_WORLD_LOCAL_RANK (else RANK). Throws CudaError without a device.
  static int device_for(int rank);
  // Milliseconds between the CUDA events around the last NCCL collective.
  float last_collective_ms() const { return last_ms_; }
  static std::string nccl_version();

 private:
  template <class T>
  void copy_in(T* device, const T* host, int64_t n, const char* what);
  template <class T>
  void copy_out(T* host, const T* device, int64_t n, const char* what);
  template <class Launch>
  void timed(Launch launch);  // synchronises the stream

  std::unique_ptr<Communicator> host_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  float last_ms_ = 0.0f;
  kernels::cuda::DeviceBuffer<float> send_, receive_;
  kernels::cuda::DeviceBuffer<int32_t> send_indices_, receive_indices_;
};

}  // namespace sparsefuse::runtime
