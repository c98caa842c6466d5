#include "runtime/support.h"

#include <fmt/format.h>

#include "policy/adaptive.h"
#include "policy/bytescheduler.h"
#include "policy/horovod.h"
#include "policy/planned_scheme.h"
#include "policy/sparsifier.h"

namespace sparsefuse::runtime {

namespace {

// The sparse allreduces runtime/sparse_allreduce.h implements.
bool runs_sparse_allreduce(policy::SparseAllreduce a) {
  using policy::SparseAllreduce;
  return a == SparseAllreduce::kSharedIndices || a == SparseAllreduce::kGTopk || a == SparseAllreduce::kSparDL ||
         a == SparseAllreduce::kTopkDsa || a == SparseAllreduce::kOkTopk || a == SparseAllreduce::kCaSyncRing;
}

}  // namespace

std::string unsupported_reason(const std::string& preset, const policy::Scheme& scheme) {
  const std::string head = fmt::format("runtime-mpi cannot run preset \"{}\": ", preset);
  if (!scheme.make_worker_policy(0) && !dynamic_cast<const policy::HorovodScheme*>(&scheme)) {
    return head + "it negotiates through a coordinator other than Horovod's, whose cycle the runtime does not know";
  }
  const policy::ForwardPlan* plan = scheme.forward_plan();
  if (scheme.make_launch_scheduler()) {
    // runtime/scheduled.h: ByteScheduler's credit over a forward gated per tensor.
    if (!dynamic_cast<const policy::ByteSchedulerScheme*>(&scheme) || !plan || !plan->wait_for_covering_collectives ||
        plan->iteration_waits_for_collectives) {
      return head + "it reorders launches with a scheduler other than ByteScheduler's, which the runtime does not know";
    }
    return "";
  }
  if (plan) {
    if (plan->wait_for_covering_collectives) {
      return head + "its forward waits per tensor for the previous iteration's collectives without a launch "
                    "scheduler, which the runtime does not replay";
    }
    for (const auto& stage : plan->stages) {
      if (stage.has_deferred && stage.deferred.collective != Collective::kAllgather) {
        return head + fmt::format("its forward waits on a deferred {}; the runtime defers all-gathers only",
                                  collective_name(stage.deferred.collective));
      }
    }
  }
  // An adaptive scheme ("replan_every") runs the plan it wraps.
  const auto* adaptive = dynamic_cast<const policy::AdaptiveScheme*>(&scheme);
  if (const auto* planned = dynamic_cast<const policy::PlannedScheme*>(adaptive ? &adaptive->current() : &scheme)) {
    for (const auto& b : planned->buffers()) {
      if (b.route == policy::Route::kSparseAllreduce && !runs_sparse_allreduce(b.algorithm)) {
        return head + fmt::format("it uses the sparse allreduce \"{}\", which the runtime does not implement",
                                  policy::sparse_allreduce_name(b.algorithm));
      }
      if (b.algorithm == policy::SparseAllreduce::kOkTopk && planned->options().exact_every <= 0) {
        return head + "Ok-Topk with exact_every = 0 never computes the threshold its other iterations reuse";
      }
      if (b.algorithm == policy::SparseAllreduce::kOkTopk && scheme.replan_every() > 0) {
        return head + "Ok-Topk with replan_every > 0: a re-planned partition opens buckets on iterations that reuse "
                      "a threshold no exact iteration has set for them";
      }
    }
  }
  return "";
}

std::vector<std::string> runtime_deviations(const policy::Scheme& scheme) {
  const auto* planned = dynamic_cast<const policy::PlannedScheme*>(&scheme);
  if (!planned || planned->options().sparsifier == policy::Sparsifier::kTopk) return {};
  const std::string planned_sparsifier = policy::sparsifier_name(planned->options().sparsifier);
  for (const auto& b : planned->buffers()) {
    if (b.algorithm != policy::SparseAllreduce::kCaSyncRing) continue;
    return {fmt::format("CaSync's ring re-encodes at every hop with an exact top-k, not {} (the simulator charges {})",
                        planned_sparsifier, planned_sparsifier)};
  }
  return {};
}

}  // namespace sparsefuse::runtime
