// Per-bucket figures of a run: each the median over the measured iterations
// that flushed the same bucket, so one slow iteration does not decide them.
#include "runtime/statistics.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace sparsefuse::runtime {
namespace {

std::unique_ptr<BucketExchange> exchange(int first_tensor, int index, TimeNs compression) {
  auto x = std::make_unique<BucketExchange>();
  x->bucket.first_tensor = first_tensor;
  x->bucket.end_tensor = first_tensor + 1;
  x->bucket.elements = 100;
  x->index = index;
  x->sent_count = 10;
  x->compression_ns = compression;
  x->started = 1000;
  x->finished = 1000 + 2 * compression;
  x->decompression_ns = compression / 2;
  return x;
}

std::vector<std::unique_ptr<BucketExchange>> iteration(std::vector<TimeNs> compression, int first_tensor = 0) {
  std::vector<std::unique_ptr<BucketExchange>> xs;
  for (size_t k = 0; k < compression.size(); ++k) xs.push_back(exchange(first_tensor + int(k), int(k), compression[k]));
  return xs;
}

TEST(RankTotals, BucketFiguresAreMediansOverTheIterationsThatFlushedThem) {
  RankTotals totals;
  const IterationTimes times;
  totals.add(times, iteration({100, 7}));
  totals.add(times, iteration({900'000, 5}));  // one iteration preempted in bucket 0
  totals.add(times, iteration({300, 6}, 1));   // other buckets: left out of both medians
  totals.add(times, iteration({120, 9}));
  totals.add(times, iteration({110, 8}));
  // Bucket 0 over iterations 0, 1, 3, 4: 100, 110, 120, 900000 -> (110 + 120) / 2.
  const auto first = totals.bucket_median(0);
  EXPECT_EQ(first[0], 10);
  EXPECT_EQ(first[1], 115);
  EXPECT_EQ(first[2], 230);  // the collective: 2 x compression here
  EXPECT_EQ(first[3], 57.5);  // (55 + 60) / 2
  EXPECT_EQ(totals.bucket_median(1)[1], 7.5);  // 5, 7, 8, 9
  EXPECT_THROW(totals.bucket_median(2), std::logic_error);
  EXPECT_THROW(RankTotals().bucket_median(0), std::logic_error);
}

}  // namespace
}  // namespace sparsefuse::runtime
