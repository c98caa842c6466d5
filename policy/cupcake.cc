#include "policy/cupcake.h"

#include <algorithm>
#include <cmath>

#include "policy/planned_scheme.h"
#include "policy/timeline_model.h"
#include "policy/presets.h"
#include "policy/sparse_scheme.h"

namespace sparsefuse::policy {

static std::vector<PlannedBuffer> buffers_from(const std::vector<int>& splits, int L) {
  std::vector<PlannedBuffer> buffers;
  int first = 0;
  for (size_t i = 0; i <= splits.size(); ++i) {
    PlannedBuffer b;
    b.first = first;
    b.end = i < splits.size() ? splits[i] : L;
    b.route = Route::kAllgather;
    buffers.push_back(b);
    first = b.end;
  }
  return buffers;
}

std::vector<int> cupcake_splits(const GradientModel& model, const CostEstimator& cost, const CupcakeOptions& options) {
  const int L = model.size();
  const int F = options.fusion_num <= 0 ? L : std::min(options.fusion_num, L);
  std::vector<int> splits;
  for (int i = 1; i < F; ++i) splits.push_back(int(std::lround(double(i) * L / F)));
  if (!options.search || F == L) return splits;
  TimelineModel timeline(model, cost, options.sparsifier, options.density, options.memory_gbytes_per_s, 1,
                         options.error_feedback);
  for (size_t i = 0; i < splits.size(); ++i) {
    int lo = i == 0 ? 1 : splits[i - 1] + 1;
    int hi = i + 1 < splits.size() ? splits[i + 1] - 1 : L - 1;
    auto at = [&](int index) {
      std::vector<int> trial = splits;
      trial[i] = index;
      return timeline.iteration_ns(buffers_from(trial, L));
    };
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      if (at(mid) <= at(mid + 1)) hi = mid;
      else lo = mid + 1;
    }
    splits[i] = lo;
  }
  return splits;
}

std::unique_ptr<Scheme> make_cupcake_scheme(const GradientModel& model, const CostEstimator& cost,
                                            const CupcakeOptions& options) {
  std::vector<int> splits = cupcake_splits(model, cost, options);
  PlannedOptions planned;
  planned.sparsifier = options.sparsifier;
  planned.density = options.density;
  planned.error_feedback = options.error_feedback;
  TimelineModel timeline(model, cost, options.sparsifier, options.density, options.memory_gbytes_per_s, 1,
                         options.error_feedback);
  std::vector<PlannedBuffer> buffers = buffers_from(splits, model.size());
  TimeNs modelled = timeline.iteration_ns(buffers);
  return std::make_unique<PlannedScheme>(model, planned, std::move(buffers),
                                         nlohmann::json{{"splits", splits}, {"modelled_iteration_ns", modelled}});
}

namespace {

std::unique_ptr<Scheme> build_cupcake(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  CupcakeOptions o;
  o.sparsifier = k.sparsifier();
  o.density = k.number("density");
  o.fusion_num = int(k.count("fusion_num"));
  o.search = k.flag("search");
  o.error_feedback = k.choice("error_feedback", error_feedbacks()) != ErrorFeedback::kNone;
  o.memory_gbytes_per_s = std::max(1e-3, k.number("memory_gbytes_per_s"));
  return make_cupcake_scheme(model, cost, o);
}

const PresetRegistration registration({
    {"cupcake", "compression",
     "Cupcake: F fused buffers (equal-count), split points moved by binary search on modelled time; one "
     "compression + allgather per buffer",
     "split search on the planning timeline instead of measured iterations; F = 2 by default",
     {Knob::sparsifier(Sparsifier::kTopk), Knob::density(),
      Knob::count("fusion_num", 2, "buffers", "fused buffers F"),
      Knob::flag("search", true, "move the split points by binary search"),
      Knob::choice("error_feedback", error_feedbacks(), ErrorFeedback::kBuffer, "where residuals are kept"),
      Knob::memory_bandwidth()},
     Replanning::kPlansItself, build_cupcake},
});

}  // namespace

}  // namespace sparsefuse::policy
