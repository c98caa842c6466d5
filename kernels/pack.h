// Pack (sender side) and unpack (receiver side) of sparse (value, int32 index)
// streams for fusion buffers, on the CPU. Same semantics as the CUDA versions.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common.h"

namespace sparsefuse::kernels {

// A fusion buffer of T tensors: tensor t occupies elements
// [offsets[t], offsets[t+1]) of the buffer (offsets has T+1 entries,
// non-decreasing, offsets[0] >= 0, offsets[T] <= 2^31 - 1).
//
// pack: one call for the whole buffer. local_indices is the concatenation of
// the T per-tensor selections (counts[t] entries each, indices local to the
// tensor). Output entry j of tensor t's slice is
//   out_indices = offsets[t] + local,  out_values = buffer[offsets[t] + local],
// written contiguously in tensor order (ascending per tensor if the inputs
// are, hence ascending overall). Returns sum(counts). Throws std::out_of_range
// for a local index outside [0, size of its tensor), std::invalid_argument for
// a malformed layout.
int64_t pack(const float* buffer, const std::vector<int64_t>& offsets, const int32_t* local_indices,
             const std::vector<int64_t>& counts, float* out_values, int32_t* out_indices);
Selection pack(const float* buffer, const std::vector<int64_t>& offsets,
               const int32_t* local_indices, const std::vector<int64_t>& counts);

// pack_dense: every element of buffer[0..n) as a pair, in order:
// out_values[j] = buffer[j], out_indices[j] = j. What pack gives when every
// tensor's count is its size and its local indices are 0, 1, ..., without
// an index list to build or read. Throws std::invalid_argument for n outside
// [0, 2^31 - 1].
void pack_dense(const float* buffer, int64_t n, float* out_values, int32_t* out_indices);

// Validation shared by the CPU and CUDA pack/unpack. check_pack_layout throws
// std::invalid_argument for a malformed layout (sizes, bounds, decreasing
// offsets, negative counts) and returns sum(counts); total_count throws for a
// negative count and returns the sum.
int64_t check_pack_layout(const std::vector<int64_t>& offsets, const std::vector<int64_t>& counts);
int64_t total_count(const char* kernel, const std::vector<int64_t>& counts);

// unpack (the correct receiver): the allgathered stream is P workers' slices
// concatenated, worker r contributing counts[r] entries. Zero-fills dense[0..n),
// then for r = 0..P-1 in order, for its entries in stream order:
// dense[idx] += value; finally dense[i] /= P (fp32 division). Every
// contribution is kept. Throws std::out_of_range for an index outside [0, n).
void unpack(const float* values, const int32_t* indices, const std::vector<int64_t>& counts,
            int64_t n, float* dense);

// unpack_equal_slices: the seed code's receiver (docs/seed-systems.md#alignment-and-the-equal-slices-receiver). The stream of
// `len` entries is split into P equal slices of m = len / P entries (the
// len - P*m tail is dropped); slice r is applied with PyTorch advanced-indexing
// semantics `buf[idx] += val`: within one slice, of several entries with the
// same index only the last one lands (dense[idx] = dense_before_slice[idx] +
// last value). Then dense /= P. Returns the number of contributions lost
// (dropped tail + overwritten duplicates). Zero-fills dense first.
int64_t unpack_equal_slices(const float* values, const int32_t* indices, int64_t len, int P,
                            int64_t n, float* dense);

// The receivers' averaging step: out[i] = sum[i] / P, bit for bit the fp32
// division (a multiplication by the exact reciprocal when P is a power of
// two); OUT may be SUM. One vectorised pass: on a CPU it is most of what a
// dense allreduce adds to MPI's own work.
void average(const float* sum, int64_t n, int P, float* out);

}  // namespace sparsefuse::kernels
