#include "runtime/flush_cost.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/median.h"
#include "kernels/code_sweep.h"
#include "kernels/common.h"
#include "kernels/pack.h"
#include "model/forward_times.h"
#include "model/plan.h"
#include "model/scenario.h"
#include "runtime/comm_thread.h"
#include "runtime/communicator.h"
#include "runtime/engine.h"

namespace sparsefuse::runtime {
namespace {

using Clock = std::chrono::steady_clock;

void fill(float* g, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; ++i) g[i] = float(int64_t((seed * 2654435761u + uint64_t(i) * 40503u) % 2001) - 1000) * 1e-3f;
}

struct Pair {
  std::vector<double> weight, bias;
};

Pair engine_us(const FlushCostOptions& o, std::vector<uint64_t>& evict) {
  const std::string trace = write_module_pairs_trace(o.elements, o.modules);
  const Json doc = {{"model", {{"trace", trace}}},
                    {"workers", 1},
                    {"scheme", {{"preset", "adtopk"}, {"error_feedback", "none"}}},
                    {"compression", {{"density", 0.01}}}};
  const model::Scenario scenario = model::parse_scenario(doc, "flush_cost");
  std::remove(trace.c_str());
  const model::ScenarioPlan planned(scenario);
  const ModelLayout layout = ModelLayout::from(scenario.trace, planned.model);
  CommThread comm([] { return std::make_unique<LoopbackCommunicator>(); });
  EngineConfig config;
  config.forward_split = model::forward_times(scenario.trace, planned.model, 1.0);
  RankEngine engine(planned.model, layout, planned.scheme(), comm, config);
  Pair us;
  for (int it = 0; it <= o.iterations; ++it) {
    engine.begin_iteration(it);
    engine.backward_started();
    for (int t = 0; t + 1 < layout.tensors(); t += 2) {
      kernels::sweep_after_compute(evict);
      fill(engine.gradient(t), o.elements, uint64_t(it) * 1000 + uint64_t(t));
      fill(engine.gradient(t + 1), o.elements, uint64_t(it) * 1000 + uint64_t(t + 1));
      engine.tensor_ready(t);
      engine.tensor_ready(t + 1);
    }
    engine.wait_for_buckets();
    engine.end_iteration();
    if (it == 0) continue;  // warm-up: the exchanges are made, not reused
    const auto& exchanges = engine.exchanges();
    for (size_t b = 0; b < exchanges.size(); ++b) {
      (b % 2 == 0 ? us.weight : us.bias).push_back(double(exchanges[b]->compression_ns) / 1e3);
    }
  }
  return us;
}

// pack_dense of one tensor into its own payload, flushed from every cache first.
double timed_pack_us(const std::vector<float>& gradient, std::vector<float>& values, std::vector<int32_t>& indices) {
  kernels::flush_from_caches(values.data(), values.size() * sizeof(float));
  kernels::flush_from_caches(indices.data(), indices.size() * sizeof(int32_t));
  const auto start = Clock::now();
  kernels::pack_dense(gradient.data(), int64_t(gradient.size()), values.data(), indices.data());
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

Pair kernel_us(const FlushCostOptions& o, std::vector<uint64_t>& evict) {
  const size_t n = size_t(o.elements);
  std::vector<float> weight(n), bias(n), weight_values(n), bias_values(n);
  std::vector<int32_t> weight_indices(n), bias_indices(n);
  Pair us;
  for (int call = 0; call < o.iterations * o.modules; ++call) {
    kernels::sweep_after_compute(evict);
    fill(weight.data(), o.elements, 2 * uint64_t(call));
    fill(bias.data(), o.elements, 2 * uint64_t(call) + 1);
    us.weight.push_back(timed_pack_us(weight, weight_values, weight_indices));
    us.bias.push_back(timed_pack_us(bias, bias_values, bias_indices));
  }
  return us;
}

}  // namespace

std::string write_module_pairs_trace(int64_t elements, int modules) {
  char path[] = "/tmp/sparsefuse_module_pairs_XXXXXX.json";
  const int fd = mkstemps(path, 5);
  if (fd < 0) {
    throw std::runtime_error("cannot create a temporary trace of module pairs for a runtime cost measurement");
  }
  close(fd);
  Json tensors = Json::array();
  for (int m = 0; m < modules; ++m) {
    for (const char* parameter : {"weight", "bias"}) {
      tensors.push_back({{"name", "layer" + std::to_string(m) + "." + parameter},
                         {"shape", {elements}},
                         {"elements", elements},
                         {"ready_ns", 1000 * (int64_t(tensors.size()) + 1)}});
    }
  }
  const Json provenance = {{"kind", "analytic"}, {"method", "runtime/flush_cost.h write_module_pairs_trace"}};
  const Json trace = {{"format", "sparsefuse-trace/1"}, {"model", "module-pairs"}, {"batch_size", 1},
                      {"dtype", "float32"}, {"provenance", provenance},
                      {"forward_ns", 1000}, {"backward_ns", 2000 * modules}, {"optimizer_ns", 1000},
                      {"tensors", tensors}};
  std::ofstream(path) << trace.dump();
  return path;
}

FlushCost measure_flush_cost(const FlushCostOptions& o) {
  if (o.elements < 1 || o.modules < 1 || o.iterations < 1 || o.evict_bytes < 0) {
    throw std::invalid_argument("flush measurement: expected elements, modules, iterations >= 1 and evict bytes >= 0");
  }
  std::vector<uint64_t> evict(size_t(o.evict_bytes) / sizeof(uint64_t));
  const Pair engine = engine_us(o, evict);
  const Pair kernel = kernel_us(o, evict);
  return {median(engine.weight), median(kernel.weight), median(engine.bias), median(kernel.bias)};
}

}  // namespace sparsefuse::runtime
