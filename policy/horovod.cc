#include "policy/horovod.h"

#include <algorithm>
#include <cmath>

#include "policy/partition.h"
#include "policy/presets.h"

namespace sparsefuse::policy {

TimeNs horovod_tick_ns(TimeNs ready, TimeNs cycle_ns, TimeNs negotiation_ns) {
  const TimeNs period = std::max(cycle_ns, negotiation_ns);
  return period > 0 ? (ready + period - 1) / period * period : ready;
}

namespace {

class HorovodCoordinator : public Coordinator {
 public:
  HorovodCoordinator(const GradientModel& model, const HorovodOptions& options, TimeNs negotiation_ns)
      : model_(model), options_(options), negotiation_ns_(negotiation_ns),
        ready_everywhere_(model.size(), 0) {}

  void begin_iteration(int /*iteration*/) override { std::fill(ready_everywhere_.begin(), ready_everywhere_.end(), 0); }

  void report_ready(int /*rank*/, int tensor, TimeNs now) override {
    ready_everywhere_[tensor] = std::max(ready_everywhere_[tensor], now);
  }

  void resolve(std::vector<CoordinatedFlush>& out) override {
    int first = 0;
    TimeNs first_tick = 0;
    int64_t fused_bytes = 0;
    for (int t = 0; t < model_.size(); ++t) {
      // The first cycle boundary at or after the tensor is ready on every worker.
      TimeNs tick = horovod_tick_ns(ready_everywhere_[t], options_.cycle_time_ns, negotiation_ns_);
      bool fits = fused_bytes + model_.bytes(t) <= options_.fusion_threshold_bytes;
      if (t > first && (tick != first_tick || !fits)) {
        emit(first, t, first_tick, out);
        first = t;
        fused_bytes = 0;
      }
      if (t == first) first_tick = tick;
      fused_bytes += model_.bytes(t);
    }
    emit(first, model_.size(), first_tick, out);
  }

 private:
  void emit(int first, int end, TimeNs tick, std::vector<CoordinatedFlush>& out) const {
    CoordinatedFlush flush;
    flush.bucket = dense_bucket(model_, first, end, Collective::kAllreduce);
    flush.not_before = tick + negotiation_ns_;
    if (options_.density < 1.0) {
      auto request = std::make_shared<CompressionRequest>();
      request->first_tensor = first;
      request->end_tensor = end;
      request->elements = flush.bucket.elements;
      request->sparsifier = options_.sparsifier;
      request->density = options_.density;
      request->expected_count = exact_count(request->elements, options_.density);
      request->align_to_expected = true;  // the same quantity on every worker
      request->placement = Placement::kGpuSideStream;
      flush.bucket.collective = Collective::kAllgather;
      flush.bucket.dense_elements = 0;
      flush.compress = true;
      flush.request = std::move(request);
    }
    out.push_back(std::move(flush));
  }

  const GradientModel& model_;
  HorovodOptions options_;
  TimeNs negotiation_ns_;
  std::vector<TimeNs> ready_everywhere_;
};

}  // namespace

HorovodScheme::HorovodScheme(const GradientModel& model, const CostEstimator& cost, HorovodOptions options)
    : model_(model), options_(options), negotiation_ns_(cost.workers() > 1 ? cost.coordination_ns() : 0) {}

std::unique_ptr<Coordinator> HorovodScheme::make_coordinator() const {
  return std::make_unique<HorovodCoordinator>(model_, options_, negotiation_ns_);
}

namespace {

std::unique_ptr<Scheme> build_horovod(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  HorovodOptions options;
  options.cycle_time_ns = TimeNs(std::llround(k.number("cycle_time_us") * 1000.0));
  options.fusion_threshold_bytes = k.count("fusion_threshold_bytes");
  return std::make_unique<HorovodScheme>(model, cost, options);
}

// Merge everything that is ready everywhere in a cycle: the same quantity of
// gradients on every worker, then one selection per buffer.
std::unique_ptr<Scheme> build_rgmerge_dynamic(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  HorovodOptions options;
  options.cycle_time_ns = TimeNs(std::llround(k.number("cycle_time_us") * 1000.0));
  options.fusion_threshold_bytes = INT64_MAX;
  options.sparsifier = k.sparsifier();
  options.density = k.number("density");
  return std::make_unique<HorovodScheme>(model, cost, options);
}

const Knob kCycleTime = Knob::number("cycle_time_us", 1000.0, "us", "negotiation cycle");

const PresetRegistration registration({
    {"horovod", "dense",
     "Horovod tensor fusion: per cycle, fuse tensors ready on every worker into allreduces <= threshold",
     "response-cache negotiation modelled as one ceil(log2 p)-latency exchange per cycle",
     {Knob::count("fusion_threshold_bytes", 128ll << 20, "bytes", "largest fused allreduce"), kCycleTime},
     Replanning::kNegotiated, build_horovod},
    {"rgmerge-dynamic", "seed",
     "RGMerge as described: workers agree each cycle to merge the ready gradients, then top-k",
     "not in the seed code; negotiation like Horovod's, compression on the side stream after agreement",
     {kCycleTime, Knob::sparsifier(Sparsifier::kTopk), Knob::density()}, Replanning::kNegotiated,
     build_rgmerge_dynamic},
});

}  // namespace

}  // namespace sparsefuse::policy
