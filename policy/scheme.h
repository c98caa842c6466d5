// Policies are decision logic only ("one policy, two executors", docs/architecture.md):
// an executor tells a worker's policy "tensor t is ready now" and the policy
// decides when to flush which bucket. The simulator drives these objects with
// simulated clocks, the runtime with real ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "policy/bucket.h"

namespace sparsefuse::policy {

// Receives a worker's flush decisions.
class FlushSink {
 public:
  virtual ~FlushSink() = default;
  virtual void flush(const Bucket& bucket, TimeNs when) = 0;
};

// Per-worker decision state.
class WorkerPolicy {
 public:
  virtual ~WorkerPolicy() = default;
  virtual void begin_iteration(int /*iteration*/) {}
  // Tensors arrive in backward order with non-decreasing times.
  virtual void on_tensor_ready(int tensor, TimeNs now, FlushSink& sink) = 0;
};

struct CompressionRequest;
struct Measurements;

// A collective decided by a coordinator, which no worker may start before
// NOT_BEFORE (the end of the negotiation that produced it). When COMPRESS is
// set, each worker first runs REQUEST (from NOT_BEFORE) and contributes what
// it selected.
struct CoordinatedFlush {
  Bucket bucket;
  TimeNs not_before = 0;
  bool compress = false;
  std::shared_ptr<const CompressionRequest> request;
};

// Schemes that negotiate at run time (Horovod's coordinator) see every
// worker's readiness and decide the fused collectives for all of them.
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual void begin_iteration(int iteration) = 0;
  // A coordinator decides from when each tensor is ready on every worker:
  // its latest report. The simulator may report, in one call, the latest
  // time among several workers (sim/simulator.cc's partial passes).
  virtual void report_ready(int rank, int tensor, TimeNs now) = 0;
  // Called once every worker has reported all its tensors for the iteration
  // (or the latest of them, above).
  virtual void resolve(std::vector<CoordinatedFlush>& out) = 0;
};

// Schemes that move communication into the next iteration's forward pass
// (DeAR, ByteScheduler; docs/baseline-systems.md#dense-fusion-and-scheduling-baselines) describe how that forward waits.
// The forward then runs stage by stage in forward order (the reverse of the
// backward order), and each stage first applies the optimizer update to its
// tensors (the time is the trace's optimizer time split by elements), then
// runs their forward.
struct ForwardStage {
  int first_tensor = 0, end_tensor = 0;  // gradient tensors [first, end), backward order
  // DeAR: a collective every worker posts when it starts the previous
  // stage's forward (stage 0: at the start of the iteration); this stage's
  // forward waits for its end.
  bool has_deferred = false;
  Bucket deferred;
};

struct ForwardPlan {
  std::vector<ForwardStage> stages;  // input side first; together they cover every tensor once
  // ByteScheduler: a stage also waits for every collective of the previous
  // iteration that covers one of its tensors.
  bool wait_for_covering_collectives = false;
  // Whether a worker's iteration ends only once the collectives it flushed
  // are done (DeAR's step() waits for its reduce-scatters) or at the end of
  // its backward pass (ByteScheduler: the forward's locks do the waiting).
  bool iteration_waits_for_collectives = true;
};

// Schemes that reorder launches on their communicator (ByteScheduler): the
// executor reports operations as they become posted by every worker and
// finish, and launches what the scheduler returns; launched operations run
// in launch order.
class LaunchScheduler {
 public:
  virtual ~LaunchScheduler() = default;
  virtual void posted(int op, const Bucket& bucket) = 0;
  // The next operation to launch now, or -1 to wait for an event.
  virtual int next() = 0;
  virtual void finished(int op, const Bucket& bucket) = 0;
  // The earliest time an operation launched at LAUNCH may start on the
  // communicator: later when the launcher hands its operations to a runtime
  // with its own start-up (ByteScheduler's partitions go through Horovod).
  virtual TimeNs start_ns(TimeNs launch) const { return launch; }
};

// A configured scheme: the factory for per-worker policies. Its plan is fixed
// once built, except that an adaptive scheme re-plans in replan(), which an
// executor calls on a non-const scheme between iterations.
class Scheme {
 public:
  virtual ~Scheme() = default;
  // Null for coordinated schemes, whose workers only report readiness.
  virtual std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const = 0;
  virtual std::unique_ptr<Coordinator> make_coordinator() const { return nullptr; }
  // Null unless the forward pass waits on communication (ForwardPlan).
  virtual const ForwardPlan* forward_plan() const { return nullptr; }
  // Null for issue-order (FIFO) launching; a fresh scheduler per iteration.
  virtual std::unique_ptr<LaunchScheduler> make_launch_scheduler() const { return nullptr; }
  // The scheme's start-up decisions (partition, dense set, ...), for results.
  virtual nlohmann::json describe() const { return nlohmann::json::object(); }
  // Adaptive schemes: every replan_every() iterations the executor reports
  // its measurements (policy/adaptive.h) and then asks for fresh policies.
  virtual int replan_every() const { return 0; }
  virtual void replan(const Measurements& /*measured*/) {}
};

}  // namespace sparsefuse::policy
