#include "runtime/payload_plane.h"

#include "policy/sparse_scheme.h"
#include "policy/sparsifier.h"
#include "policy/static_scheme.h"

namespace sparsefuse::runtime {

std::string resident_refusal(const policy::Scheme& scheme) {
  if (scheme.make_coordinator()) return "a coordinator negotiates its buckets";
  if (scheme.make_launch_scheduler()) return "a launch scheduler partitions its buckets";
  if (scheme.forward_plan()) return "its all-gathers run in the next forward";
  if (dynamic_cast<const policy::StaticBucketScheme*>(&scheme)) return "";
  const auto* sparse = dynamic_cast<const policy::SparseScheme*>(&scheme);
  if (!sparse) return "its buckets are sparse allreduces or a planned placement";
  const policy::SparseOptions& o = sparse->options();
  if (o.compress_on != policy::Placement::kGpuInline) return "it compresses off the compute stream";
  if (o.hybrid) return "its hybrid buckets allreduce part of their range";
  if (o.alignment == policy::Alignment::kPadToMax) return "pad-to-max alignment pads on the host";
  const bool threshold = !policy::count_band(o.sparsifier).exact();
  if (o.alignment == policy::Alignment::kFixed && threshold) return "fixed-k alignment of a threshold sparsifier";
  return "";
}

}  // namespace sparsefuse::runtime
