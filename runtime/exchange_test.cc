#include "runtime/exchange.h"
#include "runtime/pair_gather.h"

#include <gtest/gtest.h>

#include <numeric>

namespace sparsefuse::runtime {
namespace {

using policy::Alignment;
using policy::Bucket;

// Two tensors of 4 and 6 elements.
ModelLayout two_tensors() {
  ModelLayout layout;
  layout.offset = {0, 4, 10};
  layout.shape = {{4}, {6}};
  return layout;
}

Bucket bucket(Collective c, int first, int end, int64_t elements, int64_t dense, Alignment a = Alignment::kFixed) {
  Bucket b;
  b.first_tensor = first;
  b.end_tensor = end;
  b.collective = c;
  b.elements = elements;
  b.dense_elements = dense;
  b.alignment = a;
  return b;
}

RangeSelection selection(int first, int end, std::vector<int32_t> indices, std::vector<float> values) {
  RangeSelection r{first, end, {}};
  r.selection.indices = std::move(indices);
  r.selection.values = std::move(values);
  return r;
}

// Rank 0 of two, with rank 1's contribution scripted: its allgather values
// (count, fingerprint) and its pairs, or the values it adds to an allreduce.
class ScriptedPeer : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void allreduce_sum(const float* send, float* recv, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) recv[i] = send[i] + peer_values[size_t(i)];
  }
  // Rank 0 keeps block 0: its own values plus rank 1's first N.
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] + peer_values[size_t(i)];
  }
  void allgather_values(const float* in, float* out, int64_t n) override {
    std::copy(in, in + n, out);
    std::copy(peer_values.begin(), peer_values.begin() + n, out + n);
  }
  void allreduce_sum(double*, int64_t) override {}
  void allreduce_max(double*, int64_t) override {}
  std::vector<int64_t> allgather(const int64_t* mine, int n) override {
    std::vector<int64_t> all(mine, mine + n);
    all.insert(all.end(), peer_gather.begin(), peer_gather.end());
    return all;
  }
  // A peer that sends fewer pairs than it announced leaves the rest of its
  // block as it was, as a short MPI receive does.
  void allgatherv(const float* values, const int32_t* indices, const std::vector<int64_t>& counts, float* all_values,
                  int32_t* all_indices) override {
    std::copy(values, values + counts[0], all_values);
    std::copy(indices, indices + counts[0], all_indices);
    const size_t sent = std::min(size_t(counts[1]), peer_values.size());
    std::copy(peer_values.begin(), peer_values.begin() + long(sent), all_values + counts[0]);
    std::copy(peer_indices.begin(), peer_indices.begin() + long(sent), all_indices + counts[0]);
  }
  // Rank 1's announcement: its count, tag and the checksum of its pairs.
  void announce(int64_t tag) {
    peer_gather = {int64_t(peer_values.size()), tag,
                   int64_t(pair_checksum(peer_values.data(), peer_indices.data(), int64_t(peer_values.size())))};
  }
  void barrier() override {}
  std::vector<int64_t> peer_gather;
  std::vector<float> peer_values;
  std::vector<int32_t> peer_indices;
};

TEST(BucketSegments, AllreduceCarriesTheUncompressedTensors) {
  ModelLayout layout = two_tensors();
  auto segments = bucket_segments(bucket(Collective::kAllreduce, 0, 2, 10, 10), layout, {-1, -1}, {});
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_TRUE(segments[0].included && segments[1].included);
}

TEST(BucketSegments, HybridSplitsTheRangeBetweenAllreduceAndAllgather) {
  ModelLayout layout = two_tensors();
  std::vector<RangeSelection> made = {selection(1, 2, {0, 5}, {1, 2})};
  auto dense = bucket_segments(bucket(Collective::kAllreduce, 0, 2, 4, 4), layout, {-1, 0}, made);
  EXPECT_TRUE(dense[0].included);
  EXPECT_FALSE(dense[1].included);
  auto sparse = bucket_segments(bucket(Collective::kAllgather, 0, 2, 6, 0), layout, {-1, 0}, made);
  EXPECT_FALSE(sparse[0].included);
  EXPECT_TRUE(sparse[1].included);
  EXPECT_EQ(sparse[1].selection, 0);
  // With dense elements in the allgather, the uncompressed tensor rides along as pairs.
  auto both = bucket_segments(bucket(Collective::kAllgather, 0, 2, 10, 4), layout, {-1, 0}, made);
  EXPECT_TRUE(both[0].included && both[1].included);
}

TEST(BucketSegments, RejectsBucketsTheRuntimeCannotInterpret) {
  ModelLayout layout = two_tensors();
  std::vector<RangeSelection> spanning = {selection(0, 2, {0}, {1})};
  EXPECT_THROW(bucket_segments(bucket(Collective::kAllgather, 0, 1, 4, 0), layout, {0, 0}, spanning),
               std::logic_error);
  EXPECT_THROW(bucket_segments(bucket(Collective::kAllreduce, 0, 2, 7, 7), layout, {-1, -1}, {}), std::logic_error);
  // A sparse allreduce carries its range's selection: without one, nothing adds up.
  Bucket sparse_allreduce = bucket(Collective::kAllreduce, 0, 2, 10, 0);
  sparse_allreduce.sparse = policy::SparseAllreduce::kGTopk;
  EXPECT_THROW(bucket_segments(sparse_allreduce, layout, {-1, -1}, {}), std::logic_error);
  std::vector<RangeSelection> whole = {selection(0, 2, {1, 7}, {1, 2})};
  auto segments = bucket_segments(sparse_allreduce, layout, {0, 0}, whole);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_TRUE(segments[0].included);
}

TEST(BucketFingerprint, ChangesWithEveryFieldThatMustMatch) {
  Bucket b = bucket(Collective::kAllgather, 0, 2, 10, 0, Alignment::kExchangeCounts);
  const uint64_t base = bucket_fingerprint(b, 3, 1);
  EXPECT_NE(base, bucket_fingerprint(b, 4, 1));
  EXPECT_NE(base, bucket_fingerprint(b, 3, 2));
  Bucket other = b;
  other.end_tensor = 1;
  EXPECT_NE(base, bucket_fingerprint(other, 3, 1));
  other = b;
  other.alignment = Alignment::kEqualSlices;
  EXPECT_NE(base, bucket_fingerprint(other, 3, 1));
  other = b;
  other.communicator = 1;
  EXPECT_NE(base, bucket_fingerprint(other, 3, 1));
  other = b;
  other.first_element = 5;
  EXPECT_NE(base, bucket_fingerprint(other, 3, 1));
  other = b;
  other.sent_elements = 99;  // may differ between ranks
  EXPECT_EQ(base, bucket_fingerprint(other, 3, 1));
}

// Rank 0 sends tensor 1's selection {0 -> 1.5, 5 -> -2}; rank 1 sends
// {5 -> 4, 2 -> 1}. The average lands in tensor 1 (offset 4); tensor 0 is
// not this bucket's.
BucketExchange gathered_bucket(Alignment alignment, ScriptedPeer& peer) {
  ModelLayout layout = two_tensors();
  std::vector<RangeSelection> made = {selection(1, 2, {0, 5}, {1.5f, -2.0f})};
  std::vector<float> send(10, 9.0f);
  send[4] = 1.5f, send[9] = -2.0f;
  BucketExchange x;
  x.bucket = bucket(Collective::kAllgather, 0, 2, 6, 0, alignment);
  x.segments = bucket_segments(x.bucket, layout, {-1, 0}, made);
  fill_payload(x, layout, send.data(), made);
  peer.peer_values = {4.0f, 1.0f};
  peer.peer_indices = {4 + 5, 4 + 2};  // relative to the range start
  peer.announce(int64_t(bucket_fingerprint(x.bucket, 0, 0)));
  return x;
}

// DeAR's half of an allreduce: the whole model (10 elements) over 2 ranks is
// 2 blocks of 5, sent from the gradient itself; rank 0 keeps block 0's
// average in its shard.
TEST(Exchange, ReduceScatterKeepsThisRanksAveragedBlock) {
  ModelLayout layout = two_tensors();
  std::vector<float> send(10);
  std::iota(send.begin(), send.end(), 1.0f);  // 1..10
  BucketExchange x;
  x.bucket = bucket(Collective::kReduceScatter, 0, 2, 10, 10);
  x.segments = bucket_segments(x.bucket, layout, {-1, -1}, {});
  fill_payload(x, layout, send.data(), {});
  EXPECT_EQ(x.dense, send.data());  // no copy
  EXPECT_FALSE(x.packs_payload());
  ScriptedPeer peer;
  peer.peer_values = {10, 20, 30, 40, 50};
  run_collective(x, peer);
  EXPECT_EQ(x.shard, 5);
  EXPECT_EQ(x.sent_count, 10);
  EXPECT_EQ(x.bytes_sent(), 40);
  std::vector<float> shard(5, -1.0f), aggregate(10, -7.0f), scratch;
  x.shard_out = shard.data();
  apply_result(x, layout, 2, aggregate.data(), scratch);
  EXPECT_EQ(shard, (std::vector<float>{5.5f, 11, 16.5f, 22, 27.5f}));  // (own + peer's block 0) / 2
  EXPECT_EQ(aggregate, std::vector<float>(10, -7.0f));  // the all-gather writes it, not this
}

// A range that does not divide into P blocks is padded with zeros in a copy.
TEST(Exchange, ReduceScatterPadsARangeThatDoesNotDivide) {
  ModelLayout layout;
  layout.offset = {0, 5};
  layout.shape = {{5}};
  std::vector<float> send = {1, 2, 3, 4, 5};
  BucketExchange x;
  x.bucket = bucket(Collective::kReduceScatter, 0, 1, 5, 5);
  x.segments = bucket_segments(x.bucket, layout, {-1}, {});
  fill_payload(x, layout, send.data(), {});
  ScriptedPeer peer;
  peer.peer_values = {100, 200, 300};
  run_collective(x, peer);
  EXPECT_EQ(x.shard, 3);
  EXPECT_EQ(x.values, (std::vector<float>{1, 2, 3, 4, 5, 0}));  // the padded copy that was sent
  EXPECT_EQ(x.gathered_values, (std::vector<float>{101, 202, 303}));
  EXPECT_EQ(send, (std::vector<float>{1, 2, 3, 4, 5}));  // the gradient untouched
}

TEST(Exchange, AllgatherRoundTripAveragesByPerRankCounts) {
  ScriptedPeer peer;
  BucketExchange x = gathered_bucket(Alignment::kExchangeCounts, peer);
  EXPECT_EQ(x.indices, (std::vector<int32_t>{4, 9}));  // range-relative
  EXPECT_EQ(x.bytes_sent(), 16);
  run_collective(x, peer);
  EXPECT_EQ(x.counts, (std::vector<int64_t>{2, 2}));
  std::vector<float> aggregate(10, -7.0f), scratch;
  apply_result(x, two_tensors(), 2, aggregate.data(), scratch);
  std::vector<float> want = {-7, -7, -7, -7, 0.75f, 0, 0.5f, 0, 0, 1.0f};
  EXPECT_EQ(aggregate, want);
  // Tensor 0 is in the range but not carried: the scatter went through the
  // scratch buffer, which a second bucket of the same size reuses.
  ASSERT_EQ(scratch.size(), 10u);
  const float* kept = scratch.data();
  aggregate.assign(10, -7.0f);
  apply_result(x, two_tensors(), 2, aggregate.data(), scratch);
  EXPECT_EQ(aggregate, want);
  EXPECT_EQ(scratch.data(), kept);
}

// A bucket that carries its whole range is scattered straight into the
// aggregate: only its range is zero-filled, nothing outside it is touched
// and no scratch memory is used.
TEST(Exchange, WholeRangeAllgatherScattersInPlace) {
  ModelLayout layout = two_tensors();
  std::vector<RangeSelection> made = {selection(1, 2, {0, 5}, {1.5f, -2.0f})};
  std::vector<float> send(10, 9.0f);
  send[4] = 1.5f, send[9] = -2.0f;
  BucketExchange x;
  x.bucket = bucket(Collective::kAllgather, 1, 2, 6, 0, Alignment::kExchangeCounts);
  x.segments = bucket_segments(x.bucket, layout, {-1, 0}, made);
  fill_payload(x, layout, send.data(), made);
  EXPECT_EQ(x.indices, (std::vector<int32_t>{0, 5}));
  ScriptedPeer peer;
  peer.peer_values = {4.0f};
  peer.peer_indices = {2};
  peer.announce(int64_t(bucket_fingerprint(x.bucket, 0, 0)));
  run_collective(x, peer);
  std::vector<float> aggregate(10, -7.0f), scratch;
  apply_result(x, layout, 2, aggregate.data(), scratch);
  EXPECT_EQ(aggregate, (std::vector<float>{-7, -7, -7, -7, 0.75f, 0, 2.0f, 0, 0, -1.0f}));
  EXPECT_TRUE(scratch.empty());
}

TEST(Exchange, EqualSlicesLosesWhatTheSeedReceiverLoses) {
  ScriptedPeer peer;
  BucketExchange x = gathered_bucket(Alignment::kEqualSlices, peer);
  peer.peer_values = {4.0f, 1.0f, 3.0f};  // rank 1 sends three pairs: 5 in all, slices of 2, one dropped
  peer.peer_indices = {9, 6, 4};
  peer.announce(int64_t(bucket_fingerprint(x.bucket, 0, 0)));
  run_collective(x, peer);
  std::vector<float> aggregate(10, 0.0f), scratch;
  apply_result(x, two_tensors(), 2, aggregate.data(), scratch);
  // Slice 0 = rank 0's pairs; slice 1 = (9 -> 4), (6 -> 1); (4 -> 3) is the dropped tail.
  EXPECT_EQ(x.lost, 1);
  std::vector<float> want = {0, 0, 0, 0, 0.75f, 0, 0.5f, 0, 0, 1.0f};
  EXPECT_EQ(aggregate, want);
}

TEST(Exchange, PadToMaxPadsWithZeroContributions) {
  ScriptedPeer peer;
  BucketExchange x = gathered_bucket(Alignment::kPadToMax, peer);
  peer.peer_values = {4.0f, 1.0f, 3.0f};
  peer.peer_indices = {9, 6, 4};
  peer.announce(int64_t(bucket_fingerprint(x.bucket, 0, 0)));
  run_collective(x, peer);
  EXPECT_EQ(x.counts, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(x.bytes_sent(), 24);
  std::vector<float> aggregate(10, 0.0f), scratch;
  apply_result(x, two_tensors(), 2, aggregate.data(), scratch);
  std::vector<float> want = {0, 0, 0, 0, 2.25f, 0, 0.5f, 0, 0, 1.0f};
  EXPECT_EQ(aggregate, want);
}

TEST(Exchange, MismatchedSequencesAndUnequalFixedCountsFail) {
  ScriptedPeer peer;
  BucketExchange x = gathered_bucket(Alignment::kExchangeCounts, peer);
  peer.peer_gather[1] ^= 1;
  try {
    run_collective(x, peer);
    FAIL() << "a different fingerprint must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("flushed different bucket sequences"), std::string::npos) << e.what();
  }
  ScriptedPeer fixed_peer;
  BucketExchange y = gathered_bucket(Alignment::kFixed, fixed_peer);
  fixed_peer.peer_gather[0] = 3;
  EXPECT_THROW(run_collective(y, fixed_peer), std::runtime_error);
}

// Rank 1 announces its two pairs, then sends one (a short send) or a changed
// one: its block does not match its checksum, and the error names rank 1.
TEST(Exchange, APayloadThatDisagreesWithItsCountNamesTheRank) {
  const std::string expected =
      "rank 1's pairs in flush #0 of iteration 0 (allgather of tensors [0, 2)) are not the 2 it announced";
  for (const bool short_send : {true, false}) {
    ScriptedPeer peer;
    BucketExchange x = gathered_bucket(Alignment::kExchangeCounts, peer);
    if (short_send) {
      peer.peer_values.pop_back(), peer.peer_indices.pop_back();
    } else {
      peer.peer_values[1] = 1.5f;
    }
    try {
      run_collective(x, peer);
      FAIL() << (short_send ? "a short send" : "a changed pair") << " must fail";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

TEST(PairChecksum, SeesOrderCountAndBits) {
  const std::vector<float> v{1.0f, 2.0f};
  const std::vector<int32_t> i{3, 4}, swapped{4, 3};
  const uint64_t base = pair_checksum(v.data(), i.data(), 2);
  EXPECT_EQ(base, pair_checksum(v.data(), i.data(), 2));
  EXPECT_NE(base, pair_checksum(v.data(), swapped.data(), 2));
  EXPECT_NE(base, pair_checksum(v.data(), i.data(), 1));
  const std::vector<float> zeros{0.0f}, minus{-0.0f};
  EXPECT_NE(pair_checksum(zeros.data(), i.data(), 1), pair_checksum(minus.data(), i.data(), 1));
  EXPECT_NE(pair_checksum(zeros.data(), i.data(), 0), pair_checksum(zeros.data(), i.data(), 1));
}

// A bucket carrying its whole range is reduced in place in the gradient,
// uncopied, with no receive buffer of its own.
TEST(Exchange, WholeRangeAllreduceReducesInTheGradient) {
  ModelLayout layout = two_tensors();
  std::vector<float> send(10);
  std::iota(send.begin(), send.end(), 1.0f);
  BucketExchange x;
  x.bucket = bucket(Collective::kAllreduce, 0, 2, 10, 10);
  x.segments = bucket_segments(x.bucket, layout, {-1, -1}, {});
  fill_payload(x, layout, send.data(), {});
  EXPECT_EQ(x.dense, send.data());
  EXPECT_EQ(x.sent_count, 10);
  EXPECT_FALSE(x.packs_payload());
  ScriptedPeer peer;
  peer.peer_values = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  run_collective(x, peer);
  std::vector<float> aggregate(10, -1.0f), scratch;
  apply_result(x, layout, 2, aggregate.data(), scratch);
  EXPECT_EQ(aggregate, std::vector<float>(10, 5.0f));  // (i + 1 + 9 - i) / 2
  EXPECT_EQ(send, std::vector<float>(10, 10.0f));      // the sum, in place
  EXPECT_TRUE(x.values.empty());                       // nothing allocated
}

TEST(Exchange, AllreduceSumsTheCarriedTensorsAndAverages) {
  ModelLayout layout = two_tensors();
  std::vector<RangeSelection> made = {selection(1, 2, {0}, {1})};
  std::vector<float> send(10);
  std::iota(send.begin(), send.end(), 1.0f);
  BucketExchange x;
  x.bucket = bucket(Collective::kAllreduce, 0, 2, 4, 4);
  x.segments = bucket_segments(x.bucket, layout, {-1, 0}, made);
  fill_payload(x, layout, send.data(), made);
  EXPECT_EQ(x.values, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(x.dense, x.values.data());  // part of the range: gathered, then reduced in place
  EXPECT_TRUE(x.packs_payload());
  ScriptedPeer peer;
  peer.peer_values = {3, 2, 1, 0};
  run_collective(x, peer);
  std::vector<float> aggregate(10, -1.0f), scratch;
  apply_result(x, layout, 2, aggregate.data(), scratch);
  EXPECT_EQ(aggregate, (std::vector<float>{2, 2, 2, 2, -1, -1, -1, -1, -1, -1}));
}

// ByteScheduler's partition: elements [2, 5) of tensor 1 (offset 4), reduced
// in place in the gradient and averaged into exactly those elements.
TEST(Exchange, PartitionReducesPartOfOneTensorInPlace) {
  ModelLayout layout = two_tensors();
  std::vector<float> send(10);
  std::iota(send.begin(), send.end(), 1.0f);
  BucketExchange x;
  x.bucket = bucket(Collective::kAllreduce, 1, 2, 3, 3);
  x.bucket.first_element = 2;
  x.segments = bucket_segments(x.bucket, layout, {-1, -1}, {});
  fill_payload(x, layout, send.data(), {});
  EXPECT_EQ(x.dense, send.data() + 6);
  EXPECT_EQ(x.sent_count, 3);
  EXPECT_FALSE(x.packs_payload());
  ScriptedPeer peer;
  peer.peer_values = {1, 0, -1};
  run_collective(x, peer);
  std::vector<float> aggregate(10, -1.0f), scratch;
  apply_result(x, layout, 2, aggregate.data(), scratch);
  EXPECT_EQ(aggregate, (std::vector<float>{-1, -1, -1, -1, -1, -1, 4, 4, 4, -1}));  // (7 + 1) / 2, (8 + 0) / 2, ...
  EXPECT_EQ(send, (std::vector<float>{1, 2, 3, 4, 5, 6, 8, 8, 8, 10}));
}

TEST(BucketSegments, APartitionMustBeDenseWithinOneUncompressedTensor) {
  ModelLayout layout = two_tensors();
  Bucket past_the_end = bucket(Collective::kAllreduce, 1, 2, 3, 3);
  past_the_end.first_element = 4;  // [4, 7) of a 6-element tensor
  EXPECT_THROW(bucket_segments(past_the_end, layout, {-1, -1}, {}), std::logic_error);
  Bucket two_tensors_in_part = bucket(Collective::kAllreduce, 0, 2, 8, 8);
  two_tensors_in_part.first_element = 2;
  EXPECT_THROW(bucket_segments(two_tensors_in_part, layout, {-1, -1}, {}), std::logic_error);
  Bucket gathered = bucket(Collective::kAllgather, 1, 2, 3, 3);
  gathered.first_element = 1;
  EXPECT_THROW(bucket_segments(gathered, layout, {-1, -1}, {}), std::logic_error);
  std::vector<RangeSelection> made = {selection(1, 2, {0}, {1})};
  Bucket compressed = bucket(Collective::kAllreduce, 1, 2, 3, 3);
  compressed.first_element = 1;
  EXPECT_THROW(bucket_segments(compressed, layout, {-1, 0}, made), std::logic_error);
}

}  // namespace
}  // namespace sparsefuse::runtime
