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

// sent[r]: rank r's contribution — its gradient, overwritten by the values
// it sent where it compressed, 0 elsewhere in compressed ranges.
ReferenceAggregate::Contributions ReferenceAggregate::contributions(
    int iteration, const std::vector<policy::CompressionRequest>& requests) {
  const size_t n = size_t(layout_.total());
  Contributions c{std::vector<std::vector<float>>(size_t(ranks_), std::vector<float>(n)),
                  std::vector<std::vector<RangeSelection>>(size_t(ranks_))};
  for (int r = 0; r < ranks_; ++r) {
    std::vector<float> gradient(n);
    synthetic_gradient(seed_, r, iteration, model_, layout_, gradient.data());
    c.sent[r] = gradient;
    for (const auto& request : requests) {
      RangeSelection made{request.first_tensor, request.end_tensor,
                          compressor_.compress(request, gradient.data(), residual_[r].data(), {seed_, r, iteration})};
      float* out = c.sent[r].data() + layout_.offset[request.first_tensor];
      std::fill(out, out + request.elements, 0.0f);
      for (size_t j = 0; j < made.selection.indices.size(); ++j) {
        out[made.selection.indices[j]] = made.selection.values[j];
      }
      c.selections[r].push_back(std::move(made));
    }
  }
  return c;
}

std::string ReferenceAggregate::expect_exchange(int iteration, const BucketExchange& x, const Contributions& c,
                                                std::vector<float>& expected) const {
  const auto& b = x.bucket;
  if (b.collective == Collective::kAllgather && b.alignment == policy::Alignment::kEqualSlices) {
    // Each rank's dense contribution sent as pairs: dense segments carry
    // every element, sparse ones their selection (as sent[r] holds it).
    std::vector<float> values;
    std::vector<int32_t> indices;
    for (int r = 0; r < ranks_; ++r) {
      BucketExchange own;
      own.bucket = b;
      own.segments = x.segments;
      fill_payload(own, layout_, c.sent[r].data(), c.selections[r]);
      values.insert(values.end(), own.values.begin(), own.values.end());
      indices.insert(indices.end(), own.indices.begin(), own.indices.end());
    }
    const int64_t range = layout_.elements(b.first_tensor, b.end_tensor);
    std::vector<float> dense(static_cast<size_t>(range));
    const int64_t lost = kernels::unpack_equal_slices(values.data(), indices.data(), int64_t(values.size()), ranks_,
                                                      range, dense.data());
    if (lost != x.lost) {
      return fmt::format("iteration {}, flush #{}: {} contributions lost, expected {}", iteration, x.index, x.lost, lost);
    }
    const int64_t base = layout_.offset[b.first_tensor];
    for (const Segment& s : x.segments) {
      if (!s.included) continue;
      for (int64_t i = layout_.offset[s.first]; i < layout_.offset[s.end]; ++i) expected[i] = dense[i - base];
    }
    return "";
  }
  for (const Segment& s : x.segments) {
    if (!s.included) continue;
    for (int64_t i = layout_.offset[s.first]; i < layout_.offset[s.end]; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < ranks_; ++r) sum += c.sent[r][i];
      expected[i] = sum / float(ranks_);
    }
  }
  return "";
}

// Gathered values are exact; a reduction's order is the library's, so its
// sum may differ by a few ulps of the summed magnitudes.
std::string ReferenceAggregate::compare_exchange(int iteration, const BucketExchange& x, const Contributions& c,
                                                 const std::vector<float>& expected,
                                                 const std::vector<float>& aggregate) const {
  const bool gather = x.bucket.collective == Collective::kAllgather;
  for (const Segment& s : x.segments) {
    if (!s.included) continue;
    for (int64_t i = layout_.offset[s.first]; i < layout_.offset[s.end]; ++i) {
      float tolerance = 0.0f;
      if (!gather) {
        float magnitude = 0.0f;
        for (int r = 0; r < ranks_; ++r) magnitude += std::fabs(c.sent[r][i]);
        tolerance = 4.0f * float(ranks_) * std::numeric_limits<float>::epsilon() * magnitude / float(ranks_);
      }
      if (!(std::fabs(aggregate[i] - expected[i]) <= tolerance)) {
        int t = s.first;
        while (layout_.offset[t + 1] <= i) ++t;
        return fmt::format("iteration {}, flush #{} ({}): tensor {} ({}) element {}: got {:.9g}, expected {:.9g}",
                           iteration, x.index, collective_name(x.bucket.collective), t, model_.names[t],
                           i - layout_.offset[t], aggregate[i], expected[i]);
      }
    }
  }
  return "";
}

std::string ReferenceAggregate::check(int iteration, const std::vector<policy::CompressionRequest>& requests,
                                      const std::vector<std::unique_ptr<BucketExchange>>& exchanges,
                                      const std::vector<float>& aggregate) {
  const Contributions c = contributions(iteration, requests);
  std::vector<float> expected(size_t(layout_.total()), 0.0f);
  for (const auto& x : exchanges) {
    std::string problem = expect_exchange(iteration, *x, c, expected);
    if (problem.empty()) problem = compare_exchange(iteration, *x, c, expected, aggregate);
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace sparsefuse::runtime
