// The sparse collectives, costed by hand for p = 2, 4 and 8 workers.
// Network: alpha = 1 us, 8 Gb/s = 1 ns per byte (flat ring), so the inferred
// point-to-point alpha and beta are exactly 1000 ns and 1 ns/B. Compression:
// every kernel takes 1 us (tests/data/profile-unit-all.json), memory passes run at
// 1 GB/s = 1 byte per ns, so a pass over B bytes takes B ns and decompressing
// n elements with q pairs takes 4n + 8q ns.
// Selection: n = 1024 elements at density 1/64, k = 16 pairs (128 bytes).
#include <gtest/gtest.h>

#include <memory>

#include "sim/sparse_collectives.h"

namespace sparsefuse::sim {
namespace {

struct Fixture {
  explicit Fixture(int p) : network(config(), p), compression(compression_config(), "", "") {
    collectives = std::make_unique<SparseCollectives>(
        [this](Collective c, int64_t b) { return network.collective_cost(c, b); }, p, compression);
  }
  static model::NetworkConfig config() {
    model::NetworkConfig c;
    c.latency_us = 1;
    c.bandwidth_gbps = 8;
    return c;
  }
  static model::CompressionConfig compression_config() {
    model::CompressionConfig c;
    c.profile = "tests/data/profile-unit-all.json";
    c.gpu_memory_gbytes_per_s = 1;
    return c;
  }
  model::FlatNetwork network;
  model::CompressionCost compression;
  std::unique_ptr<SparseCollectives> collectives;
};

constexpr int64_t kN = 1024, kK = 16;
constexpr double kDensity = 1.0 / 64;

TEST(SparseCollectives, LinkInferredFromTheRingAllgather) {
  for (int p : {2, 4, 8}) {
    Fixture f(p);
    EXPECT_DOUBLE_EQ(f.collectives->link().alpha_ns, 1000);
    EXPECT_DOUBLE_EQ(f.collectives->link().ns_per_byte, 1);
  }
}

// TopkA: ring allgather of 8k = 128 B per worker: (p-1)(1000 + 128). Every
// worker forwards p-1 blocks: (p-1) 128 bytes. The union of supports grows
// with p: p k pairs to scatter (32, 64, 128).
TEST(SparseCollectives, TopkAllgather) {
  const TimeNs time[] = {1128, 3 * 1128, 7 * 1128};
  const double bytes[] = {128, 384, 896};
  int i = 0;
  for (int p : {2, 4, 8}) {
    SparseCollectiveCost c = Fixture(p).collectives->topk_allgather(kK);
    EXPECT_EQ(c.time.total(), time[i]) << p;
    EXPECT_EQ(c.time.latency_ns, (p - 1) * 1000) << p;
    EXPECT_DOUBLE_EQ(c.bytes_sent, bytes[i]) << p;
    EXPECT_EQ(c.rounds, p - 1);
    EXPECT_EQ(c.result_pairs, p * kK);
    ++i;
  }
}

// Random-k, shared seed: ring allreduce of the 16 values (64 B):
// 2(p-1) 1000 + 2(p-1)/p 64 -> 2064, 6096, 14112; each worker sends
// 2(p-1)/p 64 = 64, 96, 112 bytes. No indices, no growth: k values out.
TEST(SparseCollectives, SharedIndexAllreduce) {
  const TimeNs time[] = {2064, 6096, 14112};
  const double bytes[] = {64, 96, 112};
  int i = 0;
  for (int p : {2, 4, 8}) {
    SparseCollectiveCost c = Fixture(p).collectives->shared_index_allreduce(kK);
    EXPECT_EQ(c.time.total(), time[i]) << p;
    EXPECT_DOUBLE_EQ(c.bytes_sent, bytes[i]) << p;
    EXPECT_EQ(c.result_pairs, kK);
    ++i;
  }
}

// gTop-k: r = ceil(log2 p) = 1, 2, 3 reduction rounds, each a message of k
// pairs (1000 + 128) and a top-k of 2k merged entries (1000), then r
// broadcast rounds (1000 + 128): 2r 1128 + r 1000 = 3256, 6512, 9768. The
// root sends r messages of 128 B. Re-selection after every merge: every
// message stays k pairs, no growth.
TEST(SparseCollectives, GTopk) {
  const TimeNs time[] = {3256, 6512, 9768};
  int r = 1;
  for (int p : {2, 4, 8}) {
    SparseCollectiveCost c = Fixture(p).collectives->gtopk(kK);
    EXPECT_EQ(c.time.total(), time[r - 1]) << p;
    EXPECT_EQ(c.time.transfer_ns, 2 * r * 128) << p;
    EXPECT_EQ(c.compute_ns, r * 1000) << p;
    EXPECT_DOUBLE_EQ(c.bytes_sent, r * 128.0) << p;
    EXPECT_EQ(c.rounds, 2 * r);
    EXPECT_EQ(c.result_pairs, kK);
    ++r;
  }
}

// SparDL: blocks of n/p = 512, 256, 128 elements keep kb = 8, 4, 2 pairs
// (64, 32, 16 B). Spar-Reduce-Scatter sends s = [1], [2, 1], [4, 2, 1]
// blocks in r = 1, 2, 3 rounds, each round re-selecting a block (1000):
// r 1000 + (p-1) block + r 1000 top-k; Spar-All-Gather (Bruck) r 1000 +
// (p-1) block. p = 2: 2000 + 1000 + 2 64 = 3128; p = 4: 4000 + 2000 + 2 96
// = 6192; p = 8: 6000 + 3000 + 2 112 = 9224. Bytes per worker: 2 (p-1)
// block = 128, 192, 224 = 2 (p-1)/p 8k. Re-selection: no growth.
TEST(SparseCollectives, SparDL) {
  const TimeNs time[] = {3128, 6192, 9224};
  const double bytes[] = {128, 192, 224};
  int i = 0;
  for (int p : {2, 4, 8}) {
    SparseCollectiveCost c = Fixture(p).collectives->spardl(kN, kDensity);
    EXPECT_EQ(c.time.total(), time[i]) << p;
    EXPECT_DOUBLE_EQ(c.bytes_sent, bytes[i]) << p;
    EXPECT_EQ(c.rounds, 2 * (i + 1));
    EXPECT_EQ(c.compute_ns, (i + 1) * 1000);
    EXPECT_EQ(c.result_pairs, kK);
    ++i;
  }
  // p = 6 (not a power of two): blocks of 171 keep 2 pairs (16 B); rounds
  // send s = [6 - 4, 2, 1] = 5 blocks; 3 rounds each phase:
  // 6000 + 3000 + 2 5 16 = 9160.
  EXPECT_EQ(Fixture(6).collectives->spardl(kN, kDensity).time.total(), 9160);
}

// Ok-Topk, kr = ceil(k/p) = 8, 4, 2 pairs per region per worker, regions of
// n/p = 512, 256, 128 elements, m = p-1 peers. A threshold-reuse iteration:
//   compare 4n = 4096; counts m (1000 + 4); split-and-reduce m (1000 + 8kr);
//   region reduction 4 region + 8 m kr, then its compare 4 region;
//   balance m (1000 + 4); allgatherv m (1000 + 8 kr).
// p = 2: 4096 + (2048 + 64) + 2048 + 4000 + (4 + 64 + 4 + 64) = 12392
// p = 4: 4096 + (1024 + 96) + 1024 + 12000 + 3 (4 + 32 + 4 + 32) = 18456
// p = 8: 4096 + (512 + 112) + 512 + 28000 + 7 (4 + 16 + 4 + 16) = 33512
// O(p) alpha: 4 (p-1) messages. Bytes per worker m (8 + 16 kr) = 136, 216,
// 280 (2 x (p-1)/p 8k plus counts): regions are re-selected to the global
// k, so nothing grows.
TEST(SparseCollectives, OkTopkThresholdReuse) {
  const TimeNs time[] = {12392, 18456, 33512};
  const double bytes[] = {136, 216, 280};
  int i = 0;
  for (int p : {2, 4, 8}) {
    SparseCollectiveCost c = Fixture(p).collectives->oktopk(kN, kK, false, false);
    EXPECT_EQ(c.time.total(), time[i]) << p;
    EXPECT_EQ(c.time.latency_ns - c.compute_ns, 4 * (p - 1) * 1000) << p;
    EXPECT_DOUBLE_EQ(c.bytes_sent, bytes[i]) << p;
    EXPECT_EQ(c.rounds, 4 * (p - 1));
    EXPECT_EQ(c.result_pairs, kK);
    ++i;
  }
}

// An exact-threshold iteration (p = 4) drops the compare (the worker ran
// an exact top-k itself) and allgathers every reduced value of each region:
// up to u = min(p kr, region) = 16 values (union growth within a region),
// 3 (1000 + 64) = 3192, then a top-k of p u = 64 values (1000):
// 18456 - 4096 + 3192 + 1000 = 18552; bytes 216 + 3 64 = 408.
// Repartition adds a dense allreduce of p-1 int32 boundaries (12 B):
// 2 3 1000 + 2 3/4 12 = 6018; bytes 2 3/4 12 = 18.
TEST(SparseCollectives, OkTopkExactThresholdAndRepartition) {
  Fixture f(4);
  SparseCollectiveCost exact = f.collectives->oktopk(kN, kK, true, false);
  EXPECT_EQ(exact.time.total(), 18552);
  EXPECT_DOUBLE_EQ(exact.bytes_sent, 408);
  SparseCollectiveCost both = f.collectives->oktopk(kN, kK, false, true);
  EXPECT_EQ(both.time.total(), 18456 + 6018);
  EXPECT_DOUBLE_EQ(both.bytes_sent, 216 + 18);
}

// TopkDSA (recursive doubling with union): round r sends min(2^r k, n)
// pairs, dense (4n = 4096 B) once that is smaller. n = 1024: 128, 256, 512
// B -> p = 2: 1128; p = 4: 2000 + 384; p = 8: 3000 + 896. The result holds
// up to p k pairs. With n = 64 the support saturates: rounds of 128, 256 and
// then 256 dense bytes (64 pairs would be 512): 3000 + 640.
TEST(SparseCollectives, TopkDsaSupportsGrowByUnion) {
  const TimeNs time[] = {1128, 2384, 3896};
  const double bytes[] = {128, 384, 896};
  int i = 0;
  for (int p : {2, 4, 8}) {
    SparseCollectiveCost c = Fixture(p).collectives->topk_dsa(kN, kK);
    EXPECT_EQ(c.time.total(), time[i]) << p;
    EXPECT_DOUBLE_EQ(c.bytes_sent, bytes[i]) << p;
    EXPECT_EQ(c.result_pairs, p * kK);
    ++i;
  }
  SparseCollectiveCost saturated = Fixture(8).collectives->topk_dsa(64, kK);
  EXPECT_EQ(saturated.time.total(), 3640);
  EXPECT_EQ(saturated.result_pairs, 64);
}

// CaSync ring (SeCoPa T_cpr), K partitions of e = n/K elements with kp =
// floor(e/64) pairs: 2(p-1) hops of (1000 + 8 kp) + p encodes (1000) + p
// decodes (4e + 8kp) + (p-1) merges (12e).
// p = 2, K = 1: e = 1024, kp = 16: 2 (1000 + 128) + 2000 + 2 4224 + 12288 = 24992
// p = 2, K = 2: e = 512, kp = 8: 2 (1000 + 64) + 2000 + 2 2112 + 6144 = 14496
// p = 4, K = 4: e = 256, kp = 4: 6 (1000 + 32) + 4000 + 4 1056 + 3 3072 = 23632
// p = 8, K = 8: e = 128, kp = 2: 14 (1000 + 16) + 8000 + 8 528 + 7 1536 = 37200
// Bytes per worker 2(p-1) 8kp: 256, 128, 192, 224.
TEST(SparseCollectives, CasyncRing) {
  struct Case {
    int p, K;
    TimeNs time;
    double bytes;
  } cases[] = {{2, 1, 24992, 256}, {2, 2, 14496, 128}, {4, 4, 23632, 192}, {8, 8, 37200, 224}};
  for (const auto& c : cases) {
    SparseCollectiveCost cost = Fixture(c.p).collectives->casync_ring(kN, kDensity, c.K, policy::Sparsifier::kTopk);
    EXPECT_EQ(cost.time.total(), c.time) << c.p << " " << c.K;
    EXPECT_DOUBLE_EQ(cost.bytes_sent, c.bytes) << c.p << " " << c.K;
    EXPECT_EQ(cost.result_pairs, 0);  // decoded inside the ring
  }
}

// The dispatcher reads k from the contributions (8 B pairs, 4 B values).
TEST(SparseCollectives, BucketDispatch) {
  Fixture f(4);
  policy::Bucket b;
  b.collective = Collective::kAllreduce;
  b.elements = kN;
  b.density = kDensity;
  Contributions pairs;
  for (int w = 0; w < 4; ++w) pairs.add(8 * kK);
  b.sparse = policy::SparseAllreduce::kGTopk;
  EXPECT_EQ(f.collectives->cost(b, pairs).time.total(), 6512);
  b.sparse = policy::SparseAllreduce::kSparDL;
  EXPECT_EQ(f.collectives->cost(b, pairs).time.total(), 6192);
  b.sparse = policy::SparseAllreduce::kOkTopk;
  b.exact_threshold = true;
  EXPECT_EQ(f.collectives->cost(b, pairs).time.total(), 18552);
  Contributions values;
  for (int w = 0; w < 4; ++w) values.add(4 * kK);
  b.sparse = policy::SparseAllreduce::kSharedIndices;
  EXPECT_EQ(f.collectives->cost(b, values).time.total(), 6096);
  b.sparse = policy::SparseAllreduce::kNone;
  EXPECT_THROW(f.collectives->cost(b, pairs), std::logic_error);
}

TEST(SparseCollectives, OneWorkerIsFree) {
  Fixture f(1);
  EXPECT_EQ(f.collectives->gtopk(kK).time.total(), 0);
  EXPECT_EQ(f.collectives->spardl(kN, kDensity).time.total(), 0);
  EXPECT_EQ(f.collectives->oktopk(kN, kK, true, true).time.total(), 0);
}

}  // namespace
}  // namespace sparsefuse::sim
