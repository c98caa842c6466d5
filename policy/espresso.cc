#include "policy/espresso.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "policy/planned_scheme.h"
#include "policy/timeline_model.h"
#include "policy/presets.h"
#include "policy/sparse_scheme.h"

namespace sparsefuse::policy {

std::unique_ptr<Scheme> make_espresso_scheme(const GradientModel& model, const CostEstimator& cost,
                                             const EspressoOptions& options) {
  const int L = model.size();
  TimelineModel timeline(model, cost, options.sparsifier, options.density, options.memory_gbytes_per_s,
                         options.cpu_threads, options.error_feedback);
  enum Option { kDense = 0, kGpu = 1, kCpu = 2 };
  const int option_count = options.cpu_offload && timeline.cpu_available() ? 3 : 2;
  std::vector<std::array<BufferTiming, 3>> timings(L);
  for (int t = 0; t < L; ++t) {
    timings[t][kDense] = timeline.timing(t, t + 1, Route::kDense);
    timings[t][kGpu] = timeline.timing(t, t + 1, Route::kAllgather, Placement::kGpuInline);
    if (option_count == 3) timings[t][kCpu] = timeline.timing(t, t + 1, Route::kAllgather, Placement::kCpuOffload);
  }
  std::vector<int> choice(L, kDense);
  std::vector<BufferTiming> current(L);
  for (int t = 0; t < L; ++t) current[t] = timings[t][kDense];
  TimeNs best = timeline.iteration_ns(current);
  const TimeNs dense_ns = best;
  std::vector<int> order(L);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return model.elements[a] > model.elements[b]; });
  if (options.density < 1.0) {
    for (int t : order) {
      for (int o = 0; o < option_count; ++o) {
        if (o == choice[t]) continue;
        current[t] = timings[t][o];
        TimeNs candidate = timeline.iteration_ns(current);
        if (candidate < best) {
          best = candidate;
          choice[t] = o;
        }
        current[t] = timings[t][choice[t]];
      }
    }
  }
  std::vector<PlannedBuffer> buffers;
  int gpu = 0, cpu = 0;
  for (int t = 0; t < L; ++t) {
    PlannedBuffer b;
    b.first = t;
    b.end = t + 1;
    if (choice[t] != kDense) {
      b.route = Route::kAllgather;
      b.placement = choice[t] == kCpu ? Placement::kCpuOffload : Placement::kGpuInline;
      (choice[t] == kCpu ? cpu : gpu) += 1;
    }
    buffers.push_back(b);
  }
  PlannedOptions planned;
  planned.sparsifier = options.sparsifier;
  planned.density = options.density;
  planned.error_feedback = options.error_feedback;
  return std::make_unique<PlannedScheme>(model, planned, std::move(buffers),
                                         nlohmann::json{{"gpu_compressed_tensors", gpu},
                                                        {"cpu_compressed_tensors", cpu},
                                                        {"modelled_dense_ns", dense_ns},
                                                        {"modelled_iteration_ns", best}});
}

namespace {

std::unique_ptr<Scheme> build_espresso(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  EspressoOptions o;
  o.sparsifier = k.sparsifier();
  o.density = k.number("density");
  o.error_feedback = k.choice("error_feedback", error_feedbacks()) != ErrorFeedback::kNone;
  o.cpu_offload = k.flag("cpu_offload");
  o.cpu_threads = int(k.count("cpu_threads"));
  o.memory_gbytes_per_s = std::max(1e-3, k.number("memory_gbytes_per_s"));
  return make_espresso_scheme(model, cost, o);
}

const PresetRegistration registration({
    {"espresso", "compression",
     "Espresso: per-tensor choice of dense allreduce, GPU compression + allgather or CPU compression + allgather "
     "by its greedy (Algorithm 1) on a timeline model of the iteration",
     "flat network: no hierarchical/divisible options; no bubble pruning; CPU offload chosen inside the greedy "
     "(no Algorithm 2 enumeration)",
     {Knob::sparsifier(Sparsifier::kDgc), Knob::density(),
      Knob::choice("error_feedback", error_feedbacks(), ErrorFeedback::kTensor, "where residuals are kept"),
      Knob::flag("cpu_offload", true, "let the greedy compress tensors on CPU threads"),
      Knob::count("cpu_threads", 4, "threads", "CPU compression threads"), Knob::memory_bandwidth()},
     Replanning::kPlansItself, build_espresso},
});

}  // namespace

}  // namespace sparsefuse::policy
