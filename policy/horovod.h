// Horovod tensor fusion (operations.cc / controller.cc): a background cycle
// runs every CYCLE_TIME; in each cycle the coordinator learns which tensors
// are ready on *every* worker and fuses those, in order, into allreduces of at
// most FUSION_THRESHOLD bytes. With the response cache on (the default) the
// steady-state negotiation is one small allreduce per cycle, whose latency we
// charge before a fused allreduce may start; a cycle lasts at least that long.
// Cycles are ticks of one global clock anchored at time 0.
#pragma once

#include <algorithm>
#include <memory>

#include "policy/compression.h"
#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

// The cycle tick at which Horovod's background loop takes up an operation
// that is ready on every worker at READY: the first tick at or after READY,
// cycles lasting max(CYCLE, NEGOTIATION) (0: no cycle, READY itself). The
// operation may start one NEGOTIATION after its tick.
TimeNs horovod_tick_ns(TimeNs ready, TimeNs cycle_ns, TimeNs negotiation_ns);

struct HorovodOptions {
  int64_t fusion_threshold_bytes = 128ll << 20;  // default since Horovod v0.21 (PR #2468)
  TimeNs cycle_time_ns = 1'000'000;              // 1 ms, same PR
  // Density < 1 turns each fused buffer into one selection of k over the
  // buffer followed by an allgather (RGMerge's negotiated merging), with the
  // selection on the side stream once the coordinator has agreed.
  Sparsifier sparsifier = Sparsifier::kTopk;
  double density = 1.0;
};

class HorovodScheme : public Scheme {
 public:
  HorovodScheme(const GradientModel& model, const CostEstimator& cost, HorovodOptions options);
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override { (void)rank; return nullptr; }
  std::unique_ptr<Coordinator> make_coordinator() const override;
  // The negotiation cycle's period: ticks every max(CYCLE, NEGOTIATION)
  // (0: none). The simulator resolves once per iteration; a real executor
  // runs the cycle on its clock (runtime/coordinator.h).
  TimeNs cycle_ns() const { return std::max(options_.cycle_time_ns, negotiation_ns_); }
  const HorovodOptions& options() const { return options_; }

 private:
  const GradientModel& model_;
  HorovodOptions options_;
  TimeNs negotiation_ns_;
};

}  // namespace sparsefuse::policy
