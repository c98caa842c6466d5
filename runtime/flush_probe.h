#pragma once
// What the engine's flush of a small bucket costs in a real training loop's
// cache state, measured in situ: a profiled model's backward calls hook()
// where each gradient becomes ready (the AccumulateGrad hooks of the
// profiles `sparsefuse train` takes, before training and interleaved with
// it), and the probe
// does there what the runtime's engine does at such a hook for a bucket sent
// dense as pairs. runtime/flush_cost.h measures the same after synthetic
// sweeps of the caches; what a real backward step leaves behind (other code,
// other pages, other data) is what this measures instead.
//
// Iterations alternate. In engine iterations each hook makes the next of a
// DensePairsEngine's one-dimensional tensors ready, so the engine flushes it
// (its recorded compression: the flush's bookkeeping and pack_dense); in
// kernel iterations each hook runs pack_dense alone on a tensor of the same
// size into a payload of its own, touched once an iteration as the engine's
// exchanges are. The per-flush bookkeeping is the difference of the medians.
// The first iteration of each kind is a warm-up (exchanges and payloads are
// made, not reused).
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/flush_cost.h"

namespace sparsefuse::runtime {

struct FlushProbeSummary {
  double flush_us = 0;   // median engine flush (bookkeeping + pack_dense)
  double kernel_us = 0;  // median pack_dense alone
  int64_t flushes = 0, kernels = 0;  // samples behind each median
  // flush_us - kernel_us, or 0 where noise makes the difference negative.
  double bookkeeping_us() const { return flush_us > kernel_us ? flush_us - kernel_us : 0; }
};

class FlushProbe {
 public:
  // HOOKS: the most calls of hook() per iteration (the profiled model's
  // parameters); ELEMENTS: each probe tensor's size. Throws
  // std::invalid_argument for hooks or elements < 1.
  FlushProbe(int hooks, int64_t elements);
  ~FlushProbe();

  void begin_iteration();
  // Throws std::invalid_argument (a std::logic_error) outside an iteration or past HOOKS calls in one.
  void hook();
  // Fewer hooks than HOOKS are allowed (a parameter that got no gradient).
  // Throws std::invalid_argument outside an iteration.
  void end_iteration();

  // Throws std::invalid_argument before one measured iteration of each kind.
  FlushProbeSummary summary() const;

 private:
  bool engine_iteration() const { return iteration_ % 2 == 0; }

  DensePairsEngine pairs_;
  const int64_t elements_;
  std::vector<float> gradient_, values_;  // kernel iterations: one payload per hook
  std::vector<int32_t> indices_;
  std::vector<double> flush_us_, kernel_us_;
  int iteration_ = -1;
  int next_ = 0;
  bool open_ = false;
};

}  // namespace sparsefuse::runtime
