// A rank's executor for one scheme: the policy::WorkerContext the policy
// talks to, with real time, real gradients, real kernels and real
// collectives. An iteration is driven either by run_iteration (replay: the
// rank's synthetic gradient, generated before the iteration clock starts,
// and the trace's compute times on steady_clock) or from outside by a real
// training loop (runtime/training.h): begin_iteration, backward_started,
// then each tensor's gradient written to gradient(t) and tensor_ready(t) in
// backward order, wait_for_buckets after backward, end_iteration after the
// optimizer. Either way:
//  1. tensor t's readiness calls on_tensor_ready with the nanoseconds since
//     the iteration start; the policy's inline work (compression) runs on the
//     caller's thread and so delays every later tensor, as on a GPU's
//     compute stream;
//  2. compress() runs the CPU kernels on this thread and each flushed bucket
//     goes to the communication thread (CommThread), which runs the
//     collectives in flush order while backward goes on, and scatters each
//     result into the averaged gradient right after its collective — the
//     serial decompression the simulator overlaps with backward and with
//     later collectives (sim/collective_stage.h); a dense allreduce sent
//     from the gradient leaves its sum there, averaged where it is read
//     (aggregate(), average_into);
//  3. after backward the caller waits for the last bucket.
// Selections with placement gpu-side or cpu-offload run on an OffloadPool
// while backward goes on; the flush carrying one packs it on the
// communication thread once it is done (runtime/offload_pool.h). Ok-Topk
// buckets reuse their exact iteration's threshold in between
// (runtime/oktopk.h); sparse-allreduce buckets run runtime/sparse_allreduce.h.
// Coordinated schemes (horovod, rgmerge-dynamic: no per-worker policy) only
// report readiness; a CoordinatedSession started by begin_iteration
// negotiates and runs their collectives on the communication thread, and
// wait_for_buckets collects them (runtime/coordinator.h).
// Host memory is allocated once: the gradient doubles as the send buffer
// (the sent values of a selection are written over the gradient it was
// taken from), exchanges are reused from one iteration to the next (the
// bucket sequence repeats), and the aggregate is never zero-filled whole
// (each bucket overwrites or zero-fills only its own range).
// With a payload plane (EngineConfig::make_plane; --device cuda) the
// gradient, residual, average and payloads live there instead: the engine
// hands it the gradient off the clock, each inline compression, each flush's
// payload, collective and average (runtime/payload_plane.h).
// DeAR (a forward plan of deferred all-gathers, policy/scheme.h
// ForwardPlan): each group's reduce-scatter is flushed in backward and leaves
// this rank's averaged block in the group's shard; run_iteration's forward
// replays the plan stage by stage as the simulator does (sim/forward_pass.h):
// stage g's all-gather is posted when stage g - 1 starts (stage 0's at the
// iteration start), the stage waits for it (exposed communication), then
// sleeps its share of the optimizer and its forward (model/forward_times.h).
// The all-gather writes the group's average into the aggregate, so after
// run_iteration(i) the aggregate holds iteration i - 1's average for those
// groups; complete_deferred() runs the last iteration's all-gathers. The
// first iteration has no all-gather and no update; no optimizer time follows
// backward.
// ByteScheduler (a launch scheduler and a forward gated per tensor): its
// flushes go to a ScheduledSession (runtime/scheduled.h), whose job on the
// communication thread launches them in the scheduler's order and runs on
// into the next iteration's forward; there each stage waits for the
// collectives covering its tensors, then sleeps its share of the optimizer
// and its forward. The iteration ends with backward. So after
// run_iteration(i), exchanges() and aggregate() are iteration i - 1's
// (iteration i's gradient goes to the other of two gradient buffers while
// i - 1's collectives still sum in place in theirs, where the sums stay,
// averaged where they are read); complete_deferred() finishes the last
// iteration's collectives. Its partitions are dense: nothing is compressed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "common/time.h"
#include "model/forward_times.h"
#include "policy/compression.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"
#include "runtime/comm_thread.h"
#include "runtime/compressor.h"
#include "runtime/coordinator.h"
#include "runtime/exchange.h"
#include "runtime/gradients.h"
#include "runtime/offload_pool.h"
#include "runtime/payload_plane.h"
#include "runtime/oktopk.h"
#include "runtime/scheduled.h"

namespace sparsefuse::runtime {

struct EngineConfig {
  uint64_t seed = 1;
  double time_scale = 1.0;         // multiplies every replayed compute time
  TimeNs forward_ns = 0;           // the trace's, batch-scaled (time_scale not applied)
  TimeNs optimizer_ns = 0;
  model::ForwardTimes forward_split;  // a forward plan's stages (DeAR): the trace's, batch-scaled
  int cpu_threads = 4;             // CPU offload pool (the scenario's compression.cpu_threads)
  std::chrono::milliseconds timeout{60'000};  // for the collectives of one iteration
  // The compressor (null: the CPU's; --device cuda: CudaCompressor).
  std::function<std::unique_ptr<Compressor>(const ModelLayout&)> make_compressor;
  // Where the payloads live (null: host memory; --device cuda: ResidentPayloads
  // for the schemes resident_refusal accepts). Replay (run_iteration) only.
  std::function<std::unique_ptr<PayloadPlane>(const ModelLayout&)> make_plane;
};

// One iteration on this rank, in nanoseconds. compression counts selection,
// packing and decompression; communication_exposed is the rest of the time
// between backward's end and the optimizer (waiting for collectives,
// including for slower ranks: a real run cannot tell sync wait apart from
// transfer).
struct IterationTimes {
  TimeNs total = 0, forward = 0, backward = 0, compression = 0, communication_exposed = 0, optimizer = 0;
};

class RankEngine : public policy::WorkerContext, public CoordinatedExecutor {
 public:
  RankEngine(const policy::GradientModel& model, const ModelLayout& layout, const policy::Scheme& scheme,
             CommThread& comm, EngineConfig config);
  // Waits for the collectives still queued (they write into this engine's
  // buffers); errors are dropped: whoever destroys a failed engine is ending.
  ~RankEngine() override;
  RankEngine(const RankEngine&) = delete;
  RankEngine& operator=(const RankEngine&) = delete;

  // Replay: synthetic gradients, the trace's timing.
  IterationTimes run_iteration(int iteration);
  // A forward plan's all-gathers still owed, or the last iteration's
  // scheduled collectives (after the last iteration): run or waited for now,
  // so the aggregate holds the last iteration's average. Off the clock.
  void complete_deferred();
  // DeAR: the aggregate of iteration i is complete only after iteration i + 1's forward.
  bool defers_communication() const { return forward_plan_ != nullptr && !scheduled_; }
  // ByteScheduler: everything of iteration i (exchanges, aggregate) is
  // complete only after iteration i + 1's forward; until then the accessors
  // below show iteration i - 1.
  bool lags_one_iteration() const { return scheduled_ != nullptr; }
  // ByteScheduler: called in iteration i's forward once iteration i - 1's
  // collectives are done, with none in flight (iteration i's start with its
  // backward), off the clock: where iteration i - 1 is checked and agreed
  // on. (Between run_iteration calls, iteration i - 1's collectives would
  // still be running, and any collective the driver queued would wait for
  // them off the clock.)
  void set_settle_hook(std::function<void(int iteration)> hook) { settle_ = std::move(hook); }

  // A training loop's iteration, step by step (see the file comment).
  // Throws std::logic_error when called out of order.
  void begin_iteration(int iteration);
  // A forward plan's forward (DeAR, ByteScheduler), stage by stage in
  // forward order after begin_iteration: enter_stage(g) waits until stage G
  // may start (DeAR: its all-gather has landed, and stage g + 1's is posted;
  // ByteScheduler: the last iteration's collectives covering its tensors are
  // done), timing the wait as exposed communication; the stage's averages
  // are then average_into's (iteration 0 has none). stage_updated() after
  // the caller updated the stage's parameters times that as optimizer.
  // end_forward() after the last stage: ByteScheduler's last iteration
  // becomes exchanges() (the settle hook runs, off the clock).
  void enter_stage(int g);
  void stage_updated();
  void end_forward();
  const policy::ForwardPlan* forward_plan() const { return forward_plan_; }
  void backward_started();
  float* gradient(int tensor) { return gradient_.data() + layout_.offset[size_t(tensor)]; }
  int next_tensor() const { return next_tensor_; }
  void tensor_ready(int tensor);
  void wait_for_buckets();  // every tensor must be ready
  IterationTimes end_iteration();

  // The last iteration's state, for checking and results.
  // Averaged; unsynchronised tensors are 0. A dense allreduce sent from the
  // gradient leaves its sum there (no pass over it on the clock); its
  // average is taken here, on the first read, or by average_into: the
  // division a real trainer folds into its copy into p.grad. Throws
  // std::logic_error once the next iteration's gradient has overwritten sums
  // never read.
  const std::vector<float>& aggregate() const;
  // Tensor T's average, written to OUT (T's elements): from its sum in the
  // gradient in one pass, or copied from the aggregate.
  void average_into(int tensor, float* out) const;
  const std::vector<policy::CompressionRequest>& requests() const { return requests_; }
  const std::vector<std::unique_ptr<BucketExchange>>& exchanges() const { return exchanges_; }
  // Selection slots, kept across iterations; this iteration's are the first ones, in request order.
  const std::vector<RangeSelection>& selections() const { return selections_; }
  const std::vector<bool>& synchronized() const { return synchronized_; }  // per tensor, by some bucket
  const std::vector<float>& residual() const { return residual_; }  // error feedback, after the iteration
  // For re-planning (runtime/replanner.h): per tensor, when it became ready
  // (ns from the start of backward); the elements the policy's requests
  // covered and the time inline compression took.
  const std::vector<TimeNs>& ready_offsets() const { return ready_offsets_; }
  int64_t compressed_elements() const;
  TimeNs compression_ns() const { return inline_compression_; }
  // Payloads on a payload plane (EngineConfig::make_plane): the state above
  // (aggregate, residual, the exchanges' gathered pairs) is the plane's, in
  // host memory only after copy_plane_state() (off the clock, for --check).
  bool payloads_on_plane() const { return plane_ != nullptr; }
  void copy_plane_state();
  // Takes a fresh worker policy from SCHEME (after it re-planned); between iterations only.
  void renew_policy(const policy::Scheme& scheme);

  policy::CompressionOutcome compress(const policy::CompressionRequest& request, TimeNs now) override;
  void flush(const policy::Bucket& bucket, TimeNs when) override;

  // CoordinatedExecutor (the communication thread, during a negotiation).
  TimeNs since_start() const override;
  TimeNs compress_agreed(const policy::CompressionRequest& request) override;
  std::unique_ptr<BucketExchange> make_exchange(const policy::Bucket& bucket, TimeNs when) override;
  void execute(BucketExchange& exchange, Communicator& comm) override;

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kIdle, kForward, kBackward, kWaited };
  void wait_until(TimeNs at) const;  // ns since the iteration start
  // A forward plan's forward (replay), stage by stage; FIRST: no all-gather, no update.
  void replay_gated_forward(bool first);
  // Waits until forward stage G may start; returns whether it had to wait.
  bool open_stage(int g);
  void prepare_off_clock(int iteration);
  // Runs WORK in the middle of an iteration without timing it: the
  // iteration's clock moves on by what it took.
  void off_the_clock(const std::function<void()>& work);
  // ByteScheduler: the previous iteration's collectives done; its exchanges become exchanges().
  void finish_scheduled(int iteration);
  // The tensors X carried count as synchronized this iteration.
  void mark_synchronized(const BucketExchange& x);
  void post_gather(int stage);
  TimeNs scaled(TimeNs trace_ns) const;
  void expect(Phase phase, const char* call) const;
  void hand_offloaded_to_plane(const BucketExchange& exchange);
  // The summed run times of the offloaded selections EXCHANGE carries.
  TimeNs offloaded_ns(const BucketExchange& exchange) const;
  std::unique_ptr<BucketExchange> reuse_exchange();
  // Records that tensors [FIRST, END) are selected into slot (returned) of selections_.
  int reserve_range(int first, int end);
  // reserve_range for R, which requests() then lists.
  int reserve_selection(const policy::CompressionRequest& r);
  void write_sent(const RangeSelection& slot);
  // X's payload from this iteration's gradient and selections (host or plane).
  void fill(BucketExchange& x);
  void prepare_oktopk(const policy::Bucket& bucket);
  // R's selection into SLOT with COMPRESSOR (this thread's or an offload thread's).
  void run_selection(Compressor& compressor, const policy::CompressionRequest& r, RangeSelection& slot);
  // Runs R's selection inline and records it; returns the selected count.
  int64_t select(const policy::CompressionRequest& r);
  policy::CompressionOutcome compress_offloaded(const policy::CompressionRequest& r, TimeNs now);
  // The offload jobs whose selections BUCKET carries, into JOBS.
  void offloaded_in(const policy::Bucket& bucket, std::vector<uint64_t>& jobs) const;

  const policy::GradientModel& model_;
  const ModelLayout& layout_;
  CommThread& comm_;
  EngineConfig config_;
  std::unique_ptr<CoordinatedSession> coordinated_;  // coordinated schemes only
  std::unique_ptr<policy::WorkerPolicy> own_policy_;
  const policy::ForwardPlan* forward_plan_;  // null unless DeAR-like
  // Per forward stage with a deferred all-gather: this rank's averaged block
  // (zero beyond the group's end), the gathered blocks, the gather's job.
  struct StageGather {
    std::vector<float> shard, gathered;
    uint64_t ticket = 0;
    bool owed = false;  // a reduce-scatter filled the shard; its all-gather has not been posted
  };
  std::vector<StageGather> gathers_;
  std::vector<model::StageTimes> stage_times_;  // the forward split, per stage
  std::vector<int> stage_of_;  // per tensor: the forward stage it belongs to
  policy::WorkerPolicy* policy_;  // own_policy_ or the session's reporter
  std::unique_ptr<Compressor> compressor_;

  std::vector<float> gradient_, residual_;
  mutable std::vector<float> aggregate_;  // averages of sums in the gradient are taken into it on read
  // Per tensor: this iteration's sum is still in the gradient, not yet
  // averaged into aggregate_; SUMS_LOST_: sums never read were overwritten.
  mutable std::vector<char> sum_in_gradient_;
  bool sums_lost_ = false;
  void forget_sums();  // the gradient is about to be overwritten
  // ByteScheduler: the previous iteration's gradient, in which its
  // collectives may still be summing (swapped with the current one per
  // iteration), and the buffer holding the sums of the iteration aggregate()
  // and average_into show.
  std::vector<float> gradient_back_;
  const std::vector<float>* completed_sums_ = nullptr;
  std::unique_ptr<ScheduledSession> scheduled_;  // launch-scheduled schemes only
  int scheduled_flushes_ = 0;                    // this iteration's, posted to scheduled_
  std::function<void(int)> settle_;
  std::vector<float> scratch_;  // the communication thread's, for partly carried allgather ranges
  std::vector<int> compressed_by_;
  // One slot per tensor, kept across iterations so that a selection reuses
  // its buffers; the first used_selections_ are this iteration's. Offload
  // jobs hold pointers into it.
  std::vector<RangeSelection> selections_;
  int used_selections_ = 0;
  std::vector<uint64_t> offload_jobs_;     // per selection: its OffloadPool job, 0 when it ran inline
  OkTopkThresholds oktopk_;
  std::vector<policy::CompressionRequest> requests_;
  std::vector<std::unique_ptr<BucketExchange>> exchanges_, spare_;
  std::vector<bool> synchronized_;
  std::vector<TimeNs> ready_offsets_;
  Clock::time_point start_;
  Phase phase_ = Phase::kIdle;
  int iteration_ = 0, next_tensor_ = 0;
  TimeNs pending_compression_ = 0, inline_compression_ = 0;
  TimeNs backward_start_ = 0, backward_end_ = 0, optimizer_start_ = 0, exposed_decompression_ = 0;
  TimeNs gated_optimizer_ = 0, gated_wait_ = 0;  // a forward plan's update and all-gather waits
  TimeNs stage_opened_ = 0;                      // when enter_stage last returned
  std::unique_ptr<PayloadPlane> plane_;  // null: payloads in host memory
  // Last: destroyed first, its threads finishing before the buffers they write go.
  std::unique_ptr<OffloadPool> offload_;  // created at the first offloaded selection
};

}  // namespace sparsefuse::runtime
