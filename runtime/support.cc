#include "runtime/support.h"

#include <fmt/format.h>

#include "policy/planned_scheme.h"
#include "policy/sparse_scheme.h"

namespace sparsefuse::runtime {

std::string unsupported_reason(const std::string& preset, const policy::Scheme& scheme) {
  const std::string head = fmt::format("runtime-mpi cannot run preset \"{}\": ", preset);
  if (scheme.make_coordinator() || !scheme.make_worker_policy(0)) {
    return head + "it negotiates its buckets at run time through a coordinator (Horovod-style), and the runtime "
                  "has no coordinator; it runs schemes whose workers decide alone";
  }
  if (scheme.forward_plan()) {
    return head + "it moves communication into the next iteration's forward pass, which the runtime does not replay";
  }
  if (scheme.make_launch_scheduler()) {
    return head + "it reorders launches with a scheduler; the runtime launches in flush order";
  }
  if (scheme.replan_every() > 0) {
    return head + "\"replan_every\" re-plans from measurements, which the runtime does not report to the policy yet";
  }
  if (const auto* planned = dynamic_cast<const policy::PlannedScheme*>(&scheme)) {
    for (const auto& b : planned->buffers()) {
      if (b.route == policy::Route::kSparseAllreduce) {
        return head + fmt::format("it uses the sparse allreduce \"{}\", which the runtime does not implement",
                                  policy::sparse_allreduce_name(b.algorithm));
      }
      if (b.route == policy::Route::kAllgather && b.placement != policy::Placement::kGpuInline) {
        return head + fmt::format("it compresses tensors [{}, {}) with placement \"{}\"; the runtime compresses inline "
                                  "on each rank's thread only",
                                  b.first, b.end, policy::placement_name(b.placement));
      }
    }
  }
  if (const auto* sparse = dynamic_cast<const policy::SparseScheme*>(&scheme)) {
    if (sparse->options().compress_on != policy::Placement::kGpuInline) {
      return head + fmt::format("compress_on=\"{}\" needs a side stream or CPU offload threads; the runtime "
                                "compresses inline on each rank's thread only (use compress_on=\"gpu-inline\")",
                                policy::placement_name(sparse->options().compress_on));
    }
  }
  return "";
}

}  // namespace sparsefuse::runtime
