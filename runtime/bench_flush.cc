// What the engine's flush of a small bucket costs beyond the kernel that
// packs it, in training's cache state (runtime/flush_cost.h says how it is
// measured). A benchmark run by hand, not a test: it prints the figures.
//   bazel-bin/runtime/bench_flush [--elements N] [--modules M] [--iterations I] [--evict B]
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "runtime/flush_cost.h"

namespace {

sparsefuse::runtime::FlushCostOptions parse(int argc, char** argv) {
  sparsefuse::runtime::FlushCostOptions o;
  if (argc % 2 == 0) throw std::invalid_argument("expected --option value pairs");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const long long value = std::atoll(argv[i + 1]);
    if (key == "--elements") o.elements = value;
    else if (key == "--modules") o.modules = int(value);
    else if (key == "--iterations") o.iterations = int(value);
    else if (key == "--evict") o.evict_bytes = value;
    else throw std::invalid_argument("unknown option " + key);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const sparsefuse::runtime::FlushCostOptions o = parse(argc, argv);
    const sparsefuse::runtime::FlushCost c = sparsefuse::runtime::measure_flush_cost(o);
    std::printf("# weight: a module's first flush, after its backward step; bias: the flush right after it\n");
    std::printf("%10s %8s %10s %7s %12s %12s %17s\n", "elements", "modules", "evict (B)", "flush", "engine (us)",
                "kernel (us)", "bookkeeping (us)");
    const auto row = [&o](const char* flush, double engine, double kernel) {
      std::printf("%10lld %8d %10lld %7s %12.2f %12.2f %17.2f\n", (long long)o.elements, o.modules,
                  (long long)o.evict_bytes, flush, engine, kernel, engine - kernel);
    };
    row("weight", c.weight_engine_us, c.weight_kernel_us);
    row("bias", c.bias_engine_us, c.bias_kernel_us);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_flush: %s\n", e.what());
    return 2;
  }
}
