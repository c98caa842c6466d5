#include "runtime/oracle.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "kernels/rng.h"
#include "runtime/oracle_select.h"
#include "runtime/oracle_sparse.h"

namespace sparsefuse::runtime {

using oracle::ThresholdRule;
using policy::Alignment;
using policy::Sparsifier;

namespace {

// One rank's pairs in one allgather bucket, decoded by the oracle.
struct Pairs {
  std::vector<int32_t> index;  // relative to the bucket's first tensor, ascending
  std::vector<float> value;
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Rank R's block of B's gathered stream: a strictly ascending run of indices
// inside the bucket's range, then (pad-to-max only) padding pairs (+0, 0).
std::string decode(const WireBucket& b, int64_t range, int r, int64_t at, Pairs& out) {
  const int64_t count = b.counts[size_t(r)];
  int64_t j = 0;
  for (; j < count; ++j) {
    const int32_t i = b.indices[size_t(at + j)];
    if (i < 0 || i >= range || (!out.index.empty() && i <= out.index.back())) break;
    out.index.push_back(i);
    out.value.push_back(b.values[size_t(at + j)]);
  }
  for (; j < count; ++j) {
    if (b.bucket.alignment != Alignment::kPadToMax || b.indices[size_t(at + j)] != 0 ||
        !same_bits(b.values[size_t(at + j)], 0.0f)) {
      return fmt::format("flush #{}: rank {}'s pair {} (index {}) is out of order or outside the bucket's {} "
                         "elements",
                         b.index, r, j, b.indices[size_t(at + j)], range);
    }
  }
  return "";
}

// An allgather of pairs the oracle decodes (a sparse allreduce's wire is its own).
bool is_gather(const policy::Bucket& b) {
  return b.collective == Collective::kAllgather && b.sparse == policy::SparseAllreduce::kNone;
}

bool exact_sparsifier(Sparsifier s) {
  return s == Sparsifier::kTopk || s == Sparsifier::kRandomk || s == Sparsifier::kAdtopk || s == Sparsifier::kAdtopkI;
}

ThresholdRule threshold_rule(const policy::CompressionRequest& q) {
  if (q.align_to_expected) return q.sparsifier == Sparsifier::kDgc ? ThresholdRule::kCountOnly : ThresholdRule::kTopSet;
  return q.sparsifier == Sparsifier::kDgc ? ThresholdRule::kPrefix : ThresholdRule::kExactSet;
}

}  // namespace

struct Oracle::Iteration {
  explicit Iteration(const IterationRecord& r) : record(r) {}
  const IterationRecord& record;
  std::vector<std::vector<float>> grad;  // per rank
  // Per rank: what it contributes — its gradient, with every compressed
  // range replaced by the values it sent (0 where it sent nothing).
  std::vector<std::vector<float>> sent;
  std::vector<int> request_of;                      // per tensor: the request that compressed it, or -1
  std::vector<std::vector<Pairs>> wire;             // per bucket, per rank (allgathers)
  std::vector<float> expected, tolerance;           // per element
  std::vector<int> flush_of;                        // per tensor: the flush that carried it, or -1
  std::vector<int64_t> partitioned;                 // per tensor: elements its partitions carried, or -1
  std::vector<char> carried_element;                // per element, for partitions: carried already
  std::vector<std::vector<bool>> selected;          // per rank, per element: in a selection this iteration
};

Oracle::Oracle(const policy::GradientModel& model, const ModelLayout& layout, uint64_t seed, int ranks, int rank)
    : model_(model), layout_(layout), seed_(seed), ranks_(ranks), rank_(rank),
      residual_(size_t(ranks), std::vector<float>(size_t(layout.total()), 0.0f)) {}

std::string Oracle::where(int64_t element) const {
  int t = 0;
  while (layout_.offset[t + 1] <= element) ++t;
  return fmt::format("tensor {} ({}) element {}", t, model_.names[t], element - layout_.offset[t]);
}

// What rank R put on the wire for request Q: the pairs of the allgather
// that carries Q, inside Q's range, as local indices. False if none carries it.
bool Oracle::wire_selection(const Iteration& it, int r, const policy::CompressionRequest& q,
                            std::vector<int32_t>& index, std::vector<float>& value) const {
  for (size_t b = 0; b < it.record.buckets.size(); ++b) {
    const policy::Bucket& bucket = it.record.buckets[b].bucket;
    if (!is_gather(bucket) || bucket.first_tensor > q.first_tensor ||
        bucket.end_tensor < q.end_tensor) {
      continue;
    }
    const Pairs& wire = it.wire[b][size_t(r)];
    const int64_t shift = layout_.offset[q.first_tensor] - layout_.offset[bucket.first_tensor];
    for (size_t j = 0; j < wire.index.size(); ++j) {
      const int64_t local = wire.index[j] - shift;
      if (local < 0 || local >= q.elements) continue;
      index.push_back(int32_t(local));
      value.push_back(wire.value[j]);
    }
    return true;
  }
  return false;
}

std::vector<int32_t> Oracle::exact_selection(int iteration, const policy::CompressionRequest& q,
                                             const std::vector<float>& x) const {
  const int64_t n = q.elements;
  if (q.sparsifier == Sparsifier::kTopk) return oracle::sorted_topk(x.data(), n, q.expected_count);
  if (q.sparsifier == Sparsifier::kRandomk) {  // the shared priorities: kernels/rng.h defines them
    const uint64_t stream = kernels::randomk_stream(seed_, uint64_t(q.first_tensor), uint64_t(iteration));
    std::vector<uint32_t> priority(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) priority[size_t(i)] = kernels::randomk_key(stream, uint64_t(i));
    return oracle::sorted_randomk(priority, q.expected_count);
  }
  std::vector<int32_t> s;  // ADTopk: tensor by tensor
  const int64_t base = layout_.offset[q.first_tensor];
  for (int t = q.first_tensor; t < q.end_tensor; ++t) {
    const int64_t at = layout_.offset[t] - base;
    for (int32_t i : oracle::sorted_adtopk(x.data() + at, layout_.shape[t], q.density)) s.push_back(int32_t(i + at));
  }
  return s;
}

// The first element on which OURS (with values X) and what rank R sent differ, described; "" if none.
std::string Oracle::first_difference(int r, const policy::CompressionRequest& q, const std::vector<float>& x,
                                     const std::vector<int32_t>& ours, const std::vector<int32_t>& sent,
                                     const std::vector<float>& sent_values) const {
  for (size_t j = 0; j < std::max(ours.size(), sent.size()); ++j) {
    const bool a = j < ours.size(), b = j < sent.size();
    if (a && b && ours[j] == sent[j] && same_bits(sent_values[j], x[ours[j]])) continue;
    const int32_t e = !b ? ours[j] : !a ? sent[j] : std::min(ours[j], sent[j]);
    const bool we_select = std::binary_search(ours.begin(), ours.end(), e);
    const bool was_sent = std::binary_search(sent.begin(), sent.end(), e);
    std::string out = fmt::format("rank {}'s {} selection: {}: {}, the reference {} it (value {:.9g})", r,
                                  policy::sparsifier_name(q.sparsifier), where(layout_.offset[q.first_tensor] + e),
                                  was_sent ? "sent" : "not sent", we_select ? "selects" : "does not select", x[e]);
    if (was_sent && we_select) out += fmt::format("; sent value {:.9g}", sent_values[j]);
    return out;
  }
  return "";
}

// A threshold sparsifier's selection as sent: its values and its shape.
std::string Oracle::check_sent_threshold(int r, const policy::CompressionRequest& q, const std::vector<float>& x,
                                         const std::vector<int32_t>& sent, const std::vector<float>& values) const {
  for (size_t j = 0; j < sent.size(); ++j) {
    if (!same_bits(values[j], x[sent[j]])) {
      return fmt::format("rank {} sent {:.9g} for {}, which holds {:.9g}", r, values[j],
                         where(layout_.offset[q.first_tensor] + sent[j]), x[sent[j]]);
    }
  }
  std::string problem = oracle::check_threshold_selection(threshold_rule(q), x.data(), q.elements, q.expected_count, sent);
  if (problem.empty()) return "";
  return fmt::format("rank {}'s {} selection over tensors [{}, {}): {}", r, policy::sparsifier_name(q.sparsifier),
                     q.first_tensor, q.end_tensor, problem);
}

// Rank R's selection for request Q (the oracle's own, or for a threshold
// sparsifier the wire's, checked): fills it.sent and it.selected and
// advances residual_[R].
std::string Oracle::select(Iteration& it, int r, const policy::CompressionRequest& q) {
  const int64_t base = layout_.offset[q.first_tensor], n = q.elements;
  const float* grad = it.grad[size_t(r)].data() + base;
  float* residual = residual_[size_t(r)].data() + base;
  std::vector<float> x(grad, grad + n);
  if (q.error_feedback) {
    for (int64_t i = 0; i < n; ++i) x[i] = residual[i] + grad[i];
  }
  std::vector<int32_t> sent, s;
  std::vector<float> sent_values;
  const bool carried = wire_selection(it, r, q, sent, sent_values);
  std::string problem;
  if (exact_sparsifier(q.sparsifier)) {
    s = exact_selection(it.record.iteration, q, x);
    if (carried) problem = first_difference(r, q, x, s, sent, sent_values);
  } else if (!carried) {
    problem = fmt::format("the {} selection over tensors [{}, {}) was carried by no allgather: the oracle cannot "
                          "see it",
                          policy::sparsifier_name(q.sparsifier), q.first_tensor, q.end_tensor);
  } else {
    s = sent;
    problem = check_sent_threshold(r, q, x, sent, sent_values);
  }
  if (!problem.empty()) return fmt::format("iteration {}, {}", it.record.iteration, problem);

  float* out = it.sent[size_t(r)].data() + base;
  std::fill(out, out + n, 0.0f);
  for (int32_t i : s) {
    out[i] = x[i];
    it.selected[size_t(r)][size_t(base + i)] = true;
  }
  if (!q.error_feedback) return "";
  // Conservation on this rank, against the engine's residual.
  const float* engine = it.record.residual.data() + base;
  for (int64_t i = 0; i < n && r == rank_; ++i) {
    if (!(out[i] + engine[i] == grad[i] + residual[i])) {
      return fmt::format("iteration {}, rank {}: error feedback does not conserve {}: sent {:.9g} + residual "
                         "{:.9g} != gradient {:.9g} + old residual {:.9g}",
                         it.record.iteration, r, where(base + i), out[i], engine[i], grad[i], residual[i]);
    }
  }
  std::copy(x.begin(), x.end(), residual);
  for (int32_t i : s) residual[i] = 0.0f;
  return "";
}

std::string Oracle::check_own_residual(const Iteration& it, std::span<const float> engine) const {
  const std::vector<float>& ours = residual_[size_t(rank_)];
  for (size_t i = 0; i < ours.size(); ++i) {
    if (!same_bits(engine[i], ours[i]) && !(engine[i] == 0.0f && ours[i] == 0.0f)) {
      return fmt::format("iteration {}, rank {}: the residual of {} is {:.9g}, the reference's {:.9g}",
                         it.record.iteration, rank_, where(int64_t(i)), engine[i], ours[i]);
    }
  }
  return "";
}

// Which of B's tensors it carries, by the oracle's own rule: an allreduce the
// uncompressed ones; an allgather every request inside its range, plus the
// uncompressed ones when the bucket has dense elements.
static std::string carried_tensors(const WireBucket& b, const std::vector<int>& request_of,
                                   std::span<const policy::CompressionRequest> requests, const ModelLayout& layout,
                                   std::vector<int>& carried) {
  const policy::Bucket& k = b.bucket;
  const bool gather = k.collective == Collective::kAllgather;  // else a reduction: dense
  int64_t elements = 0;
  for (int t = k.first_tensor; t < k.end_tensor; ++t) {
    const int q = request_of[size_t(t)];
    if (q >= 0 && (requests[size_t(q)].first_tensor < k.first_tensor || requests[size_t(q)].end_tensor > k.end_tensor)) {
      return fmt::format("flush #{}: the request over tensors [{}, {}) straddles the bucket's tensors [{}, {})", b.index,
                         requests[size_t(q)].first_tensor, requests[size_t(q)].end_tensor, k.first_tensor,
                         k.end_tensor);
    }
    if (q >= 0 ? gather : (!gather || k.dense_elements > 0)) {
      carried.push_back(t);
      elements += layout.elements(t, t + 1);
    }
  }
  if (elements != k.elements) {
    return fmt::format("flush #{}: the bucket says it covers {} elements, the oracle counts {}", b.index, k.elements,
                       elements);
  }
  return "";
}

std::string Oracle::expect_equal_slices(Iteration& it, const WireBucket& b, const std::vector<int>& carried) const {
  const int64_t base = layout_.offset[b.bucket.first_tensor];
  std::vector<int32_t> stream_index;
  std::vector<float> stream_value;
  for (int r = 0; r < ranks_; ++r) {
    for (int t : carried) {
      const int q = it.request_of[size_t(t)];
      for (int64_t i = layout_.offset[t]; i < layout_.offset[t + 1]; ++i) {
        if (q >= 0 && !it.selected[size_t(r)][size_t(i)]) continue;
        stream_index.push_back(int32_t(i - base));
        stream_value.push_back(it.sent[size_t(r)][size_t(i)]);
      }
    }
  }
  // P slices of len / P entries; within a slice each entry overwrites the
  // previous one for its index; the slices' survivors are summed in order.
  const int64_t len = int64_t(stream_index.size()), m = len / ranks_;
  int64_t lost = len - m * ranks_;
  std::vector<float> dense(size_t(layout_.elements(b.bucket.first_tensor, b.bucket.end_tensor)), 0.0f);
  for (int s = 0; s < ranks_; ++s) {
    std::unordered_map<int32_t, float> slot;
    for (int64_t j = s * m; j < (s + 1) * m; ++j) lost += !slot.insert_or_assign(stream_index[j], stream_value[j]).second;
    for (const auto& [i, v] : slot) dense[size_t(i)] += v;
  }
  if (lost != b.lost) {
    return fmt::format("iteration {}, flush #{}: {} contributions lost, the reference loses {}", it.record.iteration,
                       b.index, b.lost, lost);
  }
  for (int t : carried) {
    for (int64_t i = layout_.offset[t]; i < layout_.offset[t + 1]; ++i) it.expected[i] = dense[i - base] / float(ranks_);
  }
  return "";
}

// A partition (ByteScheduler): a dense reduction over elements
// [first_element, first_element + elements) of one uncompressed tensor. The
// tensor's partitions must tile it: no element twice (here), none left out
// (check_partitions_tile).
std::string Oracle::expect_partition(Iteration& it, const WireBucket& b) {
  const policy::Bucket& k = b.bucket;
  const int t = k.first_tensor;
  const int64_t n = layout_.elements(t, t + 1);
  if (k.tensors() != 1 || k.collective != Collective::kAllreduce || it.request_of[size_t(t)] >= 0 ||
      k.first_element < 0 || k.first_element + k.elements > n) {
    return fmt::format("iteration {}, flush #{}: elements [{}, {}) of tensors [{}, {}) are not a dense partition of "
                       "one uncompressed tensor of {} elements",
                       it.record.iteration, b.index, k.first_element, k.first_element + k.elements, k.first_tensor,
                       k.end_tensor, n);
  }
  if (it.partitioned[size_t(t)] < 0) {
    if (it.flush_of[size_t(t)] >= 0) {
      return fmt::format("iteration {}: {} carried whole by flush #{} and in part by flush #{}", it.record.iteration,
                         where(layout_.offset[t]), it.flush_of[size_t(t)], b.index);
    }
    it.partitioned[size_t(t)] = 0;
    it.flush_of[size_t(t)] = b.index;
  }
  it.carried_element.resize(size_t(layout_.total()), 0);
  const int64_t begin = layout_.offset[t] + k.first_element, end = begin + k.elements;
  for (int64_t i = begin; i < end; ++i) {
    if (it.carried_element[size_t(i)]) {
      return fmt::format("iteration {}: {} carried twice (again by flush #{})", it.record.iteration, where(i), b.index);
    }
    it.carried_element[size_t(i)] = 1;
  }
  expect_average(it, it.grad, begin, end, /*reduction=*/true);
  it.partitioned[size_t(t)] += k.elements;
  return "";
}

// The rank-order sum of SOURCE over elements [BEGIN, END), / P; a reduction
// over more than two ranks gets the allreduce bound (see the file comment).
void Oracle::expect_average(Iteration& it, const std::vector<std::vector<float>>& source, int64_t begin, int64_t end,
                            bool reduction) const {
  const float eps = std::numeric_limits<float>::epsilon(), P = float(ranks_);
  for (int64_t i = begin; i < end; ++i) {
    float sum = 0.0f, magnitude = 0.0f;
    for (int r = 0; r < ranks_; ++r) {
      sum += source[size_t(r)][size_t(i)];
      magnitude += std::fabs(source[size_t(r)][size_t(i)]);
    }
    it.expected[i] = sum / P;
    if (reduction && ranks_ > 2) it.tolerance[i] = (P - 1) * eps * magnitude / P + eps * std::fabs(sum / P);
  }
}

std::string Oracle::check_partitions_tile(const Iteration& it) const {
  for (int t = 0; t < layout_.tensors(); ++t) {
    const int64_t got = it.partitioned[size_t(t)], n = layout_.elements(t, t + 1);
    if (got >= 0 && got != n) {
      return fmt::format("iteration {}: the partitions of tensor {} ({}) carried {} of its {} elements",
                         it.record.iteration, t, model_.names[t], got, n);
    }
  }
  return "";
}

std::string Oracle::expect_bucket(Iteration& it, const WireBucket& b) {
  const policy::Bucket& k = b.bucket;
  if (k.sparse != policy::SparseAllreduce::kNone) return expect_sparse(it, b);
  if (k.first_element != 0 ||
      (k.tensors() == 1 && k.collective == Collective::kAllreduce && it.request_of[size_t(k.first_tensor)] < 0 &&
       k.elements < layout_.elements(k.first_tensor, k.end_tensor))) {
    return expect_partition(it, b);
  }
  // A reduce-scatter's all-gather (DeAR) has landed by the time its iteration is checked: together an allreduce.
  const bool reduce = k.collective == Collective::kAllreduce || k.collective == Collective::kReduceScatter;
  if (!reduce && k.collective != Collective::kAllgather) {
    return fmt::format("flush #{}: the oracle has no rule for a {} bucket", b.index, collective_name(k.collective));
  }
  std::vector<int> carried;
  std::string problem = carried_tensors(b, it.request_of, it.record.requests, layout_, carried);
  if (!problem.empty()) return fmt::format("iteration {}, {}", it.record.iteration, problem);
  for (int t : carried) {
    if (it.flush_of[size_t(t)] >= 0) {
      return fmt::format("iteration {}: {} carried by flushes #{} and #{}", it.record.iteration,
                         where(layout_.offset[t]), it.flush_of[size_t(t)], b.index);
    }
    it.flush_of[size_t(t)] = b.index;
  }
  if (k.collective == Collective::kAllgather && k.alignment == Alignment::kEqualSlices) {
    return expect_equal_slices(it, b, carried);
  }
  for (int t : carried) expect_average(it, reduce ? it.grad : it.sent, layout_.offset[t], layout_.offset[t + 1], reduce);
  return "";
}

// Ok-Topk: on an exact iteration the request's selection (select() made it)
// sets every rank's local threshold; on the others no request covers the
// bucket and the oracle selects by that threshold itself.
std::string Oracle::oktopk_selections(Iteration& it) {
  for (const WireBucket& w : it.record.buckets) {
    const policy::Bucket& b = w.bucket;
    if (b.sparse != policy::SparseAllreduce::kOkTopk) continue;
    const int q = it.request_of[size_t(b.first_tensor)];
    if (b.exact_threshold != (q >= 0)) {
      return fmt::format("iteration {}, flush #{}: an Ok-Topk bucket {} a compression request on {} exact iteration",
                         it.record.iteration, w.index, q >= 0 ? "with" : "without", q >= 0 ? "a non-" : "an");
    }
    const int64_t base = layout_.offset[b.first_tensor];
    for (int r = 0; r < ranks_ && !b.exact_threshold; ++r) {
      std::string problem = oktopk_reuse(it, b, r);
      if (!problem.empty()) return problem;
    }
    for (int r = 0; r < ranks_ && b.exact_threshold; ++r) {
      OkTopkLocal& local = oktopk_local_[{r, b.first_tensor}];
      local.error_feedback = it.record.requests[size_t(q)].error_feedback;
      local.threshold = std::numeric_limits<float>::infinity();
      for (int64_t i = base; i < base + b.elements; ++i) {
        if (it.selected[size_t(r)][size_t(i)]) local.threshold = std::min(local.threshold, std::fabs(it.sent[size_t(r)][size_t(i)]));
      }
      if (std::isinf(local.threshold)) local.threshold = 0.0f;  // nothing selected
    }
  }
  return "";
}

// Rank R's selection over Ok-Topk bucket B between exact iterations.
std::string Oracle::oktopk_reuse(Iteration& it, const policy::Bucket& b, int r) {
  const auto found = oktopk_local_.find({r, b.first_tensor});
  if (found == oktopk_local_.end()) {
    return fmt::format("iteration {}: the Ok-Topk bucket at tensor {} reuses a threshold no exact iteration set",
                       it.record.iteration, b.first_tensor);
  }
  const OkTopkLocal& local = found->second;
  const int64_t base = layout_.offset[b.first_tensor];
  const float* grad = it.grad[size_t(r)].data() + base;
  float* residual = residual_[size_t(r)].data() + base;
  float* out = it.sent[size_t(r)].data() + base;
  for (int64_t i = 0; i < b.elements; ++i) {
    const float x = local.error_feedback ? residual[i] + grad[i] : grad[i];
    const bool sent = std::fabs(x) >= local.threshold;
    out[i] = sent ? x : 0.0f;
    it.selected[size_t(r)][size_t(base + i)] = sent;
    if (local.error_feedback) residual[i] = sent ? 0.0f : x;
  }
  return "";
}

// A sparse allreduce: every tensor of its range selected (by a request
// inside the range, or by Ok-Topk's reused threshold), the sum replayed
// densely (oracle_sparse.h).
std::string Oracle::expect_sparse(Iteration& it, const WireBucket& w) {
  const policy::Bucket& b = w.bucket;
  const int64_t base = layout_.offset[b.first_tensor];
  if (b.elements != layout_.elements(b.first_tensor, b.end_tensor)) {
    return fmt::format("iteration {}, flush #{}: the sparse allreduce says it covers {} elements of a range of {}",
                       it.record.iteration, w.index, b.elements, layout_.elements(b.first_tensor, b.end_tensor));
  }
  // Ok-Topk between exact iterations selects by its threshold; HiPress's ring takes the gradient dense.
  const bool reused = b.sparse == policy::SparseAllreduce::kOkTopk && !b.exact_threshold;
  const bool dense_in = b.sparse == policy::SparseAllreduce::kCaSyncRing;
  for (int t = b.first_tensor; t < b.end_tensor; ++t) {
    const int q = it.request_of[size_t(t)];
    const auto& requests = it.record.requests;
    if (reused || dense_in ? q >= 0
                           : q < 0 || requests[size_t(q)].first_tensor < b.first_tensor ||
                                 requests[size_t(q)].end_tensor > b.end_tensor) {
      return fmt::format("iteration {}, flush #{}: {} is not selected by {}", it.record.iteration, w.index,
                         where(layout_.offset[t]),
                         reused     ? "the reused threshold alone"
                         : dense_in ? "the ring alone (a compression request covers it)"
                                    : "a request inside the range");
    }
    if (it.flush_of[size_t(t)] >= 0) {
      return fmt::format("iteration {}: {} carried by flushes #{} and #{}", it.record.iteration, where(layout_.offset[t]),
                         it.flush_of[size_t(t)], w.index);
    }
    it.flush_of[size_t(t)] = w.index;
  }
  std::vector<std::vector<float>> c;
  for (int r = 0; r < ranks_; ++r) {
    const std::vector<float>& from = dense_in ? it.grad[size_t(r)] : it.sent[size_t(r)];
    c.emplace_back(from.begin() + base, from.begin() + base + b.elements);
  }
  const std::vector<float> sum = oracle::sparse_allreduce_sum(b, c, oktopk_global_[b.first_tensor]);
  const bool exact = oracle::sparse_allreduce_exact(b) || ranks_ <= 2;
  const float eps = std::numeric_limits<float>::epsilon(), P = float(ranks_);
  for (int64_t i = 0; i < b.elements; ++i) {
    it.expected[size_t(base + i)] = sum[size_t(i)] / P;
    float magnitude = 0.0f;
    for (int r = 0; r < ranks_ && !exact; ++r) magnitude += std::fabs(c[size_t(r)][size_t(i)]);
    if (!exact) it.tolerance[size_t(base + i)] = (P - 1) * eps * magnitude / P + eps * std::fabs(sum[size_t(i)] / P);
  }
  return "";
}

std::string Oracle::compare(const Iteration& it, std::span<const float> aggregate) const {
  for (size_t i = 0; i < aggregate.size(); ++i) {
    const float got = aggregate[i], want = it.expected[i];
    if (it.tolerance[i] == 0.0f ? got == want : std::fabs(got - want) <= it.tolerance[i]) continue;
    int t = 0;
    while (layout_.offset[t + 1] <= int64_t(i)) ++t;
    const int flush = it.flush_of[size_t(t)];
    std::string by = "carried by no bucket";
    if (flush >= 0) {
      by = fmt::format("flush #{} ({})", flush, collective_name(it.record.buckets[size_t(flush)].bucket.collective));
    }
    return fmt::format("iteration {}, {}: {}: got {:.9g}, expected {:.9g}", it.record.iteration, by, where(int64_t(i)),
                       got, want);
  }
  return "";
}

std::string Oracle::check(const IterationRecord& record) {
  const size_t n = size_t(layout_.total());
  if (record.aggregate.size() != n || record.residual.size() != n) {
    throw std::logic_error("Oracle::check: the aggregate or residual does not have the model's size");
  }
  Iteration it(record);
  it.request_of.assign(size_t(layout_.tensors()), -1);
  for (size_t q = 0; q < record.requests.size(); ++q) {
    for (int t = record.requests[q].first_tensor; t < record.requests[q].end_tensor; ++t) it.request_of[t] = int(q);
  }
  for (int r = 0; r < ranks_; ++r) {
    it.grad.emplace_back(n);
    synthetic_gradient(seed_, r, record.iteration, model_, layout_, it.grad.back().data());
  }
  it.sent = it.grad;
  it.selected.assign(size_t(ranks_), std::vector<bool>(n, false));
  for (const WireBucket& b : record.buckets) {
    it.wire.emplace_back(size_t(ranks_));
    if (!is_gather(b.bucket)) continue;
    const int64_t range = layout_.elements(b.bucket.first_tensor, b.bucket.end_tensor);
    for (int64_t r = 0, at = 0; r < ranks_; at += b.counts[size_t(r)], ++r) {
      std::string problem = decode(b, range, int(r), at, it.wire.back()[size_t(r)]);
      if (!problem.empty()) return fmt::format("iteration {}, {}", record.iteration, problem);
    }
  }
  for (int r = 0; r < ranks_; ++r) {
    for (size_t q = 0; q < record.requests.size(); ++q) {
      std::string problem = select(it, r, record.requests[q]);
      if (!problem.empty()) return problem;
    }
  }
  std::string problem = oktopk_selections(it);
  if (!problem.empty()) return problem;
  problem = check_own_residual(it, record.residual);
  if (!problem.empty()) return problem;
  it.expected.assign(n, 0.0f);
  it.tolerance.assign(n, 0.0f);
  it.flush_of.assign(size_t(layout_.tensors()), -1);
  it.partitioned.assign(size_t(layout_.tensors()), -1);
  for (const WireBucket& b : record.buckets) {
    problem = expect_bucket(it, b);
    if (!problem.empty()) return problem;
  }
  problem = check_partitions_tile(it);
  if (!problem.empty()) return problem;
  return compare(it, record.aggregate);
}

}  // namespace sparsefuse::runtime
