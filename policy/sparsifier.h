// The sparsifiers a scheme can use, and how many elements each selects.
// Exact methods select a fixed count; threshold methods select a count that
// varies per worker and iteration inside the band their reference code
// enforces (schemes.md §1.4, baselines.md §4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsefuse::policy {

enum class Sparsifier { kTopk, kDgc, kGaussiank, kRedsync, kSidco, kRandomk, kAdtopk, kAdtopkI };

const std::vector<std::string>& sparsifier_names();
std::string sparsifier_name(Sparsifier s);
Sparsifier parse_sparsifier(const std::string& name);  // name from sparsifier_names()

// Selected count = round(k * f) with f uniform in [low, high]; exact methods
// have low = high = 1.
struct CountBand {
  double low = 1.0;
  double high = 1.0;
  bool exact() const { return low == 1.0 && high == 1.0; }
};

// DGC: the +-30% band its refinement loop accepts (Family F); Gaussiank:
// [2k/3, 4k/3] (Family A); RedSync: its stop rule k < nnz < 2k; SIDCo: the
// [0.8, 1.2] ratio band its stage adaptation steers into.
CountBand count_band(Sparsifier s);

// k = max(1, floor(n * density)).
int64_t exact_count(int64_t elements, double density);

// ADTopk's per-row selection: for a tensor viewed as rows of ROW_LENGTH
// (dimension 1) elements, k1 = max(1, floor(row_length * density)) per row.
// 1-D tensors (row_length == 0) are not compressed: all elements.
int64_t adtopk_count(int64_t elements, int64_t row_length, double density);

}  // namespace sparsefuse::policy
