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

struct Pair {
  std::vector<double> weight, bias;
};

Pair engine_us(const FlushCostOptions& o, std::vector<uint64_t>& evict) {
  DensePairsEngine pairs(std::vector<int64_t>(size_t(2 * o.modules), o.elements));
  RankEngine& engine = pairs.engine();
  Pair us;
  for (int it = 0; it <= o.iterations; ++it) {
    engine.begin_iteration(it);
    engine.backward_started();
    for (int t = 0; t + 1 < pairs.tensors(); t += 2) {
      kernels::sweep_after_compute(evict);
      fill_gradient(engine.gradient(t), o.elements, uint64_t(it) * 1000 + uint64_t(t));
      fill_gradient(engine.gradient(t + 1), o.elements, uint64_t(it) * 1000 + uint64_t(t + 1));
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
    fill_gradient(weight.data(), o.elements, 2 * uint64_t(call));
    fill_gradient(bias.data(), o.elements, 2 * uint64_t(call) + 1);
    us.weight.push_back(timed_pack_us(weight, weight_values, weight_indices));
    us.bias.push_back(timed_pack_us(bias, bias_values, bias_indices));
  }
  return us;
}

}  // namespace

void fill_gradient(float* g, int64_t elements, uint64_t seed) {
  for (int64_t i = 0; i < elements; ++i) {
    g[i] = float(int64_t((seed * 2654435761u + uint64_t(i) * 40503u) % 2001) - 1000) * 1e-3f;
  }
}

std::string write_module_pairs_trace(const std::vector<int64_t>& sizes) {
  char path[] = "/tmp/sparsefuse_module_pairs_XXXXXX.json";
  const int fd = mkstemps(path, 5);
  if (fd < 0) {
    throw std::runtime_error("cannot create a temporary trace of module pairs for a runtime cost measurement");
  }
  close(fd);
  Json list = Json::array();
  const auto tensors = int64_t(sizes.size());
  for (int64_t t = 0; t < tensors; ++t) {
    list.push_back({{"name", "layer" + std::to_string(t / 2) + (t % 2 == 0 ? ".weight" : ".bias")},
                    {"shape", {sizes[size_t(t)]}},
                    {"elements", sizes[size_t(t)]},
                    {"ready_ns", 1000 * (int64_t(t) + 1)}});
  }
  const Json provenance = {{"kind", "analytic"}, {"method", "runtime/flush_cost.h write_module_pairs_trace"}};
  const Json trace = {{"format", "sparsefuse-trace/1"}, {"model", "module-pairs"}, {"batch_size", 1},
                      {"dtype", "float32"}, {"provenance", provenance},
                      {"forward_ns", 1000}, {"backward_ns", 1000 * (tensors + 1)}, {"optimizer_ns", 1000},
                      {"tensors", list}};
  std::ofstream(path) << trace.dump();
  return path;
}

struct DensePairsEngine::Parts {
  explicit Parts(const model::Scenario& s)
      : scenario(s),
        planned(scenario),
        layout(ModelLayout::from(scenario.trace, planned.model)),
        comm([] { return std::make_unique<LoopbackCommunicator>(); }) {}
  const model::Scenario scenario;
  const model::ScenarioPlan planned;
  const ModelLayout layout;
  CommThread comm;
  std::unique_ptr<RankEngine> engine;
};

namespace {

model::Scenario dense_pairs_scenario(const std::vector<int64_t>& sizes) {
  const std::string trace = write_module_pairs_trace(sizes);
  const Json doc = {{"model", {{"trace", trace}}},
                    {"workers", 1},
                    {"scheme", {{"preset", "adtopk"}, {"error_feedback", "none"}}},
                    {"compression", {{"density", 0.01}}}};
  try {
    model::Scenario scenario = model::parse_scenario(doc, "dense pairs engine");
    std::remove(trace.c_str());
    return scenario;
  } catch (...) {
    std::remove(trace.c_str());
    throw;
  }
}

}  // namespace

DensePairsEngine::DensePairsEngine(const std::vector<int64_t>& sizes)
    : parts_(std::make_unique<Parts>(dense_pairs_scenario(sizes))) {
  EngineConfig config;
  config.forward_split = model::forward_times(parts_->scenario.trace, parts_->planned.model, 1.0);
  parts_->engine = std::make_unique<RankEngine>(parts_->planned.model, parts_->layout, parts_->planned.scheme(),
                                                parts_->comm, config);
}

RankEngine& DensePairsEngine::engine() { return *parts_->engine; }

int DensePairsEngine::tensors() const { return parts_->layout.tensors(); }

// The engine first: it drains its communication thread.
DensePairsEngine::~DensePairsEngine() { parts_->engine.reset(); }

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
