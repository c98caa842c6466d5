#include "sim/worker.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "common/rng.h"

namespace sparsefuse::sim {

// A parameter's module is its name up to the last dot (PyTorch's
// "layer1.0.bn1.weight" -> "layer1.0.bn1"); a name without one is its own.
static std::string_view module_of(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(0, dot);
}

WorkerExecutor::WorkerExecutor(const model::CompressionCost& cost, const policy::GradientModel& model, uint64_t seed,
                               FlushRecord& record)
    : cost_(cost), tensor_elements_(model.elements), tensor_rows_(model.row_length), seed_(seed), record_(&record) {
  same_module_as_previous_.assign(model.elements.size(), false);
  for (const std::string& name : model.names) own_ratios_.push_back(cost_.adtopk_own_ratios(name));
  for (size_t t = 1; t < model.names.size(); ++t) {
    const std::string_view module = module_of(model.names[t]);
    same_module_as_previous_[t] = module != model.names[t] && module == module_of(model.names[t - 1]);
  }
}

void WorkerExecutor::bind(int w, int it, WorkerStreams& streams, bool first) {
  worker_ = w;
  iteration_ = it;
  streams_ = &streams;
  first_ = first;
  flushes_ = 0;
  pending_compression_ = 0;
  last_inline_end_ = -1;
  next_in_flight_ = 0;
}

void WorkerExecutor::set_comm_in_flight(const std::vector<Interval>* in_flight, double interference) {
  const bool active = in_flight && !in_flight->empty() && interference > 0;
  in_flight_ = active ? in_flight : nullptr;
  comm_slowdown_ = active ? 1.0 + interference : 1.0;
  next_in_flight_ = 0;
}

TimeNs WorkerExecutor::run_backward(TimeNs duration) {
  if (in_flight_) return run_backward_beside_collectives(duration);
  WorkerStreams& s = *streams_;
  const double slowdown = 1.0 + cost_.config().side_stream_contention;
  if (s.clock >= s.side_free || slowdown == 1.0) return s.clock += duration;
  // Slowed until the side stream drains, full speed after.
  double work_while_shared = double(s.side_free - s.clock) / slowdown;
  if (double(duration) <= work_while_shared) return s.clock += round_ns(double(duration) * slowdown);
  return s.clock = s.side_free + round_ns(double(duration) - work_while_shared);
}

// The kernel's work (DURATION at full speed) is spent piece by piece between
// the points where its speed changes: the side stream draining, a collective
// starting or ending. Rounded once, at the end. The compute clock only moves
// forward, so the first interval still running is found from the last one.
TimeNs WorkerExecutor::run_backward_beside_collectives(TimeNs duration) {
  WorkerStreams& s = *streams_;
  const std::vector<Interval>& in_flight = *in_flight_;
  const double side_slowdown = 1.0 + cost_.config().side_stream_contention;
  TimeNs t = s.clock;
  double work = double(duration);
  size_t& i = next_in_flight_;
  while (true) {
    while (i < in_flight.size() && in_flight[i].second <= t) ++i;
    const bool communicating = i < in_flight.size() && in_flight[i].first <= t;
    const bool shared = t < s.side_free;
    TimeNs change = i < in_flight.size() ? (communicating ? in_flight[i].second : in_flight[i].first) : INT64_MAX;
    if (shared) change = std::min(change, s.side_free);
    const double slowdown = (shared ? side_slowdown : 1.0) * (communicating ? comm_slowdown_ : 1.0);
    // Done once it rounds to a time at or before the change: a collective it
    // posts at its rounded end must not slow it (the passes would not settle).
    if (change == INT64_MAX || work * slowdown < double(change - t) + 0.5) return s.clock = t + round_ns(work * slowdown);
    work -= double(change - t) / slowdown;
    t = change;
  }
}

double first_uniform(uint64_t seed) {
  // Rng's state word 1 is the second splitmix64 output of SEED, and its first
  // output depends on that word alone.
  uint64_t state = seed + 0x9E3779B97F4A7C15ull;
  const uint64_t word1 = splitmix64(state);
  const uint64_t x = word1 * 5;
  const uint64_t output = ((x << 7) | (x >> 57)) * 9;
  return double(output >> 11) * 0x1.0p-53;
}

// Threshold sparsifiers select a count drawn from their band model
// (policy::banded_count), with a uniform from a stream keyed by (seed,
// worker, iteration, first tensor): reproducible and independent of
// processing order.
int64_t WorkerExecutor::selected_count(const policy::CompressionRequest& r) const {
  policy::CountBand band = policy::count_band(r.sparsifier);
  if (band.exact() || r.align_to_expected) return r.expected_count;
  uint64_t key = stream_seed(seed_, (uint64_t(worker_) << 40) ^ (uint64_t(iteration_) << 20) ^ uint64_t(r.first_tensor));
  return policy::banded_count(band, r.expected_count, r.elements, first_uniform(key));
}

// Tensors become ready in index order (BackwardStage): the range's last one
// was written by the backward step that just ended; the others' were written
// before later layers' backward passed its weights, activations and
// gradients through the cache.
double WorkerExecutor::cold_fraction(int first, int end, int64_t elements) const {
  if (end - first <= 1 || elements <= 0) return 0;
  return 1.0 - double(tensor_elements_[size_t(end - 1)]) / double(elements);
}

// The runtime's ADTopk selects tensor by tensor (runtime/compressor.cc):
// each at its own row length, all but the last ready out of cache, scaled
// by its time on its own gradient over Gaussian values where the profile
// measured that (CompressionCost::adtopk_own_ratios). Other
// selections run over the whole request, fused where it holds several
// tensors (CompressionConfig::fused_profile).
TimeNs WorkerExecutor::selection_ns(const policy::CompressionRequest& r, double cold) const {
  if (r.sparsifier != policy::Sparsifier::kAdtopk || !cost_.adtopk_by_row()) {
    return cost_.gpu_ns(r.sparsifier, r.elements, r.density, cold, r.end_tensor - r.first_tensor > 1);
  }
  TimeNs sum = 0;
  for (int t = r.first_tensor; t < r.end_tensor; ++t) {
    const TimeNs gaussian = cost_.adtopk_tensor_ns(tensor_elements_[size_t(t)], tensor_rows_[size_t(t)], r.density,
                                                   t + 1 < r.end_tensor ? 1.0 : 0.0);
    sum += TimeNs(std::llround(double(gaussian) * model::own_gradient_ratio(own_ratios_[size_t(t)], r.density)));
  }
  return sum;
}

// One module's backward step makes all its parameters' gradients ready (a
// layer's weight, then its bias). The first one's compression meets the
// caches as that step left them; the next one's follows that compression
// directly, which has just brought in the kernel's workspace and code: it
// is charged hot (measured in training: a BN layer's bias compresses in
// about half its weight's time). A fused request whose last tensor follows
// its module-mate in the buffer still follows compute: nothing was
// compressed in between.
bool WorkerExecutor::follows_compute(const policy::CompressionRequest& r) const {
  const int last = r.end_tensor - 1;
  return !(r.first_tensor == last && last == last_inline_end_ && same_module_as_previous_[size_t(last)]);
}

policy::CompressionOutcome WorkerExecutor::compress(const policy::CompressionRequest& r, TimeNs now) {
  WorkerStreams& s = *streams_;
  policy::CompressionOutcome out;
  out.selected = selected_count(r);
  const double cold = cold_fraction(r.first_tensor, r.end_tensor, r.elements);
  TimeNs gpu = selection_ns(r, cold) + (r.error_feedback ? cost_.error_feedback_ns(r.elements, r.density, cold) : 0);
  gpu = scaled_ns(gpu, s.scale);  // a slow worker's GPU is slow at everything
  compressed_elements += r.elements;
  switch (r.placement) {
    case policy::Placement::kGpuInline: {
      // Inline calls follow the backward step that made the gradient ready.
      const TimeNs entry = follows_compute(r) ? cost_.entry_ns(r.sparsifier, r.error_feedback, r.elements, r.density) : 0;
      const TimeNs inline_ns = gpu + scaled_ns(entry + cost_.request_bookkeeping_ns(), s.scale);
      out.done = run_inline(now, inline_ns);
      last_inline_end_ = r.end_tensor;
      pending_compression_ += inline_ns;
      break;
    }
    case policy::Placement::kGpuSideStream: {
      TimeNs start = std::max(now, s.side_free);
      s.side_free = start + gpu;
      s.async_jobs.emplace_back(start, s.side_free);
      pending_compression_ += gpu;
      compression_ns += gpu;
      out.done = s.side_free;
      break;
    }
    case policy::Placement::kCpuOffload: {
      auto thread = std::min_element(s.cpu_free.begin(), s.cpu_free.end());
      TimeNs start = std::max(now, *thread);
      TimeNs cpu = cost_.cpu_ns(r.sparsifier, r.elements, r.density);
      *thread = start + cpu;
      s.async_jobs.emplace_back(start, *thread);
      pending_compression_ += cpu;
      compression_ns += cpu;
      out.done = *thread;
      break;
    }
  }
  return out;
}

void WorkerExecutor::flush(const policy::Bucket& bucket, TimeNs when) {
  if (first_) {
    record_->buckets.push_back(bucket);
  } else if (flushes_ >= record_->buckets.size() || !record_->buckets[flushes_].same_operation(bucket)) {
    throw std::logic_error("workers flushed different bucket sequences");
  }
  const Packed packed = pack(bucket, bucket.sent_elements, when);
  record_->posts.push_back(packed.post);
  record_->bytes.push_back(bucket.bytes_per_worker);
  record_->compression.push_back(pending_compression_ + packed.duration);
  pending_compression_ = 0;
  ++flushes_;
}

// A bucket of one tensor sent dense as pairs costs what the trace measured
// in situ for that tensor where it did (the runtime's flush at that hook, in
// training's cache state: CompressionCost::in_situ_flush_ns); any other
// packed bucket its pack curves plus the bookkeeping.
TimeNs WorkerExecutor::packing_ns(const policy::Bucket& bucket, int64_t pairs) const {
  if (bucket.end_tensor - bucket.first_tensor == 1 && pairs == bucket.elements) {
    if (const auto in_situ = cost_.in_situ_flush_ns(bucket.first_tensor)) return *in_situ;
  }
  const double cold = cold_fraction(bucket.first_tensor, bucket.end_tensor, bucket.elements);
  return cost_.pack_ns(bucket.elements, pairs, cold) + cost_.pack_entry_ns(bucket.elements, pairs) +
         cost_.flush_bookkeeping_ns();
}

WorkerExecutor::Packed WorkerExecutor::pack(const policy::Bucket& bucket, int64_t pairs, TimeNs ready) {
  if (!policy::packs_pairs(bucket)) return {ready, 0};
  const TimeNs unscaled = packing_ns(bucket, pairs);
  const TimeNs packing = scaled_ns(unscaled, streams_->scale);
  if (packing == 0) return {ready, 0};
  return {run_inline(ready, packing), packing};
}

TimeNs WorkerExecutor::run_inline(TimeNs ready, TimeNs duration) {
  WorkerStreams& s = *streams_;
  s.clock = std::max(s.clock, ready) + duration;
  s.inline_compression += duration;
  s.inline_jobs.emplace_back(s.clock - duration, s.clock);
  compression_ns += duration;
  return s.clock;
}

}  // namespace sparsefuse::sim
