// FGBuff/RGMerge/SAFusion's start-up buffer partition,
// `optimal_gradient_merging_0101`, computed from tensor sizes and the seed
// cost model (seed_cost.h). Output: tensor counts per buffer, in backward
// order. docs/seed-partition.md describes the three steps, how the seed code
// behaves when executed literally, and what the corrected mode changes.
//
// quirks = true reproduces the seed code, including its defects:
//   * step 2's accumulator is never reset, while its bound is re-read from the
//     last output buffer every pass (and grows after a merge);
//   * step 3's "g <= last" test compares the new buffer with itself;
//   * counts[0] += 1 (the seed's grouping helper puts counts[0] - 1 tensors in
//     buffer 0, so the counts sum to L + 1; consumers must subtract 1 again).
// quirks = false is the corrected routine (see ogm_partition.cc for each fix);
// its counts sum to L and every buffer holds exactly counts[i] tensors.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "policy/seed/seed_cost.h"

namespace sparsefuse::policy::seed {

// One step-1 ("greedy") group and the seed's three costs of it, seconds.
struct OgmGroup {
  int count = 0;         // tensors
  int64_t elements = 0;
  double tc_s = 0;  // Tc(S, rho) + Tz(S): communication plus compression
  double z_s = 0;   // Tz(S)
  double b_s = 0;   // Tb(S)
};

// Step 2 ("fine-tuning") alone, on step-1 groups (at least one): the tensor
// count of every buffer it outputs. RHO and SPARSIFIER cost a merged run in
// the corrected mode only (the seed sums its groups' tc instead).
std::vector<int> ogm_fine_tune(const std::vector<OgmGroup>& groups, double rho,
                               SeedSparsifier sparsifier, bool quirks);

// Every intermediate the seed routine prints, so tests can hold it to the logs.
struct OgmTrace {
  std::vector<int> greedy_counts;     // step 1 ("min_group_len_array")
  std::vector<int> finetuned_counts;  // step 2 ("groups_new")
  std::vector<int> counts;            // step 3 result (with counts[0] += 1 if quirks)

  // Sums over ALL step-1 groups g_i (i >= 0), seconds. The seed code prints
  // these as sum(merging_time_compression_array), sum(group_compression_time_array)
  // and sum(group_backward_time_size_array):
  double sum_tc_s = 0;  // sum of tc_i = Tc(S_i, rho) + Tz(S_i)
  double sum_z_s = 0;   // sum of z_i  = Tz(S_i)
  double sum_b_s = 0;   // sum of b_i  = Tb(S_i)

  double overlap_budget_s = 0;      // step 3's B = sum_{i>=1} (z_i + b_i)
};

// SIZES_BACKWARD_ORDER: element counts in backward (reverse named_parameters)
// order; MODEL_KEY selects T_bwd and diff_min (unknown key: T_bwd = 0). RHO in
// (0, 1]. SPARSIFIER picks the Tz table (the seed uses top-k). Throws
// std::invalid_argument on empty sizes, a negative size or rho outside (0, 1].
OgmTrace ogm_partition_trace(const std::vector<int64_t>& sizes_backward_order, double rho,
                             std::string_view model_key, bool quirks = true,
                             SeedSparsifier sparsifier = SeedSparsifier::kTopk);

std::vector<int> ogm_partition(const std::vector<int64_t>& sizes_backward_order, double rho,
                               std::string_view model_key, bool quirks = true);

}  // namespace sparsefuse::policy::seed
