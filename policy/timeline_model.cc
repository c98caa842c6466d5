#include "policy/timeline_model.h"

#include <algorithm>
#include <cmath>

#include "common/input_error.h"

namespace sparsefuse::policy {

LinkEstimate infer_link(const CostEstimator& cost) {
  const int p = cost.workers();
  if (p <= 1) return {};
  constexpr int64_t kProbe = int64_t(1) << 26;
  double zero = double(cost.collective_ns(Collective::kAllgather, 0));
  double big = double(cost.collective_ns(Collective::kAllgather, kProbe));
  return {zero / (p - 1), std::max(0.0, big - zero) / (double(p - 1) * double(kProbe))};
}

double decompression_estimate_ns(int64_t elements, int64_t pairs, double gbytes_per_s) {
  return (4.0 * double(elements) + 8.0 * double(pairs)) / gbytes_per_s;
}

TimelineModel::TimelineModel(const GradientModel& model, const CostEstimator& cost, Sparsifier sparsifier,
                             double density, double memory_gbytes_per_s, int cpu_threads, bool error_feedback)
    : model_(model), cost_(cost), sparsifier_(sparsifier), density_(density),
      memory_gbytes_per_s_(memory_gbytes_per_s), cpu_threads_(std::max(1, cpu_threads)),
      error_feedback_(error_feedback) {
  try {
    cost_.cpu_compression_ns(sparsifier_, 1 << 20, density_);
  } catch (const InputError&) {
    cpu_available_ = false;  // no CPU curves: offloading is not an option
  }
}

BufferTiming TimelineModel::timing(int first, int end, Route route, Placement placement) const {
  BufferTiming b;
  int64_t n = 0;
  for (int t = first; t < end; ++t) n += model_.elements[t];
  b.ready = model_.ready_ns[end - 1];
  if (route == Route::kDense) {
    b.comm_ns = cost_.collective_ns(Collective::kAllreduce, n * model_.bytes_per_element);
    return b;
  }
  const int64_t k = exact_count(n, density_);
  TimeNs ef = error_feedback_ ? TimeNs(std::llround(12.0 * double(n) / memory_gbytes_per_s_)) : 0;
  if (placement == Placement::kCpuOffload) {
    b.cpu_ns = cost_.cpu_compression_ns(sparsifier_, n, density_);  // the executor's CPU path has no fused EF
  } else {
    b.gpu_ns = cost_.compression_ns(sparsifier_, n, density_) + ef;
  }
  b.comm_ns = cost_.collective_ns(Collective::kAllgather, 8 * k);
  b.decompress_ns = TimeNs(std::llround(decompression_estimate_ns(n, int64_t(cost_.workers()) * k, memory_gbytes_per_s_)));
  return b;
}

TimeNs TimelineModel::iteration_ns(const std::vector<BufferTiming>& buffers) const {
  TimeNs delay = 0, comm_free = 0, decompress_free = 0;
  std::vector<TimeNs> cpu_free(size_t(cpu_threads_), 0);
  for (const auto& b : buffers) {
    TimeNs post = b.ready + delay;
    if (b.cpu_ns == 0) {
      post += b.gpu_ns;
      delay += b.gpu_ns;
    } else if (b.cpu_ns > 0) {
      auto thread = std::min_element(cpu_free.begin(), cpu_free.end());
      *thread = std::max(post, *thread) + b.cpu_ns;
      post = *thread;
    }
    comm_free = std::max(comm_free, post) + b.comm_ns;
    if (b.decompress_ns > 0) decompress_free = std::max(decompress_free, comm_free) + b.decompress_ns;
  }
  return std::max({model_.backward_ns + delay, comm_free, decompress_free});
}

TimeNs TimelineModel::iteration_ns(const std::vector<PlannedBuffer>& buffers) const {
  std::vector<BufferTiming> timings;
  timings.reserve(buffers.size());
  for (const auto& b : buffers) {
    timings.push_back(timing(b.first, b.end, b.route, b.placement));
  }
  return iteration_ns(timings);
}

}  // namespace sparsefuse::policy
