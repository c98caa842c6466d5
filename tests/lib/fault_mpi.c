/* A test-only LD_PRELOAD library (through MPI's profiling interface) that
 * makes one rank send fewer elements in an MPI_Allgatherv than every rank
 * was told it would: a count that disagrees with the payload. Configured by
 * environment:
 *   FAULT_MPI_SHORT_RANK   the rank (MPI_COMM_WORLD) whose send is short; unset: no fault
 *   FAULT_MPI_AFTER        let this many of its gathers of >= 2 elements pass first (default 0)
 * The faulty call sends its first sendcount - 1 elements; every receiver
 * (itself included) keeps what its buffer held in the last slot. */
#include <mpi.h>
#include <stdlib.h>

static long gathers;

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  const char* victim = getenv("FAULT_MPI_SHORT_RANK");
  if (victim && sendcount >= 2 && sendbuf != MPI_IN_PLACE) {
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char* after = getenv("FAULT_MPI_AFTER");
    if (rank == atoi(victim) && gathers++ == (after ? atol(after) : 0)) sendcount -= 1;
  }
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}
