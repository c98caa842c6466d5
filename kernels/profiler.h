// Kernel profiler: measures every compression kernel over a grid of sizes and
// densities and returns a hardware profile, format "sparsefuse-profile/1":
//
// {"format": "sparsefuse-profile/1",
//  "device": {"kind": "cpu" | "cuda", "name": <CPU model from /proc/cpuinfo or GPU name>,
//             "threads": 1 (cpu only)},
//  "provenance": {"kind": "measured", "tool": "sparsefuse profile-kernels",
//                 "date": "YYYY-MM-DD" (UTC), "host": <hostname>,
//                 "compiler": <compiler and version>, "cuda": <runtime version> (cuda only)},
//  "compression": {
//    "<kernel>": [{"elements": n, "density": d, "time_us": t}, ...], ...},
//  "compression_cold": {...the same kernels and points...} (cpu, with a working set only),
//  "compression_after_compute": {...the same, sizes <= 1e5...} (cpu, with an eviction size only),
//  "decompression": {
//    "unpack": [{"elements": n, "density": d, "workers": P, "time_us": t}, ...]}}
//
// Compression kernels: topk, dgc, gaussiank, redsync, sidco, randomk, adtopk, pack,
// ef_topk. time_us is the median over the repetitions of one call of the
// kernel (output buffers preallocated; the CUDA calls include their internal
// synchronisations and count read-backs). Inputs are synthetic Gaussian
// gradients (scale 1e-3, fixed seeds; on the cpu each call takes the next of
// a pool of distinct ones, hot_pool_copies below):
//   topk/dgc/gaussiank/redsync/sidco/randomk: one tensor of n elements, k = max(1, floor(d n));
//     sidco = SIDCo-E, 1 stage; dgc and randomk (cpu) a new seed / key (1, call, 0)
//     every call, as the runtime draws them (cuda: seed 1, key (1, 0, 0)).
//   adtopk:  the tensor viewed as (n / L, L), rows of L (k1 = max(1, floor(L d)) per row),
//            for every L of kAdtopkRows (cpu and GPU): its
//            cost per element depends on the row length (docs/simulator-model.md#adtopk-by-row-length).
//            Each point records "row": L and its "elements", (n / L) L; sizes below L
//            are skipped, and a (row, elements) already measured is not measured twice.
//   pack:    a fusion buffer of n elements split into 4 equal tensors, each with
//            k/4 selected local indices (ascending, evenly spaced); also at
//            density 1 (a bucket sent dense as pairs: pack_dense, as the
//            runtime packs one, on the cpu; the index-list pack on a GPU).
//   ef_topk: residual + gradient, k as for topk. With working_set_bytes > 0
//            the calls cycle through copies of the residual filling it (the
//            state error feedback keeps between iterations meets the kernel
//            out of cache); the gradient, as backward has just written it,
//            comes from the hot pool as for every kernel in "compression".
//            Above kAfterComputeMaxElements its calls (hot and cold) are timed
//            one by one, each after a write of a gradient into the next of a
//            pool of landing slots (as many as fill the working set, one
//            without it), as the runtime copies each gradient into its own
//            slot of a model-sized buffer; a hot call reads that gradient.
// compression_cold: with working_set_bytes > 0, every compression kernel again
//            with its gradient too taken from distinct copies filling the working set,
//            one per call: what a fused buffer's older tensors cost, written
//            before later layers' backward passed through the cache
//            (docs/simulator.md, "Cold gradients").
// compression_after_compute: with after_compute_evict_bytes > 0, every
//            compression kernel at sizes <= kAfterComputeMaxElements again, as
//            training calls it: one call alone after a read-and-write sweep of
//            that many bytes (caches, TLB and the kernel's own workspace as a
//            layer's backward leaves them), a sweep of the code (both:
//            sweep_after_compute, code_sweep.h) and a fresh copy into the gradient
//            (the runtime copies each gradient in just before compressing it);
//            pack's payload and local indices, which a bucket writes once an
//            iteration, are also flushed from every cache level first; the
//            median of max(9, 3 x repetitions) such calls. What a call
//            costs above the hot curve there is its entry cost after compute
//            (docs/simulator-model.md, "Calls after compute").
//   unpack:  P workers (default 8) each sending k distinct ascending indices
//            (evenly spaced, shifted by rank); per-rank counts (the correct receiver).
// Repetitions shrink with size (reps * sqrt(1e6 / n), at least min(reps, 3)) and small calls
// are looped to >= 2 ms per repetition, so the default CPU run stays well under a
// minute on a 2-core machine. With rounds > 1 the whole grid is measured that many
// times over and each point keeps the median of its rounds' times (provenance.rounds):
// a slow spell of a shared machine then costs one round of every point instead of
// every repetition of the few it falls on.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/profile_format.h"

namespace sparsefuse::kernels {

// One parameter's gradient within a model gradient (read_gradient_sample),
// which holds them back to back in this order.
struct GradientTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 0;  // the product of shape
};

struct ProfileOptions {
  std::string device = "cpu";          // "cpu" or "cuda"
  std::vector<int64_t> sizes;          // empty: 1e3 .. 1e8 in decades (+ 5e8 on cuda)
  std::vector<double> densities = {0.001, 0.01, 0.05, 0.1};
  int repetitions = 5;                 // at n <= 1e6; scaled down for larger n
  int rounds = 1;                      // passes over the whole grid; each point keeps their median
  int64_t max_elements = 0;            // > 0: drop sizes above it
  int workers = 8;                     // unpack P
  std::vector<std::string> kernels;    // empty: all
  int64_t working_set_bytes = 0;       // cpu: > 0 gives ef_topk copies of its residual
                                       // filling this many bytes, one per call (out of cache),
                                       // and adds compression_cold (gradients likewise)
  int64_t after_compute_evict_bytes = 0;  // cpu: > 0 adds compression_after_compute, each call
                                          // alone after sweeping this many bytes
  // Called before each measured point (kernel, density, row, condition):
  // profile-kernels --processes makes it a barrier across the processes,
  // so that they all time the same call at the same time. Empty: nothing.
  std::function<void()> before_point;
  // cpu: the calls' inputs are windows of this model's gradient
  // (read_gradient_sample) instead of Gaussian draws; null: Gaussian.
  std::shared_ptr<const std::vector<float>> gradients;
  std::string gradients_source;  // where they came from, for the provenance
  // cpu, with gradients: the tensors they hold, back to back in this order
  // (a trace's). Each of at least kOwnGradientMinElements elements and two
  // dimensions has ADTopk timed on its own gradient and on Gaussian values
  // of its shape (adtopk_tensors); empty: none.
  std::vector<GradientTensor> tensors;
};

// adtopk_tensors: ADTopk's cost depends on the order within each row, which
// Gaussian values do not have: at batch 1 a linear layer's gradient is an
// outer product whose rows all order alike, and nth_element ran about four
// times faster on it (tools/train/README.md). Below this size the call's
// fixed costs dominate.
inline constexpr int64_t kOwnGradientMinElements = 100'000;

// A model's gradient as `sparsefuse profile-model --gradients-out` writes it:
// raw little-endian float32, every parameter's gradient in ready order.
// Throws std::invalid_argument saying what is wrong with PATH (unreadable,
// empty, not a whole number of float32, a value not finite).
std::vector<float> read_gradient_sample(const std::string& path);

// ADTopk's row lengths (dimension 1 of a tensor: a convolution's input
// channels, a linear layer's input features). kProfileAdtopkRow is also the
// row a point without "row" was measured at (GPU profiles before 2026-11-28).
inline constexpr std::array<int64_t, 6> kAdtopkRows = {4, 16, 64, 256, kProfileAdtopkRow, 4096};
inline constexpr int64_t kMaxWorkingSet = int64_t{4} << 30;
// Sizes above it get no after-compute point: a call that long is dominated
// by its memory traffic, which the hot and cold curves measure, and one call
// of it varies by more than its entry cost (on the 2-vCPU VM, 2026-11-27:
// ef_topk's after-compute less hot was +2 to +5 us up to 1e4 elements, then
// -38 to +411 us between 2e5 and 1e6). ef_topk's calls above it are timed
// one by one instead of in a loop, each after a write of a gradient into a
// slot not written since the pool last cycled: a looped call pays for the
// write-back of the residual the call before it left dirty, which in
// training the next gradient's copy into its slot and the backward between
// two calls absorb. Over 1,048,576 elements, residual out of cache, one
// process on the 2-vCPU VM (2026-11-28): 2.1-2.2 ns per element so, 2.8-2.9
// looped; 2.3-2.5 in training (docs/simulator-model.md, "Large
// error-feedback calls").
inline constexpr int64_t kAfterComputeMaxElements = 100'000;

// The cpu's hot gradients: every call takes the next of a pool of distinct
// gradients held within kHotPoolBytes (a core's L2 is 2 MiB and up on the
// machines profiled), hot_pool_copies(n) of them (at least one). Training
// hands a kernel new values every call; one input repeated lets the branch
// predictor learn its comparisons: on the 2-vCPU VM (2026-11-27) ADTopk's
// per-row selection over one (10, 1000) tensor took 3.96 ns per element
// repeated and 6.12 on fresh values (docs/simulator-model.md#fresh-gradients).
inline constexpr int64_t kHotPoolBytes = int64_t{512} << 10;
size_t hot_pool_copies(int64_t n);
// COPIES gradients of N elements, copy c numbered FIRST_SEED + c: without
// SAMPLE, Gaussian (scale 1e-3) drawn with seed FIRST_SEED + c; with it, the
// window of SAMPLE starting at sample_window_start(FIRST_SEED + c, size),
// wrapping around its end.
std::vector<std::vector<float>> distinct_gradients(int64_t n, size_t copies, uint64_t first_seed,
                                                   const std::vector<float>* sample = nullptr);
// Where window number I of a sample of SIZE elements starts: I times the
// golden ratio's fraction of the way round, so that windows spread over the
// whole model (its layers differ in how their values are distributed, which
// top-k's radix select is sensitive to) and no two of the first thousands
// meet.
size_t sample_window_start(uint64_t i, size_t size);

// Every kernel name the profiler knows, compression kernels first, then "unpack".
const std::vector<std::string>& profile_kernel_names();
// Whether OPTIONS measure KERNEL (ProfileOptions::kernels empty: every one).
bool measures(const ProfileOptions& options, const std::string& kernel);

// Bytes a kernel must move at minimum (its memory floor's numerator):
//   topk, dgc, gaussiank, redsync, sidco: 4n + 8k   (read once, write (value, index) pairs)
//   adtopk: 4n + 8k (k = its per-row total over rows of ADTOPK_ROW)   randomk: min(4n, 32k) + 8k
//   ef_topk: 12n + 8k (read r and g, write r)       pack: 16k (read k indices and values, write pairs)
//   unpack: 8 P k + 4n (read P slices, write the dense result)
// Throws std::invalid_argument for an unknown kernel or ADTOPK_ROW < 1.
double profile_bytes_moved(const std::string& kernel, int64_t n, double density, int workers,
                           int64_t adtopk_row = kProfileAdtopkRow);

struct ProfileRun {
  nlohmann::json profile;          // the profile document above
  double memory_bandwidth = 0.0;   // bytes/s: cpu streaming read, cuda copy (read + write)
  std::string bandwidth_method;    // how it was measured
};

// Throws std::invalid_argument naming the first bad option.
void validate_profile_options(const ProfileOptions& options);

// Runs the measurements. Throws std::invalid_argument for a bad option and
// kernels::cuda::CudaError (a std::runtime_error) when device = "cuda" and no
// device can be used.
ProfileRun run_profile(const ProfileOptions& options);
nlohmann::json profile_kernels(const ProfileOptions& options);

// Prints an nccl-tests-like table: a header with device and bandwidth, then
// one row per measurement with columns size(elements), bytes (moved, as
// profile_bytes_moved), density, kernel, time(us), GB/s (bytes / time) and floor
// ratio (time / (bytes / memory bandwidth)).
void print_profile_table(const ProfileRun& run, std::FILE* out);

// Single-threaded streaming read bandwidth of this CPU (bytes/s): best of a few
// sums over a 256 MiB buffer (well beyond the last-level cache).
double measure_cpu_read_bandwidth();

}  // namespace sparsefuse::kernels
