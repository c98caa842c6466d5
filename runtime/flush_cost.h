#pragma once
// What the engine's flush of a small bucket costs beyond the kernel that
// packs it, in training's cache state: measured on one rank
// (LoopbackCommunicator) running ADTopk over one-dimensional tensors sent
// dense as pairs, each in a bucket of its own, as ResNet-50's batch-norm
// weights and biases are. Shared by runtime/bench_flush (prints it) and
// `sparsefuse profile-kernels --after-compute` (records it in the profile's
// flush_bookkeeping table, which the simulator charges per packed flush:
// docs/simulator-model.md, "Calls after compute").
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sparsefuse::runtime {

class RankEngine;

struct FlushCostOptions {
  int64_t elements = 64;   // per tensor
  int modules = 32;        // each makes a weight and a bias ready
  int iterations = 20;     // measured, after one warm-up
  int64_t evict_bytes = int64_t{8} << 20;  // swept before each module, as its backward step would
};

// Medians (us) over every module of every measured iteration. A module's
// backward step is a sweep of evict_bytes and of the code
// (kernels/code_sweep.h) and a fresh write of both its gradients; then the weight, then the bias, are handed to the engine.
// engine: the bucket's compression as the engine records it for
//   result.json (the flush's bookkeeping and pack_dense).
// kernel: pack_dense alone in the same state, its payload flushed from
//   every cache (profile-kernels' after-compute pack point at density 1).
struct FlushCost {
  double weight_engine_us, weight_kernel_us;  // the first flush after compute
  double bias_engine_us, bias_kernel_us;      // the flush right after its module-mate's
  double after_compute_bookkeeping_us() const { return weight_engine_us - weight_kernel_us; }
  double after_module_mate_bookkeeping_us() const { return bias_engine_us - bias_kernel_us; }
};

// Throws std::invalid_argument for elements, modules or iterations < 1 or
// evict_bytes < 0.
FlushCost measure_flush_cost(const FlushCostOptions& options);

// A trace of one-dimensional tensors, tensor t of SIZES[t] elements, named as
// weight-bias pairs of modules (layer0.weight, layer0.bias, layer1.weight,
// ...), written to a new temporary file whose path it returns (the caller
// removes it once parsed). Shared with runtime/request_cost.h.
std::string write_module_pairs_trace(const std::vector<int64_t>& sizes);

// One rank (loopback) running ADTopk without error feedback over
// one-dimensional tensors, tensor t of SIZES[t] elements: every tensor is
// sent dense as pairs in a bucket of its own, flushed as it is made ready.
// Shared by measure_flush_cost and FlushProbe (runtime/flush_probe.h).
class DensePairsEngine {
 public:
  explicit DensePairsEngine(const std::vector<int64_t>& sizes);
  ~DensePairsEngine();
  DensePairsEngine(const DensePairsEngine&) = delete;
  DensePairsEngine& operator=(const DensePairsEngine&) = delete;

  RankEngine& engine();
  int tensors() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

// Writes ELEMENTS deterministic gradient-like values (SEED picks them) to G.
void fill_gradient(float* g, int64_t elements, uint64_t seed);

}  // namespace sparsefuse::runtime
