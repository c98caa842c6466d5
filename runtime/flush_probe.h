#pragma once
// What the engine's flush of a small bucket costs in a real training loop's
// cache state, measured in situ: a profiled model's backward calls hook()
// where each gradient becomes ready (the AccumulateGrad hooks of the
// profiles `sparsefuse train` takes, before training and interleaved with
// it), and the probe does there what the runtime does at such a hook for a
// bucket sent dense as pairs. runtime/flush_cost.h measures the same after
// synthetic sweeps of the caches; what a real backward step and the
// runtime's own traffic leave behind is what this measures instead.
//
// Every hook copies the gradient it is given, as sf_session_tensor_ready
// copies it into the engine (that traffic is the runtime's in training, and
// without it the flushes measured here ran 30-40 % short of training's).
// Hook k's probe tensor has min(the gradient's elements, max_elements)
// elements, so a small tensor is probed at its own size and place.
//
// Iteration 0 learns the hooks' sequence (each iteration must repeat it);
// then iterations alternate. In engine iterations hook k makes the k-th of
// a DensePairsEngine's one-dimensional tensors ready, so the engine flushes
// it (its recorded compression: the flush's bookkeeping and pack_dense); in
// kernel iterations hook k runs pack_dense alone on its copy into a payload
// of its own, touched once an iteration as the engine's exchanges are.
// Iterations 1 (engine) and 2 (kernel) are warm-ups (exchanges and payloads
// are made, not reused).
//
// After backward the runtime writes every tensor's average into the
// framework's gradient (sf_session_wait, RankEngine::average_into) before
// the optimizer steps; end_iteration() given the hooks' gradients does the
// same from the probe's copies (an engine iteration's small tensors from
// the engine's own averages) and times that write-back. With one rank the
// average is the gradient itself, so the values written are the ones read.
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/flush_cost.h"

namespace sparsefuse::runtime {

// One hook's medians over the measured iterations, in us.
struct HookFlush {
  int64_t elements = 0;  // its probe tensor's
  double flush_us = 0;   // the engine's flush (bookkeeping + pack_dense)
  double kernel_us = 0;  // pack_dense alone
};

struct FlushProbeSummary {
  std::vector<HookFlush> hooks;      // in hook order
  int64_t flushes = 0, kernels = 0;  // samples in all
  // The write-back of every hook's average (end_iteration's OUTPUTS): the
  // median over the measured iterations that wrote back, in us, and their
  // number (0: none did, and write_back_us is 0).
  double write_back_us = 0;
  int64_t write_backs = 0;
  // The engine's own work per flush: the median over the hooks of flush_us
  // - kernel_us, each floored at 0 (common/trace.h,
  // runtime_flush_bookkeeping_us: the rule the trace's reader checks).
  double bookkeeping_us() const;
};

class FlushProbe {
 public:
  // HOOKS: the most calls of hook() per iteration (the profiled model's
  // parameters); MAX_ELEMENTS: the largest probe tensor. Throws
  // std::invalid_argument for either < 1.
  FlushProbe(int hooks, int64_t max_elements);
  ~FlushProbe();

  void begin_iteration();
  // GRADIENT: the ELEMENTS floats the hook made ready. Throws
  // std::invalid_argument outside an iteration, past HOOKS calls in one, for
  // a null gradient or elements < 1, and after the first iteration for a
  // hook whose elements differ from the first iteration's.
  void hook(const float* gradient, int64_t elements);
  // OUTPUTS: none (COUNT 0), or the gradients the hooks were given, in hook
  // order, which after iteration 0 (that only learns) are written back as
  // described above, and timed. Throws std::invalid_argument outside an
  // iteration, after the first iteration for fewer hooks than the first
  // iteration's, or (leaving the iteration open) for a COUNT other than 0 or
  // the hooks', or a null output.
  void end_iteration(float* const* outputs = nullptr, int count = 0);

  // Throws std::invalid_argument before one measured iteration of each kind.
  FlushProbeSummary summary() const;

 private:
  bool engine_iteration() const { return iteration_ % 2 == 1; }
  struct Hook {
    int64_t elements;  // the gradient's, learned in iteration 0
    int64_t probe;     // min(elements, max_elements)
    size_t large_at;   // where a gradient over max_elements is copied in large_
    size_t probe_at;   // its region in probe_, values_ and indices_
  };
  void learn(int64_t elements);
  void finish_learning();
  // Copies GRADIENT as the C API does: its first probe elements to TO, the
  // whole of one over max_elements to large_ as well.
  void copy_in(const Hook& h, const float* gradient, float* to);
  void write_back(float* const* outputs);

  const int max_hooks_;
  const int64_t max_elements_;
  std::vector<Hook> hooks_;
  std::unique_ptr<DensePairsEngine> pairs_;  // made once the hooks are learned
  // Gradients over max_elements are copied to large_ (the C API's traffic);
  // a kernel iteration's probe tensors and payloads live in probe_ and
  // values_/indices_, one region per hook.
  std::vector<float> large_, probe_, values_;
  std::vector<int32_t> indices_;
  std::vector<std::vector<double>> flush_us_, kernel_us_;  // per hook
  std::vector<double> write_back_us_;                      // per measured iteration
  int iteration_ = -1;
  int next_ = 0;
  bool open_ = false;
};

}  // namespace sparsefuse::runtime
