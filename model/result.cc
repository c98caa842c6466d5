// result.json: the schema later issues and outside tools rely on (README,
// "result.json").
#include <algorithm>
#include <cmath>

#include "model/result.h"

namespace sparsefuse::model {

namespace {

// Nearest-rank percentile of sorted values (p in (0, 100]).
double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

double RunResult::mean_iteration_s() const {
  double sum = 0;
  for (TimeNs t : iteration_ns) sum += double(t);
  return sum / double(iteration_ns.size()) * 1e-9;
}

Json RunResult::to_json(bool timing) const {
  std::vector<double> seconds;
  for (TimeNs t : iteration_ns) seconds.push_back(ns_to_seconds(t));
  std::sort(seconds.begin(), seconds.end());
  Json buckets_json = Json::array();
  for (const auto& r : buckets) {
    Json b = {{"first_tensor", r.bucket.first_tensor},
              {"tensors", r.bucket.tensors()},
              {"elements", r.bucket.elements},
              {"dense_elements", r.bucket.dense_elements},
              {"sent_elements", r.sent_elements},
              {"bytes_per_worker", r.bucket.bytes_per_worker},
              {"collective", collective_name(r.bucket.collective)},
              {"communicator", r.bucket.communicator},
              {"compression_s", r.compression_s},
              {"duration_s", r.duration_s},
              {"sync_wait_s", r.sync_wait_s}};
    if (r.bucket.first_element != 0) b["first_element"] = r.bucket.first_element;  // a partition's offset
    if (r.bucket.collective == Collective::kAllgather) {
      b["alignment"] = policy::alignment_name(r.bucket.alignment);
      b["decompression_s"] = r.decompression_s;
      b["lost_contributions"] = r.lost_contributions;
    }
    buckets_json.push_back(b);
  }
  Json out = {
      {"format", "sparsefuse-result/1"},
      {"iteration_time_s",
       {{"mean", mean_iteration_s()},
        {"p50", percentile(seconds, 50)},
        {"p99", percentile(seconds, 99)},
        {"min", seconds.front()},
        {"max", seconds.back()}}},
      {"throughput_samples_per_s", throughput()},
      {"breakdown_s",
       {{"forward", breakdown.forward},
        {"backward", breakdown.backward},
        {"compression", breakdown.compression},
        {"communication_exposed", breakdown.communication_exposed},
        {"sync_wait", breakdown.sync_wait},
        {"optimizer", breakdown.optimizer}}},
      {"buckets", buckets_json},
      {"bytes_sent_per_worker", bytes_sent_per_worker},
      {"lost_contributions", lost_contributions},
      {"tensor_missing_rate", plan.value("tensor_missing_rate", 0.0)},
      {"plan", plan},
      {"network", network},
      {"trace_provenance", provenance},
      {"compression_costs", compression_costs},
      {"scenario", scenario},
  };
  if (timing) {
    out["simulator"] = {{"queue_events", queue_events},
                        {"worker_steps", worker_steps},
                        {"interference_passes", interference_passes},
                        {"interference_partial_passes", interference_partial_passes},
                        {"interference_unsettled_iterations", interference_unsettled},
                        {"wall_s", wall_s},
                        {"worker_iterations_per_s", wall_s > 0 ? double(worker_iterations) / wall_s : 0.0}};
  }
  return out;
}

}  // namespace sparsefuse::model
