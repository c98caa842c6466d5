#include "policy/seed/ssfusion_select.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace sparsefuse::policy::seed {
namespace {

void check_rho(double rho) {
  if (!(rho > 0.0 && rho <= 1.0)) throw std::invalid_argument("ssfusion: rho must be in (0, 1]");
}

// Validates a partition against the sizes it cuts.
void check_partition(const std::vector<int64_t>& sizes, const std::vector<int>& counts) {
  int64_t covered = 0;
  for (int c : counts) {
    if (c < 1) throw std::invalid_argument("ssfusion: buffer with fewer than one tensor");
    covered += c;
  }
  if (covered != static_cast<int64_t>(sizes.size())) {
    throw std::invalid_argument("ssfusion: counts do not cover the tensors exactly");
  }
  for (int64_t s : sizes) {
    if (s < 0) throw std::invalid_argument("ssfusion: negative tensor size");
  }
}

// Python int(s * rho) for the per-tensor top-k count, at least 1.
int64_t topk_count(int64_t s, double rho) {
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(s) * rho));
}

}  // namespace

int ssfusion_tensors_per_buffer(int num_tensors) { return std::max(1, num_tensors / 20); }

std::vector<int> fixed_count_partition(int num_tensors, int per_buffer) {
  if (num_tensors < 0 || per_buffer < 1) {
    throw std::invalid_argument("fixed_count_partition: need num_tensors >= 0, per_buffer >= 1");
  }
  std::vector<int> counts(static_cast<std::size_t>(num_tensors / per_buffer), per_buffer);
  if (num_tensors % per_buffer != 0) counts.push_back(num_tensors % per_buffer);
  return counts;
}

std::vector<int> ssfusion_partition(int num_tensors) {
  return fixed_count_partition(num_tensors, ssfusion_tensors_per_buffer(num_tensors));
}

int64_t ssfusion_valid_threshold(std::vector<int64_t> buffer_sizes, double rho) {
  check_rho(rho);
  if (buffer_sizes.empty()) throw std::invalid_argument("ssfusion_valid_threshold: empty buffer");
  std::sort(buffer_sizes.begin(), buffer_sizes.end());
  const int64_t total = std::accumulate(buffer_sizes.begin(), buffer_sizes.end(), int64_t{0});
  double budget = std::max(1.0, rho * static_cast<double>(total));
  for (int64_t s : buffer_sizes) {
    if (static_cast<double>(s) >= budget) return s - 1;
    budget -= static_cast<double>(s);
  }
  return buffer_sizes.back();
}

SelectiveCostModel seed_selective_cost_model(std::string_view model_key,
                                             int64_t model_total_elements,
                                             SeedSparsifier sparsifier) {
  const double t_bwd_s = seed_backward_time_s(model_key);
  return SelectiveCostModel{
      [=](int64_t n) { return seed_tb_s(n, model_total_elements, t_bwd_s); },
      [=](int64_t n) { return seed_tz_s(n, sparsifier); },
      [](int64_t n, double rho) { return seed_tc_s(n, rho); },
  };
}

double ssfusion_threshold_time_s(const std::vector<int64_t>& buffer_sizes, int64_t threshold,
                                 double rho, const SelectiveCostModel& cost, bool quirks) {
  int64_t total = 0;
  int64_t n_comm = 0;
  double compress_s = 0;
  for (int64_t s : buffer_sizes) {
    total += s;
    if (s > threshold) {
      compress_s += cost.compress_s(s);
      n_comm += topk_count(s, rho);
    } else {
      n_comm += s;
    }
  }
  const double calc_s = cost.backward_s(total) + compress_s;
  return calc_s + cost.comm_s(n_comm, quirks ? rho : 1.0);
}

SelectiveResult ssfusion_select(const std::vector<int64_t>& sizes, const std::vector<int>& counts,
                                double rho, const SelectiveCostModel& cost, bool quirks) {
  check_rho(rho);
  check_partition(sizes, counts);

  // Step 2's candidates: 0 and every tensor size of the model, ascending.
  std::vector<int64_t> candidates(sizes);
  candidates.push_back(0);
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  SelectiveResult result;
  result.ratio.assign(sizes.size(), rho);
  result.dense.assign(sizes.size(), false);
  int first = 0;
  for (int count : counts) {
    const std::vector<int64_t> buf(sizes.begin() + first, sizes.begin() + first + count);
    SelectiveBuffer b;
    b.first_tensor = first;
    b.num_tensors = count;
    b.total_elements = std::accumulate(buf.begin(), buf.end(), int64_t{0});
    b.valid_threshold = ssfusion_valid_threshold(buf, rho);

    // Argmin over candidates <= V_b; ties keep the smallest threshold (the
    // first minimum, as Python's min()/argmin). 0 is always a candidate.
    bool have = false;
    for (int64_t t : candidates) {
      if (t > b.valid_threshold) break;
      const double time_s = ssfusion_threshold_time_s(buf, t, rho, cost, quirks);
      if (!have || time_s < b.chosen_time_s) {
        have = true;
        b.chosen_threshold = t;
        b.chosen_time_s = time_s;
      }
    }

    for (int k = 0; k < count; ++k) {
      if (buf[k] <= b.chosen_threshold) {
        result.dense[first + k] = true;
        b.dense_elements += buf[k];
      }
    }
    // Step 3, density-aware ratio: ρ' = max(ρ, (ρ·ΣS_b - F_b) / (ΣS_b - F_b)).
    // The second term never exceeds ρ (F_b >= 0), so ρ' = ρ: the seed does not
    // compensate for the dense tensors (§11.1 item 8); kept as written.
    b.sparse_ratio = rho;
    const int64_t sparse_elements = b.total_elements - b.dense_elements;
    if (sparse_elements > 0) {
      const double compensated =
          (rho * static_cast<double>(b.total_elements) - static_cast<double>(b.dense_elements)) /
          static_cast<double>(sparse_elements);
      b.sparse_ratio = std::max(rho, compensated);
    }
    for (int k = 0; k < count; ++k) {
      result.ratio[first + k] = result.dense[first + k] ? 1.0 : b.sparse_ratio;
    }
    result.buffers.push_back(b);
    first += count;
  }
  return result;
}

SelectiveResult ssfusion_select(const std::vector<int64_t>& sizes, const std::vector<int>& counts,
                                double rho, std::string_view model_key, bool quirks) {
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  return ssfusion_select(sizes, counts, rho, seed_selective_cost_model(model_key, total), quirks);
}

std::vector<bool> ssfusion_offload(const std::vector<int64_t>& sizes,
                                   const std::vector<int>& counts, const std::vector<bool>& dense,
                                   const std::function<double(int)>& backward_s,
                                   const std::function<double(int64_t)>& gpu_compress_s,
                                   const std::function<double(int64_t)>& cpu_compress_s) {
  check_partition(sizes, counts);
  if (dense.size() != sizes.size()) throw std::invalid_argument("ssfusion_offload: dense flags");
  std::vector<bool> on_cpu(sizes.size(), false);
  int first = 0;
  for (int count : counts) {
    double now_s = 0;
    double cpu_free_at_s = 0;
    int last_offloaded = -1;
    for (int t = first; t < first + count; ++t) {
      now_s += backward_s(t);
      if (dense[t]) continue;
      if (cpu_free_at_s > now_s) {
        now_s += gpu_compress_s(sizes[t]);
      } else {
        on_cpu[t] = true;
        cpu_free_at_s = now_s + cpu_compress_s(sizes[t]);
        last_offloaded = t;
      }
    }
    if (cpu_free_at_s > now_s && last_offloaded >= 0) on_cpu[last_offloaded] = false;
    first += count;
  }
  return on_cpu;
}

}  // namespace sparsefuse::policy::seed
