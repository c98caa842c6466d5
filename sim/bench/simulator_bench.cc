// Simulator speed (issue 2, acceptance 5): BERT-large, 1024 workers, 100
// measured iterations, horovod, compute noise CV 0.05, single-threaded.
// Target: <= 2 s wall and <= 1 GiB peak memory on a 2-core machine.
// Run: bazel run -c opt //sim/bench:simulator_bench
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "sim/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {
namespace {

void simulate_preset(benchmark::State& state, const char* preset, const char* model) {
  Json doc = {{"model", model},
              {"workers", state.range(0)},
              {"iterations", 100},
              {"warmup_iterations", 2},
              {"scheme", preset},
              {"variability", {{"compute_cv", 0.05}}}};
  Scenario scenario = parse_scenario(doc, "");
  uint64_t events = 0;
  int64_t worker_iterations = 0;
  for (auto _ : state) {
    SimResult r = simulate(scenario);
    events += r.events;
    worker_iterations += r.worker_iterations;
    benchmark::DoNotOptimize(r.iteration_ns.data());
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["events_per_s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
  state.counters["worker_iters_per_s"] = benchmark::Counter(double(worker_iterations), benchmark::Counter::kIsRate);
  state.counters["peak_rss_MiB"] = double(usage.ru_maxrss) / 1024.0;
}

void BM_HorovodBertLarge(benchmark::State& s) { simulate_preset(s, "horovod", "bert-large"); }
void BM_WfbpBertLarge(benchmark::State& s) { simulate_preset(s, "wfbp", "bert-large"); }
void BM_DdpBertLarge(benchmark::State& s) { simulate_preset(s, "ddp", "bert-large"); }

BENCHMARK(BM_HorovodBertLarge)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_WfbpBertLarge)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_DdpBertLarge)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace sparsefuse::sim

BENCHMARK_MAIN();
