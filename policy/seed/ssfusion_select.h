// SSFusion's static decisions (docs/seed-systems.md#ssfusion-fixed-count-buffers-selective-sparsification-offload): the fixed-count buffer
// partition, selective sparsification (which tensors of each buffer are sent
// dense, and at what ratio the rest are sparsified) and SSFusion-O's greedy
// choice of tensors whose compression is offloaded to the CPU. All run once at
// start-up in the seed code.
//
// Sizes are element counts in backward order; a partition is a list of tensor
// counts per buffer covering the sizes exactly (no counts[0] off-by-one here:
// SSFusion's grouping has none). Names containing "pooler" are skipped by the
// seed before grouping; callers pass sizes without them.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "policy/seed/seed_cost.h"

namespace sparsefuse::policy::seed {

// ⌊L/20⌋ tensors per buffer (§5.2), at least 1 (the seed would pass 0 for
// L < 20; we refuse to build empty buffers).
int ssfusion_tensors_per_buffer(int num_tensors);

// Consecutive buffers of PER_BUFFER tensors; the last holds the remainder.
// Throws std::invalid_argument if num_tensors < 0 or per_buffer < 1.
std::vector<int> fixed_count_partition(int num_tensors, int per_buffer);

// SSFusion's default: fixed_count_partition(L, ssfusion_tensors_per_buffer(L)).
std::vector<int> ssfusion_partition(int num_tensors);

// Step 1, the valid threshold V_b ("density budget"): walk the buffer's sizes
// ascending with budget E = max(1, rho·ΣS_b); the first size s >= the budget
// left gives V_b = s - 1, otherwise s is subtracted. Tensors of size <= V_b
// then total less than rho·ΣS_b. If no size stops the walk (only possible when
// ΣS_b < 1) every tensor fits: V_b = the largest size.
int64_t ssfusion_valid_threshold(std::vector<int64_t> buffer_sizes, double rho);

// Cost functions of the selection (seconds). The seed uses Tb, Tz (top-k) and
// Tc of seed_cost.h; tests inject simpler ones.
struct SelectiveCostModel {
  std::function<double(int64_t)> backward_s;      // Tb(n elements)
  std::function<double(int64_t)> compress_s;      // Tz(n elements), per tensor
  std::function<double(int64_t, double)> comm_s;  // Tc(n elements, density)
};

SelectiveCostModel seed_selective_cost_model(std::string_view model_key,
                                             int64_t model_total_elements,
                                             SeedSparsifier sparsifier = SeedSparsifier::kTopk);

// Step 2's cost of threshold T for one buffer: tensors with size <= T go dense,
// the rest are top-k'd to max(1, ⌊s·rho⌋) elements.
//   time(T) = Tb(ΣS_b) + Σ_{s>T} Tz(s) + Tc(n_comm, ρ_c)
//   n_comm  = Σ_{s>T} max(1, ⌊s·rho⌋) + Σ_{s<=T} s
// quirks: ρ_c = rho, the seed's double application of the density (dense
// elements costed at rho of their size, sparse ones at rho²).
// corrected: ρ_c = 1, every element counted once, as actually sent.
double ssfusion_threshold_time_s(const std::vector<int64_t>& buffer_sizes, int64_t threshold,
                                 double rho, const SelectiveCostModel& cost, bool quirks = true);

struct SelectiveBuffer {
  int first_tensor = 0;
  int num_tensors = 0;
  int64_t total_elements = 0;    // ΣS_b
  int64_t valid_threshold = 0;   // V_b
  int64_t chosen_threshold = 0;  // T_b: tensors of size <= T_b are dense
  int64_t dense_elements = 0;    // F_b
  double chosen_time_s = 0;      // time(T_b)
  double sparse_ratio = 0;       // ρ' applied to the buffer's sparse tensors
};

struct SelectiveResult {
  std::vector<double> ratio;  // per tensor: 1.0 if dense, else the buffer's ρ'
  std::vector<bool> dense;    // per tensor
  std::vector<SelectiveBuffer> buffers;
};

// Steps 1-3 for every buffer of COUNTS over SIZES (the whole model's sizes in
// backward order; their values are also step 2's candidate thresholds).
// Throws std::invalid_argument if counts do not cover sizes exactly, a count
// is < 1, a size is negative, or rho is outside (0, 1].
SelectiveResult ssfusion_select(const std::vector<int64_t>& sizes, const std::vector<int>& counts,
                                double rho, const SelectiveCostModel& cost, bool quirks = true);

// Same with the seed cost model of MODEL_KEY (T_bwd; total = Σ sizes).
SelectiveResult ssfusion_select(const std::vector<int64_t>& sizes, const std::vector<int>& counts,
                                double rho, std::string_view model_key, bool quirks = true);

// Step 4, SSFusion-O's offload walk. For each buffer, with a fresh clock
// (now = 0, cpu_free_at = 0), visit its tensors in backward order:
//   now += backward_s(tensor index); dense tensors are skipped (never compressed);
//   if the CPU is busy (cpu_free_at > now) compress on the GPU: now += gpu_s(s);
//   else offload: on_cpu = true, cpu_free_at = now + cpu_s(s).
// After the walk, if the CPU would still be busy (cpu_free_at > now), the last
// offloaded tensor of the buffer is unmarked, so the CPU does not delay the
// flush. Only that one tensor is unmarked and the clock is not re-run, as in
// the seed. The seed has no CPU time model (Tz_cpu is undefined, a DECISION
// REQUIRED point): callers supply cpu_s. The seed enables offload only for
// "layerwise" compressors; that gate is the caller's.
// Returns on_cpu per tensor. Throws std::invalid_argument as ssfusion_select,
// or if dense.size() != sizes.size().
std::vector<bool> ssfusion_offload(const std::vector<int64_t>& sizes,
                                   const std::vector<int>& counts, const std::vector<bool>& dense,
                                   const std::function<double(int)>& backward_s,
                                   const std::function<double(int64_t)>& gpu_compress_s,
                                   const std::function<double(int64_t)>& cpu_compress_s);

}  // namespace sparsefuse::policy::seed
