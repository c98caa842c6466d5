// A worker's local streams during one iteration, and the executor side of the
// policy interface (policy::WorkerContext): the compute stream (backward and
// inline compression), a GPU side stream, CPU offload threads, and the flushes
// the policy decides. Local events never touch the global queue.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/time.h"
#include "policy/compression.h"
#include "policy/gradient_model.h"
#include "model/compression_cost.h"

namespace sparsefuse::sim {

using Interval = std::pair<TimeNs, TimeNs>;

// Where a worker's flushes go: all workers' posts and contributions, worker-major.
struct FlushRecord {
  std::vector<policy::Bucket> buckets;  // worker 0's sequence (the reference)
  std::vector<TimeNs> posts;            // posts[w * K + k]
  std::vector<int64_t> bytes;           // each worker's contribution
  std::vector<TimeNs> compression;      // compression time attributed to the flush
  void clear() { buckets.clear(), posts.clear(), bytes.clear(), compression.clear(); }
};

struct WorkerStreams {
  double scale = 1;  // compute-time multiplier this iteration
  TimeNs start = 0, backward_start = 0, backward_end = 0, optimizer_start = 0, end = 0;
  TimeNs clock = 0;      // compute stream
  TimeNs side_free = 0;  // GPU side stream
  std::vector<TimeNs> cpu_free;
  TimeNs inline_compression = 0;
  std::vector<Interval> inline_jobs;  // compression on the compute stream
  std::vector<Interval> async_jobs;   // side-stream and CPU compression
};

// Rng(SEED).uniform() without building the generator (the per-compression
// count draw is on the simulator's hot path); sim_test checks they agree.
double first_uniform(uint64_t seed);

class WorkerExecutor : public policy::WorkerContext {
 public:
  // MODEL: the gradient tensors in ready order, their sizes (the cold share
  // of a request, cold_fraction below), ADTopk row lengths and names (which
  // module made each one ready, follows_compute below).
  WorkerExecutor(const model::CompressionCost& cost, const policy::GradientModel& model, uint64_t seed,
                 FlushRecord& record);

  // Binds to worker W's streams for iteration IT; FIRST marks the reference worker.
  void bind(int w, int it, WorkerStreams& streams, bool first);
  // Where flushes go from now on (the constructor's record until called).
  void write_to(FlushRecord& record) { record_ = &record; }
  // The worker's collectives in flight (sorted, disjoint; every collective
  // spans all workers, so one set serves them all) and the slowdown they
  // cause (ComputeConfig::comm_interference). Null or 0: none.
  void set_comm_in_flight(const std::vector<Interval>* in_flight, double interference);
  // Runs a backward kernel of DURATION (already scaled) on the compute stream;
  // a busy side stream (CompressionConfig::side_stream_contention) and
  // collectives in flight slow it, the two factors multiplied where both act.
  TimeNs run_backward(TimeNs duration);
  size_t flushes() const { return flushes_; }
  // Totals over every worker and iteration, for adaptive schemes' measurements.
  int64_t compressed_elements = 0;
  TimeNs compression_ns = 0;

  policy::CompressionOutcome compress(const policy::CompressionRequest& request, TimeNs now) override;
  void flush(const policy::Bucket& bucket, TimeNs when) override;
  // Packs BUCKET's PAIRS (index, value) pairs on the compute stream once the
  // bucket is READY (policy::packs_pairs; other buckets pack nothing):
  // returns when the payload can be posted and how long the packing took.
  struct Packed {
    TimeNs post, duration;
  };
  Packed pack(const policy::Bucket& bucket, int64_t pairs, TimeNs ready);

 private:
  int64_t selected_count(const policy::CompressionRequest& request) const;
  // The share of the ELEMENTS of tensors [FIRST, END) out of cache when they
  // are compressed or packed: all but the last tensor ready (docs/simulator-model.md#cold-gradients).
  double cold_fraction(int first, int end, int64_t elements) const;
  // The request's selection on the GPU (or side stream), its cold share
  // COLD (cold_fraction) included; ADTopk tensor by tensor at its row length,
  // each but the last cold, where the profile measured rows.
  TimeNs selection_ns(const policy::CompressionRequest& request, double cold) const;
  // Whether an inline request meets the caches as a backward step left them
  // (the profile's after-compute excess is charged) rather than as the
  // inline compression just before it did (docs/simulator-model.md#calls-after-compute).
  bool follows_compute(const policy::CompressionRequest& request) const;
  // Compression work of DURATION on the compute stream once READY: it
  // delays backward and counts as inline compression. Returns its end.
  TimeNs run_inline(TimeNs ready, TimeNs duration);
  // The unscaled time to pack BUCKET's PAIRS and flush it.
  TimeNs packing_ns(const policy::Bucket& bucket, int64_t pairs) const;
  TimeNs run_backward_beside_collectives(TimeNs duration);

  const model::CompressionCost& cost_;
  const std::vector<int64_t>& tensor_elements_;
  const std::vector<int64_t>& tensor_rows_;
  // Per tensor: ADTopk's ratios on its own gradient (null: none measured).
  std::vector<const std::vector<std::pair<double, double>>*> own_ratios_;
  // Per tensor: made ready by the same module's backward step as the tensor
  // before it (a layer's bias after its weight).
  std::vector<bool> same_module_as_previous_;
  uint64_t seed_;
  FlushRecord* record_;
  WorkerStreams* streams_ = nullptr;
  int worker_ = 0, iteration_ = 0;
  bool first_ = true;
  size_t flushes_ = 0;
  TimeNs pending_compression_ = 0;
  int last_inline_end_ = -1;  // end tensor of this iteration's last inline request
  const std::vector<Interval>* in_flight_ = nullptr;
  double comm_slowdown_ = 1;
  size_t next_in_flight_ = 0;  // the first interval not over at the compute clock
};

}  // namespace sparsefuse::sim
