#include "runtime/reference.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/pack.h"

namespace sparsefuse::runtime {


ReferenceAggregate::ReferenceAggregate(const policy::GradientModel& model, const ModelLayout& layout, uint64_t seed,
                                       int ranks)
    : model_(model), layout_(layout), seed_(seed), ranks_(ranks), compressor_(layout),
      residual_(size_t(ranks), std::vector<float>(size_t(layout.total()), 0.0f)) {}

std::string ReferenceAggregate::check(int iteration, const std::vector<policy::CompressionRequest>& requests,
                                      const std::vector<std::unique_ptr<BucketExchange>>& exchanges,
                                      const std::vector<float>& aggregate) {
  const size_t n = size_t(layout_.total());
  // sent[r]: rank r's contribution — its gradient, overwritten by the values
  // it sent where it compressed, 0 elsewhere in compressed ranges.
  std::vector<std::vector<float>> sent(static_cast<size_t>(ranks_), std::vector<float>(n));
  std::vector<std::vector<RangeSelection>> selections(static_cast<size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) {
    std::vector<float> gradient(n);
    synthetic_gradient(seed_, r, iteration, model_, layout_, gradient.data());
    sent[r] = gradient;
    for (const auto& request : requests) {
      RangeSelection made{request.first_tensor, request.end_tensor,
                          compressor_.compress(request, gradient.data(), residual_[r].data(), {seed_, r, iteration})};
      float* out = sent[r].data() + layout_.offset[request.first_tensor];
      std::fill(out, out + request.elements, 0.0f);
      for (size_t j = 0; j < made.selection.indices.size(); ++j) {
        out[made.selection.indices[j]] = made.selection.values[j];
      }
      selections[r].push_back(std::move(made));
    }
  }
  std::vector<float> expected(n, 0.0f);
  for (const auto& x : exchanges) {
    const auto& b = x->bucket;
    const int64_t base = layout_.offset[b.first_tensor];
    const bool gather = b.collective == Collective::kAllgather;
    if (gather && b.alignment == policy::Alignment::kEqualSlices) {
      // Each rank's dense contribution sent as pairs: dense segments carry
      // every element, sparse ones their selection (as sent[r] holds it).
      std::vector<float> values;
      std::vector<int32_t> indices;
      for (int r = 0; r < ranks_; ++r) {
        BucketExchange own;
        own.bucket = b;
        own.segments = x->segments;
        fill_payload(own, layout_, sent[r].data(), selections[r]);
        values.insert(values.end(), own.values.begin(), own.values.end());
        indices.insert(indices.end(), own.indices.begin(), own.indices.end());
      }
      const int64_t range = layout_.elements(b.first_tensor, b.end_tensor);
      std::vector<float> dense(static_cast<size_t>(range));
      const int64_t lost = kernels::unpack_equal_slices(values.data(), indices.data(), int64_t(values.size()), ranks_,
                                                        range, dense.data());
      if (lost != x->lost) {
        return fmt::format("iteration {}, flush #{}: {} contributions lost, expected {}", iteration, x->index, x->lost,
                           lost);
      }
      for (const Segment& s : x->segments) {
        if (!s.included) continue;
        for (int64_t i = layout_.offset[s.first]; i < layout_.offset[s.end]; ++i) expected[i] = dense[i - base];
      }
    } else {
      for (const Segment& s : x->segments) {
        if (!s.included) continue;
        for (int64_t i = layout_.offset[s.first]; i < layout_.offset[s.end]; ++i) {
          float sum = 0.0f;
          for (int r = 0; r < ranks_; ++r) sum += sent[r][i];
          expected[i] = sum / float(ranks_);
        }
      }
    }
    for (const Segment& s : x->segments) {
      if (!s.included) continue;
      for (int64_t i = layout_.offset[s.first]; i < layout_.offset[s.end]; ++i) {
        float tolerance = 0.0f;
        if (!gather) {
          float magnitude = 0.0f;
          for (int r = 0; r < ranks_; ++r) magnitude += std::fabs(sent[r][i]);
          tolerance = 4.0f * float(ranks_) * std::numeric_limits<float>::epsilon() * magnitude / float(ranks_);
        }
        if (!(std::fabs(aggregate[i] - expected[i]) <= tolerance)) {
          int t = s.first;
          while (layout_.offset[t + 1] <= i) ++t;
          return fmt::format("iteration {}, flush #{} ({}): tensor {} ({}) element {}: got {:.9g}, expected {:.9g}",
                             iteration, x->index, collective_name(b.collective), t, model_.names[t],
                             i - layout_.offset[t], aggregate[i], expected[i]);
        }
      }
    }
  }
  return "";
}

}  // namespace sparsefuse::runtime
