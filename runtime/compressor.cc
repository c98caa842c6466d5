#include "runtime/compressor.h"

#include <algorithm>
#include <stdexcept>

#include "common/rng.h"
#include "kernels/estimators.h"

namespace sparsefuse::runtime {

using policy::Sparsifier;

TopkSelect topk_override = nullptr;

kernels::Selection align_to_count(kernels::Selection selection, const float* data, int64_t n, int64_t k) {
  k = std::min(k, n);
  const int64_t s = selection.size();
  if (s == k) return selection;
  kernels::Selection out;
  if (s > k) {  // the K largest of the selected entries, still in index order
    kernels::Selection keep = kernels::topk_abs(selection.values.data(), s, k);
    out.resize(k);
    for (int64_t j = 0; j < k; ++j) {
      out.values[j] = keep.values[j];
      out.indices[j] = selection.indices[keep.indices[j]];
    }
    return out;
  }
  // Pad: the largest K - S entries among those not selected, merged in. They
  // are among the top K of the whole tensor (fewer than K - S unselected and
  // at most S selected entries rank above any of them, in top-k's order:
  // larger magnitude, then smaller index), so one top-k pass over DATA and a
  // pass over its K entries find them, with no copy of the tensor.
  const kernels::Selection top = kernels::topk_abs(data, n, k);
  kernels::Selection unselected;
  for (int64_t j = 0, i = 0; j < k; ++j) {
    while (i < s && selection.indices[i] < top.indices[j]) ++i;
    if (i < s && selection.indices[i] == top.indices[j]) continue;
    unselected.indices.push_back(top.indices[j]);
    unselected.values.push_back(top.values[j]);
  }
  kernels::Selection extra = kernels::topk_abs(unselected.values.data(), unselected.size(), k - s);
  for (auto& index : extra.indices) index = unselected.indices[index];
  out.resize(k);
  std::merge(selection.indices.begin(), selection.indices.end(), extra.indices.begin(), extra.indices.end(),
             out.indices.begin());
  for (int64_t j = 0; j < k; ++j) out.values[j] = data[out.indices[j]];
  return out;
}

void Compressor::select(const policy::CompressionRequest& r, const float* data, const SelectionKey& key,
                        kernels::Selection& out) {
  const int64_t n = r.elements;
  switch (r.sparsifier) {
    case Sparsifier::kTopk: {
      if (topk_override) {
        out = topk_override(data, n, r.expected_count);
        return;
      }
      out.resize(std::min(r.expected_count, n));
      kernels::topk_abs(data, n, r.expected_count, out.values.data(), out.indices.data(), &workspace_);
      return;
    }
    case Sparsifier::kRandomk: {
      out.resize(std::min(r.expected_count, n));
      kernels::RandomkKey shared{key.seed, uint64_t(r.first_tensor), uint64_t(key.iteration)};
      kernels::randomk(data, n, r.expected_count, shared, out.values.data(), out.indices.data(), &workspace_);
      return;
    }
    case Sparsifier::kAdtopk:
    case Sparsifier::kAdtopkI: {  // per-row selection, tensor by tensor, indices shifted into the range
      const int64_t base = layout_.offset[r.first_tensor];
      out.resize(0);
      for (int t = r.first_tensor; t < r.end_tensor; ++t) {
        const int64_t at = layout_.offset[t] - base;
        kernels::Selection part = kernels::adtopk(data + at, layout_.shape[t], r.density);
        for (auto index : part.indices) out.indices.push_back(int32_t(index + at));
        out.values.insert(out.values.end(), part.values.begin(), part.values.end());
      }
      return;
    }
    case Sparsifier::kDgc: out = kernels::dgc(data, n, r.density, dgc_stream(key, r.first_tensor)).selection; break;
    case Sparsifier::kGaussiank: out = kernels::gaussiank(data, n, r.density).selection; break;
    case Sparsifier::kRedsync: out = kernels::redsync(data, n, r.density).selection; break;
    case Sparsifier::kSidco: out = kernels::sidco(data, n, r.density).selection; break;
  }
  // Threshold methods: their count varies, unless the scheme aligns it to k.
  if (r.align_to_expected) out = align_to_count(std::move(out), data, n, r.expected_count);
}

uint64_t dgc_stream(const SelectionKey& key, int first_tensor) {
  return stream_seed(stream_seed(stream_seed(key.seed, uint64_t(key.rank)), uint64_t(key.iteration)),
                     uint64_t(first_tensor));
}

void Compressor::check_request(const policy::CompressionRequest& r) const {
  if (r.first_tensor < 0 || r.end_tensor > layout_.tensors() || r.first_tensor >= r.end_tensor ||
      layout_.elements(r.first_tensor, r.end_tensor) != r.elements) {
    throw std::logic_error("compression request for tensors [" + std::to_string(r.first_tensor) + ", " +
                           std::to_string(r.end_tensor) + ") does not match their " + std::to_string(r.elements) +
                           " elements");
  }
}

void Compressor::compress(const policy::CompressionRequest& r, const float* grad, float* residual,
                          const SelectionKey& key, kernels::Selection& out) {
  check_request(r);
  const int64_t base = layout_.offset[r.first_tensor];
  const float* g = grad + base;
  if (!r.error_feedback) return select(r, g, key, out);
  float* acc = residual + base;
  if (r.sparsifier == Sparsifier::kTopk && !topk_override) {  // the fused kernel: one pass over residual and gradient
    out.resize(std::min(r.expected_count, r.elements));
    kernels::ef_topk(acc, g, r.elements, r.expected_count, out.values.data(), out.indices.data(), &workspace_);
    return;
  }
  for (int64_t i = 0; i < r.elements; ++i) acc[i] = acc[i] + g[i];
  select(r, acc, key, out);
  for (auto index : out.indices) acc[index] = 0.0f;
}

}  // namespace sparsefuse::runtime
