#include "runtime/flush_probe.h"

#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "common/median.h"
#include "kernels/pack.h"
#include "runtime/engine.h"

namespace sparsefuse::runtime {

namespace {

// The hooks, once checked: the engine is built from them in the initializer list.
int checked_hooks(int hooks, int64_t elements) {
  if (hooks < 1 || elements < 1) {
    throw std::invalid_argument(fmt::format("flush probe: expected hooks and elements >= 1, got {} and {}", hooks,
                                            elements));
  }
  return hooks;
}

}  // namespace

FlushProbe::FlushProbe(int hooks, int64_t elements)
    : pairs_(elements, checked_hooks(hooks, elements)),
      elements_(elements),
      gradient_(size_t(elements)),
      values_(size_t(hooks) * size_t(elements)),
      indices_(size_t(hooks) * size_t(elements)) {}

FlushProbe::~FlushProbe() = default;

void FlushProbe::begin_iteration() {
  if (open_) throw std::invalid_argument("flush probe: begin_iteration twice without end_iteration");
  ++iteration_;
  next_ = 0;
  open_ = true;
  if (engine_iteration()) {
    pairs_.engine().begin_iteration(iteration_ / 2);
    pairs_.engine().backward_started();
  }
}

void FlushProbe::hook() {
  if (!open_) throw std::invalid_argument("flush probe: hook outside an iteration");
  if (next_ >= pairs_.tensors()) {
    throw std::invalid_argument(
        fmt::format("flush probe: more than the {} hooks declared per iteration", pairs_.tensors()));
  }
  const int t = next_++;
  const uint64_t seed = uint64_t(iteration_) * 100003 + uint64_t(t);
  if (engine_iteration()) {
    // As the C API's tensor_ready: the gradient is copied in, then handed over.
    fill_gradient(pairs_.engine().gradient(t), elements_, seed);
    pairs_.engine().tensor_ready(t);
    return;
  }
  fill_gradient(gradient_.data(), elements_, seed);
  const size_t at = size_t(t) * size_t(elements_);
  const auto start = std::chrono::steady_clock::now();
  kernels::pack_dense(gradient_.data(), elements_, values_.data() + at, indices_.data() + at);
  const auto end = std::chrono::steady_clock::now();
  if (iteration_ >= 2) kernel_us_.push_back(std::chrono::duration<double, std::micro>(end - start).count());
}

void FlushProbe::end_iteration() {
  if (!open_) throw std::invalid_argument("flush probe: end_iteration without begin_iteration");
  open_ = false;
  if (!engine_iteration()) return;
  // Tensors no hook made ready (a parameter without a gradient this
  // iteration) are handed now, and their flushes are not samples.
  RankEngine& engine = pairs_.engine();
  const int hooked = next_;
  for (int t = hooked; t < pairs_.tensors(); ++t) engine.tensor_ready(t);
  engine.wait_for_buckets();
  engine.end_iteration();
  if (iteration_ < 2) return;
  const auto& exchanges = engine.exchanges();  // one per tensor, in order
  for (int t = 0; t < hooked; ++t) flush_us_.push_back(double(exchanges[size_t(t)]->compression_ns) / 1e3);
}

FlushProbeSummary FlushProbe::summary() const {
  if (flush_us_.empty() || kernel_us_.empty()) {
    throw std::invalid_argument("flush probe: no measured iteration of each kind yet (the first two are warm-ups)");
  }
  return {median(flush_us_), median(kernel_us_), int64_t(flush_us_.size()), int64_t(kernel_us_.size())};
}

}  // namespace sparsefuse::runtime
