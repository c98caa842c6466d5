// The textbook formulas, evaluated by hand for p = 4, alpha = 1 us and
// 8 Gb/s (1 ns per byte).
#include <gtest/gtest.h>

#include "model/network.h"

namespace sparsefuse::model {
namespace {

FlatNetwork four_workers(int64_t segment = 1 << 20, std::string allreduce = "ring") {
  NetworkConfig c;
  c.latency_us = 1;
  c.bandwidth_gbps = 8;
  c.tree_segment_bytes = segment;
  c.allreduce = allreduce;
  return FlatNetwork(c, 4);
}

TEST(FlatNetwork, RingAllreduce) {
  // 2*3*1000 + 2*3/4*4000
  EXPECT_EQ(four_workers().collective_ns(Collective::kAllreduce, 4000), 12000);
}

TEST(FlatNetwork, TreeAllreduceOneAndManySegments) {
  // One segment: 2*(2 + 1 - 1)*(1000 + 4000); four segments of 1000 B: 2*(2 + 4 - 1)*(1000 + 1000).
  EXPECT_EQ(four_workers(1 << 20, "tree").collective_ns(Collective::kAllreduce, 4000), 20000);
  EXPECT_EQ(four_workers(1000, "tree").collective_ns(Collective::kAllreduce, 4000), 20000);
  EXPECT_EQ(four_workers(2000, "tree").collective_ns(Collective::kAllreduce, 4000), 2 * 3 * 3000);
}

TEST(FlatNetwork, AllgatherReduceScatterBroadcast) {
  auto net = four_workers();
  EXPECT_EQ(net.collective_ns(Collective::kAllgather, 1000), 3000 + 3000);      // (p-1)a + (p-1)m b
  EXPECT_EQ(net.collective_ns(Collective::kReduceScatter, 4000), 3000 + 3000);  // (p-1)a + (p-1)/p M b
  EXPECT_EQ(net.collective_ns(Collective::kBroadcast, 1000), 2 * (1000 + 1000));
  EXPECT_EQ(net.coordination_ns(), 2000);  // ceil(log2 4) * alpha
}

TEST(FlatNetwork, SingleWorkerCommunicatesForFree) {
  NetworkConfig c;
  FlatNetwork one(c, 1);
  EXPECT_EQ(one.collective_ns(Collective::kAllreduce, 1 << 30), 0);
  EXPECT_EQ(one.coordination_ns(), 0);
}

TEST(FlatNetwork, MoreBandwidthIsNeverSlower) {
  for (auto collective : {Collective::kAllreduce, Collective::kAllgather,
                          Collective::kReduceScatter, Collective::kBroadcast}) {
    TimeNs previous = INT64_MAX;
    for (double gbps : {1.0, 10.0, 25.0, 100.0, 400.0}) {
      NetworkConfig c;
      c.bandwidth_gbps = gbps;
      TimeNs t = FlatNetwork(c, 64).collective_ns(collective, 10 << 20);
      EXPECT_LT(t, previous);
      previous = t;
    }
  }
}

}  // namespace
}  // namespace sparsefuse::model
