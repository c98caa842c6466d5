// The network layer as the simulator uses it: contention between concurrent
// collectives, topology scenarios, the NCCL and calibrated models, and the
// properties the network models must have.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/rng.h"
#include "sim/communication.h"
#include "model/nccl_network.h"
#include "model/scenario.h"
#include "model/seed_network.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

Operation op(int communicator, TimeNs posted, TimeNs latency, TimeNs transfer) {
  Operation o;
  o.communicator = communicator;
  o.all_posted = posted;
  o.cost = {latency, transfer};
  return o;
}

// A (communicator 0) moves 1000 ns of bytes from t = 0; B (communicator 1)
// joins at 500. Alone, A does 500 by t = 500; then each runs at half speed:
// A's remaining 500 take 1000 more (ends 1500), when B has done 500 of its
// 1000; B finishes its last 500 alone at 2000.
TEST(Contention, EqualSharesOnTheFlatNetwork) {
  EqualShare share;
  CommunicationEngine engine(share);
  std::vector<Operation> ops = {op(0, 0, 0, 1000), op(1, 500, 0, 1000)};
  engine.run(ops);
  EXPECT_EQ(ops[0].end, 1500);
  EXPECT_EQ(ops[1].start, 500);
  EXPECT_EQ(ops[1].end, 2000);
}

// Latency is not shared: B pays 300 ns of latency (500..800) before it
// moves bytes. A alone to 800 (800 done), then both at half: A's last 200
// take 400 (ends 1200), B has done 200; B's last 800 alone end at 2000.
TEST(Contention, LatencyIsNotShared) {
  EqualShare share;
  CommunicationEngine engine(share);
  std::vector<Operation> ops = {op(0, 0, 0, 1000), op(1, 500, 300, 1000)};
  engine.run(ops);
  EXPECT_EQ(ops[0].end, 1200);
  EXPECT_EQ(ops[1].end, 2000);
}

TEST(Contention, AnAddedConcurrentCollectiveNeverSpeedsUpAnother) {
  EqualShare share;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Rng rng(seed);
    std::vector<Operation> ops;
    int n = 1 + int(rng.below(6));
    for (int i = 0; i < n; ++i) {
      ops.push_back(op(int(rng.below(3)), TimeNs(rng.below(5000)), TimeNs(rng.below(300)), TimeNs(1 + rng.below(3000))));
    }
    std::vector<Operation> more = ops;
    more.push_back(op(3, TimeNs(rng.below(5000)), TimeNs(rng.below(300)), TimeNs(1 + rng.below(3000))));
    CommunicationEngine a(share), b(share);
    a.run(ops);
    b.run(more);
    for (int i = 0; i < n; ++i) EXPECT_GE(more[i].end, ops[i].end) << "seed " << seed << " op " << i;
  }
}

// LinkContention on a real topology: every collective is a ring over all
// ranks, so n concurrent ones each get 1/n of the ring's bottleneck.
TEST(Contention, RingsOnATopologyShareTheirBottleneck) {
  netmodel::TopologyConfig c = netmodel::topology_preset("dgx-h200-ib400");
  c.nodes = 2;
  netmodel::Topology topology(c);
  LinkContention links(topology);
  std::vector<double> speeds;
  links.speeds(1, speeds);
  EXPECT_DOUBLE_EQ(speeds[0], 1.0);
  links.speeds(3, speeds);
  ASSERT_EQ(speeds.size(), 3u);
  for (double s : speeds) EXPECT_NEAR(s, 1.0 / 3, 1e-12);
}

Json topo_scenario(int workers) {
  return {{"model", "bert-base"}, {"workers", workers}, {"iterations", 3}, {"warmup_iterations", 1},
          {"scheme", "ddp"}, {"topology", {{"preset", "dgx-h200-ib400"}}}};
}

TEST(TopologyScenario, NodesFollowWorkersAndTheModelBecomesNccl) {
  model::Scenario s = model::parse_scenario(topo_scenario(64), "t.json");
  ASSERT_TRUE(s.topology.has_value());
  EXPECT_EQ(s.topology->nodes, 8);
  EXPECT_EQ(s.network.model, "nccl");
  EXPECT_EQ(model::parse_scenario(s.resolved(), "r.json").resolved().dump(), s.resolved().dump());
  model::RunResult r = simulate(s);
  EXPECT_EQ(r.network["model"], "nccl");
  EXPECT_EQ(r.network["nccl"]["nodes"], 8);
}

TEST(TopologyScenario, BadShapesNameThePointer) {
  try {
    model::parse_scenario(topo_scenario(60), "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "t.json: at /workers: expected a multiple of the topology's 8 GPUs per node, got 60");
  }
  Json doc = topo_scenario(64);
  doc["topology"]["nodes"] = 4;
  try {
    model::parse_scenario(doc, "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "t.json: at /topology/nodes: nodes x gpus_per_node = 4 x 8 must equal workers (64)");
  }
  doc = topo_scenario(64);
  doc["network"] = {{"nccl_algo", "ringg"}};
  try {
    model::parse_scenario(doc, "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.json: at /network/nccl_algo: unknown name \"ringg\""), std::string::npos)
        << e.what();
  }
}

TEST(NcclNetwork, SmallMessagesUseLowLatencyProtocolsLargeOnesSimple) {
  netmodel::TopologyConfig c = netmodel::topology_preset("dgx-h200-ib400");
  c.nodes = 4;
  model::NcclNetwork net(model::NetworkConfig{}, c);
  Json d = net.describe();
  EXPECT_EQ(d["allreduce_choices"][0]["protocol"], "LL");
  // 256 MiB runs NVLSTree (NVLS inside the node, its eight NICs' 384 GB/s halved beyond two nodes
  // against ring LL128's 0.92 x 25 GB/s per channel); 4 GiB runs ring Simple (below).
  EXPECT_EQ(d["allreduce_choices"][2]["algorithm"], "nvlstree");
  EXPECT_EQ(d["allreduce_choices"][2]["protocol"], "Simple");
  const double gib4 = 4294967296.0;
  EXPECT_EQ(netmodel::NcclModel(model::nccl_topology(c, 0)).estimate(Collective::kAllreduce, gib4).protocol, "Simple");
  // Latency dominates small collectives, transfer large ones.
  model::CollectiveCost small = net.collective_cost(Collective::kAllreduce, 4096);
  model::CollectiveCost large = net.collective_cost(Collective::kAllreduce, int64_t(gib4));
  EXPECT_GT(small.latency_ns, small.transfer_ns);
  EXPECT_GT(large.transfer_ns, 10 * large.latency_ns);
  EXPECT_EQ(net.collective_cost(Collective::kAllreduce, 0).total(), 0);
}

TEST(NcclNetwork, RestrictionsChangeTheChoice) {
  netmodel::TopologyConfig c = netmodel::topology_preset("dgx-h200-ib400");
  c.nodes = 4;
  model::NetworkConfig ring_only;
  ring_only.nccl_algo = "ring";
  model::NcclNetwork any(model::NetworkConfig{}, c), ring(ring_only, c);
  EXPECT_EQ(ring.describe()["allreduce_choices"][2]["algorithm"], "ring");
  // The unrestricted model picks the fastest candidate, so it is never slower.
  for (int64_t bytes : {int64_t(4096), int64_t(1) << 20, int64_t(256) << 20}) {
    EXPECT_LE(any.collective_cost(Collective::kAllreduce, bytes).total(),
              ring.collective_cost(Collective::kAllreduce, bytes).total());
  }
}

TEST(CalibratedNetwork, InterpolatesTheMeasuredTable) {
  model::NetworkConfig c;
  c.model = "calibrated";
  c.profile = "tests/data/collectives-8ranks.json";
  model::CalibratedNetwork net(c, "", 8);
  // Measured points at 1 KiB (10 us) and 1 MiB (110 us): 1 KiB is the latency floor.
  model::CollectiveCost at_1k = net.collective_cost(Collective::kAllreduce, 1024);
  EXPECT_EQ(at_1k.total(), 10000);
  EXPECT_EQ(at_1k.transfer_ns, 0);
  model::CollectiveCost at_1m = net.collective_cost(Collective::kAllreduce, 1 << 20);
  EXPECT_EQ(at_1m.total(), 110000);
  EXPECT_EQ(at_1m.latency_ns, 10000);
}

// The seed code's table (docs/seed-systems.md#the-seed-cost-tables), by hand: x = int(bytes / 1024) KB,
// linear between the points (KB: ms) 1,000: 19.65, 10,000: 112.4,
// 100,000: 1005.7, clamped to 5.115 ms below 0.1 KB and 1516.1 ms above
// 150,000 KB. The floor (5.115 ms) is the latency term.
TEST(SeedTableNetwork, LooksUpTheSeedTableByHand) {
  model::SeedTableNetwork net(8);
  // 1,024,000 B = 1000 KB, a table point: 19.65 ms.
  model::CollectiveCost at_1000kb = net.collective_cost(Collective::kAllreduce, 1024000);
  EXPECT_EQ(at_1000kb.total(), 19650000);
  EXPECT_EQ(at_1000kb.latency_ns, 5115000);
  EXPECT_EQ(at_1000kb.transfer_ns, 19650000 - 5115000);
  // 10 MiB = 10,240 KB: 112.4 + 240 / 90,000 x (1005.7 - 112.4) = 114.7821333 ms.
  EXPECT_EQ(net.collective_ns(Collective::kAllreduce, 10 << 20), 114782133);
  // The primitive is unspecified: an allgather of the same contribution costs the same.
  EXPECT_EQ(net.collective_ns(Collective::kAllgather, 10 << 20), 114782133);
  // 1023 B truncates to 0 KB: the floor, no transfer. 200 MB: clamped to 1.5161 s.
  EXPECT_EQ(net.collective_cost(Collective::kAllgather, 1023).transfer_ns, 0);
  EXPECT_EQ(net.collective_ns(Collective::kAllgather, 1023), 5115000);
  EXPECT_EQ(net.collective_ns(Collective::kAllreduce, 200000000), 1516100000);
  EXPECT_EQ(net.collective_ns(Collective::kAllreduce, 0), 0);
  // Unequal gathers: the table at the mean contribution.
  EXPECT_EQ(net.allgatherv_cost(8 * 1024000, 1000).total(), 19650000);
  EXPECT_EQ(net.coordination_ns(), 5115000);
}

TEST(SeedTableNetwork, TheSeed8nodePresetSelectsItAndNeedsEightWorkers) {
  Json doc = {{"model", "bert-base"}, {"workers", 8}, {"iterations", 3}, {"warmup_iterations", 1},
              {"scheme", "wfbp"}, {"topology", {{"preset", "seed-8node"}}}};
  model::Scenario s = model::parse_scenario(doc, "t.json");
  EXPECT_EQ(s.network.model, "seed-table");
  EXPECT_EQ(s.topology->nodes, 8);
  model::RunResult r = simulate(s);
  EXPECT_EQ(r.network["model"], "seed-table");
  // wfbp: one allreduce per tensor, each at least the table's 5.115 ms floor, one after another.
  EXPECT_GE(r.mean_iteration_s(), 5.115e-3 * double(r.buckets.size()));
  // Another network model on the same topology is still allowed.
  doc["network"] = {{"model", "nccl"}};
  EXPECT_EQ(model::parse_scenario(doc, "t.json").network.model, "nccl");
  doc.erase("network");
  doc["workers"] = 16;
  try {
    model::parse_scenario(doc, "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "t.json: at /workers: the seed-table network model was measured on 8 nodes; expected workers = 8, "
                 "got 16");
  }
}

// Over random scenarios, more bandwidth is never
// slower and more compute noise never lowers a synchronous scheme's mean.
// Schemes that plan from the cost model are left out of the bandwidth
// property on purpose: their per-tensor or per-merge decisions can flip to a
// worse plan as bandwidth grows (e.g. adtopk-h on bert-base, 32 workers, flat
// 400 Gb/s sends 172 tensors dense, each allreduce cheaper alone than its
// compress + allgather, but queued one after another on their communicator:
// 62.8 ms against 43.0 ms at 100 Gb/s). That is a property of the heuristic.
TEST(NetworkProperties, RandomScenarios) {
  const std::vector<std::string> schemes = {"horovod", "ddp", "syncea", "fgbuff", "ssfusion-i", "adtopk", "saf"};
  const std::vector<std::string> models = {"bert-base", "resnet50", "vgg16"};
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Rng rng(seed);
    std::string scheme = schemes[rng.below(schemes.size())], model = models[rng.below(models.size())];
    int workers = 8 << rng.below(4);
    bool topology = rng.below(2) == 1;
    auto run = [&](double gbps, double cv) {
      Json doc = {{"model", model}, {"workers", workers}, {"iterations", 12}, {"warmup_iterations", 1},
                  {"seed", seed}, {"scheme", scheme}, {"variability", {{"compute_cv", cv}}}};
      if (topology) doc["topology"] = {{"preset", "dgx-h200-ib400"}, {"nic", {{"bandwidth_gbps", gbps}}}};
      else doc["network"] = {{"bandwidth_gbps", gbps}};
      return simulate(model::parse_scenario(doc, "")).mean_iteration_s();
    };
    double previous = 1e30;
    for (double gbps : {25.0, 100.0, 400.0}) {
      double t = run(gbps, 0.05);
      EXPECT_LE(t, previous * (1 + 1e-12)) << scheme << " " << model << " " << workers << " at " << gbps;
      previous = t;
    }
    previous = 0;
    for (double cv : {0.0, 0.1, 0.3}) {
      double t = run(100.0, cv);
      EXPECT_GE(t, previous) << scheme << " " << model << " " << workers << " cv " << cv;
      previous = t;
    }
  }
}

}  // namespace
}  // namespace sparsefuse::sim
