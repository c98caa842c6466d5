// A model trace: every parameter tensor in backward order with its shape and
// the time (from backward start) at which its gradient is ready, plus forward
// and optimizer time. Format: traces/README.md ("sparsefuse-trace/1").
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json_reader.h"
#include "common/time.h"

namespace sparsefuse {

struct TraceTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  TimeNs ready_ns = 0;    // gradient ready, from backward start
  TimeNs forward_ns = 0;  // forward time of the op owning this tensor (0 if unknown)
  bool has_grad = true;   // false: no gradient in this workload (e.g. BERT pooler in SQuAD)
  double grad_rms = 0;    // measured per-element gradient RMS; 0 = not measured
  TimeNs ready_spread_ns = 0;  // measured traces: spread (IQR) of ready_ns over iterations; 0 = not measured
  // Measured in situ by the flush probe at this tensor's own size (the
  // trace's "runtime_flush" tensors): the runtime engine's flush of a bucket
  // of this tensor alone sent dense as pairs, at its gradient-ready hook, in
  // us; unset where not measured.
  std::optional<double> in_situ_flush_us;
};

struct Trace {
  std::string source;  // built-in name or file path
  std::string model;
  std::string description;
  std::string dtype;
  int64_t batch_size = 0;
  Json provenance;
  TimeNs forward_ns = 0;
  TimeNs backward_ns = 0;
  TimeNs optimizer_ns = 0;
  // Measured traces only (0 otherwise): the median whole iteration, and the
  // coefficient of variation of the iteration time (a scenario's compute_cv).
  TimeNs iteration_ns = 0;
  double iteration_cv = 0;
  // Measured in situ in the profiles `sparsefuse train` takes
  // (runtime/flush_probe.h, the trace's "runtime_flush"): the runtime
  // engine's own work per flush of a packed bucket after this model's
  // backward steps on the machine profiled (the median over the hooks), in
  // us; unset where not measured.
  std::optional<double> flush_bookkeeping_us;
  // Measured the same way ("runtime_flush"'s write_back_us): after backward
  // the runtime writes every tensor's average into the framework's gradient
  // before the optimizer steps (RankEngine::average_into), in us per
  // iteration; unset where not measured.
  std::optional<double> runtime_write_back_us;
  std::vector<TraceTensor> tensors;

  std::string provenance_kind() const;  // "analytic" or "measured"
  int64_t parameters() const;
  // The optimizer phase as an executor runs it: the framework's step, scaled
  // by COMPUTE_SCALE as every compute time is, plus the runtime's write-back
  // where measured (memory traffic over the parameters: not scaled).
  TimeNs optimizer_phase_ns(double compute_scale) const;
};

// "runtime_flush"'s bookkeeping_us, given each probed tensor's (flush_us,
// kernel_us): the median over the tensors of flush_us - kernel_us, each
// floored at 0 (noise can make one negative); 0 for none. The flush probe
// (runtime/flush_probe.h) computes it and the reader checks it.
double runtime_flush_bookkeeping_us(const std::vector<std::pair<double, double>>& flush_and_kernel_us);

// Parses and validates a trace; FILE names the origin in error messages.
Trace parse_trace(const Json& document, const std::string& file);
Trace load_trace_file(const std::string& path);

// Built-in traces are compiled into the binary: traces/*.json by their stem
// (e.g. "bert-large"), traces/measured/*.json as "measured/STEM".
std::vector<std::string> builtin_trace_names();
bool is_builtin_trace(const std::string& name);
Trace load_builtin_trace(const std::string& name);

}  // namespace sparsefuse
