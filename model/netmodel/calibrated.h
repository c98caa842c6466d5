// Collective times measured on real hardware (e.g. nccl-tests, or the
// runtime's own profiler), used instead of a formula: a table of
// (collective, ranks, bytes) -> time_us, interpolated between measurements.
//
// JSON form (the "collectives" member of a profile file):
//   {"collectives": {"allreduce": [{"ranks": 8, "bytes": 1024, "time_us": 12.5}, ...],
//                    "allgather": [...], "reduce_scatter": [...]}}
// "bytes" follows nccl-tests' "size": the per-rank buffer for allreduce, the
// whole output (allgather) / input (reduce-scatter) buffer otherwise.
//
// Interpolation and extrapolation policy:
//  * in bytes, at a measured rank count: piecewise linear in log(bytes) ->
//    log(time) between neighbouring sizes. Below the smallest size the time
//    is the smallest size's (latency-bound: it does not shrink further).
//    Above the largest size time grows linearly in bytes with the last
//    segment's marginal cost (bandwidth-bound); with a single size, in
//    proportion to bytes. bytes <= 0 costs 0 (NCCL returns at once).
//  * in ranks: between measured rank counts, piecewise linear in log(ranks)
//    -> log(time) of the two bracketing rank counts' times at these bytes.
//    Below the smallest rank count: clamped to it. Above the largest:
//    extrapolated log-log from the two largest rank counts, never below the
//    largest's time (more ranks are not faster); with one rank count, clamped.
//    Extrapolating far beyond the measured ranks is a guess: calibrate at the
//    scale you simulate when you can.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "model/netmodel/nccl_model.h"

namespace sparsefuse::netmodel {

struct Measurement {
  double bytes = 0;
  double time_us = 0;
};

class CalibratedTable {
 public:
  // NODE is the "collectives" object. InputError (file, pointer) for unknown
  // collectives, empty lists, non-positive values, duplicate (ranks, bytes).
  static CalibratedTable parse(const JsonNode& node);
  // Reads a profile file and parses its "collectives" member.
  static CalibratedTable load(const std::string& path);

  bool has(Collective collective) const { return tables_.count(collective) > 0; }
  std::vector<int> rank_counts(Collective collective) const;
  // InputError naming the file when the table has no such collective.
  double time_us(Collective collective, int ranks, double bytes) const;

 private:
  // Per collective: rank count -> measurements sorted by bytes.
  std::map<Collective, std::map<int, std::vector<Measurement>>> tables_;
  std::string file_, pointer_;
};

// Time at BYTES from one rank count's measurements (sorted, non-empty), by the
// bytes policy above. Exposed for tests.
double interpolate_bytes(const std::vector<Measurement>& sorted, double bytes);

}  // namespace sparsefuse::netmodel
