#include "runtime/flush_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "common/median.h"
#include "common/trace.h"
#include "kernels/pack.h"
#include "runtime/engine.h"

namespace sparsefuse::runtime {

namespace {

constexpr int kFirstMeasured = 3;  // 0 learns the hooks, 1 and 2 warm up

}  // namespace

double FlushProbeSummary::bookkeeping_us() const {
  std::vector<std::pair<double, double>> flush_and_kernel;
  flush_and_kernel.reserve(hooks.size());
  for (const HookFlush& h : hooks) flush_and_kernel.emplace_back(h.flush_us, h.kernel_us);
  return runtime_flush_bookkeeping_us(flush_and_kernel);
}

FlushProbe::FlushProbe(int hooks, int64_t max_elements) : max_hooks_(hooks), max_elements_(max_elements) {
  if (hooks < 1 || max_elements < 1) {
    throw std::invalid_argument(fmt::format("flush probe: expected hooks and max elements >= 1, got {} and {}",
                                            hooks, max_elements));
  }
}

FlushProbe::~FlushProbe() = default;

void FlushProbe::begin_iteration() {
  if (open_) throw std::invalid_argument("flush probe: begin_iteration twice without end_iteration");
  ++iteration_;
  next_ = 0;
  open_ = true;
  if (engine_iteration()) {
    pairs_->engine().begin_iteration(iteration_ / 2);
    pairs_->engine().backward_started();
  }
}

void FlushProbe::learn(int64_t elements) {
  Hook h{elements, std::min(elements, max_elements_), large_.size(), probe_.size()};
  if (elements > max_elements_) large_.resize(large_.size() + size_t(elements));
  probe_.resize(probe_.size() + size_t(h.probe));
  hooks_.push_back(h);
}

void FlushProbe::finish_learning() {
  if (hooks_.empty()) throw std::invalid_argument("flush probe: the first iteration called no hook");
  std::vector<int64_t> sizes;
  for (const Hook& h : hooks_) sizes.push_back(h.probe);
  pairs_ = std::make_unique<DensePairsEngine>(sizes);
  values_.resize(probe_.size());
  indices_.resize(probe_.size());
  flush_us_.resize(hooks_.size());
  kernel_us_.resize(hooks_.size());
}

void FlushProbe::copy_in(const Hook& h, const float* gradient, float* to) {
  std::memcpy(to, gradient, size_t(h.probe) * sizeof(float));
  if (h.elements > h.probe) std::memcpy(large_.data() + h.large_at, gradient, size_t(h.elements) * sizeof(float));
}

void FlushProbe::hook(const float* gradient, int64_t elements) {
  if (!open_) throw std::invalid_argument("flush probe: hook outside an iteration");
  if (!gradient || elements < 1) {
    throw std::invalid_argument(fmt::format("flush probe: hook {}: expected a gradient of >= 1 elements", next_));
  }
  const int k = next_++;
  if (iteration_ == 0) {
    if (k >= max_hooks_) {
      throw std::invalid_argument(fmt::format("flush probe: more than the {} hooks declared", max_hooks_));
    }
    learn(elements);
    return;
  }
  if (k >= int(hooks_.size()) || hooks_[size_t(k)].elements != elements) {
    throw std::invalid_argument(fmt::format(
        "flush probe: hook {} of iteration {} made {} elements ready; the first iteration's hooks differ ({} hooks{})",
        k, iteration_, elements, hooks_.size(),
        k < int(hooks_.size()) ? fmt::format(", hook {} of {} elements", k, hooks_[size_t(k)].elements) : ""));
  }
  const Hook& h = hooks_[size_t(k)];
  if (engine_iteration()) {
    copy_in(h, gradient, pairs_->engine().gradient(k));
    pairs_->engine().tensor_ready(k);
    return;
  }
  copy_in(h, gradient, probe_.data() + h.probe_at);
  const auto start = std::chrono::steady_clock::now();
  kernels::pack_dense(probe_.data() + h.probe_at, h.probe, values_.data() + h.probe_at, indices_.data() + h.probe_at);
  const auto end = std::chrono::steady_clock::now();
  if (iteration_ >= kFirstMeasured) {
    kernel_us_[size_t(k)].push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
}

void FlushProbe::end_iteration(float* const* outputs, int count) {
  if (!open_) throw std::invalid_argument("flush probe: end_iteration without begin_iteration");
  if (count != 0 && count != int(hooks_.size())) {
    throw std::invalid_argument(fmt::format("flush probe: end_iteration given {} gradients; expected 0 or the {} hooks'",
                                            count, hooks_.size()));
  }
  if (count > 0 && std::find(outputs, outputs + count, nullptr) != outputs + count) {
    throw std::invalid_argument("flush probe: end_iteration given a null gradient");
  }
  open_ = false;
  if (iteration_ == 0) {
    finish_learning();
    return;
  }
  if (next_ != int(hooks_.size())) {
    throw std::invalid_argument(fmt::format("flush probe: iteration {} called {} hooks; the first called {}",
                                            iteration_, next_, hooks_.size()));
  }
  if (engine_iteration()) {
    RankEngine& engine = pairs_->engine();
    engine.wait_for_buckets();
    engine.end_iteration();
    if (iteration_ >= kFirstMeasured) {
      const auto& exchanges = engine.exchanges();  // one per hook, in order
      for (size_t k = 0; k < hooks_.size(); ++k) flush_us_[k].push_back(double(exchanges[k]->compression_ns) / 1e3);
    }
  }
  if (count > 0) write_back(outputs);
}

// As RankEngine::average_into after a real exchange: a read of every
// tensor's sums and a scaled write of every gradient (here by 1, one rank).
void FlushProbe::write_back(float* const* outputs) {
  const auto start = std::chrono::steady_clock::now();
  for (size_t k = 0; k < hooks_.size(); ++k) {
    const Hook& h = hooks_[k];
    if (h.elements > h.probe) {
      kernels::average(large_.data() + h.large_at, h.elements, 1, outputs[k]);
    } else if (engine_iteration()) {
      pairs_->engine().average_into(int(k), outputs[k]);
    } else {
      kernels::average(probe_.data() + h.probe_at, h.probe, 1, outputs[k]);
    }
  }
  const auto end = std::chrono::steady_clock::now();
  if (iteration_ >= kFirstMeasured) write_back_us_.push_back(std::chrono::duration<double, std::micro>(end - start).count());
}

FlushProbeSummary FlushProbe::summary() const {
  const auto unmeasured = [](const std::vector<double>& samples) { return samples.empty(); };
  if (hooks_.empty() || std::any_of(flush_us_.begin(), flush_us_.end(), unmeasured) ||
      std::any_of(kernel_us_.begin(), kernel_us_.end(), unmeasured)) {
    throw std::invalid_argument(
        "flush probe: no measured iteration of each kind yet (iteration 0 learns the hooks, 1 and 2 warm up)");
  }
  FlushProbeSummary s;
  for (size_t k = 0; k < hooks_.size(); ++k) {
    s.hooks.push_back({hooks_[k].probe, median(flush_us_[k]), median(kernel_us_[k])});
    s.flushes += int64_t(flush_us_[k].size());
    s.kernels += int64_t(kernel_us_[k].size());
  }
  if (!write_back_us_.empty()) {
    s.write_back_us = median(write_back_us_);
    s.write_backs = int64_t(write_back_us_.size());
  }
  return s;
}

}  // namespace sparsefuse::runtime
