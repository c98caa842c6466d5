// What the engine's flush of a small bucket costs beyond the kernel that
// packs it, in training's cache state (a benchmark run by hand:
//   bazel-bin/runtime/bench_flush [--elements N] [--tensors T] [--iterations I] [--evict B]).
// A benchmark, not a test: it prints the figures, it asserts nothing.
//
// engine: one rank (LoopbackCommunicator) runs ADTopk over T one-dimensional
//   tensors of N elements; each is sent dense as pairs in a bucket of its
//   own, as ResNet-50's batch-norm tensors are. Per tensor, as a layer's
//   backward would: a read-and-write sweep of B bytes, a fresh write of the
//   gradient, then tensor_ready. The figure is each bucket's compression as
//   the engine records it for result.json: its flush's bookkeeping (last
//   iteration's exchange, its segments, the pack layout) and pack_dense.
// kernel: pack_dense of N elements after the same sweep and gradient write,
//   its payload flushed from every cache (profile-kernels' after-compute
//   pack point at density 1).
// Both: medians over every bucket of I iterations after one warm-up;
// bookkeeping = engine - kernel. The simulator charges the kernel only
// (docs/simulator-model.md, "Calls after compute").
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "kernels/common.h"
#include "kernels/pack.h"
#include "model/forward_times.h"
#include "model/plan.h"
#include "model/scenario.h"
#include "runtime/comm_thread.h"
#include "runtime/communicator.h"
#include "runtime/engine.h"

namespace {

using namespace sparsefuse;
using Clock = std::chrono::steady_clock;

struct Options {
  int64_t elements = 64;
  int tensors = 64;
  int iterations = 20;
  int64_t evict_bytes = int64_t{8} << 20;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const long long value = std::atoll(argv[i + 1]);
    if (key == "--elements") o.elements = value;
    else if (key == "--tensors") o.tensors = int(value);
    else if (key == "--iterations") o.iterations = int(value);
    else if (key == "--evict") o.evict_bytes = value;
    else throw std::invalid_argument("unknown option " + key);
  }
  if (o.elements < 1 || o.tensors < 1 || o.iterations < 1 || o.evict_bytes < 0) {
    throw std::invalid_argument("expected --elements, --tensors, --iterations >= 1 and --evict >= 0");
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void fill(float* g, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; ++i) g[i] = float(int64_t((seed * 2654435761u + uint64_t(i) * 40503u) % 2001) - 1000) * 1e-3f;
}

// T one-dimensional tensors of N elements, written where the scenario loader reads it.
std::string write_trace(const Options& o) {
  char path[] = "/tmp/bench_flush_XXXXXX.json";
  const int fd = mkstemps(path, 5);
  if (fd < 0) throw std::runtime_error("cannot create a temporary trace");
  close(fd);
  Json tensors = Json::array();
  for (int t = 0; t < o.tensors; ++t) {
    tensors.push_back({{"name", "layer" + std::to_string(t) + ".weight"},
                       {"shape", {o.elements}},
                       {"elements", o.elements},
                       {"ready_ns", 1000 * (t + 1)}});
  }
  const Json trace = {{"format", "sparsefuse-trace/1"}, {"model", "bench-flush"}, {"batch_size", 1},
                      {"dtype", "float32"}, {"provenance", {{"kind", "analytic"}, {"method", "runtime/bench_flush"}}},
                      {"forward_ns", 1000}, {"backward_ns", 1000 * o.tensors}, {"optimizer_ns", 1000},
                      {"tensors", tensors}};
  std::ofstream(path) << trace.dump();
  return path;
}

std::vector<double> engine_us(const Options& o, std::vector<uint64_t>& evict) {
  const std::string trace = write_trace(o);
  const Json doc = {{"model", {{"trace", trace}}},
                    {"workers", 1},
                    {"scheme", {{"preset", "adtopk"}, {"error_feedback", "none"}}},
                    {"compression", {{"density", 0.01}}}};
  const model::Scenario scenario = model::parse_scenario(doc, "bench_flush");
  std::remove(trace.c_str());
  const model::ScenarioPlan planned(scenario);
  const runtime::ModelLayout layout = runtime::ModelLayout::from(scenario.trace, planned.model);
  runtime::CommThread comm([] { return std::make_unique<runtime::LoopbackCommunicator>(); });
  runtime::EngineConfig config;
  config.forward_split = model::forward_times(scenario.trace, planned.model, 1.0);
  runtime::RankEngine engine(planned.model, layout, planned.scheme(), comm, config);
  std::vector<double> us;
  for (int it = 0; it <= o.iterations; ++it) {
    engine.begin_iteration(it);
    engine.backward_started();
    for (int t = 0; t < layout.tensors(); ++t) {
      kernels::sweep_caches(evict);
      fill(engine.gradient(t), o.elements, uint64_t(it) * 1000 + uint64_t(t));
      engine.tensor_ready(t);
    }
    engine.wait_for_buckets();
    engine.end_iteration();
    if (it == 0) continue;  // warm-up: the exchanges are made, not reused
    for (const auto& x : engine.exchanges()) us.push_back(double(x->compression_ns) / 1e3);
  }
  return us;
}

std::vector<double> kernel_us(const Options& o, std::vector<uint64_t>& evict) {
  std::vector<float> gradient(size_t(o.elements)), values(size_t(o.elements));
  std::vector<int32_t> indices(size_t(o.elements));
  std::vector<double> us;
  for (int call = 0; call < o.iterations * o.tensors; ++call) {
    kernels::sweep_caches(evict);
    fill(gradient.data(), o.elements, uint64_t(call));
    kernels::flush_from_caches(values.data(), values.size() * sizeof(float));
    kernels::flush_from_caches(indices.data(), indices.size() * sizeof(int32_t));
    const auto start = Clock::now();
    kernels::pack_dense(gradient.data(), o.elements, values.data(), indices.data());
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    std::vector<uint64_t> evict(size_t(o.evict_bytes) / sizeof(uint64_t));
    const double engine = median(engine_us(o, evict));
    const double kernel = median(kernel_us(o, evict));
    std::printf("%10s %8s %10s %12s %12s %14s\n", "elements", "tensors", "evict (B)", "engine (us)", "kernel (us)",
                "bookkeeping (us)");
    std::printf("%10lld %8d %10lld %12.2f %12.2f %14.2f\n", (long long)o.elements, o.tensors,
                (long long)o.evict_bytes, engine, kernel, engine - kernel);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_flush: %s\n", e.what());
    return 2;
  }
}
