#include "runtime/engine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace sparsefuse::runtime {

RankEngine::RankEngine(const policy::GradientModel& model, const ModelLayout& layout, const policy::Scheme& scheme,
                       CommThread& comm, EngineConfig config)
    : model_(model), layout_(layout), comm_(comm), config_(config), policy_(scheme.make_worker_policy(comm.rank())),
      compressor_(config_.make_compressor ? config_.make_compressor(layout) : std::make_unique<Compressor>(layout)) {
  if (!policy_) throw std::logic_error("the runtime needs a per-worker policy (this scheme is coordinated)");
  const size_t n = size_t(layout.total());
  gradient_.resize(n);
  residual_.assign(n, 0.0f);
  aggregate_.resize(n);
}

TimeNs RankEngine::since_start() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

void RankEngine::wait_until(TimeNs at) const { std::this_thread::sleep_until(start_ + std::chrono::nanoseconds(at)); }

TimeNs RankEngine::scaled(TimeNs trace_ns) const { return TimeNs(std::llround(double(trace_ns) * config_.time_scale)); }

policy::CompressionOutcome RankEngine::compress(const policy::CompressionRequest& r, TimeNs /*now*/) {
  if (r.placement != policy::Placement::kGpuInline) {
    throw std::logic_error("the runtime compresses inline only, got placement " + policy::placement_name(r.placement));
  }
  const TimeNs begin = since_start();
  RangeSelection made{r.first_tensor, r.end_tensor,
                      compressor_->compress(r, gradient_.data(), residual_.data(), {config_.seed, comm_.rank(), iteration_})};
  // What is sent at the selected positions (with error feedback: the
  // accumulated value, no longer in the residual).
  float* send = send_.data() + layout_.offset[r.first_tensor];
  for (size_t j = 0; j < made.selection.indices.size(); ++j) send[made.selection.indices[j]] = made.selection.values[j];
  const int id = int(selections_.size());
  for (int t = r.first_tensor; t < r.end_tensor; ++t) {
    if (compressed_by_[t] >= 0) throw std::logic_error(fmt::format("tensor {} compressed twice in one iteration", t));
    compressed_by_[t] = id;
  }
  const int64_t selected = made.selection.size();
  selections_.push_back(std::move(made));
  requests_.push_back(r);
  const TimeNs done = since_start();
  pending_compression_ += done - begin;
  inline_compression_ += done - begin;
  return {done, selected};
}

void RankEngine::flush(const policy::Bucket& bucket, TimeNs when) {
  const TimeNs begin = since_start();
  auto x = std::make_unique<BucketExchange>();
  x->bucket = bucket;
  x->iteration = iteration_;
  x->index = int(exchanges_.size());
  x->segments = bucket_segments(bucket, layout_, compressed_by_, selections_);
  fill_payload(*x, layout_, send_.data(), selections_);
  x->posted = std::max(when, begin);
  const TimeNs packed = since_start();
  x->compression_ns = pending_compression_ + (packed - begin);
  inline_compression_ += packed - begin;
  pending_compression_ = 0;
  BucketExchange* raw = x.get();
  const auto start = start_;
  auto elapsed = [start] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  };
  x->ticket = comm_.submit(
      [raw, elapsed](Communicator& comm) {
        raw->started = elapsed();
        run_collective(*raw, comm);
        raw->finished = elapsed();
      },
      fmt::format("flush #{} of iteration {} ({} of tensors [{}, {}))", x->index, iteration_,
                  collective_name(bucket.collective), bucket.first_tensor, bucket.end_tensor));
  exchanges_.push_back(std::move(x));
}

IterationTimes RankEngine::run_iteration(int iteration) {
  iteration_ = iteration;
  synthetic_gradient(config_.seed, comm_.rank(), iteration, model_, layout_, gradient_.data());
  send_ = gradient_;
  compressed_by_.assign(size_t(layout_.tensors()), -1);
  selections_.clear();
  requests_.clear();
  exchanges_.clear();
  pending_compression_ = inline_compression_ = 0;
  policy_->begin_iteration(iteration);

  IterationTimes times;
  start_ = Clock::now();
  wait_until(scaled(config_.forward_ns));
  const TimeNs backward_start = since_start();
  // FREE_AT: when the compute stream is free for the next tensor's
  // backward: the nominal ready time plus whatever work the policy did
  // inline, so sleep overshoot does not accumulate but compression delays
  // every later tensor.
  TimeNs free_at = backward_start, previous = 0;
  for (int t = 0; t < layout_.tensors(); ++t) {
    const TimeNs ready = free_at + scaled(model_.ready_ns[t] - previous);
    wait_until(ready);
    previous = model_.ready_ns[t];
    const TimeNs woke = since_start();
    policy_->on_tensor_ready(t, woke, *this);
    free_at = ready + (since_start() - woke);
  }
  wait_until(free_at + scaled(model_.backward_ns - previous));
  const TimeNs backward_end = since_start();

  // Each bucket is decompressed into the average as soon as its collective
  // is done, while later ones are still on the wire (as the simulator
  // models it), not all after the last one.
  synchronized_.assign(size_t(layout_.tensors()), false);
  std::fill(aggregate_.begin(), aggregate_.end(), 0.0f);
  TimeNs decompression = 0;
  for (auto& x : exchanges_) {
    comm_.wait_for(x->ticket, config_.timeout);
    const TimeNs begin = since_start();
    apply_result(*x, layout_, comm_.size(), aggregate_.data());
    x->decompression_ns = since_start() - begin;
    decompression += x->decompression_ns;
    for (const Segment& s : x->segments) {
      for (int t = s.first; t < s.end; ++t) synchronized_[t] = synchronized_[t] || s.included;
    }
  }
  comm_.drain(config_.timeout);
  const TimeNs optimizer_start = since_start();
  wait_until(optimizer_start + scaled(config_.optimizer_ns));
  times.total = since_start();
  times.forward = backward_start;
  times.backward = backward_end - backward_start - inline_compression_;
  times.compression = inline_compression_ + decompression;
  times.communication_exposed = optimizer_start - backward_end - decompression;
  times.optimizer = times.total - optimizer_start;
  return times;
}

}  // namespace sparsefuse::runtime
