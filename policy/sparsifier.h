// The sparsifiers a scheme can use, and how many elements each selects.
// Exact methods select a fixed count; threshold methods select a count that
// varies per worker and iteration. This file is the one model of those counts
// the simulator uses; the runtime runs the kernels themselves (kernels/), and
// kernels/count_band_test.cc measures the kernels against this model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsefuse::policy {

enum class Sparsifier { kTopk, kDgc, kGaussiank, kRedsync, kSidco, kRandomk, kAdtopk, kAdtopkI };

const std::vector<std::string>& sparsifier_names();
std::string sparsifier_name(Sparsifier s);
Sparsifier parse_sparsifier(const std::string& name);  // name from sparsifier_names()

// Selected count for a target of k: with probability at_high exactly
// round(k * high), otherwise round(k * f) with f uniform in [low, high).
// Exact methods have low = high = 1.
struct CountBand {
  double low = 1.0;
  double high = 1.0;
  double at_high = 0.0;
  bool exact() const { return low == 1.0 && high == 1.0; }
  double mean() const { return at_high * high + (1.0 - at_high) * 0.5 * (low + high); }
};

// DGC: [0.8 k, k] with about 70 % of the calls at exactly k, as the DGC
// kernel (kernels/estimators.h) behaves: it lowers its threshold while fewer
// than 0.8 k pass, and never returns more than k (it truncates to k, or takes
// an exact top-k when more than 1.3 k pass). Measured in
// kernels/count_band_test.cc. Gaussiank: [2k/3, 4k/3]; RedSync: (k, 2k);
// SIDCo: [0.8 k, 1.2 k] (the bands their reference loops aim for; the
// kernels leave these bands on many inputs: docs/sparsifier-counts.md).
CountBand count_band(Sparsifier s);

// DGC, Gaussiank, RedSync, SIDCo: the methods whose count varies around k.
inline bool threshold_sparsifier(Sparsifier s) { return !count_band(s).exact(); }

// The count the band model gives a uniform draw U in [0, 1) for a target of
// K elements out of ELEMENTS: the first at_high of U's range gives
// round(k * high), the rest spreads over [low, high); clamped to
// [1, elements]. Exact bands return K.
int64_t banded_count(const CountBand& band, int64_t k, int64_t elements, double u);

// k = max(1, floor(n * density)).
int64_t exact_count(int64_t elements, double density);

// ADTopk's per-row selection: for a tensor viewed as rows of ROW_LENGTH
// (dimension 1) elements, k1 = max(1, floor(row_length * density)) per row.
// 1-D tensors (row_length == 0) are not compressed: all elements.
int64_t adtopk_count(int64_t elements, int64_t row_length, double density);

}  // namespace sparsefuse::policy
