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
      compressor_(layout) {
  if (!policy_) throw std::logic_error("the runtime needs a per-worker policy (this scheme is coordinated)");
  const size_t n = size_t(layout.total());
  gradient_.assign(n, 0.0f);
  residual_.assign(n, 0.0f);
  aggregate_.assign(n, 0.0f);  // tensors no bucket carries stay 0
  compressed_by_.assign(size_t(layout.tensors()), -1);
  synchronized_.assign(size_t(layout.tensors()), false);
}

RankEngine::~RankEngine() {
  try {
    comm_.drain(config_.timeout);
  } catch (const std::exception&) {
    // A failed or timed-out collective: reported already by the call that met it.
  }
}

TimeNs RankEngine::since_start() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

void RankEngine::wait_until(TimeNs at) const { std::this_thread::sleep_until(start_ + std::chrono::nanoseconds(at)); }

TimeNs RankEngine::scaled(TimeNs trace_ns) const { return TimeNs(std::llround(double(trace_ns) * config_.time_scale)); }

void RankEngine::expect(Phase phase, const char* call) const {
  static const char* const names[] = {"before begin_iteration", "in the forward pass", "in the backward pass",
                                      "after wait_for_buckets"};
  if (phase_ != phase) {
    throw std::logic_error(fmt::format("{} called {}; expected {}", call, names[int(phase_)], names[int(phase)]));
  }
}

policy::CompressionOutcome RankEngine::compress(const policy::CompressionRequest& r, TimeNs /*now*/) {
  if (r.placement != policy::Placement::kGpuInline) {
    throw std::logic_error("the runtime compresses inline only, got placement " + policy::placement_name(r.placement));
  }
  const TimeNs begin = since_start();
  float* grad = gradient(r.first_tensor);
  RangeSelection made{r.first_tensor, r.end_tensor,
                      compressor_.compress(r, gradient_.data(), residual_.data(), {config_.seed, comm_.rank(), iteration_})};
  // The gradient becomes the send buffer: what is sent at the selected
  // positions (with error feedback the accumulated value, no longer in the
  // residual) replaces the gradient there; the rest of the range is unused.
  for (size_t j = 0; j < made.selection.indices.size(); ++j) grad[made.selection.indices[j]] = made.selection.values[j];
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

std::unique_ptr<BucketExchange> RankEngine::reuse_exchange() {
  if (spare_.empty()) return std::make_unique<BucketExchange>();
  std::unique_ptr<BucketExchange> x = std::move(spare_.back());
  spare_.pop_back();
  x->lost = 0;
  return x;
}

void RankEngine::flush(const policy::Bucket& bucket, TimeNs when) {
  const TimeNs begin = since_start();
  std::unique_ptr<BucketExchange> x = reuse_exchange();
  x->bucket = bucket;
  x->iteration = iteration_;
  x->index = int(exchanges_.size());
  x->segments = bucket_segments(bucket, layout_, compressed_by_, selections_);
  fill_payload(*x, layout_, gradient_.data(), selections_);
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
      [this, raw, elapsed](Communicator& comm) {
        raw->started = elapsed();
        run_collective(*raw, comm);
        raw->finished = elapsed();
        apply_result(*raw, layout_, comm.size(), aggregate_.data(), scratch_);
        raw->decompressed = elapsed();
        raw->decompression_ns = raw->decompressed - raw->finished;
      },
      fmt::format("flush #{} of iteration {} ({} of tensors [{}, {}))", x->index, iteration_,
                  collective_name(bucket.collective), bucket.first_tensor, bucket.end_tensor));
  exchanges_.push_back(std::move(x));
}

void RankEngine::begin_iteration(int iteration) {
  expect(Phase::kIdle, "begin_iteration");
  iteration_ = iteration;
  std::fill(compressed_by_.begin(), compressed_by_.end(), -1);
  selections_.clear();
  requests_.clear();
  for (auto& x : exchanges_) spare_.push_back(std::move(x));
  exchanges_.clear();
  pending_compression_ = inline_compression_ = 0;
  next_tensor_ = 0;
  policy_->begin_iteration(iteration);
  phase_ = Phase::kForward;
  start_ = Clock::now();
}

void RankEngine::backward_started() {
  expect(Phase::kForward, "backward_started");
  backward_start_ = since_start();
  phase_ = Phase::kBackward;
}

void RankEngine::tensor_ready(int tensor) {
  expect(Phase::kBackward, "tensor_ready");
  if (tensor != next_tensor_) {
    throw std::logic_error(fmt::format("tensor {} reported ready, expected tensor {} (backward order)", tensor,
                                       next_tensor_));
  }
  ++next_tensor_;
  policy_->on_tensor_ready(tensor, since_start(), *this);
}

void RankEngine::wait_for_buckets() {
  expect(Phase::kBackward, "wait_for_buckets");
  if (next_tensor_ != layout_.tensors()) {
    throw std::logic_error(fmt::format("backward ended with {} of {} tensors ready", next_tensor_, layout_.tensors()));
  }
  backward_end_ = since_start();
  std::fill(synchronized_.begin(), synchronized_.end(), false);
  // Decompression after backward's end runs while no collective does (the
  // communication thread is serial): it is exposed compression time.
  exposed_decompression_ = 0;
  for (auto& x : exchanges_) {
    comm_.wait_for(x->ticket, config_.timeout);
    exposed_decompression_ += std::max<TimeNs>(0, x->decompressed - std::max(x->finished, backward_end_));
    for (const Segment& s : x->segments) {
      for (int t = s.first; t < s.end; ++t) synchronized_[t] = synchronized_[t] || s.included;
    }
  }
  comm_.drain(config_.timeout);
  optimizer_start_ = since_start();
  phase_ = Phase::kWaited;
}

IterationTimes RankEngine::end_iteration() {
  expect(Phase::kWaited, "end_iteration");
  IterationTimes times;
  times.total = since_start();
  times.forward = backward_start_;
  times.backward = backward_end_ - backward_start_ - inline_compression_;
  times.compression = inline_compression_ + exposed_decompression_;
  times.communication_exposed = optimizer_start_ - backward_end_ - exposed_decompression_;
  times.optimizer = times.total - optimizer_start_;
  phase_ = Phase::kIdle;
  return times;
}

IterationTimes RankEngine::run_iteration(int iteration) {
  // Generated before the clock starts: it stands in for backward's compute,
  // whose timing is replayed.
  synthetic_gradient(config_.seed, comm_.rank(), iteration, model_, layout_, gradient_.data());
  begin_iteration(iteration);
  wait_until(scaled(config_.forward_ns));
  backward_started();
  // FREE_AT: when the compute stream is free for the next tensor's
  // backward: the nominal ready time plus whatever work the policy did
  // inline, so sleep overshoot does not accumulate but compression delays
  // every later tensor.
  TimeNs free_at = backward_start_, previous = 0;
  for (int t = 0; t < layout_.tensors(); ++t) {
    const TimeNs ready = free_at + scaled(model_.ready_ns[t] - previous);
    wait_until(ready);
    previous = model_.ready_ns[t];
    const TimeNs woke = since_start();
    tensor_ready(t);
    free_at = ready + (since_start() - woke);
  }
  wait_until(free_at + scaled(model_.backward_ns - previous));
  wait_for_buckets();
  wait_until(optimizer_start_ + scaled(config_.optimizer_ns));
  return end_iteration();
}

}  // namespace sparsefuse::runtime
