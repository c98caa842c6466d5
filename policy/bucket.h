// A bucket is one fused collective: a contiguous range of gradient tensors (in
// backward order) communicated together. Every worker must flush the same
// sequence of buckets; the executors check this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sparsefuse::policy {

enum class Collective { kAllreduce, kAllgather, kReduceScatter, kBroadcast };

std::string_view collective_name(Collective c);

struct Bucket {
  int first_tensor = 0;
  int end_tensor = 0;  // one past the last tensor
  int64_t elements = 0;
  int64_t bytes_per_worker = 0;  // what each worker contributes
  Collective collective = Collective::kAllreduce;

  int tensors() const { return end_tensor - first_tensor; }
  bool same_operation(const Bucket& other) const {
    return first_tensor == other.first_tensor && end_tensor == other.end_tensor &&
           bytes_per_worker == other.bytes_per_worker && collective == other.collective;
  }
};

}  // namespace sparsefuse::policy
