#include "policy/bytescheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policy/horovod.h"
#include "policy/presets.h"

namespace sparsefuse::policy {

void CreditScheduler::posted(int op, const Bucket& bucket) {
  ready_.push({bucket.priority, sequence_++, op, bucket.elements});
}

int CreditScheduler::next() {
  if (ready_.empty() || credit_ <= 0) return -1;
  Entry e = ready_.top();
  ready_.pop();
  credit_ -= e.elements;
  return e.op;
}

void CreditScheduler::finished(int /*op*/, const Bucket& bucket) {
  credit_ = std::min(limit_, credit_ + bucket.elements);
}

TimeNs CreditScheduler::start_ns(TimeNs launch) const {
  if (cycle_ns_ <= 0) return launch;
  return horovod_tick_ns(launch, cycle_ns_, negotiation_ns_) + negotiation_ns_;
}

namespace {

class ByteSchedulerWorker : public WorkerPolicy {
 public:
  ByteSchedulerWorker(const std::vector<Bucket>& partitions, const std::vector<int>& first)
      : partitions_(partitions), first_(first) {}
  void on_tensor_ready(int tensor, TimeNs now, FlushSink& sink) override {
    for (int i = first_[tensor]; i < first_[tensor + 1]; ++i) sink.flush(partitions_[i], now);
  }

 private:
  const std::vector<Bucket>& partitions_;
  const std::vector<int>& first_;
};

}  // namespace

ByteSchedulerScheme::ByteSchedulerScheme(const GradientModel& model, ByteSchedulerOptions options)
    : options_(options) {
  if (options_.cycle_time_ns < 0 || options_.negotiation_ns < 0) {
    throw std::invalid_argument("bytescheduler: negative cycle or negotiation time");
  }
  const int L = model.size();
  if (options_.partition_elements < 1 || options_.credit_elements < 1) {
    throw std::invalid_argument("bytescheduler: partitions and credit need at least one element");
  }
  const int64_t unit = options_.partition_elements;
  first_partition_.assign(L + 1, 0);
  for (int t = 0; t < L; ++t) {
    first_partition_[t] = int(partitions_.size());
    for (int64_t offset = 0; offset < model.elements[t]; offset += unit) {
      Bucket b;
      b.first_tensor = t;
      b.end_tensor = t + 1;
      b.first_element = offset;
      b.elements = b.dense_elements = b.sent_elements = std::min(unit, model.elements[t] - offset);
      b.bytes_per_worker = b.elements * model.bytes_per_element;
      b.collective = Collective::kAllreduce;
      b.priority = t;  // backward index: the input side (last in backward) has the highest priority
      partitions_.push_back(b);
    }
  }
  first_partition_[L] = int(partitions_.size());
  for (int t = L - 1; t >= 0; --t) plan_.stages.push_back({t, t + 1, false, {}});
  plan_.wait_for_covering_collectives = true;
  plan_.iteration_waits_for_collectives = false;
}

std::unique_ptr<WorkerPolicy> ByteSchedulerScheme::make_worker_policy(int /*rank*/) const {
  return std::make_unique<ByteSchedulerWorker>(partitions_, first_partition_);
}

std::unique_ptr<LaunchScheduler> ByteSchedulerScheme::make_launch_scheduler() const {
  return std::make_unique<CreditScheduler>(options_.credit_elements, options_.cycle_time_ns, options_.negotiation_ns);
}

nlohmann::json ByteSchedulerScheme::describe() const {
  return {{"partitions", partitions_.size()},
          {"partition_elements", options_.partition_elements},
          {"credit_elements", options_.credit_elements},
          {"cycle_time_ns", options_.cycle_time_ns},
          {"negotiation_ns", options_.negotiation_ns}};
}

namespace {

std::unique_ptr<Scheme> build_bytescheduler(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  ByteSchedulerOptions options{k.count("partition_elements"), k.count("credit_elements")};
  // Every partition is a Horovod operation: cycle and negotiation as for horovod.
  options.cycle_time_ns = TimeNs(std::llround(k.number("cycle_time_us") * 1000.0));
  options.negotiation_ns = cost.workers() > 1 ? cost.coordination_ns() : 0;
  return std::make_unique<ByteSchedulerScheme>(model, options);
}

const PresetRegistration registration({
    {"bytescheduler", "scheduling",
     "ByteScheduler: tensors cut into <=1M-element allreduces, launched by priority (input side first) under a "
     "4M-element credit; a layer's next forward waits for its allreduces",
     "code defaults (docs suggest 8M/16M for allreduce); no auto-tuning; one global scheduler sees an operation "
     "once every worker posted it; per-tensor update inline before its forward; an iteration ends with backward "
     "(its communication is waited for in the next forward); every partition is a Horovod allreduce: it starts at "
     "Horovod's next cycle tick plus one negotiation (cycle_time_us = 0: no Horovod)",
     {Knob::count("partition_elements", 1'000'000, "elements", "largest partition of a tensor", 1),
      Knob::count("credit_elements", 4'000'000, "elements", "elements in flight at most", 1),
      Knob::number("cycle_time_us", 1000.0, "us", "Horovod cycle each partition waits for (0 = none)")},
     Replanning::kPlansItself, build_bytescheduler},
});

}  // namespace

}  // namespace sparsefuse::policy
