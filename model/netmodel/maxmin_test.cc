#include "model/netmodel/maxmin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/rng.h"

namespace sparsefuse::netmodel {
namespace {

// Three links, four flows:
//   link 0 (capacity 9):  flows 0, 1, 2 -- the shared bottleneck
//   link 1 (capacity 10): flows 2, 3
//   link 2 (capacity 2):  flow 0      -- limits flow 0 elsewhere
// By hand: fill all at the same pace. Link 2 (2 / 1 flow = 2) fills first:
// flow 0 freezes at 2. Link 0 then has 9 - 2 = 7 left for flows 1 and 2
// (3.5 each); link 1 has 10 for flows 2 and 3 (5 each): link 0 fills at 3.5.
// Flow 3 then takes the rest of link 1: 10 - 3.5 = 6.5.
TEST(MaxMin, HandComputedSmallTopology) {
  std::vector<double> capacity = {9, 10, 2};
  std::vector<Flow> flows = {{{0, 2}}, {{0}}, {{0, 1}}, {{1}}};
  std::vector<double> r = max_min_rates(capacity, flows);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_DOUBLE_EQ(r[1], 3.5);
  EXPECT_DOUBLE_EQ(r[2], 3.5);
  EXPECT_DOUBLE_EQ(r[3], 6.5);
}

// Same, but flow 1 is capped at 1 (e.g. by its sender). By hand:
//  step 1: shares 9/3, 10/2, 2/1 and flow 1's cap 1 -> all reach 1; flow 1 stops.
//  step 2: left 6, 8, 1 for (flows 0, 2), (2, 3), (0): link 2 allows +1 -> flows
//          0, 2, 3 reach 2; link 2 is full, flow 0 stops.
//  step 3: left 4 for flow 2 on link 0, 6 for flows 2 and 3 on link 1 -> +3:
//          flows 2 and 3 reach 5, link 1 is full. Link 0 carries 2 + 1 + 5 = 8 < 9.
TEST(MaxMin, PerFlowCap) {
  std::vector<double> capacity = {9, 10, 2};
  std::vector<Flow> flows = {{{0, 2}}, {{0}, 1.0}, {{0, 1}}, {{1}}};
  std::vector<double> r = max_min_rates(capacity, flows);
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_DOUBLE_EQ(r[1], 1);
  EXPECT_DOUBLE_EQ(r[2], 5);
  EXPECT_DOUBLE_EQ(r[3], 5);
}

TEST(MaxMin, EdgeCases) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(max_min_rates({1}, {}).empty());
  std::vector<double> r = max_min_rates({4}, {{{}}, {{}, 3.0}, {{0, 0}}});  // no link; no link but a cap; link twice
  EXPECT_EQ(r[0], inf);
  EXPECT_DOUBLE_EQ(r[1], 3);
  EXPECT_DOUBLE_EQ(r[2], 2);  // crosses link 0 twice: 2 x 2 = 4
  EXPECT_DOUBLE_EQ(max_min_rates({0}, {{{0}}})[0], 0);
  EXPECT_THROW(max_min_rates({1}, {{{1}}}), std::invalid_argument);
  EXPECT_THROW(max_min_rates({-1}, {{{0}}}), std::invalid_argument);
}

// Adding a flow can speed up an existing one: A and B share link 0, B and C
// share link 1 (capacity 1 each): all get 0.5. A new flow D on link 1 cuts B
// to 1/3, which frees link 0 for A: 2/3 > 1/2. So the check below is on the
// smallest rate and the leximin order, not on each flow.
TEST(MaxMin, AnExistingFlowCanSpeedUpWhenAFlowIsAdded) {
  std::vector<double> capacity = {1, 1};
  std::vector<Flow> flows = {{{0}}, {{0, 1}}, {{1}}};
  EXPECT_DOUBLE_EQ(max_min_rates(capacity, flows)[0], 0.5);
  flows.push_back({{1}});
  std::vector<double> r = max_min_rates(capacity, flows);
  EXPECT_NEAR(r[1], 1.0 / 3, 1e-12);
  EXPECT_NEAR(r[0], 2.0 / 3, 1e-12);
}

// The allocation is max-min fair iff it is feasible and every flow is at its
// cap or crosses a saturated link on which it has the largest rate.
void expect_max_min_fair(const std::vector<double>& capacity, const std::vector<Flow>& flows,
                         const std::vector<double>& rate) {
  std::vector<double> load(capacity.size(), 0), largest(capacity.size(), 0);
  for (size_t f = 0; f < flows.size(); ++f) {
    EXPECT_LE(rate[f], flows[f].cap * (1 + 1e-9));
    for (int l : flows[f].links) {
      load[size_t(l)] += rate[f];
      largest[size_t(l)] = std::max(largest[size_t(l)], rate[f]);
    }
  }
  for (size_t l = 0; l < capacity.size(); ++l) EXPECT_LE(load[l], capacity[l] * (1 + 1e-9)) << "link " << l;
  for (size_t f = 0; f < flows.size(); ++f) {
    bool bottlenecked = rate[f] >= flows[f].cap * (1 - 1e-9);
    for (int l : flows[f].links) {
      bool saturated = load[size_t(l)] >= capacity[size_t(l)] * (1 - 1e-9);
      bottlenecked |= saturated && rate[f] >= largest[size_t(l)] * (1 - 1e-9);
    }
    EXPECT_TRUE(bottlenecked) << "flow " << f << " could grow";
  }
}

TEST(MaxMin, RandomizedFairnessAndAddingAFlowNeverHelpsTheWorstOff) {
  Rng rng(20240617);
  for (int trial = 0; trial < 300; ++trial) {
    int links = 1 + int(rng.next() % 8), count = 1 + int(rng.next() % 10);
    std::vector<double> capacity;
    for (int l = 0; l < links; ++l) capacity.push_back(1 + double(rng.next() % 1000) / 10);
    auto random_flow = [&] {
      Flow f;
      int hops = 1 + int(rng.next() % 3);
      for (int h = 0; h < hops; ++h) f.links.push_back(int(rng.next() % uint64_t(links)));
      if (rng.next() % 4 == 0) f.cap = 1 + double(rng.next() % 500) / 10;
      return f;
    };
    std::vector<Flow> flows;
    for (int i = 0; i < count; ++i) flows.push_back(random_flow());
    std::vector<double> before = max_min_rates(capacity, flows);
    expect_max_min_fair(capacity, flows, before);

    flows.push_back(random_flow());
    std::vector<double> after = max_min_rates(capacity, flows);
    expect_max_min_fair(capacity, flows, after);
    after.pop_back();
    // Existing flows, sorted ascending: the new vector is not leximin-larger.
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    EXPECT_LE(after.front(), before.front() * (1 + 1e-9)) << "trial " << trial;
    for (size_t i = 0; i < before.size(); ++i) {
      if (std::abs(after[i] - before[i]) <= 1e-9 * std::max(1.0, before[i])) continue;
      EXPECT_LT(after[i], before[i]) << "trial " << trial << ": leximin order broken at " << i;
      break;
    }
  }
}

}  // namespace
}  // namespace sparsefuse::netmodel
