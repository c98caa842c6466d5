#include "runtime/exchange.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "kernels/pack.h"
#include "runtime/pair_gather.h"
#include "runtime/sparse_allreduce.h"

namespace sparsefuse::runtime {

using policy::Alignment;

namespace {

// A partition (ByteScheduler): a dense reduction over part of one
// uncompressed tensor, elements [first_element, first_element + elements).
bool is_partition(const policy::Bucket& b, const std::vector<Segment>& segments, const ModelLayout& layout) {
  const int64_t n = layout.elements(b.first_tensor, b.end_tensor);
  return b.tensors() == 1 && policy::dense_reduction(b) && segments.size() == 1 && segments[0].selection < 0 &&
         b.first_element >= 0 && b.first_element + b.elements <= n && b.elements < n;
}

// HiPress's ring: the range travels dense into the collective, which encodes it.
bool casync(const policy::Bucket& b) { return b.sparse == policy::SparseAllreduce::kCaSyncRing; }

std::string describe(const policy::Bucket& b) {
  return fmt::format("{} of tensors [{}, {})", collective_name(b.collective), b.first_tensor, b.end_tensor);
}

}  // namespace

std::vector<Segment> bucket_segments(const policy::Bucket& bucket, const ModelLayout& layout,
                                     const std::vector<int>& compressed_by, const std::vector<RangeSelection>& selections) {
  std::vector<Segment> segments;
  bucket_segments(bucket, layout, compressed_by, selections, segments);
  return segments;
}

void bucket_segments(const policy::Bucket& bucket, const ModelLayout& layout, const std::vector<int>& compressed_by,
                     const std::vector<RangeSelection>& selections, std::vector<Segment>& segments) {
  // A sparse allreduce carries its range's selection, as an allgather does.
  const bool gather = bucket.collective == Collective::kAllgather || bucket.sparse != policy::SparseAllreduce::kNone;
  if (!gather && !policy::dense_reduction(bucket)) {
    throw std::logic_error("the runtime executes allreduces, reduce-scatters and allgathers only, not " +
                           describe(bucket));
  }
  segments.clear();
  int64_t carried = 0;
  for (int t = bucket.first_tensor; t < bucket.end_tensor;) {
    Segment s;
    s.selection = compressed_by[t];
    if (s.selection >= 0) {
      const RangeSelection& r = selections[s.selection];
      if (r.first != t || r.end > bucket.end_tensor) {
        throw std::logic_error(fmt::format("a selection over tensors [{}, {}) straddles the {}", r.first, r.end,
                                           describe(bucket)));
      }
      s.first = r.first, s.end = r.end, s.included = gather;
    } else {
      s.first = t, s.end = t + 1, s.included = !gather || bucket.dense_elements > 0 || casync(bucket);
    }
    if (s.included) carried += layout.elements(s.first, s.end);
    segments.push_back(s);
    t = s.end;
  }
  const bool partition = is_partition(bucket, segments, layout);
  if (bucket.first_element != 0 && !partition) {
    throw std::logic_error(fmt::format("the {} starts at element {} of its first tensor, but is not a dense partition "
                                       "of one uncompressed tensor",
                                       describe(bucket), bucket.first_element));
  }
  if (carried != bucket.elements && !partition) {
    throw std::logic_error(fmt::format("the {} covers {} elements, but this rank has {} to send in it", describe(bucket),
                                       bucket.elements, carried));
  }
}

uint64_t bucket_fingerprint(const policy::Bucket& b, int iteration, int index) {
  const int64_t fields[] = {iteration,         index,           b.first_tensor,   b.end_tensor,
                            int64_t(b.collective), int64_t(b.alignment), b.communicator, int64_t(b.sparse),
                            b.partitions,      b.exact_threshold, b.repartition,    b.elements,
                            b.dense_elements,  b.first_element};
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t f : fields) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= uint64_t(f) >> (8 * byte) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

std::string describe_flush(const BucketExchange& x) {
  return fmt::format("flush #{} of iteration {} ({})", x.index, x.iteration, describe(x.bucket));
}

bool BucketExchange::carries_whole_range() const {
  return std::all_of(segments.begin(), segments.end(), [](const Segment& s) { return s.included; });
}

bool BucketExchange::packs_payload() const {
  return !casync(bucket) && !(policy::dense_reduction(bucket) && dense != values.data());
}

bool BucketExchange::sums_in_gradient() const {
  return bucket.collective == Collective::kAllreduce && bucket.sparse == policy::SparseAllreduce::kNone &&
         !packs_payload();
}

int64_t BucketExchange::bytes_sent() const {
  const bool values_only = bucket.sparse == policy::SparseAllreduce::kNone
                               ? policy::dense_reduction(bucket)
                               : bucket.sparse == policy::SparseAllreduce::kSharedIndices;
  return sent_count * (values_only ? 4 : 8);
}

// Whether EXCHANGE sends every element of its range, uncompressed, as pairs
// (ADTopk's and the selective schemes' dense tensors in an allgather).
static bool every_element_as_a_pair(const BucketExchange& x) {
  for (const Segment& s : x.segments) {
    if (!s.included || s.selection >= 0) return false;
  }
  return true;
}

void fill_payload(BucketExchange& x, const ModelLayout& layout, float* send,
                  const std::vector<RangeSelection>& selections) {
  const int64_t base = layout.offset[x.bucket.first_tensor];
  if (casync(x.bucket)) {  // the ring counts what it sends
    x.dense = send + base;
    x.sent_count = 0;
    return;
  }
  if (policy::dense_reduction(x.bucket)) {
    const bool whole = x.carries_whole_range();
    x.sent_count = x.bucket.elements;
    if (whole) {
      x.dense = send + base + x.bucket.first_element;
      return;
    }
    // Resized, not cleared: a reused exchange of the same size writes in place.
    x.values.resize(size_t(x.sent_count));
    x.dense = x.values.data();
    float* out = x.values.data();
    for_each_carried(x, layout, [&](int64_t at, int64_t n) { out = std::copy(send + at, send + at + n, out); });
    return;
  }
  const int64_t total = pack_layout(x, layout, [&](int id) { return int64_t(selections[id].selection.size()); });
  x.sent_count = total;
  x.values.resize(size_t(total));
  x.indices.resize(size_t(total));
  if (every_element_as_a_pair(x)) {  // no index list to build and read: copy and count
    kernels::pack_dense(send + base, total, x.values.data(), x.indices.data());
    return;
  }
  std::vector<int32_t>& local = x.pack_local;
  local.clear();
  for (const Segment& s : x.segments) {
    if (!s.included) continue;
    if (s.selection >= 0) {
      const auto& indices = selections[s.selection].selection.indices;
      local.insert(local.end(), indices.begin(), indices.end());
    } else {
      const size_t at = local.size();
      local.resize(at + size_t(layout.elements(s.first, s.end)));
      std::iota(local.begin() + std::ptrdiff_t(at), local.end(), 0);
    }
  }
  kernels::pack(send + base, x.pack_offsets, local.data(), x.pack_counts, x.values.data(), x.indices.data());
}

int64_t pack_layout(BucketExchange& x, const ModelLayout& layout, const std::function<int64_t(int)>& selected) {
  // One pack over the whole range: every segment is a "tensor" of the fused
  // buffer; segments the bucket does not carry contribute no entries.
  const int64_t base = layout.offset[x.bucket.first_tensor];
  x.pack_offsets.assign(1, 0);
  x.pack_counts.clear();
  for (const Segment& s : x.segments) {
    x.pack_offsets.push_back(layout.offset[s.end] - base);
    const int64_t carried = s.selection >= 0 ? selected(s.selection) : layout.elements(s.first, s.end);
    x.pack_counts.push_back(s.included ? carried : 0);
  }
  return std::accumulate(x.pack_counts.begin(), x.pack_counts.end(), int64_t(0));
}

void accept_announcements(BucketExchange& x, const std::vector<Announcement>& announced) {
  const uint64_t fingerprint = bucket_fingerprint(x.bucket, x.iteration, x.index);
  x.counts.assign(announced.size(), 0);
  for (size_t r = 0; r < announced.size(); ++r) {
    if (uint64_t(announced[r].tag) != fingerprint) {
      throw std::runtime_error(fmt::format(
          "rank {}'s flush #{} of iteration {} is not this rank's ({}): the ranks flushed different bucket sequences",
          r, x.index, x.iteration, describe(x.bucket)));
    }
    x.counts[r] = announced[r].count;
  }
  const auto [low, high] = std::minmax_element(x.counts.begin(), x.counts.end());
  if (x.bucket.alignment == Alignment::kFixed && *low != *high) {
    throw std::runtime_error(fmt::format("fixed alignment, but the ranks selected between {} and {} elements for the {}",
                                         *low, *high, describe(x.bucket)));
  }
}

void run_collective(BucketExchange& x, Communicator& comm) {
  if (x.bucket.sparse != policy::SparseAllreduce::kNone) {
    run_sparse_allreduce(x, comm);
    return;
  }
  const int P = comm.size();
  if (x.bucket.collective == Collective::kAllreduce) {
    comm.allreduce_sum(x.dense, x.dense, x.sent_count);
    return;
  }
  if (x.bucket.collective == Collective::kReduceScatter) {
    // P equal blocks: a range that does not divide is padded with zeros
    // (copied, reusing VALUES); rank r keeps the sums of block r.
    const int64_t n = x.bucket.elements;
    x.shard = reduce_scatter_block(n, P);
    const float* in = x.dense;
    if (x.shard * P != n) {
      x.values.resize(size_t(x.shard * P));
      std::copy(x.dense, x.dense + n, x.values.begin());
      std::fill(x.values.begin() + n, x.values.end(), 0.0f);
      in = x.values.data();
    }
    x.sent_count = x.shard * P;
    x.gathered_values.resize(size_t(x.shard));
    comm.reduce_scatter_sum(in, x.gathered_values.data(), x.shard);
    return;
  }
  const int64_t fingerprint = int64_t(bucket_fingerprint(x.bucket, x.iteration, x.index));
  const std::vector<Announcement> announced =
      announce_pairs(comm, x.values.data(), x.indices.data(), x.sent_count, fingerprint);
  accept_announcements(x, announced);
  if (x.bucket.alignment == Alignment::kPadToMax) {
    // Padding entries add +0.0 to the range's first element: no effect on the sum.
    const int64_t m = *std::max_element(x.counts.begin(), x.counts.end());
    x.values.resize(size_t(m), 0.0f);
    x.indices.resize(size_t(m), 0);
    x.sent_count = m;
    std::fill(x.counts.begin(), x.counts.end(), m);
  }
  const int64_t total = std::accumulate(x.counts.begin(), x.counts.end(), int64_t(0));
  x.gathered_values.resize(size_t(total));
  x.gathered_indices.resize(size_t(total));
  comm.allgatherv(x.values.data(), x.indices.data(), x.counts, x.gathered_values.data(), x.gathered_indices.data());
  verify_pairs(announced, x.counts, x.gathered_values.data(), x.gathered_indices.data(), describe_flush(x));
}

void apply_result(BucketExchange& x, const ModelLayout& layout, int ranks, float* aggregate,
                  std::vector<float>& scratch) {
  const int64_t base = layout.offset[x.bucket.first_tensor];
  if (x.bucket.sparse != policy::SparseAllreduce::kNone) {
    apply_sparse_result(x, layout, ranks, aggregate);
    return;
  }
  if (x.bucket.collective == Collective::kReduceScatter) {
    if (!x.shard_out) throw std::logic_error("a reduce-scatter needs somewhere to keep its shard");
    kernels::average(x.gathered_values.data(), x.shard, ranks, x.shard_out);
    return;
  }
  if (x.bucket.collective == Collective::kAllreduce) {
    const float* sum = x.dense;
    if (is_partition(x.bucket, x.segments, layout)) {
      kernels::average(sum, x.bucket.elements, ranks, aggregate + base + x.bucket.first_element);
      return;
    }
    for_each_carried(x, layout, [&](int64_t at, int64_t n) {
      kernels::average(sum, n, ranks, aggregate + at);
      sum += n;
    });
    return;
  }
  const int64_t n = layout.elements(x.bucket.first_tensor, x.bucket.end_tensor);
  const bool whole = x.carries_whole_range();
  if (!whole && int64_t(scratch.size()) < n) scratch.resize(size_t(n));
  float* dense = whole ? aggregate + base : scratch.data();
  if (x.bucket.alignment == Alignment::kEqualSlices) {
    x.lost = kernels::unpack_equal_slices(x.gathered_values.data(), x.gathered_indices.data(),
                                          int64_t(x.gathered_values.size()), ranks, n, dense);
  } else {
    kernels::unpack(x.gathered_values.data(), x.gathered_indices.data(), x.counts, n, dense);
  }
  if (whole) return;
  for_each_carried(x, layout, [&](int64_t at, int64_t n) {
    std::copy(dense + (at - base), dense + (at - base + n), aggregate + at);
  });
}

}  // namespace sparsefuse::runtime
