// Validation: a real run's result.json against a simulated one of the same
// scenario (docs/architecture.md, "one policy, two executors": the simulator's
// prediction for a plan is compared with the runtime executing that plan).
//
// Both documents are sparsefuse-result/1. The comparison is per metric
// (iteration time, each part of the breakdown, bytes, losses) and, when both
// executors flushed the same bucket sequence, per bucket. A real run cannot
// tell a peer's lateness from transfer time, so exposed communication and
// sync wait are compared as one sum.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"

namespace sparsefuse::model {

struct MetricComparison {
  std::string name;  // with its unit, e.g. "iteration time, mean (ms)"
  double measured = 0, simulated = 0;  // in that unit
  // (simulated - measured) / measured; empty when measured is 0.
  std::optional<double> relative_error;
};

struct BucketComparison {
  int index = 0, first_tensor = 0, tensors = 0;
  std::string collective;
  int64_t elements = 0, dense_elements = 0;  // the measured run's
  double measured_duration_s = 0, simulated_duration_s = 0;
  double measured_compression_s = 0, simulated_compression_s = 0;
};

struct Validation {
  std::vector<MetricComparison> metrics;
  // Same count and, bucket by bucket, the same first tensor, tensor count,
  // collective and elements. Otherwise the first difference, in words.
  bool same_buckets = false;
  std::string bucket_difference;
  std::vector<BucketComparison> buckets;  // only when same_buckets
  // Mean of |relative error| of the bucket durations with a measured
  // duration > 0, and the bucket where it is largest (-1: none); the same
  // for the buckets' compression (selection and packing) times.
  std::optional<double> mean_abs_bucket_error;
  int worst_bucket = -1;
  std::optional<double> mean_abs_compression_error;
  int worst_compression_bucket = -1;
  // Over the same buckets, sum |simulated - measured| / sum measured: each
  // bucket weighted by its measured compression time, so microsecond
  // buckets count for what they cost, not one vote each.
  std::optional<double> time_weighted_compression_error;
  // The per-bucket compression error by kind of bucket, always these three
  // in this order: ">= 1e5 elements", "< 1e5 elements" (not sent dense as
  // pairs) and "sent dense as pairs" (an allgather whose every element is
  // dense). A kernel on 1e5 elements or more is timed by its memory traffic;
  // below, by what one call costs; dense pairs are the runtime's packing only.
  struct KindError {
    std::string kind;
    std::optional<double> mean_abs_error;  // empty: no bucket of the kind measured any
    int buckets = 0;
  };
  std::vector<KindError> compression_by_kind;

  Json to_json() const;
};

// MEASURED and SIMULATED are result documents (the nodes carry their file
// names for errors). InputError naming the file and pointer when either lacks
// a field the comparison needs.
Validation compare_results(const JsonNode& measured, const JsonNode& simulated);

}  // namespace sparsefuse::model
