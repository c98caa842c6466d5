// ByteScheduler (docs/baseline-systems.md#dense-fusion-and-scheduling-baselines) over allreduce: every tensor is cut into
// partitions of at most PARTITION elements, each a separate allreduce; a
// partition is posted when its tensor's gradient is ready. A credit-based
// scheduler launches ready partitions in priority order (input-side layers
// first) while its credit is positive, subtracting each launched partition's
// size and returning it (capped at CREDIT) when the partition finishes. The
// next iteration's forward of a tensor waits for all of its partitions and
// its update (the PyTorch plugin's per-parameter locks), so output-side
// communication overlaps the next forward.
//
// Defaults are the code's (BYTESCHEDULER_PARTITION 1,000,000 and
// BYTESCHEDULER_CREDIT 4,000,000 elements), not the larger values its docs
// recommend for allreduce (~8,000,000 and ~16,000,000).
//
// Per-partition overhead: the PyTorch plugin starts every partition as its
// own Horovod allreduce (bytedance/byteps, branch bytescheduler,
// bytescheduler/pytorch/horovod_task.py), so each partition waits for the
// next tick of Horovod's background cycle and one negotiation before it can
// start, the same start rule as the horovod preset (horovod_tick_ns) with
// Horovod's default 1 ms cycle. With thousands of partitions and a credit of
// a few in flight this start-up, not bandwidth, sets the pace on fast links.
// cycle_time_ns = 0 launches straight onto the communicator (no Horovod).
// Not modelled: credit and partition auto-tuning, per-worker scheduling (the
// scheduler sees an operation once every worker has posted it, as Horovod's
// negotiation would), Horovod fusing partitions launched in the same cycle,
// the plugin's own Python-side cost per partition (no published measurement
// isolates it).
#pragma once

#include <algorithm>
#include <memory>
#include <queue>
#include <vector>

#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct ByteSchedulerOptions {
  int64_t partition_elements = 1'000'000;
  int64_t credit_elements = 4'000'000;
  TimeNs cycle_time_ns = 1'000'000;  // Horovod's HOROVOD_CYCLE_TIME default (see horovod.h)
  TimeNs negotiation_ns = 0;         // one Horovod negotiation (the cost estimator's coordination_ns)
};

// The scheduling rule alone, for any executor.
class CreditScheduler : public LaunchScheduler {
 public:
  // CYCLE_NS > 0: launched partitions start by Horovod's cycle rule.
  explicit CreditScheduler(int64_t credit_elements, TimeNs cycle_ns = 0, TimeNs negotiation_ns = 0)
      : limit_(credit_elements), credit_(credit_elements), cycle_ns_(cycle_ns), negotiation_ns_(negotiation_ns) {}
  void posted(int op, const Bucket& bucket) override;
  int next() override;
  void finished(int op, const Bucket& bucket) override;
  TimeNs start_ns(TimeNs launch) const override;
  int64_t credit() const { return credit_; }

 private:
  struct Entry {
    int priority;
    int64_t sequence;
    int op;
    int64_t elements;
    bool operator<(const Entry& o) const {  // max-heap: highest priority, then earliest posted
      return priority != o.priority ? priority < o.priority : sequence > o.sequence;
    }
  };
  int64_t limit_, credit_;
  TimeNs cycle_ns_, negotiation_ns_;
  int64_t sequence_ = 0;
  std::priority_queue<Entry> ready_;
};

class ByteSchedulerScheme : public Scheme {
 public:
  ByteSchedulerScheme(const GradientModel& model, ByteSchedulerOptions options);
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override;
  const ForwardPlan* forward_plan() const override { return &plan_; }
  std::unique_ptr<LaunchScheduler> make_launch_scheduler() const override;
  nlohmann::json describe() const override;
  const std::vector<Bucket>& partitions() const { return partitions_; }
  // The period of the Horovod cycle partitions start on (0: none), as
  // CreditScheduler::start_ns ticks; the runtime negotiates on it (runtime/scheduled.h).
  TimeNs cycle_ns() const { return std::max(options_.cycle_time_ns, options_.negotiation_ns); }

 private:
  ByteSchedulerOptions options_;
  std::vector<Bucket> partitions_;  // backward order, each tensor's partitions in offset order
  std::vector<int> first_partition_;  // tensor -> index of its first partition (size L + 1)
  ForwardPlan plan_;
};

}  // namespace sparsefuse::policy
