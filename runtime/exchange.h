// One flushed bucket on its way through the network: what this rank sends,
// what it receives, and how the result lands in the averaged gradient.
//
// A bucket names a tensor range; which of its tensors it carries follows
// from what the policy compressed this iteration (the same on every rank for
// the schemes the runtime runs):
//  - an allreduce carries the range's tensors that were not compressed, as
//    dense fp32 values (for hybrid schemes the other tensors travel in the
//    range's allgather);
//  - an allgather carries every selection made over tensors of the range, as
//    (value, int32 index) pairs with indices relative to the range start, and
//    also the uncompressed tensors when the bucket has dense elements (they
//    ride as pairs, as the seed systems' selective path does);
//  - a sparse allreduce (bucket.sparse) carries its range's selection as
//    pairs too, and runs runtime/sparse_allreduce.h instead; HiPress's ring
//    (kCaSyncRing) carries its whole range dense from the gradient and
//    encodes inside the collective;
//  - a reduce-scatter (DeAR) carries its whole range dense, as an allreduce
//    does; each rank keeps the average of its block for the all-gather that
//    the next iteration's forward runs (runtime/engine.h);
//  - a partition (ByteScheduler: Bucket::first_element) carries part of
//    its one uncompressed tensor dense, reduced in place in the gradient.
// Anything else (a selection straddling the range, an element count that
// does not add up) is a bucket the runtime cannot interpret: std::logic_error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/time.h"
#include "kernels/common.h"
#include "policy/bucket.h"
#include "runtime/communicator.h"
#include "runtime/gradients.h"
#include "runtime/pair_gather.h"

namespace sparsefuse::runtime {

// A selection made by one compression request: tensors [first, end), indices
// relative to the start of tensor FIRST.
struct RangeSelection {
  int first = 0, end = 0;
  kernels::Selection selection;
  TimeNs offloaded_ns = 0;  // an offloaded selection's run time on its thread (0 inline)
};

// A piece of a bucket's range: one compression request's tensors (SELECTION
// >= 0) or one uncompressed tensor (-1); INCLUDED says whether this bucket carries it.
struct Segment {
  int first = 0, end = 0;
  int selection = -1;
  bool included = true;
};

// COMPRESSED_BY[t]: the index into SELECTIONS of the request that compressed
// tensor t this iteration, or -1. Written into OUT, whose capacity is reused
// (a flush allocates nothing once its exchange has held as many segments).
void bucket_segments(const policy::Bucket& bucket, const ModelLayout& layout, const std::vector<int>& compressed_by,
                     const std::vector<RangeSelection>& selections, std::vector<Segment>& out);
std::vector<Segment> bucket_segments(const policy::Bucket& bucket, const ModelLayout& layout,
                                     const std::vector<int>& compressed_by, const std::vector<RangeSelection>& selections);

// FNV-1a over what must be identical on every rank for one operation: its
// place in the iteration's sequence and Bucket::same_operation's fields plus
// the element counts this executor relies on.
uint64_t bucket_fingerprint(const policy::Bucket& bucket, int iteration, int index);

// What a payload plane (runtime/payload_plane.h) keeps with an exchange:
// its device buffers, reused with the exchange from one iteration to the next.
struct DevicePayload {
  virtual ~DevicePayload() = default;
};

struct BucketExchange {
  policy::Bucket bucket;
  int iteration = 0, index = 0;  // the index-th flush of the iteration
  std::vector<Segment> segments;
  // Sent: pairs (allgather) or dense values (allreduce, reduce-scatter).
  // DENSE is where the dense values are: the gradient itself when the bucket
  // carries its whole range (contiguous there, so nothing is copied), else
  // VALUES, where the carried segments were gathered. An allreduce sums in
  // place there (a raw MPI_IN_PLACE reduction: no copy into a receive
  // buffer), so a whole-range allreduce leaves the sum in the gradient,
  // whose range no later work of the iteration reads.
  std::vector<float> values;
  float* dense = nullptr;
  std::vector<int32_t> indices;
  // Received (allgather): per-rank counts as gathered (after padding for
  // pad-to-max) and every rank's pairs in rank order.
  std::vector<int64_t> counts;
  std::vector<float> gathered_values;
  std::vector<int32_t> gathered_indices;
  // Packing workspace (allgather): kept with the exchange so that a reused
  // exchange packs without allocating.
  std::vector<int64_t> pack_offsets, pack_counts;
  std::vector<int32_t> pack_local;
  int64_t sent_count = 0;    // pairs or values this rank put on the wire
  int64_t lost = 0;          // equal-slices receiver: contributions dropped
  // Nanoseconds since the iteration start, and durations. DECOMPRESSED: when
  // the result was in the aggregate (the communication thread scatters it
  // right after the collective).
  TimeNs posted = 0, started = 0, finished = 0, decompressed = 0;
  TimeNs compression_ns = 0, decompression_ns = 0;
  uint64_t ticket = 0;  // its collective's job on the communication thread
  std::vector<uint64_t> offload_jobs;  // the OffloadPool jobs whose selections it carries (packed once done)
  float* reused_threshold = nullptr;   // Ok-Topk: the bucket's global threshold, kept between iterations
  // Reduce-scatter (DeAR): this rank's block of ceil(elements / P) sums, and
  // where its average goes (the engine's shard for the next forward's
  // all-gather; a payload plane keeps its own for forward stage STAGE).
  int64_t shard = 0;
  float* shard_out = nullptr;
  int stage = -1;
  std::unique_ptr<DevicePayload> device;  // a payload plane's, null on the host path

  int64_t bytes_sent() const;
  // Every segment of the range is carried (none is left to another collective).
  bool carries_whole_range() const;
  // False for a dense allreduce sent from the gradient itself: its flush
  // packed nothing, so none of its time is compression.
  bool packs_payload() const;
  // A dense allreduce sent from the gradient itself (a whole range or a
  // partition): its sum is left there in place.
  bool sums_in_gradient() const;
};

// Calls FN(offset, n) for each tensor range EXCHANGE carries, in order:
// OFFSET into the flat layout, N elements. A hybrid bucket's collective
// carries only some of its range; its dense payload holds them back to back.
template <class Fn>
void for_each_carried(const BucketExchange& exchange, const ModelLayout& layout, Fn&& fn) {
  for (const Segment& s : exchange.segments) {
    if (s.included) fn(layout.offset[s.first], layout.elements(s.first, s.end));
  }
}

// A reduce-scatter's block of ELEMENTS over RANKS: P equal blocks, the range
// padded with zeros when it does not divide (DeAR keeps block r on rank r).
inline int64_t reduce_scatter_block(int64_t elements, int64_t ranks) { return (elements + ranks - 1) / ranks; }

// "flush #K of iteration I (allgather of tensors [a, b))": how the engine's
// jobs and every error about a flush name it.
std::string describe_flush(const BucketExchange& exchange);

// Fills EXCHANGE's payload from SEND (the model's flat contribution: the
// gradient, with each selection's sent values written at its positions).
// Pairs are built by kernels::pack. A dense allreduce or reduce-scatter over
// a whole range works on SEND itself: unchanged until the collective runs,
// and an allreduce's sum afterwards.
void fill_payload(BucketExchange& exchange, const ModelLayout& layout, float* send,
                  const std::vector<RangeSelection>& selections);

// An allgather's fused buffer: per segment, its end offset from the range
// start (exchange.pack_offsets, from 0) and the pairs it contributes
// (exchange.pack_counts: SELECTED(id) for selection id, every element of a
// carried uncompressed tensor, 0 for a segment not carried). Returns the total.
int64_t pack_layout(BucketExchange& exchange, const ModelLayout& layout, const std::function<int64_t(int)>& selected);

// Checks every rank's announcement for EXCHANGE's gather (the same flush
// fingerprint; under fixed alignment, the same count) and sets exchange.counts.
// Throws std::runtime_error naming the disagreement.
void accept_announcements(BucketExchange& exchange, const std::vector<Announcement>& announced);

// Runs the bucket's collective (communication thread). Allgathers first
// exchange (count, fingerprint, checksum) per rank (pair_gather.h): the
// counts size the variable gather, a fingerprint that differs on any rank
// ends the run with an error instead of mismatched collectives, and a block
// that does not match its sender's checksum ends it naming that rank.
void run_collective(BucketExchange& exchange, Communicator& comm);

// Writes the averaged result of a finished exchange into AGGREGATE (the
// model's flat averaged gradient), for the segments the bucket carries (a
// reduce-scatter: this rank's averaged block into exchange.shard_out instead):
// kernels::unpack (per-rank counts) or kernels::unpack_equal_slices (the
// seed's lossy receiver, setting exchange.lost) for allgathers; the sum / P
// for allreduces (kernels::average). An allgather whose range the bucket carries whole is
// scattered straight into AGGREGATE (the kernel zero-fills that range only);
// one that carries part of its range (hybrid schemes: the rest travels in an
// allreduce) is scattered into SCRATCH, grown when too small and otherwise
// reused, and its carried segments copied.
void apply_result(BucketExchange& exchange, const ModelLayout& layout, int ranks, float* aggregate,
                  std::vector<float>& scratch);

}  // namespace sparsefuse::runtime
