#include "common/trace.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/embedded_json.h"
#include "common/median.h"

namespace sparsefuse {

std::string Trace::provenance_kind() const {
  return provenance.is_object() && provenance.contains("kind") && provenance["kind"].is_string()
             ? provenance["kind"].get<std::string>()
             : "unknown";
}

int64_t Trace::parameters() const {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.elements;
  return total;
}

TimeNs Trace::optimizer_phase_ns(double compute_scale) const {
  return scaled_ns(optimizer_ns, compute_scale) + (runtime_write_back_us ? round_ns(*runtime_write_back_us * 1e3) : 0);
}

static constexpr int64_t kMaxNs = int64_t(1) << 52;  // ~52 days: anything larger is a unit mistake

static TraceTensor parse_tensor(const JsonNode& node, TimeNs backward_ns, TimeNs previous_ready) {
  node.check_keys({"name", "shape", "elements", "ready_ns", "ready_spread_ns", "forward_ns", "has_grad", "grad_rms"});
  TraceTensor t;
  t.name = node.child("name").as_string();
  JsonNode shape = node.child("shape");
  size_t dims = shape.array_size();
  if (dims == 0) shape.fail("expected a non-empty array of positive integers (the tensor shape)");
  int64_t product = 1;
  for (size_t d = 0; d < dims; ++d) {
    int64_t extent = shape.element(d).as_int(1, int64_t(1) << 40);
    t.shape.push_back(extent);
    if (product > (int64_t(1) << 40) / extent) shape.fail("tensor has more than 2^40 elements");
    product *= extent;
  }
  JsonNode elements = node.child("elements");
  t.elements = elements.as_int(1, int64_t(1) << 40);
  if (t.elements != product) {
    elements.fail(fmt::format("inconsistent size: shape gives {} elements but \"elements\" is {}", product,
                              t.elements));
  }
  JsonNode ready = node.child("ready_ns");
  t.ready_ns = ready.as_int(0, backward_ns);
  if (t.ready_ns < previous_ready) {
    ready.fail(fmt::format("ready_ns must not decrease along the backward order (previous tensor: {})",
                           previous_ready));
  }
  t.ready_spread_ns = node.get_int("ready_spread_ns", 0, 0, kMaxNs);
  t.forward_ns = node.get_int("forward_ns", 0, 0, kMaxNs);
  t.has_grad = node.get_bool("has_grad", true);
  t.grad_rms = node.get_number("grad_rms", 0.0, 0.0, 1e30, /*min_exclusive=*/false);
  return t;
}

// A measured trace must say what it measured. One taken from another tool's
// published measurements names its "source" and "method"; one written by
// sparsefuse profile-model carries the iteration time it reproduces and where
// it was measured.
static void check_measured(const JsonNode& root, const Trace& trace) {
  JsonNode provenance = root.child("provenance");
  if (provenance.has("source")) {
    provenance.child("source").as_string();
    provenance.child("method").as_string();
    return;
  }
  if (trace.iteration_ns <= 0) {
    root.fail("a measured trace (provenance.kind \"measured\") needs \"iteration_ns\": the measured iteration time, ns > 0");
  }
  JsonNode p = root.child("provenance");
  p.child("device").as_string();
  p.child("pytorch_version").as_string();
  p.child("threads").as_int(1, 1 << 20);
  p.child("iterations").as_int(1, int64_t(1) << 40);
  p.child("host").as_string();
  p.child("date").as_string();
}

double runtime_flush_bookkeeping_us(const std::vector<std::pair<double, double>>& flush_and_kernel_us) {
  if (flush_and_kernel_us.empty()) return 0;
  std::vector<double> each;
  each.reserve(flush_and_kernel_us.size());
  for (const auto& [flush, kernel] : flush_and_kernel_us) each.push_back(std::max(0.0, flush - kernel));
  return median(std::move(each));
}

// "runtime_flush": the flush probe's medians at each hook
// (runtime/flush_probe.h), after the tensors are read. The simulator uses the
// bookkeeping and, where a tensor was probed at its own size, its flush; the
// rest says what they came from.
static void parse_runtime_flush(const JsonNode& node, Trace& trace) {
  node.check_keys({"bookkeeping_us", "max_elements", "flushes", "kernels", "method", "tensors", "write_back_us",
                   "write_backs"});
  const int64_t max_elements = node.child("max_elements").as_int(1, int64_t(1) << 40);
  node.child("flushes").as_int(1, int64_t(1) << 40);
  node.child("kernels").as_int(1, int64_t(1) << 40);
  node.child("method").as_string();
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < trace.tensors.size(); ++i) by_name.emplace(trace.tensors[i].name, i);
  const JsonNode hooks = node.child("tensors");
  const size_t count = hooks.array_size();
  if (count == 0) hooks.fail("expected at least one probed tensor");
  std::vector<bool> probed(trace.tensors.size(), false);
  std::vector<std::pair<double, double>> flush_and_kernel;
  for (size_t k = 0; k < count; ++k) {
    const JsonNode hook = hooks.element(k);
    hook.check_keys({"name", "elements", "flush_us", "kernel_us"});
    const JsonNode name = hook.child("name");
    const auto found = by_name.find(name.as_string());
    if (found == by_name.end()) name.fail(fmt::format("expected a tensor of the trace, got \"{}\"", name.as_string()));
    if (probed[found->second]) name.fail(fmt::format("expected each tensor once; \"{}\" again", name.as_string()));
    probed[found->second] = true;
    TraceTensor& tensor = trace.tensors[found->second];
    const JsonNode elements = hook.child("elements");
    if (const int64_t expected = std::min(tensor.elements, max_elements);
        elements.as_int(1, int64_t(1) << 40) != expected) {
      elements.fail(fmt::format("expected min(the tensor's {} elements, max_elements {}) = {}", tensor.elements,
                                max_elements, expected));
    }
    const double flush = hook.child("flush_us").as_number(0, 1e6);
    flush_and_kernel.emplace_back(flush, hook.child("kernel_us").as_number(0, 1e6));
    if (tensor.elements <= max_elements) tensor.in_situ_flush_us = flush;
  }
  const JsonNode bookkeeping = node.child("bookkeeping_us");
  const double us = bookkeeping.as_number(0, 1e6), expected = runtime_flush_bookkeeping_us(flush_and_kernel);
  if (std::abs(us - expected) > 1e-6 * std::max(1.0, expected)) {
    bookkeeping.fail(fmt::format("expected the median over the tensors of flush_us - kernel_us, each floored at 0 "
                                 "({:g}), got {:g}",
                                 expected, us));
  }
  trace.flush_bookkeeping_us = us;
  const auto write_back = node.optional_child("write_back_us"), write_backs = node.optional_child("write_backs");
  if (write_back.has_value() != write_backs.has_value()) {
    (write_back ? *write_back : *write_backs).fail("expected write_back_us and write_backs together");
  }
  if (write_back) {
    write_backs->as_int(1, int64_t(1) << 40);
    trace.runtime_write_back_us = write_back->as_number(0, 1e9);
  }
}

Trace parse_trace(const Json& document, const std::string& file) {
  JsonNode root(document, file, "");
  root.check_keys({"format", "model", "description", "batch_size", "dtype", "provenance", "forward_ns",
                   "backward_ns", "optimizer_ns", "iteration_ns", "iteration_cv", "runtime_flush", "tensors"});
  JsonNode format = root.child("format");
  if (format.as_string() != "sparsefuse-trace/1") format.fail("expected \"sparsefuse-trace/1\"");
  Trace trace;
  trace.source = file;
  trace.model = root.child("model").as_string();
  trace.description = root.get_string("description", "");
  trace.dtype = root.get_string("dtype", "float32");
  if (trace.dtype != "float32") root.child("dtype").fail("expected \"float32\" (the only dtype modelled)");
  trace.batch_size = root.child("batch_size").as_int(1, 1 << 24);
  if (auto p = root.optional_child("provenance")) {
    p->expect_object();
    trace.provenance = p->json();
  }
  trace.forward_ns = root.child("forward_ns").as_int(0, kMaxNs);
  trace.backward_ns = root.child("backward_ns").as_int(0, kMaxNs);
  trace.optimizer_ns = root.child("optimizer_ns").as_int(0, kMaxNs);
  trace.iteration_ns = root.get_int("iteration_ns", 0, 0, kMaxNs);
  trace.iteration_cv = root.get_number("iteration_cv", 0.0, 0.0, 10.0, /*min_exclusive=*/false);
  if (trace.provenance_kind() == "measured") check_measured(root, trace);
  JsonNode tensors = root.child("tensors");
  size_t count = tensors.array_size();
  if (count == 0) tensors.fail("expected at least one tensor; the trace has none");
  TimeNs previous_ready = 0;
  bool any_grad = false;
  for (size_t i = 0; i < count; ++i) {
    trace.tensors.push_back(parse_tensor(tensors.element(i), trace.backward_ns, previous_ready));
    previous_ready = trace.tensors.back().ready_ns;
    any_grad |= trace.tensors.back().has_grad;
  }
  if (!any_grad) tensors.fail("expected at least one tensor with a gradient (all have \"has_grad\": false)");
  if (auto flush = root.optional_child("runtime_flush")) parse_runtime_flush(*flush, trace);
  return trace;
}

Trace load_trace_file(const std::string& path) { return parse_trace(load_json_file(path), path); }

static constexpr std::string_view kMeasuredPrefix = "measured/";

// The built-in traces' names with their JSON: analytic ones first.
static std::vector<std::pair<std::string, std::string_view>> builtin_entries() {
  std::vector<std::pair<std::string, std::string_view>> entries;
  for (const auto& e : builtin_trace_table()) entries.emplace_back(std::string(e.name), e.json);
  for (const auto& e : builtin_measured_trace_table()) {
    entries.emplace_back(std::string(kMeasuredPrefix) + std::string(e.name), e.json);
  }
  return entries;
}

std::vector<std::string> builtin_trace_names() {
  std::vector<std::string> names;
  for (const auto& entry : builtin_entries()) names.push_back(entry.first);
  return names;
}

bool is_builtin_trace(const std::string& name) {
  for (const auto& entry : builtin_entries()) {
    if (entry.first == name) return true;
  }
  return false;
}

Trace load_builtin_trace(const std::string& name) {
  for (const auto& entry : builtin_entries()) {
    if (entry.first == name) {
      Trace trace = parse_trace(Json::parse(entry.second), "traces/" + name + ".json");
      trace.source = name;
      return trace;
    }
  }
  throw InputError("", "", fmt::format("unknown built-in model \"{}\"", name));
}

}  // namespace sparsefuse
