#include "sim/variability.h"

#include <algorithm>

#include <fmt/format.h>

namespace sparsefuse::sim {

namespace {
constexpr uint64_t kNoiseStream = 1;
constexpr uint64_t kStragglerStream = 2;
}  // namespace

ComputeVariability::ComputeVariability(const model::VariabilityConfig& config, int workers, uint64_t seed)
    : config_(config), persistent_(workers, 1.0) {
  stragglers_ = config.straggler_ranks;
  if (config.straggler_count > 0) {
    // A seeded partial Fisher-Yates shuffle picks the straggling ranks.
    std::vector<int> ranks(workers);
    for (int r = 0; r < workers; ++r) ranks[r] = r;
    Rng rng(stream_seed(seed, kStragglerStream));
    for (int i = 0; i < config.straggler_count; ++i) {
      std::swap(ranks[i], ranks[i + rng.below(uint64_t(workers - i))]);
    }
    stragglers_.assign(ranks.begin(), ranks.begin() + config.straggler_count);
  }
  std::sort(stragglers_.begin(), stragglers_.end());
  stragglers_.erase(std::unique(stragglers_.begin(), stragglers_.end()), stragglers_.end());
  for (int r : stragglers_) persistent_[r] *= config.straggler_slowdown;
  if (!config.node_speed_factors.empty()) {
    for (int w = 0; w < workers; ++w) {
      size_t node = size_t(w / config.workers_per_node);
      persistent_[w] /= config.node_speed_factors[node % config.node_speed_factors.size()];
    }
  }
  noise_.reserve(workers);
  for (int w = 0; w < workers; ++w) noise_.emplace_back(stream_seed(seed, (uint64_t(w) << 8) | kNoiseStream));
}

double ComputeVariability::next_scale(int worker) {
  double noise = config_.compute_cv > 0 ? noise_[worker].lognormal_mean_one(config_.compute_cv) : 1.0;
  return persistent_[worker] * noise;
}

}  // namespace sparsefuse::sim
