#include "runtime/engine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "kernels/pack.h"
#include "policy/bytescheduler.h"
#include "policy/horovod.h"

namespace sparsefuse::runtime {

RankEngine::RankEngine(const policy::GradientModel& model, const ModelLayout& layout, const policy::Scheme& scheme,
                       CommThread& comm, EngineConfig config)
    : model_(model), layout_(layout), comm_(comm), config_(config), own_policy_(scheme.make_worker_policy(comm.rank())),
      forward_plan_(scheme.forward_plan()), policy_(own_policy_.get()),
      compressor_(config_.make_compressor ? config_.make_compressor(layout) : std::make_unique<Compressor>(layout)),
      plane_(config_.make_plane ? config_.make_plane(layout) : nullptr) {
  if (!policy_) {
    const auto* horovod = dynamic_cast<const policy::HorovodScheme*>(&scheme);
    if (!horovod) throw std::logic_error("the runtime negotiates Horovod-style coordinators only");
    coordinated_ =
        std::make_unique<CoordinatedSession>(scheme.make_coordinator(), layout.tensors(), horovod->cycle_ns());
    policy_ = &coordinated_->reporter();
  }
  const size_t n = size_t(layout.total());
  gradient_.assign(n, 0.0f);
  residual_.assign(n, 0.0f);
  aggregate_.assign(n, 0.0f);  // tensors no bucket carries stay 0
  if (scheme.make_launch_scheduler()) {
    const auto* bytescheduler = dynamic_cast<const policy::ByteSchedulerScheme*>(&scheme);
    if (!bytescheduler || !forward_plan_) throw std::logic_error("the runtime runs ByteScheduler's launch scheduler only");
    scheduled_ = std::make_unique<ScheduledSession>(scheme, layout, bytescheduler->cycle_ns());
    gradient_back_.assign(n, 0.0f);
    // No iteration is complete yet: show the buffer no collective writes
    // (begin_iteration swaps the contents; finish_scheduled points it on).
    completed_sums_ = &gradient_back_;
  }
  compressed_by_.assign(size_t(layout.tensors()), -1);
  synchronized_.assign(size_t(layout.tensors()), false);
  sum_in_gradient_.assign(size_t(layout.tensors()), 0);
  ready_offsets_.assign(size_t(layout.tensors()), 0);
  if (forward_plan_) {
    stage_times_ = model::stage_times(*forward_plan_, config_.forward_split);
    stage_of_.assign(size_t(layout.tensors()), -1);
    gathers_.resize(forward_plan_->stages.size());
    for (size_t g = 0; g < gathers_.size(); ++g) {
      const policy::ForwardStage& stage = forward_plan_->stages[g];
      for (int t = stage.first_tensor; t < stage.end_tensor; ++t) stage_of_[size_t(t)] = int(g);
      if (!stage.has_deferred) continue;
      gathers_[g].shard.assign(size_t(reduce_scatter_block(stage.deferred.elements, comm.size())), 0.0f);
    }
  }
  if (plane_ && scheduled_) throw std::logic_error("a payload plane runs no launch scheduler (resident_refusal)");
  selections_.resize(size_t(layout.tensors()));
  offload_jobs_.reserve(size_t(layout.tensors()));
}

RankEngine::~RankEngine() {
  if (scheduled_) scheduled_->abandon();  // a job still waiting for this rank's backward ends
  try {
    comm_.drain(config_.timeout);
  } catch (const std::exception&) {
    // A failed or timed-out collective: reported already by the call that met it.
  }
}

int64_t RankEngine::compressed_elements() const {
  int64_t elements = 0;
  for (const auto& r : requests_) elements += r.elements;
  return elements;
}

void RankEngine::renew_policy(const policy::Scheme& scheme) {
  expect(Phase::kIdle, "renew_policy");
  own_policy_ = scheme.make_worker_policy(comm_.rank());
  if (!own_policy_) throw std::logic_error("a re-planned scheme must still have per-worker policies");
  policy_ = own_policy_.get();
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

policy::CompressionOutcome RankEngine::compress(const policy::CompressionRequest& r, TimeNs now) {
  // Its exchanges outlive the iteration; selections and residuals do not.
  if (scheduled_) throw std::logic_error("a launch-scheduled scheme compressed: its partitions must be dense");
  if (r.placement != policy::Placement::kGpuInline) return compress_offloaded(r, now);
  const TimeNs begin = since_start();
  const int64_t selected = select(r);
  const TimeNs done = since_start();
  pending_compression_ += done - begin;
  inline_compression_ += done - begin;
  return {done, selected};
}

TimeNs RankEngine::compress_agreed(const policy::CompressionRequest& r) {
  const TimeNs begin = since_start();
  select(r);
  return since_start() - begin;
}

int RankEngine::reserve_range(int first, int end) {
  const int id = used_selections_++;
  for (int t = first; t < end; ++t) {
    if (compressed_by_[t] >= 0) throw std::logic_error(fmt::format("tensor {} compressed twice in one iteration", t));
    compressed_by_[t] = id;
  }
  selections_[size_t(id)].first = first;  // its selection's buffers are kept from the last iteration
  selections_[size_t(id)].end = end;
  offload_jobs_.push_back(0);
  return id;
}

int RankEngine::reserve_selection(const policy::CompressionRequest& r) {
  requests_.push_back(r);
  return reserve_range(r.first_tensor, r.end_tensor);
}

void RankEngine::run_selection(Compressor& compressor, const policy::CompressionRequest& r, RangeSelection& slot) {
  compressor.compress(r, gradient_.data(), residual_.data(), {config_.seed, comm_.rank(), iteration_}, slot.selection);
  write_sent(slot);
}

// The gradient becomes the send buffer: what is sent at the selected
// positions (with error feedback the accumulated value, no longer in the
// residual) replaces the gradient there; the rest of the range is unused.
void RankEngine::write_sent(const RangeSelection& slot) {
  float* send = gradient(slot.first);
  for (size_t j = 0; j < slot.selection.indices.size(); ++j) send[slot.selection.indices[j]] = slot.selection.values[j];
}

// Ok-Topk: the policy requests a selection on exact iterations only, whose
// threshold the others reuse (runtime/oktopk.h).
void RankEngine::prepare_oktopk(const policy::Bucket& b) {
  if (const int id = compressed_by_[b.first_tensor]; id >= 0) {
    if (offload_jobs_[id]) offload_->wait(offload_jobs_[id]);  // its threshold is needed now
    bool error_feedback = false;
    for (const auto& r : requests_) error_feedback = r.first_tensor == b.first_tensor ? r.error_feedback : error_feedback;
    oktopk_.remember_local(b.first_tensor, selections_[id].selection, error_feedback);
    return;
  }
  const int64_t offset = layout_.offset[b.first_tensor];
  RangeSelection& slot = selections_[reserve_range(b.first_tensor, b.end_tensor)];
  slot.selection = oktopk_.reuse_local(b.first_tensor, gradient_.data() + offset, residual_.data() + offset, b.elements);
  write_sent(slot);
}

int64_t RankEngine::select(const policy::CompressionRequest& r) {
  const int id = reserve_selection(r);
  if (plane_) return plane_->compress(r, id, {config_.seed, comm_.rank(), iteration_});
  run_selection(*compressor_, r, selections_[id]);
  return selections_[id].selection.size();
}

// The selection runs on the side stream or a CPU thread while backward goes
// on; the flush carrying it waits for it. Its count is not known yet: the
// policy is told the expected one (the exchange sends the real one).
policy::CompressionOutcome RankEngine::compress_offloaded(const policy::CompressionRequest& r, TimeNs now) {
  if (plane_ && (r.placement != policy::Placement::kCpuOffload || r.error_feedback)) {
    throw std::logic_error("a payload plane takes CPU selections without error feedback only (resident_refusal)");
  }
  if (!offload_) offload_ = std::make_unique<OffloadPool>(layout_, config_.cpu_threads);
  const int id = reserve_selection(r);
  RangeSelection* slot = &selections_[id];  // reserved: no reallocation
  offload_jobs_[id] = offload_->submit(r.placement, [this, r, slot](Compressor& c) {
    const TimeNs begin = since_start();
    run_selection(c, r, *slot);
    slot->offloaded_ns = since_start() - begin;
  });
  return {now, r.expected_count};
}

void RankEngine::offloaded_in(const policy::Bucket& bucket, std::vector<uint64_t>& jobs) const {
  jobs.clear();
  for (int t = bucket.first_tensor; t < bucket.end_tensor; ++t) {
    const int id = compressed_by_[t];
    if (id >= 0 && offload_jobs_[id] && (jobs.empty() || jobs.back() != offload_jobs_[id])) jobs.push_back(offload_jobs_[id]);
  }
}

std::unique_ptr<BucketExchange> RankEngine::reuse_exchange() {
  if (spare_.empty()) return std::make_unique<BucketExchange>();
  std::unique_ptr<BucketExchange> x = std::move(spare_.back());
  spare_.pop_back();
  x->lost = 0;
  x->reused_threshold = nullptr;
  x->dense = nullptr;  // set again by fill_payload
  x->shard_out = nullptr;
  x->stage = -1;
  return x;
}

std::unique_ptr<BucketExchange> RankEngine::make_exchange(const policy::Bucket& bucket, TimeNs when) {
  std::unique_ptr<BucketExchange> x = reuse_exchange();
  x->bucket = bucket;
  x->iteration = iteration_;
  bucket_segments(bucket, layout_, compressed_by_, selections_, x->segments);
  fill(*x);
  x->posted = when;
  return x;
}

void RankEngine::fill(BucketExchange& x) {
  if (plane_) {
    plane_->fill(x);
  } else {
    fill_payload(x, layout_, gradient_.data(), selections_);
  }
}

// The collective and the scatter into the average, right after it (a sum
// left in host memory's gradient is averaged where it is read: aggregate();
// a plane averages every result at once).
void RankEngine::execute(BucketExchange& x, Communicator& comm) {
  x.started = since_start();
  if (plane_) {
    plane_->run_collective(x, comm);
  } else {
    run_collective(x, comm);
  }
  x.finished = since_start();
  const bool sum_stays = x.sums_in_gradient() && !plane_;
  if (plane_) {
    plane_->apply_result(x, comm);
  } else if (!sum_stays) {
    apply_result(x, layout_, comm.size(), aggregate_.data(), scratch_);
  }
  x.decompressed = sum_stays ? x.finished : since_start();
  x.decompression_ns = x.decompressed - x.finished;
}

void RankEngine::flush(const policy::Bucket& bucket, TimeNs when) {
  const TimeNs begin = since_start();
  if (bucket.sparse == policy::SparseAllreduce::kOkTopk) prepare_oktopk(bucket);
  std::unique_ptr<BucketExchange> x = reuse_exchange();
  x->bucket = bucket;
  x->iteration = iteration_;
  x->index = int(exchanges_.size());
  // A bucket carrying offloaded selections is packed on the communication
  // thread once they are done.
  offloaded_in(bucket, x->offload_jobs);
  if (x->offload_jobs.empty()) {
    bucket_segments(bucket, layout_, compressed_by_, selections_, x->segments);
    fill(*x);
  }
  x->posted = std::max(when, begin);
  x->reused_threshold = bucket.sparse == policy::SparseAllreduce::kOkTopk ? oktopk_.global(bucket.first_tensor) : nullptr;
  if (bucket.collective == Collective::kReduceScatter) {
    const int g = forward_plan_ ? stage_of_[size_t(bucket.first_tensor)] : -1;
    if (g < 0 || !forward_plan_->stages[size_t(g)].has_deferred ||
        forward_plan_->stages[size_t(g)].first_tensor != bucket.first_tensor) {
      throw std::logic_error(describe_flush(*x) + ": a reduce-scatter whose all-gather no forward stage runs");
    }
    x->shard_out = gathers_[size_t(g)].shard.data();
    x->stage = g;
    gathers_[size_t(g)].owed = true;
  }
  const TimeNs packing = x->packs_payload() ? since_start() - begin : 0;
  x->compression_ns = pending_compression_ + packing;
  inline_compression_ += packing;
  pending_compression_ = 0;
  if (scheduled_) {
    x->index = scheduled_flushes_++;
    scheduled_->post(std::move(x));
    return;
  }
  BucketExchange* raw = x.get();
  x->ticket = comm_.submit(
      [this, raw](Communicator& comm) {
        if (!raw->offload_jobs.empty()) {
          for (uint64_t job : raw->offload_jobs) offload_->wait(job);
          const TimeNs begin = since_start();
          bucket_segments(raw->bucket, layout_, compressed_by_, selections_, raw->segments);
          if (plane_) hand_offloaded_to_plane(*raw);
          fill(*raw);
          // As the simulator counts a bucket's compression: its selections'
          // run times wherever they ran, then its packing.
          raw->compression_ns += offloaded_ns(*raw) + (since_start() - begin);
        }
        execute(*raw, comm);
      },
      describe_flush(*x));
  exchanges_.push_back(std::move(x));
}

// A selection is one segment of one bucket (bucket_segments refuses one that straddles two).
TimeNs RankEngine::offloaded_ns(const BucketExchange& x) const {
  TimeNs sum = 0;
  for (const Segment& s : x.segments) {
    const int id = s.selection;
    if (id >= 0 && offload_jobs_[size_t(id)]) sum += selections_[size_t(id)].offloaded_ns;
  }
  return sum;
}

// The CPU's selections (from the host copy of the gradient, which is the
// plane's too) go to the plane that packs them; without error feedback the
// values they send are the gradient's own, already on the plane.
void RankEngine::hand_offloaded_to_plane(const BucketExchange& x) {
  for (const Segment& s : x.segments) {
    if (s.selection >= 0 && offload_jobs_[size_t(s.selection)]) {
      plane_->adopt_selection(s.selection, selections_[size_t(s.selection)]);
    }
  }
}

void RankEngine::copy_plane_state() {
  expect(Phase::kIdle, "copy_plane_state");
  if (plane_) plane_->copy_to_host(aggregate_, residual_, exchanges_);
}

void RankEngine::forget_sums() {
  for (char& pending : sum_in_gradient_) {
    sums_lost_ = sums_lost_ || pending;
    pending = 0;
  }
}

const std::vector<float>& RankEngine::aggregate() const {
  if (scheduled_) {  // every tensor's sum is in the completed iteration's gradient
    kernels::average(completed_sums_->data(), layout_.total(), comm_.size(), aggregate_.data());
    return aggregate_;
  }
  if (sums_lost_) throw std::logic_error("aggregate() read after the next iteration overwrote the sums it needed");
  for (int t = 0; t < layout_.tensors(); ++t) {
    if (!sum_in_gradient_[size_t(t)]) continue;
    const int64_t at = layout_.offset[size_t(t)];
    kernels::average(gradient_.data() + at, layout_.elements(t, t + 1), comm_.size(), aggregate_.data() + at);
    sum_in_gradient_[size_t(t)] = 0;
  }
  return aggregate_;
}

void RankEngine::average_into(int tensor, float* out) const {
  if (sums_lost_) throw std::logic_error("average_into called after the next iteration overwrote the sums it needed");
  const int64_t at = layout_.offset[size_t(tensor)], n = layout_.elements(tensor, tensor + 1);
  if (scheduled_) {
    kernels::average(completed_sums_->data() + at, n, comm_.size(), out);
  } else if (sum_in_gradient_[size_t(tensor)]) {
    kernels::average(gradient_.data() + at, n, comm_.size(), out);
  } else {
    std::copy(aggregate_.begin() + at, aggregate_.begin() + at + n, out);
  }
}

void RankEngine::begin_iteration(int iteration) {
  expect(Phase::kIdle, "begin_iteration");
  forget_sums();
  iteration_ = iteration;
  std::fill(compressed_by_.begin(), compressed_by_.end(), -1);
  used_selections_ = 0;
  offload_jobs_.clear();
  requests_.clear();
  // Reversed, so that flush #k takes last iteration's flush #k exchange
  // (the same bucket in a steady state: its buffers fit without growing).
  for (auto x = exchanges_.rbegin(); x != exchanges_.rend(); ++x) spare_.push_back(std::move(*x));
  exchanges_.clear();
  pending_compression_ = inline_compression_ = 0;
  gated_optimizer_ = gated_wait_ = 0;
  next_tensor_ = 0;
  policy_->begin_iteration(iteration);
  phase_ = Phase::kForward;
  start_ = Clock::now();
  if (coordinated_) coordinated_->start(iteration, comm_, *this, start_);
  if (scheduled_) {
    // The previous iteration's collectives still reduce in place in its
    // gradient: this one takes the other.
    gradient_.swap(gradient_back_);
    scheduled_flushes_ = 0;
  }
  if (forward_plan_ && gathers_[0].owed) post_gather(0);  // at the iteration start
}

void RankEngine::backward_started() {
  expect(Phase::kForward, "backward_started");
  // Only now: nothing is posted before backward, and the settle hook ran with nothing in flight.
  if (scheduled_) scheduled_->start(iteration_, comm_, start_);
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
  const TimeNs now = since_start();
  ready_offsets_[size_t(tensor)] = now - backward_start_;
  policy_->on_tensor_ready(tensor, now, *this);
  if (scheduled_) scheduled_->tensors_ready(iteration_, tensor + 1);
}

void RankEngine::wait_for_buckets() {
  expect(Phase::kBackward, "wait_for_buckets");
  if (next_tensor_ != layout_.tensors()) {
    throw std::logic_error(fmt::format("backward ended with {} of {} tensors ready", next_tensor_, layout_.tensors()));
  }
  backward_end_ = since_start();
  if (scheduled_) {  // its collectives are waited for in the next forward
    exposed_decompression_ = 0;
    optimizer_start_ = backward_end_;
    phase_ = Phase::kWaited;
    return;
  }
  if (coordinated_) coordinated_->finish(comm_, config_.timeout, exchanges_);
  std::fill(synchronized_.begin(), synchronized_.end(), false);
  // Decompression after backward's end runs while no collective does (the
  // communication thread is serial): it is exposed compression time.
  exposed_decompression_ = 0;
  for (auto& x : exchanges_) {
    comm_.wait_for(x->ticket, config_.timeout);
    exposed_decompression_ += std::max<TimeNs>(0, x->decompressed - std::max(x->finished, backward_end_));
    mark_synchronized(*x);
    if (x->sums_in_gradient() && !plane_) {
      for (int t = x->bucket.first_tensor; t < x->bucket.end_tensor; ++t) sum_in_gradient_[size_t(t)] = 1;
    }
  }
  sums_lost_ = false;
  comm_.drain(config_.timeout);
  if (offload_) offload_->wait_all();
  optimizer_start_ = since_start();
  phase_ = Phase::kWaited;
}

IterationTimes RankEngine::end_iteration() {
  expect(Phase::kWaited, "end_iteration");
  IterationTimes times;
  times.total = since_start();
  times.forward = backward_start_ - gated_optimizer_ - gated_wait_;
  times.backward = backward_end_ - backward_start_ - inline_compression_;
  times.compression = inline_compression_ + exposed_decompression_;
  times.communication_exposed = optimizer_start_ - backward_end_ - exposed_decompression_ + gated_wait_;
  times.optimizer = times.total - optimizer_start_ + gated_optimizer_;
  phase_ = Phase::kIdle;
  return times;
}

// Off the clock, with none of this rank's collectives in flight: the
// iteration's synthetic gradient (it stands in for backward's compute, whose
// timing is replayed), then a barrier, so that the ranks start or resume
// their clocks together. Otherwise one rank's off-clock work (this gradient,
// the driver's check) is timed as the other's collectives waiting for it:
// 70 ms of a 200 ms ResNet-50 wfbp iteration in one run. A lagging scheme
// prepares once its last iteration's collectives are done: generated beside
// them on 2 cores, a 4 KiB allreduce of ByteScheduler's took up to 16 ms.
void RankEngine::prepare_off_clock(int iteration) {
  synthetic_gradient(config_.seed, comm_.rank(), iteration, model_, layout_, gradient_.data());
  if (plane_) plane_->load_gradient(gradient_.data());
  comm_.wait_for(comm_.submit([](Communicator& c) { c.barrier(); },
                              fmt::format("the barrier before iteration {}", iteration)),
                 config_.timeout);
}

IterationTimes RankEngine::run_iteration(int iteration) {
  // ByteScheduler: its previous iteration's collectives are still in
  // flight; it prepares inside the forward, once they are done.
  forget_sums();
  if (!scheduled_) prepare_off_clock(iteration);
  begin_iteration(iteration);
  if (forward_plan_) {
    replay_gated_forward(iteration == 0);
  } else {
    wait_until(scaled(config_.forward_ns));
  }
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
  wait_until(optimizer_start_ + (forward_plan_ ? 0 : scaled(config_.optimizer_ns)));  // gated: in the forward
  return end_iteration();
}

void RankEngine::post_gather(int g) {
  StageGather& s = gathers_[size_t(g)];
  const policy::Bucket& group = forward_plan_->stages[size_t(g)].deferred;
  const int64_t shard = int64_t(s.shard.size()), n = group.elements;
  s.gathered.resize(size_t(shard * comm_.size()));
  s.owed = false;
  float* average = aggregate_.data() + layout_.offset[group.first_tensor];
  PayloadPlane* plane = plane_.get();
  s.ticket = comm_.submit(
      [&s, &group, g, plane, shard, n, average](Communicator& c) {
        if (plane) return plane->all_gather_stage(g, group, c);
        c.allgather_values(s.shard.data(), s.gathered.data(), shard);
        std::copy(s.gathered.begin(), s.gathered.begin() + n, average);
      },
      fmt::format("the all-gather of forward stage {} (tensors [{}, {})) in iteration {}", g, group.first_tensor,
                  group.end_tensor, iteration_));
}

bool RankEngine::open_stage(int g) {
  expect(Phase::kForward, "open_stage");
  const auto& stages = forward_plan_->stages;
  bool blocked = false;
  if (StageGather& s = gathers_[size_t(g)]; s.ticket) {
    blocked = comm_.wait_for(s.ticket, config_.timeout);
    s.ticket = 0;
  }
  if (scheduled_ && iteration_ > 0) {  // the previous iteration's collectives covering the stage
    for (int t = stages[size_t(g)].first_tensor; t < stages[size_t(g)].end_tensor; ++t) {
      blocked |= scheduled_->wait_for_tensor(iteration_ - 1, t, comm_, config_.timeout);
    }
  }
  if (size_t(g) + 1 < stages.size() && gathers_[size_t(g) + 1].owed) post_gather(g + 1);
  return blocked;
}

void RankEngine::enter_stage(int g) {
  const TimeNs before = since_start();
  if (open_stage(g)) gated_wait_ += since_start() - before;
  stage_opened_ = since_start();
}

void RankEngine::stage_updated() { gated_optimizer_ += since_start() - stage_opened_; }

void RankEngine::end_forward() {
  expect(Phase::kForward, "end_forward");
  if (!scheduled_ || iteration_ == 0) return;
  const TimeNs before = since_start();
  finish_scheduled(iteration_ - 1);
  gated_wait_ += since_start() - before;
  if (settle_) off_the_clock([&] { settle_(iteration_ - 1); });  // with nothing in flight
}

void RankEngine::off_the_clock(const std::function<void()>& work) {
  const Clock::time_point paused = Clock::now();
  work();
  start_ += Clock::now() - paused;
}

// The simulator's gated forward (sim/forward_pass.cc) on this rank's clock:
// CLOCK is where the stage would start without waiting. A gate found open
// leaves it alone, so sleep overshoot does not accumulate over the stages
// (ResNet-50 has 161). One that blocked opened after the rank arrived, so
// without overshoot the rank would have waited from CLOCK: that is the
// wait, and the stage starts when the gate opened.
void RankEngine::replay_gated_forward(bool first) {
  const auto& stages = forward_plan_->stages;
  TimeNs clock = scaled(config_.forward_split.lead_ns);
  wait_until(clock);
  for (size_t g = 0; g < stages.size(); ++g) {
    const bool blocked = open_stage(int(g));
    if (const TimeNs after = since_start(); blocked && after > clock) {
      gated_wait_ += after - clock;
      clock = after;
    }
    const TimeNs optimizer = first ? 0 : scaled(stage_times_[g].optimizer);
    gated_optimizer_ += optimizer;
    clock += optimizer;
    wait_until(clock);
    clock += scaled(stage_times_[g].forward);
    wait_until(clock);
  }
  end_forward();
  if (scheduled_) off_the_clock([&] { prepare_off_clock(iteration_); });  // now that nothing is in flight
}

void RankEngine::finish_scheduled(int iteration) {
  for (auto& x : exchanges_) spare_.push_back(std::move(x));
  exchanges_.clear();
  scheduled_->finish(iteration, comm_, config_.timeout, exchanges_);
  // The round of ITERATION summed into the gradient that was current then.
  completed_sums_ = iteration == iteration_ ? &gradient_ : &gradient_back_;
  std::fill(synchronized_.begin(), synchronized_.end(), false);
  for (const auto& x : exchanges_) mark_synchronized(*x);
}

void RankEngine::mark_synchronized(const BucketExchange& x) {
  for (const Segment& s : x.segments) {
    for (int t = s.first; t < s.end; ++t) synchronized_[t] = synchronized_[t] || s.included;
  }
}

void RankEngine::complete_deferred() {
  expect(Phase::kIdle, "complete_deferred");
  if (scheduled_) {
    finish_scheduled(iteration_);
    return;
  }
  for (size_t g = 0; g < gathers_.size(); ++g) {
    if (gathers_[g].owed) post_gather(int(g));
  }
  comm_.drain(config_.timeout);
  for (auto& s : gathers_) s.ticket = 0;
}

}  // namespace sparsefuse::runtime
