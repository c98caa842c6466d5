#include "runtime/sparse_allreduce.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "runtime/oracle_sparse.h"

namespace sparsefuse::runtime {
namespace {

using policy::Bucket;
using policy::SparseAllreduce;

// P ranks as threads of one process: every collective goes through a shared
// board guarded by a barrier (write, sync, read, sync).
class Board {
 public:
  explicit Board(int ranks) : ranks_(ranks), sync_(ranks), ints_(size_t(ranks)), pairs_(size_t(ranks)),
                              floats_(size_t(ranks)) {}
  int ranks_;
  std::barrier<> sync_;
  std::vector<std::vector<int64_t>> ints_;
  std::vector<Pairs> pairs_;
  std::vector<std::vector<float>> floats_;
};

class ThreadComm : public Communicator {
 public:
  ThreadComm(Board& board, int rank) : board_(board), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return board_.ranks_; }
  void allreduce_sum(const float* send, float* recv, int64_t n) override {
    board_.floats_[rank_].assign(send, send + n);
    board_.sync_.arrive_and_wait();
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < size(); ++r) sum += board_.floats_[r][i];
      recv[i] = sum;
    }
    board_.sync_.arrive_and_wait();
  }
  void reduce_scatter_sum(const float*, float*, int64_t) override { ADD_FAILURE() << "not used"; }
  void allgather_values(const float*, float*, int64_t) override { ADD_FAILURE() << "not used"; }
  void allreduce_sum(double*, int64_t) override { ADD_FAILURE() << "not used"; }
  void allreduce_max(double*, int64_t) override { ADD_FAILURE() << "not used"; }
  std::vector<int64_t> allgather(const int64_t* mine, int n) override {
    board_.ints_[rank_].assign(mine, mine + n);
    board_.sync_.arrive_and_wait();
    std::vector<int64_t> all;
    for (int r = 0; r < size(); ++r) all.insert(all.end(), board_.ints_[r].begin(), board_.ints_[r].end());
    board_.sync_.arrive_and_wait();
    return all;
  }
  void allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts, float* all_values,
                  int32_t* all_indices) override {
    board_.pairs_[rank_] = {std::vector<float>(values, values + counts[rank_]),
                            std::vector<int32_t>(indices, indices + counts[rank_])};
    board_.sync_.arrive_and_wait();
    for (int r = 0; r < size(); ++r) {
      EXPECT_EQ(int64_t(board_.pairs_[r].size()), counts[r]) << "rank " << r << "'s count";
      all_values = std::copy(board_.pairs_[r].values.begin(), board_.pairs_[r].values.end(), all_values);
      all_indices = std::copy(board_.pairs_[r].indices.begin(), board_.pairs_[r].indices.end(), all_indices);
    }
    board_.sync_.arrive_and_wait();
  }
  void barrier() override { board_.sync_.arrive_and_wait(); }

 private:
  Board& board_;
  int rank_;
};

// Runs BODY(comm) on P threads.
void on_ranks(int P, const std::function<void(Communicator&)>& body) {
  Board board(P);
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r) {
    threads.emplace_back([&, r] {
      ThreadComm comm(board, r);
      body(comm);
    });
  }
  for (auto& t : threads) t.join();
}

Pairs pairs(std::vector<int32_t> indices, std::vector<float> values) { return {std::move(values), std::move(indices)}; }

TEST(SparsePairs, MergeAddsCommonIndicesReceiverFirst) {
  Pairs m = merge_pairs(pairs({1, 4, 7}, {1.0f, 2.0f, 3.0f}), pairs({0, 4, 9}, {10.0f, 20.0f, 30.0f}));
  EXPECT_EQ(m.indices, (std::vector<int32_t>{0, 1, 4, 7, 9}));
  EXPECT_EQ(m.values, (std::vector<float>{10.0f, 1.0f, 22.0f, 3.0f, 30.0f}));
}

TEST(SparsePairs, LargestKeepsMagnitudesAndBreaksTiesByLowerIndex) {
  Pairs p = largest_pairs(pairs({0, 2, 3, 5, 8}, {1.0f, -5.0f, 2.0f, -2.0f, 4.0f}), 3);
  EXPECT_EQ(p.indices, (std::vector<int32_t>{2, 3, 8}));  // |-2| at 5 ties |2| at 3: 3 wins
  EXPECT_EQ(p.values, (std::vector<float>{-5.0f, 2.0f, 4.0f}));
  EXPECT_EQ(largest_pairs(p, 10).size(), 3u);
}

TEST(SparDLSchedule, HalvesGroupsAndPairsEveryRank) {
  // 5 ranks: lower half {0,1,2}, upper {3,4}; lower 2 has no twin and sends to 4.
  EXPECT_EQ(halving_step(0, 5, 0).partner, 3);
  EXPECT_EQ(halving_step(0, 5, 2).partner, 4);
  EXPECT_EQ(halving_step(0, 5, 4).partner, 1);
  EXPECT_EQ(halving_step(0, 5, 4).keep_lo, 3);
  EXPECT_EQ(halving_step(0, 5, 1).keep_hi, 3);
  EXPECT_EQ(ceil_log2(5), 3);
  EXPECT_EQ(ceil_log2(4), 2);
  EXPECT_EQ(spardl_block(10, 4), 3);
  EXPECT_EQ(spardl_block_count(10, 4, 0.5), 1);
}

// gTop-k on 2 ranks, k = 2, hand-computed: rank 1 sends {1: 3, 5: -1} to
// rank 0, which holds {1: 1, 2: 2}; the sum {1: 4, 2: 2, 5: -1} keeps its
// two largest, {1: 4, 2: 2}, and every rank gets them.
TEST(SparseAllreduce, GTopkTwoRanksByHand) {
  on_ranks(2, [](Communicator& comm) {
    BucketExchange x;
    x.bucket.sparse = SparseAllreduce::kGTopk;
    x.bucket.elements = 6;
    Pairs mine = comm.rank() == 0 ? pairs({1, 2}, {1.0f, 2.0f}) : pairs({1, 5}, {3.0f, -1.0f});
    x.values = mine.values, x.indices = mine.indices;
    run_sparse_allreduce(x, comm);
    EXPECT_EQ(x.gathered_indices, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(x.gathered_values, (std::vector<float>{4.0f, 2.0f}));
  });
}

// SparDL on 2 ranks, 4 elements, density 0.5 (blocks of 2, one pair each),
// by hand: rank 0 keeps block 0 and sends {3: 5} to rank 1, which keeps
// block 1 and sends {1: 2}. Rank 0: {0: 1, 1: 2} -> {1: 2}; rank 1:
// {2: -1, 3: 1 + 5} -> {3: 6}; gathered: {1: 2, 3: 6}.
TEST(SparseAllreduce, SparDLTwoRanksByHand) {
  on_ranks(2, [](Communicator& comm) {
    BucketExchange x;
    x.bucket.sparse = SparseAllreduce::kSparDL;
    x.bucket.elements = 4;
    x.bucket.density = 0.5;
    Pairs mine = comm.rank() == 0 ? pairs({0, 3}, {1.0f, 5.0f}) : pairs({1, 2, 3}, {2.0f, -1.0f, 1.0f});
    x.values = mine.values, x.indices = mine.indices;
    run_sparse_allreduce(x, comm);
    EXPECT_EQ(x.gathered_indices, (std::vector<int32_t>{1, 3}));
    EXPECT_EQ(x.gathered_values, (std::vector<float>{2.0f, 6.0f}));
  });
}

// CaSync on 2 ranks, 4 elements in K = 2 partitions, density 0.5 (one pair
// each), by hand. Rank 0 holds {1, -4, 2, 0.5}, rank 1 {3, 1, -1, 3}.
// Partition [0, 2) starts at rank 0: {1: -4}; rank 1 adds its own,
// {0: 3, 1: -3}, and keeps one (|3| ties: index 0): {0: 3}. Partition [2, 4)
// starts at rank 1: {3: 3}; rank 0: {2: 2, 3: 3.5} -> {3: 3.5}. Each rank
// sent one pair in the hop and one finished partition.
// A CaSync bucket over GRADIENT (the ring reads it dense), density 0.5, K = PARTITIONS.
BucketExchange casync_exchange(std::vector<float>& gradient, int partitions) {
  BucketExchange x;
  x.bucket.sparse = SparseAllreduce::kCaSyncRing;
  x.bucket.elements = int64_t(gradient.size());
  x.bucket.density = 0.5;
  x.bucket.partitions = partitions;
  x.dense = gradient.data();
  return x;
}

TEST(SparseAllreduce, CaSyncRingTwoRanksByHand) {
  on_ranks(2, [](Communicator& comm) {
    std::vector<float> gradient = comm.rank() == 0 ? std::vector<float>{1.0f, -4.0f, 2.0f, 0.5f}
                                                   : std::vector<float>{3.0f, 1.0f, -1.0f, 3.0f};
    BucketExchange x = casync_exchange(gradient, 2);
    run_sparse_allreduce(x, comm);
    EXPECT_EQ(x.gathered_indices, (std::vector<int32_t>{0, 3}));
    EXPECT_EQ(x.gathered_values, (std::vector<float>{3.0f, 3.5f}));
    EXPECT_EQ(x.sent_count, 2);
  });
}

TEST(SparseAllreduce, CaSyncRingRefusesMorePartitionsThanRanks) {
  on_ranks(2, [](Communicator& comm) {
    std::vector<float> gradient(9, 1.0f);
    BucketExchange x = casync_exchange(gradient, 3);
    EXPECT_THROW(run_sparse_allreduce(x, comm), std::logic_error);
  });
}

TEST(CasyncLayout, PartitionsOfCeilingSizeTheLastShorterOrEmpty) {
  const CasyncLayout parts(9, 4, 0.5);  // 3, 3, 3, 0 elements
  EXPECT_EQ(parts.count, 4);
  EXPECT_EQ(parts.begin(2), 6);
  EXPECT_EQ(parts.end(2), 9);
  EXPECT_EQ(parts.pairs(2), 1);
  EXPECT_EQ(parts.begin(3), 9);
  EXPECT_EQ(parts.pairs(3), 0);  // exact_count would say 1: clamped to the empty partition
}

// Each rank's local top-k of a random vector, as the engine's payload.
Pairs local_topk(const std::vector<float>& dense, int64_t k) {
  Pairs all;
  for (size_t i = 0; i < dense.size(); ++i) all.indices.push_back(int32_t(i)), all.values.push_back(dense[i]);
  return largest_pairs(all, k);
}

// Property: for every algorithm and rank count (powers of two and not), the
// result on every rank is the same and equals the oracle's naive dense
// replay (oracle_sparse.h; bit for bit where it says so, else within the
// allreduce bound). Ok-Topk runs an exact iteration, then one reusing the
// global threshold it set (which must equal the oracle's).
TEST(SparseAllreduce, MatchesTheOraclesDenseReplayOnAnyRankCount) {
  const int64_t n = 37;
  std::map<int, float> engine_threshold, oracle_threshold;  // per rank count: the first Ok-Topk pass sets them
  for (SparseAllreduce a : {SparseAllreduce::kGTopk, SparseAllreduce::kSparDL, SparseAllreduce::kTopkDsa,
                            SparseAllreduce::kOkTopk, SparseAllreduce::kOkTopk, SparseAllreduce::kCaSyncRing}) {
    for (int P : {1, 2, 3, 4, 5, 7}) {
      Bucket b;
      b.sparse = a, b.elements = n, b.density = 0.2, b.sent_elements = 7;
      b.exact_threshold = a == SparseAllreduce::kOkTopk && !engine_threshold.count(P);
      b.partitions = P % 2 ? P : std::max(1, P / 2);  // CaSync: K <= P, uneven parts
      // CaSync takes the gradient dense (GRADIENTS), the others a local top-k.
      const bool casync = a == SparseAllreduce::kCaSyncRing;
      std::vector<std::vector<float>> gradients;
      std::vector<std::vector<float>> dense(size_t(P), std::vector<float>(size_t(n), 0.0f));
      std::vector<Pairs> sent;
      std::mt19937 rng(uint32_t(P * 31 + int(a)));
      std::normal_distribution<float> normal;
      for (int r = 0; r < P; ++r) {
        std::vector<float> g(static_cast<size_t>(n));
        for (float& v : g) v = normal(rng);
        sent.push_back(local_topk(g, b.sent_elements));
        for (size_t j = 0; j < sent[r].size(); ++j) dense[r][sent[r].indices[j]] = sent[r].values[j];
        if (casync) dense[r] = g;
        gradients.push_back(g);
      }
      const std::vector<float> expected = oracle::sparse_allreduce_sum(b, dense, oracle_threshold[P]);  // set or read
      std::vector<std::vector<float>> got(size_t(P), std::vector<float>(size_t(n), 0.0f));
      float got_threshold = 0.0f;
      const float reused = b.exact_threshold || a != SparseAllreduce::kOkTopk ? 0.0f : engine_threshold.at(P);
      on_ranks(P, [&](Communicator& comm) {
        BucketExchange x;
        x.bucket = b;
        x.values = sent[comm.rank()].values, x.indices = sent[comm.rank()].indices;
        if (casync) x.dense = gradients[size_t(comm.rank())].data();
        float threshold = reused;
        x.reused_threshold = &threshold;
        run_sparse_allreduce(x, comm);
        if (comm.rank() == 0) got_threshold = threshold;
        for (size_t j = 0; j < x.gathered_indices.size(); ++j) got[comm.rank()][x.gathered_indices[j]] = x.gathered_values[j];
      });
      for (int r = 0; r < P; ++r) {
        for (int64_t i = 0; i < n; ++i) {
          float bound = 0.0f;
          if (!oracle::sparse_allreduce_exact(b)) {
            for (int q = 0; q < P; ++q) bound += 4.0f * 1.2e-7f * std::fabs(dense[q][i]);
          }
          ASSERT_LE(std::fabs(got[r][i] - expected[i]), bound)
              << sparse_allreduce_name(a) << " P=" << P << " rank " << r << " element " << i;
        }
      }
      if (a == SparseAllreduce::kOkTopk) {
        engine_threshold[P] = got_threshold;
        ASSERT_EQ(got_threshold, oracle_threshold[P]) << "P=" << P;
        ASSERT_GT(got_threshold, 0.0f) << "P=" << P;
      }
      if (a == SparseAllreduce::kGTopk) {  // exactly k survive the tree
        int nonzero = 0;
        for (float v : got[0]) nonzero += v != 0.0f;
        EXPECT_EQ(nonzero, 7) << "P=" << P;
      }
      if (casync) {  // each partition keeps exactly its pairs
        const CasyncLayout parts(n, b.partitions, b.density);
        for (int j = 0; j < parts.count; ++j) {
          int nonzero = 0;
          for (int64_t i = parts.begin(j); i < parts.end(j); ++i) nonzero += got[0][i] != 0.0f;
          EXPECT_EQ(nonzero, parts.pairs(j)) << "P=" << P << " partition " << j;
        }
      }
      if (a == SparseAllreduce::kSparDL) {  // at most kb per block survive
        const int64_t block = spardl_block(n, P), kb = spardl_block_count(n, P, b.density);
        for (int64_t first = 0; first < n; first += block) {
          int nonzero = 0;
          for (int64_t i = first; i < std::min(n, first + block); ++i) nonzero += got[0][i] != 0.0f;
          EXPECT_LE(nonzero, kb) << "P=" << P << " block at " << first;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparsefuse::runtime
