// Communicator over MPI_COMM_WORLD. Constructing it initialises MPI and
// destroying it finalises MPI, both on the calling thread; the runtime
// constructs it on its communication thread (CommThread), which is then the
// only thread that ever calls MPI (MPI_THREAD_FUNNELED is enough).
#pragma once

#include <string>

#include "runtime/communicator.h"

namespace sparsefuse::runtime {

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  // The first line of MPI_Get_library_version (callable before MPI_Init, from any thread).
  static std::string library_version();

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allreduce_sum(const float* send, float* recv, int64_t n) override;
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override;
  void allgather_values(const float* in, float* out, int64_t n) override;
  void allreduce_sum(double* data, int64_t n) override;
  void allreduce_max(double* data, int64_t n) override;
  std::vector<int64_t> allgather(const int64_t* mine, int n) override;
  void allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts, float* all_values,
                  int32_t* all_indices) override;
  void barrier() override;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace sparsefuse::runtime
