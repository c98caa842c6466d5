#include <gtest/gtest.h>

#include "policy/partition.h"

namespace sparsefuse::policy {
namespace {

GradientModel model_of(std::vector<int64_t> elements, std::vector<TimeNs> ready) {
  GradientModel m;
  for (size_t i = 0; i < elements.size(); ++i) m.names.push_back("t" + std::to_string(i));
  m.elements = std::move(elements);
  m.ready_ns = std::move(ready);
  m.backward_ns = m.ready_ns.back();
  return m;
}

// alpha + bytes, with alpha = 1000 ns: an easy allreduce model for hand work.
class LinearCost : public CostEstimator {
 public:
  int workers() const override { return 2; }
  TimeNs collective_ns(Collective, int64_t bytes) const override { return 1000 + bytes; }
  TimeNs coordination_ns() const override { return 0; }
    TimeNs compression_ns(Sparsifier, int64_t, double) const override { return 0; }
    TimeNs cpu_compression_ns(Sparsifier, int64_t, double) const override { return 0; }
};

std::vector<int> counts(const std::vector<Bucket>& buckets) {
  std::vector<int> out;
  for (const auto& b : buckets) out.push_back(b.tensors());
  return out;
}

TEST(Partition, PerTensorAndSingle) {
  GradientModel m = model_of({10, 20, 30}, {1, 2, 3});
  EXPECT_EQ(counts(per_tensor_partition(m)), (std::vector<int>{1, 1, 1}));
  auto single = single_bucket_partition(m);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].bytes_per_worker, 240);
}

TEST(Partition, ByteThresholdClosesOnReachingTheLimit) {
  // Bytes 400, 400, 800, 4000, 40: first limit 800 closes after t1 (800 >= 800);
  // cap 1000 closes after t3 (4800); the remainder is the last bucket.
  GradientModel m = model_of({100, 100, 200, 1000, 10}, {1, 2, 3, 4, 5});
  EXPECT_EQ(counts(byte_threshold_partition(m, 800, 1000)), (std::vector<int>{2, 2, 1}));
  // A tensor larger than the cap is a bucket of its own.
  EXPECT_EQ(counts(byte_threshold_partition(m, 1, 1)), (std::vector<int>{1, 1, 1, 1, 1}));
}

// MG-WFBP by hand, cost 1000 + bytes, tensors of 400 B (100 elements):
// ready 0, 100, 5000, 5100.
// j=0: group {0} starts at 0, lasts 1400; t1 ready at 100 < 1400 and waiting
//      100 - 0 < alpha=1000 -> merge {0,1} (800 B).
// j=1: group starts max(0, ready 100) = 100, lasts 1800 -> ends 1900; t2 ready
//      at 5000 >= 1900 -> close {0,1}; previous_end = 1900.
// j=2: group {2} starts 5000, lasts 1400; t3 ready 5100 < 6400 and waits 100
//      < 1000 -> merge. Result [2, 2].
TEST(Partition, MgwfbpMergesWhenWaitingBeatsAStartup) {
  GradientModel m = model_of({100, 100, 100, 100}, {0, 100, 5000, 5100});
  EXPECT_EQ(counts(mgwfbp_partition(m, LinearCost())), (std::vector<int>{2, 2}));
  // Ready far apart: nothing to merge.
  GradientModel sparse = model_of({100, 100, 100}, {0, 10000, 20000});
  EXPECT_EQ(counts(mgwfbp_partition(sparse, LinearCost())), (std::vector<int>{1, 1, 1}));
  // t1 ready after t0's allreduce would start but 1500 ns later (> alpha), while
  // t0's allreduce (1400) is still running at 1500? No: it ended at 1400, so close.
  GradientModel late = model_of({100, 100}, {0, 1500});
  EXPECT_EQ(counts(mgwfbp_partition(late, LinearCost())), (std::vector<int>{1, 1}));
}

// When the communicator is still busy with an earlier group, a later tensor's
// allreduce cannot start before the next tensor is ready: merge (tau_c > r).
TEST(Partition, MgwfbpMergesBehindABusyCommunicator) {
  // Bytes 40000 (t0), 400, 400: t0 runs 0..41000. t1 ready 2000: start of {t0}
  // is 0, next ready 2000 < 41000 but waiting 2000 > alpha -> close {t0}.
  // {t1} would start at 41000 > t2's ready 3000 -> merge {t1, t2}.
  GradientModel m = model_of({10000, 100, 100}, {0, 2000, 3000});
  EXPECT_EQ(counts(mgwfbp_partition(m, LinearCost())), (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace sparsefuse::policy
