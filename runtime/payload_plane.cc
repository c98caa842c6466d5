#include "runtime/payload_plane.h"

#include "policy/dear.h"
#include "policy/horovod.h"
#include "policy/planned_scheme.h"
#include "policy/sparse_scheme.h"
#include "policy/sparsifier.h"
#include "policy/static_scheme.h"

namespace sparsefuse::runtime {

namespace {

const char* const kFixedThreshold = "fixed-k alignment of a threshold sparsifier";

// A plan of dense allreduces and allgathers of inline selections (Cupcake,
// and Espresso where it places no compression on the CPU) runs on the
// device like a worker policy's buckets; sparse allreduces do not.
std::string planned_refusal(const policy::PlannedScheme& planned) {
  for (const policy::PlannedBuffer& b : planned.buffers()) {
    if (b.route == policy::Route::kSparseAllreduce) return "its buckets are sparse allreduces";
    if (b.route == policy::Route::kAllgather && b.placement != policy::Placement::kGpuInline) {
      return "it compresses off the compute stream";
    }
  }
  return "";
}

}  // namespace

std::string resident_refusal(const policy::Scheme& scheme) {
  // Negotiated flushes compress (compress_agreed), pack and reduce through the
  // same plane calls as a worker policy's, on the communication thread; a
  // merged buffer's selection is aligned to k on every worker.
  if (const auto* horovod = dynamic_cast<const policy::HorovodScheme*>(&scheme)) {
    const policy::HorovodOptions& o = horovod->options();
    return o.density < 1.0 && policy::threshold_sparsifier(o.sparsifier) ? kFixedThreshold : "";
  }
  if (scheme.make_coordinator()) return "a coordinator negotiates its buckets";
  if (const auto* planned = dynamic_cast<const policy::PlannedScheme*>(&scheme)) return planned_refusal(*planned);
  if (scheme.make_launch_scheduler()) return "a launch scheduler partitions its buckets";
  // DeAR: dense reduce-scatters of whole groups in backward, each group's
  // all-gather in the next forward (PayloadPlane::all_gather_stage).
  if (dynamic_cast<const policy::DearScheme*>(&scheme)) return "";
  if (scheme.forward_plan()) return "its all-gathers run in the next forward";
  if (dynamic_cast<const policy::StaticBucketScheme*>(&scheme)) return "";
  const auto* sparse = dynamic_cast<const policy::SparseScheme*>(&scheme);
  if (!sparse) return "its buckets are not the plane's";
  const policy::SparseOptions& o = sparse->options();
  if (o.compress_on == policy::Placement::kGpuSideStream) return "it compresses on a side stream";
  if (o.compress_on == policy::Placement::kCpuOffload && o.error_feedback != policy::ErrorFeedback::kNone) {
    return "error feedback of a CPU-offloaded selection lives on the host";
  }
  if (o.alignment == policy::Alignment::kPadToMax) return "pad-to-max alignment pads on the host";
  if (o.alignment == policy::Alignment::kFixed && policy::threshold_sparsifier(o.sparsifier)) return kFixedThreshold;
  return "";
}

}  // namespace sparsefuse::runtime
