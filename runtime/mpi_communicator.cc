#include "runtime/mpi_communicator.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sparsefuse::runtime {

namespace {

// MPI counts are int: larger messages would need chunking, which no trace
// this runtime replays on CPUs comes near; refuse them instead of truncating.
int mpi_count(int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) throw std::runtime_error(std::string(what) + ": message of " + std::to_string(n) +
                                                     " elements exceeds MPI's int count");
  return int(n);
}

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, size_t(length)));
}

}  // namespace

MpiCommunicator::MpiCommunicator() {
  // A rank's communication thread spends most of its time waiting inside MPI
  // while the rank's own thread replays backward and compresses. Open MPI
  // busy-polls by default, and on a machine with no spare core per thread that
  // stole the replay's CPU: ResNet-50's 1.9 ms backward took 7-16 ms on two
  // ranks of this 2-core machine, 2.2 ms with yielding. A user's own setting wins.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back as status codes (turned into exceptions above) instead
  // of aborting the job from inside the library without a message of ours.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiCommunicator::~MpiCommunicator() { MPI_Finalize(); }

std::string MpiCommunicator::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  // Open MPI counts the terminating NUL in LENGTH.
  std::string version(text, strnlen(text, size_t(length)));
  return version.substr(0, version.find_first_of("\r\n"));
}

void MpiCommunicator::allreduce_sum(const float* send, float* recv, int64_t n) {
  check(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, mpi_count(n, "allreduce"), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD),
        "MPI_Allreduce");
}

void MpiCommunicator::reduce_scatter_sum(const float* in, float* out, int64_t n) {
  check(MPI_Reduce_scatter_block(in, out, mpi_count(n, "reduce_scatter"), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Reduce_scatter_block");
}

void MpiCommunicator::allgather_values(const float* in, float* out, int64_t n) {
  const int count = mpi_count(n, "allgather");
  check(MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD), "MPI_Allgather");
}

void MpiCommunicator::allreduce_sum(double* data, int64_t n) {
  check(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, "allreduce"), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
}

void MpiCommunicator::allreduce_max(double* data, int64_t n) {
  check(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, "allreduce"), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce");
}

std::vector<int64_t> MpiCommunicator::allgather(const int64_t* mine, int n) {
  std::vector<int64_t> all(size_t(size_) * size_t(n));
  check(MPI_Allgather(mine, n, MPI_INT64_T, all.data(), n, MPI_INT64_T, MPI_COMM_WORLD), "MPI_Allgather");
  return all;
}

void MpiCommunicator::allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
                                 float* all_values, int32_t* all_indices) {
  if (int(counts.size()) != size_) throw std::logic_error("allgatherv: one count per rank expected");
  std::vector<int> sizes(static_cast<size_t>(size_)), displacements(static_cast<size_t>(size_));
  int64_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    sizes[r] = mpi_count(counts[r], "allgatherv");
    displacements[r] = mpi_count(offset, "allgatherv");
    offset += counts[r];
  }
  mpi_count(offset, "allgatherv");
  check(MPI_Allgatherv(values, sizes[rank_], MPI_FLOAT, all_values, sizes.data(), displacements.data(), MPI_FLOAT,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
  check(MPI_Allgatherv(indices, sizes[rank_], MPI_INT32_T, all_indices, sizes.data(), displacements.data(),
                       MPI_INT32_T, MPI_COMM_WORLD),
        "MPI_Allgatherv");
}

void MpiCommunicator::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

}  // namespace sparsefuse::runtime
