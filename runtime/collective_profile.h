// Measures the collectives the runtime moves its buckets with, through the
// same Communicator, and writes them as a calibrated collective table
// (model/netmodel/calibrated.h), so `sparsefuse simulate` with
// network.model = "calibrated" charges what this transport really costs:
//
// {"format": "sparsefuse-profile/1",
//  "provenance": {"kind": "measured", "tool": "sparsefuse profile-collectives",
//                 "transport": "mpi", "ranks": P, "host": <rank 0's host>,
//                 "date": "YYYY-MM-DD" (UTC), "mpi_library": <first line of MPI_Get_library_version>,
//                 "warmup": W, "iterations": N, "working_set_bytes": S,
//                 "statistic": <how time_us was formed>},
//  "collectives": {"allreduce": [{"ranks": P, "bytes": B, "time_us": T}, ...],
//                  "allgather": [...], "reduce_scatter": [...]}}
//
// What each collective runs and what "bytes" is (the calibrated format's, after nccl-tests):
//   allreduce:      Communicator::allreduce_sum in place over B / 4 floats; B = the per-rank buffer.
//   allgather:      Communicator::allgatherv of B / (8 P) (float value, int32 index) pairs per rank,
//                   the runtime's sparse-bucket path; B = the whole gathered output.
//   reduce_scatter: Communicator::reduce_scatter_sum of B / 4 floats per rank, B / (4 P) back;
//                   B = the per-rank input.
// time_us is the median over N timed repetitions (after W untimed ones) of the
// slowest rank's time, every repetition starting after a barrier; in the file
// it is rounded to the nanosecond.
//
// Working set (S): 0 reuses one set of buffers for every repetition, as
// nccl-tests and OSU do, so a size that fits the caches is timed hot. S > 0
// spreads the repetitions over disjoint copies of the buffers filling S
// bytes, each used once before timing starts (so MPI's first-use costs of
// new memory are excluded, as after a runtime's first iteration): the
// runtime's own case, whose buckets cover a gradient larger than the caches.
// On this 2-core VM (2026-11-27) a 4 MiB allreduce took 0.63-0.93 ms hot and
// 1.38-1.43 ms over a 128 MiB working set; ResNet-50's 4 MiB partitions took
// ~1.5 ms inside `sparsefuse run`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "runtime/communicator.h"
#include "model/netmodel/nccl_model.h"

namespace sparsefuse::runtime {


struct CollectiveProfileOptions {
  int64_t min_bytes = int64_t(1) << 10;
  int64_t max_bytes = int64_t(64) << 20;
  int warmup = 5;
  int iterations = 20;
  int64_t working_set = 0;  // bytes; 0: one set of buffers, reused
};

// Largest size accepted: a rank holds about twice this much while measuring.
constexpr int64_t kMaxProfileBytes = int64_t(1) << 30;
// Largest working set accepted (each rank holds it).
constexpr int64_t kMaxWorkingSetBytes = int64_t(4) << 30;

// InputError naming the option ("--min-bytes", "--max-bytes", "--warmup",
// "--iterations", "--working-set") and the accepted range.
void validate(const CollectiveProfileOptions& options);

// The collectives in the order they are measured and listed.
const std::vector<Collective>& profiled_collectives();

// The sizes at which COLLECTIVE is measured on RANKS ranks: MIN, 2 MIN, 4 MIN,
// ... up to MAX, each rounded down to whole elements of the collective (a
// multiple of 4, 8 P or 4 P bytes, at least one), sizes that round to the
// same value kept once.
std::vector<int64_t> profile_sizes(Collective collective, int ranks, int64_t min_bytes, int64_t max_bytes);

// Times COLLECTIVE at BYTES (one of profile_sizes) on every rank of COMM:
// WARMUP untimed then ITERATIONS timed repetitions, each after a barrier;
// returns, identically on every rank, the median over the repetitions of the
// slowest rank's time in microseconds. WORKING_SET > 0: repetition r uses
// copy r mod C of the buffers, C the copies that fit WORKING_SET (at least
// one), every copy used once first, untimed and without barriers. A
// collective call: every rank calls it.
double time_collective(Communicator& comm, Collective collective, int64_t bytes, int warmup, int iterations,
                       int64_t working_set = 0);

struct CollectiveTiming {
  Collective collective;
  int64_t bytes = 0;
  double time_us = 0;
};

struct CollectiveProfile {
  CollectiveProfileOptions options;
  int ranks = 1;
  std::string transport = "mpi";
  std::string library;  // the MPI library's version line
  std::vector<CollectiveTiming> timings;

  Json to_json() const;  // the document above; host and date are this process's, now
};

// An nccl-tests-like table: header (comment lines), then one row per timing
// with size (B), count (elements: floats or pairs), type, collective, time
// (us), algorithm bandwidth (bytes / time) and bus bandwidth (algorithm
// bandwidth times nccl-tests' factor: 2 (P - 1) / P for allreduce, (P - 1) / P
// otherwise), both in GB/s.
std::string table_header(const CollectiveProfile& profile);
std::string table_row(const CollectiveTiming& timing, int ranks);

}  // namespace sparsefuse::runtime
