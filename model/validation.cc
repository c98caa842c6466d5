#include "model/validation.h"

#include <cmath>

#include <fmt/format.h>

namespace sparsefuse::model {

namespace {

constexpr double kMs = 1e3;
constexpr double kMiB = 1.0 / (1024.0 * 1024.0);

std::optional<double> relative(double measured, double simulated) {
  if (measured == 0) return std::nullopt;
  return (simulated - measured) / measured;
}

double number(const JsonNode& node, std::string_view key) { return node.child(key).as_number(0, 1e300); }

double breakdown(const JsonNode& result, std::string_view key) { return number(result.child("breakdown_s"), key); }

// Bucket fields both executors write, for the sequence check.
std::string bucket_identity(const JsonNode& b) {
  std::string identity =
      fmt::format("first tensor {}, {} tensors, {} of {} elements", b.child("first_tensor").as_int(0, INT32_MAX),
                  b.child("tensors").as_int(0, INT32_MAX), b.child("collective").as_string(),
                  b.child("elements").as_int(0, INT64_MAX));
  if (b.has("first_element")) identity += fmt::format(" from element {}", b.child("first_element").as_int(0, INT64_MAX));
  return identity;
}

// Mean and largest |relative error| over buckets, those measured at 0 left out.
struct ErrorTally {
  double sum_abs = 0, worst = -1;
  int counted = 0, worst_index = -1;

  void add(std::optional<double> error, int index) {
    if (!error) return;
    sum_abs += std::fabs(*error);
    ++counted;
    if (std::fabs(*error) > worst) worst = std::fabs(*error), worst_index = index;
  }
  std::optional<double> mean() const { return counted ? std::optional(sum_abs / counted) : std::nullopt; }
};

constexpr int64_t kLargeBucket = 100'000;  // elements (Validation::compression_by_kind)

// Which of Validation::compression_by_kind B counts in.
size_t compression_kind(const BucketComparison& b) {
  if (b.collective == "allgather" && b.dense_elements == b.elements) return 2;
  return b.elements >= kLargeBucket ? 0 : 1;
}

}  // namespace

Validation compare_results(const JsonNode& measured, const JsonNode& simulated) {
  for (const JsonNode* doc : {&measured, &simulated}) {
    if (doc->child("format").as_string() != "sparsefuse-result/1") {
      doc->child("format").fail("expected \"sparsefuse-result/1\"");
    }
  }
  Validation v;
  auto add = [&](std::string name, double m, double s) {
    v.metrics.push_back({std::move(name), m, s, relative(m, s)});
  };
  for (const char* key : {"mean", "p50", "p99"}) {
    add(fmt::format("iteration time, {} (ms)", key), number(measured.child("iteration_time_s"), key) * kMs,
        number(simulated.child("iteration_time_s"), key) * kMs);
  }
  for (const char* key : {"forward", "backward", "compression"}) {
    add(fmt::format("{} (ms)", key), breakdown(measured, key) * kMs, breakdown(simulated, key) * kMs);
  }
  auto exposed = [](const JsonNode& r) { return breakdown(r, "communication_exposed") + breakdown(r, "sync_wait"); };
  add("exposed communication + sync wait (ms)", exposed(measured) * kMs, exposed(simulated) * kMs);
  add("optimizer (ms)", breakdown(measured, "optimizer") * kMs, breakdown(simulated, "optimizer") * kMs);
  add("bytes sent per worker (MiB)", number(measured, "bytes_sent_per_worker") * kMiB,
      number(simulated, "bytes_sent_per_worker") * kMiB);
  add("lost contributions", number(measured, "lost_contributions"), number(simulated, "lost_contributions"));

  const JsonNode mb = measured.child("buckets"), sb = simulated.child("buckets");
  const size_t n = mb.array_size(), sn = sb.array_size();
  if (n != sn) {
    v.bucket_difference = fmt::format("{} buckets measured, {} simulated", n, sn);
    return v;
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string mi = bucket_identity(mb.element(i)), si = bucket_identity(sb.element(i));
    if (mi != si) {
      v.bucket_difference = fmt::format("bucket #{}: measured {}; simulated {}", i, mi, si);
      return v;
    }
  }
  v.same_buckets = true;
  ErrorTally durations, compressions;
  std::vector<ErrorTally> by_kind(3);
  double measured_sum = 0, simulated_sum = 0, measured_compression = 0, simulated_compression = 0;
  double compression_off = 0, compression_weight = 0;  // time-weighted: buckets that measured some
  for (size_t i = 0; i < n; ++i) {
    const JsonNode m = mb.element(i), s = sb.element(i);
    BucketComparison b;
    b.index = int(i);
    b.first_tensor = int(m.child("first_tensor").as_int(0, INT32_MAX));
    b.tensors = int(m.child("tensors").as_int(0, INT32_MAX));
    b.collective = m.child("collective").as_string();
    b.elements = m.child("elements").as_int(0, INT64_MAX);
    b.dense_elements = m.has("dense_elements") ? m.child("dense_elements").as_int(0, INT64_MAX) : 0;
    b.measured_duration_s = number(m, "duration_s");
    b.simulated_duration_s = number(s, "duration_s");
    b.measured_compression_s = number(m, "compression_s");
    b.simulated_compression_s = number(s, "compression_s");
    durations.add(relative(b.measured_duration_s, b.simulated_duration_s), int(i));
    compressions.add(relative(b.measured_compression_s, b.simulated_compression_s), int(i));
    by_kind[compression_kind(b)].add(relative(b.measured_compression_s, b.simulated_compression_s), int(i));
    measured_sum += b.measured_duration_s;
    simulated_sum += b.simulated_duration_s;
    measured_compression += b.measured_compression_s;
    simulated_compression += b.simulated_compression_s;
    if (b.measured_compression_s > 0) {
      compression_off += std::abs(b.simulated_compression_s - b.measured_compression_s);
      compression_weight += b.measured_compression_s;
    }
    v.buckets.push_back(b);
  }
  if (compression_weight > 0) v.time_weighted_compression_error = compression_off / compression_weight;
  add("bucket collectives, sum of durations (ms)", measured_sum * kMs, simulated_sum * kMs);
  add("bucket compression, sum (ms)", measured_compression * kMs, simulated_compression * kMs);
  v.mean_abs_bucket_error = durations.mean();
  v.worst_bucket = durations.worst_index;
  v.mean_abs_compression_error = compressions.mean();
  v.worst_compression_bucket = compressions.worst_index;
  const char* kinds[] = {">= 1e5 elements", "< 1e5 elements", "sent dense as pairs"};
  for (size_t k = 0; k < by_kind.size(); ++k) {
    v.compression_by_kind.push_back({kinds[k], by_kind[k].mean(), by_kind[k].counted});
  }
  return v;
}

Json Validation::to_json() const {
  auto error_json = [](const std::optional<double>& e) { return e ? Json(*e) : Json(nullptr); };
  Json metrics_json = Json::array();
  for (const auto& m : metrics) {
    metrics_json.push_back({{"name", m.name}, {"measured", m.measured}, {"simulated", m.simulated},
                            {"relative_error", error_json(m.relative_error)}});
  }
  Json by_kind = Json::array();
  for (const auto& k : compression_by_kind) {
    by_kind.push_back({{"kind", k.kind}, {"mean_abs_error", error_json(k.mean_abs_error)}, {"buckets", k.buckets}});
  }
  Json buckets_json = Json::array();
  for (const auto& b : buckets) {
    buckets_json.push_back({{"index", b.index}, {"first_tensor", b.first_tensor}, {"tensors", b.tensors},
                            {"collective", b.collective}, {"elements", b.elements},
                            {"dense_elements", b.dense_elements}, {"measured_duration_s", b.measured_duration_s},
                            {"simulated_duration_s", b.simulated_duration_s},
                            {"measured_compression_s", b.measured_compression_s},
                            {"simulated_compression_s", b.simulated_compression_s}});
  }
  return {{"format", "sparsefuse-validation/1"},
          {"metrics", metrics_json},
          {"same_buckets", same_buckets},
          {"bucket_difference", bucket_difference},
          {"mean_abs_bucket_duration_error", error_json(mean_abs_bucket_error)},
          {"worst_bucket", worst_bucket},
          {"mean_abs_bucket_compression_error", error_json(mean_abs_compression_error)},
          {"worst_compression_bucket", worst_compression_bucket},
          {"time_weighted_bucket_compression_error", error_json(time_weighted_compression_error)},
          {"compression_error_by_kind", by_kind},
          {"buckets", buckets_json}};
}

}  // namespace sparsefuse::model
