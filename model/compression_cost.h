// What compression costs in the simulator: a GPU curve time(n, density) per
// sparsifier, a CPU curve for offloaded compression, error-feedback memory
// traffic, and decompression. Curves come from a hardware profile measured by
// `sparsefuse profile-kernels` (profiles/*.json, "sparsefuse-profile/1"), or
// from the seed code's "8 nodes" tables (profile "seed-8node", docs/seed-systems.md#the-seed-cost-tables),
// or estimated for a GPU from a measured one ("estimate:GPU", model/gpu_devices.h).
#pragma once

#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/profile_format.h"
#include "common/time.h"
#include "policy/sparsifier.h"

namespace sparsefuse::model {

// Measured points of one kernel: time at (elements, density).
class CostCurve {
 public:
  void add(int64_t elements, double density, double time_us);
  // Log-log interpolation in elements within each measured density (clamped
  // below the smallest size, proportional to size above the largest), then
  // linear in density between the two nearest measured densities (clamped).
  // Every worker of a simulation asks for the same buckets' costs, so the
  // answers are memoized (exactly: a hit returns what was computed). Not
  // safe to share between threads: a curve belongs to one simulation.
  double time_us(int64_t elements, double density) const;
  bool empty() const { return by_density_.empty(); }
  // The largest and the smallest size measured at any density (0 when empty).
  int64_t max_elements() const;
  int64_t min_elements() const;
  // The curve on a device FACTOR times slower per byte: at each density the
  // fastest call's time (launches and synchronisation, which memory
  // bandwidth does not set; usually the smallest size's) stays, the rest is
  // multiplied by FACTOR. Every time stays >= that floor > 0.
  CostCurve scaled_above_floor(double factor) const;

 private:
  std::map<double, std::vector<std::pair<double, double>>> by_density_;  // density -> (elements, us) sorted
  struct Answer {
    int64_t elements = 0;
    double density = std::numeric_limits<double>::quiet_NaN(), us = 0;  // NaN: empty (equals nothing)
  };
  // MEMO's slot for (ELEMENTS, DENSITY), filled by COMPUTE unless it holds them.
  template <typename Compute>
  static double memoized(std::array<Answer, 256>& memo, int64_t elements, double density, Compute compute);
  mutable std::array<Answer, 256> memo_;  // direct-mapped by (elements, density)
  // One measured density's answer at a size: requests whose density falls
  // between two measured ones (a bucket's pairs over its elements, a new
  // fraction for every worker's drawn count) share the two answers around
  // it and only blend them anew.
  mutable std::array<Answer, 256> level_memo_;  // direct-mapped by (measured density, elements)
  double interpolated_us(int64_t elements, double density) const;
  // The measured density LEVEL's answer at ELEMENTS (at_density, memoized).
  double at_level(const std::pair<const double, std::vector<std::pair<double, double>>>& level,
                  int64_t elements) const;
  double at_density(const std::vector<std::pair<double, double>>& points, double elements) const;
};

struct CompressionConfig {
  double density = 0.01;       // default for sparse presets (scheme knobs override)
  std::string sparsifier;      // "" = each preset's own default
  std::string profile = "seed-8node";  // or a profile file path, or "estimate:GPU"; the scenario
                                       // defaults it from topology.gpu (model/gpu_devices.h)
  std::string cpu_profile;             // profile file with CPU curves ("" = built-in measured CPU profile)
  // A profile measured on windows of a model's gradient (profile-kernels
  // --gradients) whose selection curves price requests that fuse several
  // tensors; "" = the profile above prices every request. Top-k's radix
  // select runs faster on a buffer of several layers' gradients (values of
  // different scales) than on one layer's (docs/simulator-model.md#fused-inputs).
  std::string fused_profile;
  double gpu_memory_gbytes_per_s = 900;  // EF traffic and decompression when the profile has no unpack curve
  double pcie_gbytes_per_s = 12;         // device<->host copies of offloaded compression
  int cpu_threads = 4;                   // offload thread pool
  double side_stream_contention = 0.25;  // backward runs at 1/(1+c) speed while a side-stream job runs
  // How inline calls meet the caches: "hot" (the profile's loops) or
  // "after-compute" (each call right after a layer's backward, as
  // `sparsefuse train` makes them: docs/simulator-model.md#calls-after-compute).
  bool calls_after_compute = false;
  // The runtime's own work per flush of a packed bucket beyond the pack
  // kernel (taking last iteration's exchange, listing its segments, laying
  // out the pack, on objects touched once an iteration), in microseconds,
  // charged to every packed bucket. Unset: with calls after compute, the
  // profile's measured flush_bookkeeping (profile-kernels --after-compute on
  // a CPU), and a GPU profile's (profile-kernels --device cuda) with any
  // calls, else 0; set, it replaces the profile's.
  std::optional<double> flush_bookkeeping_us;
  // The runtime's own work per inline compression request on a GPU beyond
  // the kernels the profile times (compress_resident's scatter, index copy,
  // event and stream synchronisation; the fill's index copies), in
  // microseconds, charged to every inline request. Unset: the profile's
  // measured request_bookkeeping (profile-kernels --device cuda), else 0;
  // set, it replaces the profile's.
  std::optional<double> request_bookkeeping_us;

  static CompressionConfig parse(const JsonNode& node);
  Json to_json() const;
};

// One set of measured kernel curves: one per sparsifier (ADTopk's at rows of
// kProfileAdtopkRow, or the measured row nearest it), ADTopk's by row length
// where a profile measured several (docs/simulator-model.md#adtopk-by-row-length),
// the fused error-feedback top-k and the pair packing where measured.
struct KernelCurves {
  std::map<policy::Sparsifier, CostCurve> sparsifiers;
  std::map<int64_t, CostCurve> adtopk_rows;
  CostCurve ef_topk, pack;
};

// What a profile file's curves say: the kernels on a gradient in cache
// ("compression"), on one out of cache where measured ("compression_cold";
// empty otherwise), called alone right after compute where measured
// ("compression_after_compute"; empty otherwise), and the effective unpack
// bandwidth (bytes/ns; 0 if it measured none).
struct ProfileCurves {
  KernelCurves hot, cold, after_compute;
  double unpack_bytes_per_ns = 0;
  double flush_bookkeeping_us = 0;    // the profile's flush_bookkeeping.time_us, 0 without one
  double request_bookkeeping_us = 0;  // the profile's request_bookkeeping.time_us, 0 without one
  bool gpu = false;                   // device.kind is "cuda"
  // adtopk_tensors (profile-kernels --tensors): per tensor name, ADTopk's
  // time on its own gradient over its time on Gaussian values of its shape,
  // by density, in increasing density.
  std::map<std::string, std::vector<std::pair<double, double>>> adtopk_own_ratio;
};
ProfileCurves load_profile_curves(const Json& document, const std::string& file);

// RATIOS (ProfileCurves::adtopk_own_ratio's, or null): the one measured at
// the density nearest DENSITY in log scale; 1 without any.
double own_gradient_ratio(const std::vector<std::pair<double, double>>* ratios, double density);

// COLD_FRACTION in the calls below: the share of the request's elements whose
// gradient is out of cache (a fused buffer's tensors but the last one ready,
// docs/simulator-model.md#cold-gradients). The time is (1 - f) x the hot
// curve + f x the cold one where the profile measured a cold curve for the
// kernel, the hot curve alone otherwise.
// What the flush probe measured in situ in the scenario's trace
// (runtime/flush_probe.h; common/trace.h): the runtime's bookkeeping per
// packed flush, and per gradient tensor (the model's order) its own flush
// sent dense as pairs, where it was probed at its own size.
struct InSituFlush {
  std::optional<double> bookkeeping_us;
  std::vector<std::optional<double>> tensor_flush_us;
};

class CompressionCost {
 public:
  // Loads the profiles named by CONFIG; relative paths resolve against
  // BASE_DIR. SCENARIO_FILE names the scenario in error messages. IN_SITU:
  // the scenario's trace's measurements, which with calls after compute and
  // a measured CPU profile replace that profile's bookkeeping and price a
  // bucket of one tensor sent dense as pairs (config's bookkeeping still
  // wins, and then prices those too).
  CompressionCost(const CompressionConfig& config, const std::string& base_dir, const std::string& scenario_file,
                  const InSituFlush& in_situ = {});

  // FUSED: the request's buffer holds several tensors (the fused profile's
  // curves where one is named).
  TimeNs gpu_ns(policy::Sparsifier s, int64_t elements, double density, double cold_fraction = 0,
                bool fused = false) const;
  // Whether the profile measured ADTopk at two row lengths or more (then a
  // request's ADTopk cost is adtopk_tensor_ns summed over its tensors).
  bool adtopk_by_row() const { return !seed_tables_ && hot_.adtopk_rows.size() >= 2; }
  // ADTopk over one tensor of ELEMENTS viewed as rows of ROW_LENGTH (its
  // dimension 1; 0 for a 1-D tensor, which the kernel copies whole: charged
  // at rows of kProfileAdtopkRow), COLD_FRACTION 0 or 1: time log-log
  // interpolated between the two measured row lengths around it (clamped
  // to the shortest and longest; a row measured only at sizes above ELEMENTS
  // is left out), each blended hot/cold as gpu_ns. Without rows measured, gpu_ns.
  TimeNs adtopk_tensor_ns(int64_t elements, int64_t row_length, double density, double cold_fraction) const;
  // One CPU thread, plus the copies: 4n bytes down, 8 bytes per selected element up.
  TimeNs cpu_ns(policy::Sparsifier s, int64_t elements, double density) const;
  // acc = residual + gradient and the residual update, on top of the
  // sparsifier's own pass: where the profile measured the fused kernel
  // (ef_topk), its excess over plain top-k at (ELEMENTS, DENSITY), at least 0;
  // otherwise 12 bytes per element at the configured memory bandwidth.
  TimeNs error_feedback_ns(int64_t elements, double density, double cold_fraction = 0) const;
  // Packing PAIRS (index, value) pairs out of a bucket of ELEMENTS into its
  // payload: the profile's pack curve at density PAIRS / ELEMENTS (1 for a
  // bucket sent dense as pairs); 0 where the profile has no pack curve (the
  // seed tables, profiles measured before it existed).
  TimeNs pack_ns(int64_t elements, int64_t pairs, double cold_fraction = 0) const;
  // With calls after compute, what an inline call costs above the curves
  // above: the kernel's after-compute time less its hot time at (ELEMENTS,
  // DENSITY), at least 0, sizes clamped to the largest after-compute point
  // (above it memory traffic dominates and the curves above measure it). The
  // kernel is the fused ef_topk for top-k with ERROR_FEEDBACK where measured,
  // the sparsifier's otherwise. 0 with hot calls or no after-compute curve
  // (compression_costs() then says so).
  TimeNs entry_ns(policy::Sparsifier s, bool error_feedback, int64_t elements, double density) const;
  TimeNs pack_entry_ns(int64_t elements, int64_t pairs) const;
  // The runtime's bookkeeping per packed flush (CompressionConfig::flush_bookkeeping_us,
  // else the trace's in-situ figure or the profile's).
  TimeNs flush_bookkeeping_ns() const;
  // The whole flush of a bucket of TENSOR alone sent dense as pairs (its
  // bookkeeping and packing) as the trace measured it in situ, where it did
  // and the constructor's conditions hold; nullopt otherwise.
  std::optional<TimeNs> in_situ_flush_ns(int tensor) const;
  // The ADTopk ratios measured on the named tensor's own gradient (the fused
  // profile's where it has any, else the profile's), or null.
  const std::vector<std::pair<double, double>>* adtopk_own_ratios(const std::string& tensor) const;
  // The runtime's bookkeeping per inline compression request
  // (CompressionConfig::request_bookkeeping_us, else the profile's).
  TimeNs request_bookkeeping_ns() const;
  // Zero-fill the dense buffer and scatter-add every worker's pairs.
  TimeNs decompression_ns(int64_t elements, int64_t gathered_pairs) const;
  const CompressionConfig& config() const { return config_; }
  std::string gpu_source() const { return gpu_source_; }
  // The profile and how its calls are charged (a result's compression_costs).
  std::string compression_costs() const;

 private:
  CompressionConfig config_;
  bool seed_tables_ = false;
  KernelCurves hot_, cold_, after_;  // the profile's
  KernelCurves fused_hot_, fused_cold_;  // the fused profile's (empty without one)
  std::string fused_source_;
  KernelCurves cpu_;         // the CPU profile's (hot: offloaded selections read a fresh host copy)
  double unpack_bytes_per_ns_;
  double flush_bookkeeping_us_ = 0;
  std::string flush_bookkeeping_source_;  // what compression_costs() names
  std::vector<std::optional<double>> in_situ_flush_us_;  // per tensor; empty where not used
  std::map<std::string, std::vector<std::pair<double, double>>> adtopk_own_ratio_;
  std::string adtopk_own_ratio_source_;
  double request_bookkeeping_us_ = 0;
  std::string gpu_source_, cpu_source_;
  std::string scenario_file_;

  void load_estimate(const std::string& gpu, const std::string& base_dir);
};

}  // namespace sparsefuse::model
