// Google Benchmark: exact topk_abs against std::nth_element (+ the copy of |x|
// it needs) on the same data: n = 1e7 Gaussian-like gradient values, density
// in {0.001, 0.01, 0.1}. Single thread. Run:
//   bazel run -c opt //kernels:bench_topk
// and divide the nth_element time by the topk_abs time for the ratio.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "kernels/synthetic.h"
#include "kernels/topk.h"

namespace sk = sparsefuse::kernels;

namespace {

constexpr int64_t kN = 10'000'000;

// Gradient-like data: Gaussian with scale 1e-3, fixed seed so every benchmark
// sees the same input.
const std::vector<float>& data() {
  static const std::vector<float> d = sk::gaussian_gradient(kN, 12345, 1e-3);
  return d;
}

int64_t k_of(const benchmark::State& state) { return kN / state.range(0); }

void BM_TopkAbs(benchmark::State& state) {
  const auto& g = data();
  const int64_t k = k_of(state);
  std::vector<float> values(k);
  std::vector<int32_t> indices(k);
  sk::TopkWorkspace ws;
  for (auto _ : state) {
    sk::topk_abs(g.data(), kN, k, values.data(), indices.data(), &ws);
    benchmark::DoNotOptimize(values.data());
    benchmark::DoNotOptimize(indices.data());
  }
  state.counters["k"] = double(k);
  state.SetBytesProcessed(state.iterations() * kN * int64_t(sizeof(float)));
}

void BM_NthElement(benchmark::State& state) {
  const auto& g = data();
  const int64_t k = k_of(state);
  std::vector<float> mag(kN);
  for (auto _ : state) {
    for (int64_t i = 0; i < kN; ++i) mag[i] = std::fabs(g[i]);
    std::nth_element(mag.begin(), mag.begin() + (k - 1), mag.end(), std::greater<float>());
    benchmark::DoNotOptimize(mag.data());
  }
  state.counters["k"] = double(k);
  state.SetBytesProcessed(state.iterations() * kN * int64_t(sizeof(float)));
}

// range(0) = 1/density
BENCHMARK(BM_TopkAbs)->Arg(1000)->Arg(100)->Arg(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NthElement)->Arg(1000)->Arg(100)->Arg(10)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
