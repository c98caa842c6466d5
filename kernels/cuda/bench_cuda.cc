// bench_cuda: CUDA kernels timed with CUDA events against the memory floor and
// against a CUB DeviceRadixSort-based top-k on the same data.
//
//   bench_cuda [--max-elements N] [--reps R]
//
// For n in {1e5, 1e6, 1e7, 2^24, 1e8, 2^28, 5e8} (up to --max-elements) and
// density d in {0.001, 0.01, 0.1}: Gaussian data (fill_normal), median of R
// timed calls after one warm-up. BW = the measured device-to-device copy
// bandwidth (read + write bytes / s). Columns:
//   t1_us     one read of the input at BW: 4n / BW
//   floor_us  the kernel's own floor: (bytes it must move) / BW, with
//             topk/randomk/adtopk 4n + 8k, ef_topk 12n + 8k (read r and g, write r,
//             write pairs), sort baseline the same 4n + 8k as topk
//   ratio     time / floor
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/cuda/baseline.h"
#include "kernels/cuda/cuda_kernels.h"

namespace sk = sparsefuse::kernels;
namespace skc = sparsefuse::kernels::cuda;

int main(int argc, char** argv) {
  int64_t max_elements = 500'000'000;
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--max-elements") && i + 1 < argc) max_elements = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_cuda [--max-elements N] [--reps R]\n");
      return 2;
    }
  }
  std::string reason;
  if (!skc::device_available(&reason)) {
    std::printf("bench_cuda: no usable CUDA device (%s)\n", reason.c_str());
    return 0;
  }
  try {
    skc::Workspace ws;
    const double bw = skc::measure_copy_bandwidth(size_t{1} << 30, 20, ws);
    std::printf("# device %s, copy bandwidth %.1f GB/s (read + write)\n", skc::device_name().c_str(), bw / 1e9);
    std::printf("# %12s %8s %-12s %12s %10s %10s %8s\n", "n", "density", "kernel", "time_us", "t1_us",
                "floor_us", "ratio");
    const int64_t sizes[] = {100'000, 1'000'000, 10'000'000, 1 << 24, 100'000'000, 1 << 28, 500'000'000};
    for (const int64_t n : sizes) {
      if (n > max_elements) break;
      skc::DeviceBuffer<float> g(n), r(n);
      skc::fill_normal(g.data(), n, 1, 1e-3f);
      skc::fill_normal(r.data(), n, 2, 1e-4f);
      skc::baseline::SortTopk sorter(n);
      const double t1 = 4.0 * n / bw * 1e6;
      for (const double d : {0.001, 0.01, 0.1}) {
        const int64_t k = sk::k_for_density(n, d);
        skc::DeviceBuffer<float> v(k);
        skc::DeviceBuffer<int32_t> idx(k);
        const double pairs = 8.0 * k;
        auto row = [&](const char* name, double bytes, const std::function<void()>& fn) {
          const double t = skc::median_event_time_us(fn, reps);
          const double floor_us = bytes / bw * 1e6;
          std::printf("  %12lld %8.3f %-12s %12.2f %10.2f %10.2f %8.2f\n", static_cast<long long>(n), d, name, t,
                      t1, floor_us, t / floor_us);
          std::fflush(stdout);
        };
        row("topk", 4.0 * n + pairs, [&] { skc::topk_abs(g.data(), n, k, v.data(), idx.data(), ws); });
        row("sort_topk", 4.0 * n + pairs, [&] {
          sorter.run(g.data(), k, v.data(), idx.data(), nullptr);
          skc::check(cudaStreamSynchronize(nullptr), "sync");
        });
        row("ef_topk", 12.0 * n + pairs, [&] { skc::ef_topk(r.data(), g.data(), n, k, v.data(), idx.data(), ws); });
        row("randomk", std::min(4.0 * n, 32.0 * k) + pairs,
            [&] { skc::randomk(g.data(), n, k, sk::RandomkKey{1, 2, 3}, v.data(), idx.data(), ws); });
        if (n % 1000 == 0) {
          const std::vector<int64_t> shape{n / 1000, 1000};
          const int64_t m = sk::adtopk_count(shape, d);
          skc::DeviceBuffer<float> av(m);
          skc::DeviceBuffer<int32_t> ai(m);
          row("adtopk", 4.0 * n + 8.0 * m, [&] { skc::adtopk(g.data(), shape, d, av.data(), ai.data(), ws); });
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
