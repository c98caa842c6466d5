// The collectives the runtime needs, behind one interface so the engine runs
// unchanged over MPI (mpi_communicator.h) or, in one process, over the
// single-rank loopback below (unit tests; `sparsefuse run` without mpirun).
// A communicator is used from one thread only: CommThread owns it.
#pragma once

#include <cstdint>
#include <vector>

namespace sparsefuse::runtime {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // recv[i] = sum over ranks of send[i] (fp32; the reduction order is the
  // library's, so results may differ from a rank-order sum in the last bits).
  // SEND == RECV reduces in place; otherwise the ranges must not overlap.
  virtual void allreduce_sum(const float* send, float* recv, int64_t n) = 0;
  // Every rank contributes size() * N values; rank r receives the sums of
  // block r (elements [r N, (r + 1) N)) in OUT.
  virtual void reduce_scatter_sum(const float* in, float* out, int64_t n) = 0;
  // Every rank contributes N values; OUT receives size() * N, rank-major (the
  // second half of an allreduce split as DeAR splits it).
  virtual void allgather_values(const float* in, float* out, int64_t n) = 0;
  // In place over doubles, for run statistics: sum or max over ranks.
  virtual void allreduce_sum(double* data, int64_t n) = 0;
  virtual void allreduce_max(double* data, int64_t n) = 0;
  // Every rank contributes N values; returns size() * N values, rank-major.
  virtual std::vector<int64_t> allgather(const int64_t* mine, int n) = 0;
  // Variable-size gather of (value, index) pairs: rank r contributes
  // COUNTS[r] pairs (known to every rank beforehand); the output holds every
  // rank's pairs concatenated in rank order (sum(COUNTS) entries each).
  virtual void allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
                          float* all_values, int32_t* all_indices) = 0;
  // Returns once every rank has called it (lines up ranks before a timed collective).
  virtual void barrier() = 0;
};

// One rank talking to itself: every collective is a copy.
class LoopbackCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(const float* send, float* recv, int64_t n) override;
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override;
  void allgather_values(const float* in, float* out, int64_t n) override;
  void allreduce_sum(double*, int64_t) override {}
  void allreduce_max(double*, int64_t) override {}
  std::vector<int64_t> allgather(const int64_t* mine, int n) override;
  void allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts, float* all_values,
                  int32_t* all_indices) override;
  void barrier() override {}
};

}  // namespace sparsefuse::runtime
