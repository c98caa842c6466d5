// Where a rank's gradient, residual, averaged gradient and bucket payloads
// live when they are not in host memory. The engine (runtime/engine.h) keeps
// them in host vectors and runs the CPU kernels on them; given a payload plane
// (EngineConfig::make_plane, `sparsefuse run --device cuda` for the schemes
// resident_refusal accepts) it hands these steps to the plane instead, which
// keeps everything on the device (runtime/resident_payloads.h): the
// synthetic gradient is uploaded once per iteration off the clock, standing
// in for backward writing it, and from then on nothing crosses to the host on
// the clock except counts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/compression.h"
#include "policy/scheme.h"
#include "runtime/communicator.h"
#include "runtime/compressor.h"
#include "runtime/exchange.h"

namespace sparsefuse::runtime {

class PayloadPlane {
 public:
  virtual ~PayloadPlane() = default;
  // Off the clock, before the iteration: the rank's gradient (the layout's
  // total floats, host memory) as backward leaves it on the device.
  virtual void load_gradient(const float* gradient) = 0;
  // The engine's thread: R's selection from the gradient, kept as selection
  // SLOT for the flush that carries it (error feedback as Compressor::compress
  // does it; the sent values written over the gradient). Returns the count.
  virtual int64_t compress(const policy::CompressionRequest& r, int slot, const SelectionKey& key) = 0;
  // The communication thread, before fill: a selection a CPU thread made
  // (from the host copy of the gradient, no error feedback) becomes SLOT's,
  // as if compress had made it; the values it sends are the gradient's.
  virtual void adopt_selection(int slot, const RangeSelection& selection) = 0;
  // The engine's thread, once exchange.segments are set: the payload
  // (exchange.sent_count; for an allgather, the pairs packed on the device).
  virtual void fill(BucketExchange& exchange) = 0;
  // The communication thread, as run_collective and apply_result on the
  // host: the collective, then the average into the plane's averaged gradient.
  virtual void run_collective(BucketExchange& exchange, Communicator& comm) = 0;
  virtual void apply_result(BucketExchange& exchange, Communicator& comm) = 0;
  // The communication thread, in the forward (DeAR): forward stage STAGE's
  // deferred GROUP, whose reduce-scatter left this rank's averaged shard with
  // the plane (apply_result of an exchange with that stage), all-gathered
  // from every rank into the plane's averaged gradient.
  virtual void all_gather_stage(int stage, const policy::Bucket& group, Communicator& comm) = 0;
  // Off the clock, for --check: the averaged gradient, the residual and each
  // exchange's gathered pairs copied into their host places.
  virtual void copy_to_host(std::vector<float>& aggregate, std::vector<float>& residual,
                            const std::vector<std::unique_ptr<BucketExchange>>& exchanges) = 0;
};

// Why SCHEME's payloads cannot stay on the device, or "" when they can. The
// device path runs buckets that are dense allreduces of whole ranges or
// allgathers of inline selections, decided by per-worker policies, agreed by
// Horovod's negotiation (Horovod, RGMerge-dynamic) or fixed by a plan of such
// buffers (Cupcake; Espresso and HiPress when their plan has nothing else),
// and DeAR's reduce-scatters and forward all-gathers: not a launch scheduler
// (ByteScheduler), not the sparse allreduces (Ok-Topk, gTop-k, SparDL, CaSync's
// ring, ...), not selections on a side stream, CPU offload with error
// feedback (the residual would live on the host), pad-to-max alignment, or
// fixed-k alignment of a threshold sparsifier (align_to_count is host code).
// A hybrid bucket (part of its range allreduced, part allgathered) is two such
// buckets over one range; a CPU-offloaded selection is made on the host and
// handed over (adopt_selection).
std::string resident_refusal(const policy::Scheme& scheme);

}  // namespace sparsefuse::runtime
