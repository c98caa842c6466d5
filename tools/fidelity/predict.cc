// Predictions: each case's scenario simulated. A collective point is one
// allreduce of its size through a one-tensor trace (the bucket's duration,
// start to end); a scaling point is the simulated throughput of a scheme at a
// worker count against the same scheme at base_workers.
#include <map>

#include <fmt/format.h>

#include "model/scenario.h"
#include "sim/simulator.h"
#include "tools/fidelity/suite.h"

namespace sparsefuse::fidelity {

namespace {

double one_collective_us(const model::Scenario& base, const Case& c, double bytes) {
  model::Scenario s = base;
  if (s.trace.tensors.size() != 1 || s.trace.dtype != "float32") {
    throw InputError(c.scenario, "/model", "a collective case needs a one-tensor float32 trace");
  }
  // nccl-tests and OSU sizes are whole float32 buffers (OSU's 4 B = 1 float).
  int64_t elements = std::max<int64_t>(1, int64_t(bytes / 4));
  s.trace.tensors[0].elements = elements;
  s.trace.tensors[0].shape = {elements};
  model::RunResult r = sim::simulate(s);
  if (r.buckets.size() != 1 || r.buckets[0].bucket.collective != Collective::kAllreduce) {
    throw std::runtime_error(fmt::format("{}: expected one allreduce per iteration, got {} buckets", c.scenario,
                                         r.buckets.size()));
  }
  return r.buckets[0].duration_s * 1e6;
}

void predict_scaling(Case& c) {
  std::map<std::pair<std::string, int>, double> throughput;
  const auto scenario = model::load_scenario(c.scenario, {});
  const int per_node = scenario.topology ? scenario.topology->gpus_per_node : 1;
  const int nics = scenario.topology ? scenario.topology->nics_per_node : 1;
  auto run = [&](const std::string& scheme, int workers) {
    auto key = std::make_pair(scheme, workers);
    if (!throughput.count(key)) {
      std::vector<std::string> overrides = {"scheme=" + scheme, fmt::format("workers={}", workers)};
      // Fewer GPUs than a node holds (the 1-GPU base, 4 of a DGX-1's 8) run
      // inside one node: a node of that many GPUs.
      if (workers < per_node) {
        overrides.push_back(fmt::format("topology.gpus_per_node={}", workers));
        overrides.push_back(fmt::format("topology.nic.per_node={}", std::min(nics, workers)));
      }
      auto s = model::load_scenario(c.scenario, overrides);
      throughput[key] = sim::simulate(s).throughput();
    }
    return throughput[key];
  };
  for (auto& p : c.points) {
    double ratio = run(p.scheme, p.workers) / run(p.scheme, c.base_workers);
    p.predicted = c.metric == "speedup" ? ratio : ratio * c.base_workers / p.workers;
  }
}

}  // namespace

void predict(Case& c) {
  if (c.kind == "scaling") return predict_scaling(c);
  model::Scenario base = model::load_scenario(c.scenario, {fmt::format("workers={}", c.workers)});
  for (auto& p : c.points) p.predicted = one_collective_us(base, c, p.bytes);
}

}  // namespace sparsefuse::fidelity
