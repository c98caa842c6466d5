#include "policy/partition.h"

#include <algorithm>

namespace sparsefuse::policy {

Bucket dense_bucket(const GradientModel& model, int first, int end, Collective collective) {
  Bucket b;
  b.first_tensor = first;
  b.end_tensor = end;
  for (int t = first; t < end; ++t) b.elements += model.elements[t];
  b.dense_elements = b.elements;
  b.sent_elements = b.elements;
  b.bytes_per_worker = b.elements * model.bytes_per_element;
  b.collective = collective;
  return b;
}

std::vector<Bucket> per_tensor_partition(const GradientModel& model) {
  std::vector<Bucket> buckets;
  for (int t = 0; t < model.size(); ++t) buckets.push_back(dense_bucket(model, t, t + 1, Collective::kAllreduce));
  return buckets;
}

std::vector<Bucket> single_bucket_partition(const GradientModel& model) {
  return {dense_bucket(model, 0, model.size(), Collective::kAllreduce)};
}

std::vector<Bucket> byte_threshold_partition(const GradientModel& model, int64_t first_bucket_bytes,
                                             int64_t cap_bytes) {
  std::vector<Bucket> buckets;
  int first = 0;
  int64_t bytes = 0;
  for (int t = 0; t < model.size(); ++t) {
    bytes += model.bytes(t);
    int64_t limit = buckets.empty() ? first_bucket_bytes : cap_bytes;
    if (bytes >= limit || t + 1 == model.size()) {
      buckets.push_back(dense_bucket(model, first, t + 1, Collective::kAllreduce));
      first = t + 1;
      bytes = 0;
    }
  }
  return buckets;
}

std::vector<Bucket> mgwfbp_partition(const GradientModel& model, const CostEstimator& cost) {
  const TimeNs startup = cost.collective_ns(Collective::kAllreduce, 0);
  std::vector<Bucket> buckets;
  TimeNs previous_end = 0;  // when the last closed group's allreduce ends
  int first = 0;
  int64_t group_bytes = model.bytes(0);
  for (int j = 0; j + 1 < model.size(); ++j) {
    TimeNs start = std::max(previous_end, model.ready_ns[j]);
    TimeNs duration = cost.collective_ns(Collective::kAllreduce, group_bytes);
    TimeNs next_ready = model.ready_ns[j + 1];
    bool overlaps_next = next_ready < start + duration;
    bool merge = overlaps_next && (start > next_ready || next_ready - start < startup);
    if (merge) {
      group_bytes += model.bytes(j + 1);
    } else {
      buckets.push_back(dense_bucket(model, first, j + 1, Collective::kAllreduce));
      previous_end = start + duration;
      first = j + 1;
      group_bytes = model.bytes(j + 1);
    }
  }
  buckets.push_back(dense_bucket(model, first, model.size(), Collective::kAllreduce));
  return buckets;
}

}  // namespace sparsefuse::policy
