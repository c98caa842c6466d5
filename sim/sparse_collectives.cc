#include "sim/sparse_collectives.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policy/hipress.h"
#include "policy/sparsifier.h"

namespace sparsefuse::sim {


namespace {

int ceil_log2(int p) {
  int rounds = 0;
  while ((int64_t(1) << rounds) < p) ++rounds;
  return rounds;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

LinkCost infer_link_cost(const DenseCost& dense, int workers) {
  if (workers <= 1) return {};
  constexpr int64_t kProbe = int64_t(1) << 26;
  const double zero = double(dense(Collective::kAllgather, 0).total());
  const double big = double(dense(Collective::kAllgather, kProbe).total());
  return {zero / (workers - 1), std::max(0.0, big - zero) / (double(workers - 1) * double(kProbe))};
}

SparseCollectives::SparseCollectives(DenseCost dense, int workers, const model::CompressionCost& compression)
    : dense_(std::move(dense)), workers_(workers), compression_(compression),
      link_(infer_link_cost(dense_, workers)) {}

SparseCollectiveCost SparseCollectives::from_parts(double latency_ns, double transfer_ns) const {
  SparseCollectiveCost c;
  const TimeNs total = TimeNs(std::llround(latency_ns + transfer_ns));
  c.time.transfer_ns = std::min(total, TimeNs(std::llround(transfer_ns)));
  c.time.latency_ns = total - c.time.transfer_ns;
  return c;
}

double SparseCollectives::topk_ns(int64_t elements, double density) const {
  return double(compression_.gpu_ns(policy::Sparsifier::kTopk, elements, density));
}

double SparseCollectives::memory_pass_ns(double bytes) const {
  return bytes / compression_.config().gpu_memory_gbytes_per_s;
}

SparseCollectiveCost SparseCollectives::topk_allgather(int64_t k) const {
  SparseCollectiveCost c;
  if (workers_ <= 1) return c;
  c.time = dense_(Collective::kAllgather, 8 * k);
  c.bytes_sent = double(workers_ - 1) * 8.0 * double(k);
  c.rounds = workers_ - 1;
  c.result_pairs = int64_t(workers_) * k;
  return c;
}

SparseCollectiveCost SparseCollectives::shared_index_allreduce(int64_t k) const {
  SparseCollectiveCost c;
  if (workers_ <= 1) return c;
  const double p = workers_;
  c.time = dense_(Collective::kAllreduce, 4 * k);
  c.bytes_sent = 2.0 * (p - 1) / p * 4.0 * double(k);
  c.rounds = 2 * (workers_ - 1);
  c.result_pairs = k;
  return c;
}

SparseCollectiveCost SparseCollectives::gtopk(int64_t k) const {
  if (workers_ <= 1) return {};
  const int rounds = ceil_log2(workers_);
  const double compute = rounds * topk_ns(2 * k, 0.5);
  SparseCollectiveCost c = from_parts(2.0 * rounds * link_.alpha_ns + compute,
                                      2.0 * rounds * 8.0 * double(k) * link_.ns_per_byte);
  c.bytes_sent = rounds * 8.0 * double(k);  // the root, broadcasting
  c.rounds = 2 * rounds;
  c.compute_ns = TimeNs(std::llround(compute));
  c.result_pairs = k;
  return c;
}

SparseCollectiveCost SparseCollectives::spardl(int64_t n, double density) const {
  if (workers_ <= 1) return {};
  const int p = workers_, rounds = ceil_log2(p);
  const int64_t block = ceil_div(n, p);
  const int64_t kb = policy::exact_count(block, density);
  const double block_bytes = 8.0 * double(kb);
  // Reduce-scatter: s_0 = p - 2^(rounds-1), then 2^(rounds-2), ..., 1.
  double blocks_sent = 0;
  for (int i = 0; i < rounds; ++i) blocks_sent += i == 0 ? p - (1 << (rounds - 1)) : 1 << (rounds - 1 - i);
  const double compute = rounds * topk_ns(block, density);
  const double latency = 2.0 * rounds * link_.alpha_ns + compute;
  const double transfer = (blocks_sent + (p - 1)) * block_bytes * link_.ns_per_byte;
  SparseCollectiveCost c = from_parts(latency, transfer);
  c.bytes_sent = (blocks_sent + (p - 1)) * block_bytes;
  c.rounds = 2 * rounds;
  c.compute_ns = TimeNs(std::llround(compute));
  c.result_pairs = int64_t(p) * kb;
  return c;
}

SparseCollectiveCost SparseCollectives::oktopk(int64_t n, int64_t k, bool exact, bool repartition) const {
  if (workers_ <= 1) return {};
  const int p = workers_;
  const double m = p - 1, a = link_.alpha_ns, b = link_.ns_per_byte;
  const int64_t kr = ceil_div(k, p), region = ceil_div(n, p);
  double latency = 0, transfer = 0, compute = 0, bytes = 0;
  int rounds = 0;
  auto exchange = [&](double messages, double bytes_each) {  // point-to-point rounds
    latency += messages * a;
    transfer += messages * bytes_each * b;
    bytes += messages * bytes_each;
    rounds += int(messages);
  };
  if (!exact) compute += memory_pass_ns(4.0 * double(n));  // |acc| > threshold
  exchange(m, 4);                                           // alltoall of counts
  exchange(m, 8.0 * double(kr));                            // split and reduce
  compute += double(compression_.decompression_ns(region, int64_t(m) * kr)) + memory_pass_ns(4.0 * double(region));
  if (exact) {
    const int64_t u = std::min<int64_t>(int64_t(p) * kr, region);
    exchange(m, 4.0 * double(u));  // allgatherv of the reduced values
    compute += topk_ns(int64_t(p) * u, double(k) / double(int64_t(p) * u));
  }
  exchange(m, 4);                 // balance: allgather of counts
  exchange(m, 8.0 * double(kr));  // allgatherv of the global selection
  if (repartition) {
    model::CollectiveCost boundaries = dense_(Collective::kAllreduce, 4 * int64_t(m));
    latency += double(boundaries.latency_ns);
    transfer += double(boundaries.transfer_ns);
    bytes += 2.0 * m / p * 4.0 * m;
    rounds += 2 * (p - 1);
  }
  SparseCollectiveCost c = from_parts(latency + compute, transfer);
  c.bytes_sent = bytes;
  c.rounds = rounds;
  c.compute_ns = TimeNs(std::llround(compute));
  c.result_pairs = int64_t(p) * kr;
  return c;
}

SparseCollectiveCost SparseCollectives::topk_dsa(int64_t n, int64_t k) const {
  if (workers_ <= 1) return {};
  const int rounds = ceil_log2(workers_);
  double bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    const int64_t entries = std::min<int64_t>((int64_t(1) << std::min(r, 40)) * k, n);
    bytes += std::min(8.0 * double(entries), 4.0 * double(n));
  }
  SparseCollectiveCost c = from_parts(rounds * link_.alpha_ns, bytes * link_.ns_per_byte);
  c.bytes_sent = bytes;
  c.rounds = rounds;
  c.result_pairs = std::min<int64_t>(int64_t(workers_) * k, n);
  return c;
}

SparseCollectiveCost SparseCollectives::casync_ring(int64_t n, double density, int partitions,
                                                    policy::Sparsifier compressor) const {
  if (workers_ <= 1) return {};
  const double bw = compression_.config().gpu_memory_gbytes_per_s;
  policy::CasyncPrimitives prims;
  prims.send = [this](double bytes) { return link_.alpha_ns + link_.ns_per_byte * bytes; };
  prims.encode = [&](int64_t e) { return double(compression_.gpu_ns(compressor, e, density)); };
  prims.decode = [this](int64_t e, int64_t pairs) { return double(compression_.decompression_ns(e, pairs)); };
  prims.aggregate = [bw](int64_t e) { return 12.0 * double(e) / bw; };
  policy::CasyncTime t = policy::secopa_ring_cpr(workers_, partitions, n, density, prims);
  SparseCollectiveCost c = from_parts(t.fixed_ns, t.transfer_ns);
  const int64_t pairs = policy::casync_partition_pairs(n, partitions, density);
  c.bytes_sent = 2.0 * (workers_ - 1) * 8.0 * double(pairs);
  c.rounds = 2 * (workers_ - 1);
  c.compute_ns = TimeNs(std::llround(t.fixed_ns - c.rounds * link_.alpha_ns));
  return c;
}

SparseCollectiveCost SparseCollectives::cost(const policy::Bucket& bucket, const Contributions& c) const {
  using policy::SparseAllreduce;
  switch (bucket.sparse) {
    case SparseAllreduce::kSharedIndices: return shared_index_allreduce(c.max / 4);
    case SparseAllreduce::kGTopk: return gtopk(c.max / 8);
    case SparseAllreduce::kSparDL: return spardl(bucket.elements, bucket.density);
    case SparseAllreduce::kOkTopk: return oktopk(bucket.elements, c.max / 8, bucket.exact_threshold, bucket.repartition);
    case SparseAllreduce::kTopkDsa: return topk_dsa(bucket.elements, c.max / 8);
    case SparseAllreduce::kCaSyncRing:
      return casync_ring(bucket.elements, bucket.density, bucket.partitions, bucket.compressor);
    case SparseAllreduce::kNone: break;
  }
  throw std::logic_error("not a sparse allreduce bucket");
}

}  // namespace sparsefuse::sim
