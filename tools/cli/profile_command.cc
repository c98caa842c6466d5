#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "common/median.h"
#include "common/trace.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/profiler.h"
#include "runtime/flush_cost.h"
#include "runtime/request_cost.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/process_barrier.h"

namespace sparsefuse::cli {
namespace {

// The longest one process waits at a point for the others: far more than
// any single point takes (seconds at 1e8 elements).
constexpr std::chrono::minutes kPointTimeout{10};

std::string rank_path(const std::string& out, int rank) { return out + ".rank" + std::to_string(rank) + ".json"; }

// One bookkeeping table: time_us (the median of the points' FIELD, at least
// 0: what the simulator charges), the points and how they were measured.
Json bookkeeping_table(const Json& points, const char* field, const std::string& method) {
  std::vector<double> figures;
  for (const Json& p : points) figures.push_back(p[field].get<double>());
  return {{"time_us", std::max(0.0, median(figures))}, {"points", points}, {"method", method}};
}

// With after-compute calls on a CPU (and the pack kernel among those
// measured), the runtime's own bookkeeping per packed flush
// (runtime/flush_cost.h) at three bucket sizes, recorded as flush_bookkeeping:
// time_us, the median of the after-compute figures, is what the simulator
// charges per packed flush (it does not grow with the bucket: the pack
// kernel, measured apart, does); points keep every figure.
void add_flush_bookkeeping(const kernels::ProfileOptions& o, Json& profile) {
  if (o.device != "cpu" || o.after_compute_evict_bytes <= 0 || !kernels::measures(o, "pack")) return;
  Json points = Json::array();
  for (const int64_t elements : {64, 256, 2048}) {
    runtime::FlushCostOptions f;
    f.elements = elements;
    f.evict_bytes = o.after_compute_evict_bytes;
    const runtime::FlushCost c = runtime::measure_flush_cost(f);
    points.push_back({{"elements", elements},
                      {"after_compute_us", c.after_compute_bookkeeping_us()},
                      {"after_module_mate_us", c.after_module_mate_bookkeeping_us()}});
  }
  profile["flush_bookkeeping"] = bookkeeping_table(
      points, "after_compute_us",
      "runtime/flush_cost: ADTopk's one-dimensional weight and bias buckets sent dense as pairs on one rank, the "
      "engine's recorded compression less pack_dense alone, after a sweep of the caches and of the code; time_us: "
      "the median weight (after compute) figure");
}

// The profile's time at (KERNEL, ELEMENTS, DENSITY), if it measured that point.
std::optional<double> profile_point_us(const Json& profile, const std::string& kernel, int64_t elements,
                                       double density) {
  const Json& points = profile["compression"][kernel];
  for (const Json& p : points) {
    if (p["elements"].get<int64_t>() == elements && p["density"].get<double>() == density) {
      return p["time_us"].get<double>();
    }
  }
  return std::nullopt;
}

// The engine's recorded compression (median over one-tensor buckets) of
// SCHEME over one-dimensional tensors of ELEMENTS on this GPU (runtime/request_cost.h).
double engine_us(const Json& scheme, int64_t elements, double density) {
  runtime::RequestCostOptions r;
  r.elements = elements;
  r.density = density;
  r.scheme = scheme;
  return runtime::measure_resident_compression_us(r);
}

// On a GPU, with ef_topk and pack among the kernels measured, the runtime's
// own work (runtime/request_cost.h) at the profile's sizes 1e3, 1e4 and 1e5,
// where it measured them: per packed flush (flush_bookkeeping), ADTopk's
// one-dimensional buckets sent dense as pairs less the profile's pack at
// density 1; per inline compression request (request_bookkeeping),
// topk-layerwise's buckets less the profile's ef_topk and pack at density
// 0.01 and less that size's flush figure. Each time_us is the median by size.
void add_gpu_bookkeeping(const kernels::ProfileOptions& o, Json& profile) {
  if (o.device != "cuda" || !kernels::measures(o, "ef_topk") || !kernels::measures(o, "pack")) return;
  constexpr double kDensity = 0.01;
  const Json dense_pairs = {{"preset", "adtopk"}, {"error_feedback", "none"}};
  Json flush = Json::array(), request = Json::array();
  for (const int64_t elements : {1000, 10000, 100000}) {
    const std::optional<double> ef = profile_point_us(profile, "ef_topk", elements, kDensity);
    const std::optional<double> pack = profile_point_us(profile, "pack", elements, kDensity);
    const std::optional<double> pack_dense = profile_point_us(profile, "pack", elements, 1.0);
    if (!ef || !pack || !pack_dense) continue;
    const double flush_engine = engine_us(dense_pairs, elements, 1.0);
    const double flush_us = flush_engine - *pack_dense;
    flush.push_back({{"elements", elements}, {"density", 1.0}, {"engine_us", flush_engine},
                     {"kernels_us", *pack_dense}, {"bookkeeping_us", flush_us}});
    const double request_engine = engine_us("topk-layerwise", elements, kDensity);
    request.push_back({{"elements", elements}, {"density", kDensity}, {"engine_us", request_engine},
                       {"kernels_us", *ef + *pack}, {"flush_us", flush_us},
                       {"bookkeeping_us", request_engine - *ef - *pack - flush_us}});
  }
  if (request.empty()) return;
  profile["flush_bookkeeping"] = bookkeeping_table(
      flush, "bookkeeping_us",
      "runtime/request_cost: the engine's recorded compression of ADTopk's one-dimensional buckets sent dense as "
      "pairs (no compression request) on one rank (NCCL on one GPU, device-resident payloads), less this profile's "
      "pack at density 1; time_us: the median over sizes");
  profile["request_bookkeeping"] = bookkeeping_table(
      request, "bookkeeping_us",
      "runtime/request_cost: the engine's recorded compression of one-tensor topk-layerwise buckets with error "
      "feedback, less this profile's ef_topk and pack at the same size and density and less the flush_bookkeeping "
      "point at that size; time_us: the median over sizes");
}

// This process's profile: the kernels, then the runtime's bookkeeping.
kernels::ProfileRun measure(const kernels::ProfileOptions& o) {
  kernels::ProfileRun run = kernels::run_profile(o);
  add_flush_bookkeeping(o, run.profile);
  add_gpu_bookkeeping(o, run.profile);
  return run;
}

// One measured bookkeeping point as printed: a CPU's after compute and after
// its module-mate's flush, or a GPU's engine time less what else is charged.
std::string bookkeeping_point(const Json& p) {
  if (p.contains("after_compute_us")) {
    return fmt::format("{}: {:.2f} after compute, {:.2f} after its module-mate's", p["elements"].get<int64_t>(),
                       p["after_compute_us"].get<double>(), p["after_module_mate_us"].get<double>());
  }
  std::string less = fmt::format("kernels {:.1f}", p["kernels_us"].get<double>());
  if (p.contains("flush_us")) less += fmt::format(" - flush {:.1f}", p["flush_us"].get<double>());
  return fmt::format("{}: engine {:.1f} - {} = {:.1f}", p["elements"].get<int64_t>(), p["engine_us"].get<double>(),
                     less, p["bookkeeping_us"].get<double>());
}

// The runtime bookkeeping the profile recorded, one line each.
void print_bookkeeping(const Json& profile) {
  for (const auto& [table, what] : {std::pair<const char*, const char*>{"flush_bookkeeping", "per packed flush"},
                                    {"request_bookkeeping", "per inline compression request"}}) {
    if (!profile.contains(table)) continue;
    std::cout << "runtime bookkeeping " << what << ": " << profile[table]["time_us"].get<double>()
              << " us (the median by size";
    for (const auto& p : profile[table]["points"]) std::cout << "; " << bookkeeping_point(p);
    std::cout << ")\n";
  }
}

// A forked process's profile, written to PATH; abandons the barrier if it
// fails, so that the others stop. Returns the exit status.
int profile_in_child(const kernels::ProfileOptions& o, ProcessBarrier& barrier, const std::string& path) {
  try {
    const kernels::ProfileRun run = measure(o);
    write_file_atomically(path, run.profile.dump(2) + "\n");
    return 0;
  } catch (const std::exception& e) {
    barrier.abandon();
    std::cerr << "sparsefuse profile-kernels (" << path << "): " << e.what() << "\n";
    return 1;
  }
}

// PROCESSES processes measure every point at the same time (a barrier before
// each), as ranks compress in training: this one (rank 0) and PROCESSES - 1
// forked ones, which write OUT.rankR.json. Rank 0's profile is returned once
// every other process has written its own; any failure throws.
kernels::ProfileRun profile_together(kernels::ProfileOptions o, int processes, const std::string& out) {
  ProcessBarrier barrier(processes, kPointTimeout);
  o.before_point = [&barrier] { barrier.wait(); };
  std::fflush(stdout);  // nothing buffered is written twice by the children
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int r = 1; r < processes; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      barrier.abandon();
      throw std::runtime_error("profile-kernels --processes: fork failed");
    }
    if (pid == 0) _exit(profile_in_child(o, barrier, rank_path(out, r)));
    children.push_back(pid);
  }
  kernels::ProfileRun run;
  std::string failure;
  try {
    run = measure(o);
  } catch (const std::exception& e) {
    barrier.abandon();
    failure = e.what();
  }
  for (size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    waitpid(children[i], &status, 0);
    if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failure.empty()) {
      failure = "process " + std::to_string(i + 1) + " of " + std::to_string(processes) + " failed";
    }
  }
  if (!failure.empty()) {
    for (int r = 1; r < processes; ++r) std::remove(rank_path(out, r).c_str());  // no partial set of profiles
    throw std::runtime_error("profile-kernels --processes: " + failure);
  }
  return run;
}

// --gradients PATH: the calls' inputs are windows of that model gradient.
void use_gradients(const std::string& path, kernels::ProfileOptions& o) {
  if (o.device != "cpu") throw InputError("--gradients", "", path + ": model gradients are profiled on the cpu only");
  try {
    o.gradients = std::make_shared<const std::vector<float>>(kernels::read_gradient_sample(path));
  } catch (const std::invalid_argument& e) {
    throw InputError("--gradients", "", e.what());
  }
  o.gradients_source = path;
}

// --tensors TRACE: the tensors --gradients holds, back to back in the trace's
// order (profile-model's ready order), each of them with a gradient.
void use_tensors(const std::string& path, kernels::ProfileOptions& o) {
  if (!o.gradients) throw InputError("--tensors", path, "needs --gradients, the gradient those tensors make up");
  for (const TraceTensor& t : load_trace_file(path).tensors) {
    if (t.has_grad) o.tensors.push_back({t.name, t.shape, t.elements});
  }
  try {
    kernels::validate_profile_options(o);
  } catch (const std::invalid_argument& e) {
    throw InputError("--tensors", path, std::string(e.what()) + " (--gradients " + o.gradients_source + ")");
  }
}

// The options that shape what a CPU measurement meets (caches, inputs, load).
void add_cpu_options(po::options_description& options) {
  options.add_options()
      ("working-set", po::value<int64_t>()->default_value(0),
       "cpu: bytes of residual copies the error-feedback kernel's calls cycle through (0: one copy, in cache; "
       "in training the residual is as large as the model's gradient and out of cache: e.g. 134217728); "
       "also measures every kernel on gradient copies filling it (compression_cold: a fused buffer's older tensors)")
      ("after-compute", po::value<int64_t>()->default_value(0),
       "cpu: also time every kernel at sizes <= 1e5 as training calls it, each call alone after a sweep of B bytes "
       "(compression_after_compute: what a call costs right after a layer's backward; e.g. 8388608), and the "
       "runtime's own bookkeeping per packed flush (flush_bookkeeping) when the pack kernel is measured")
      ("gradients", po::value<std::string>(),
       "cpu: take every call's input from windows of this model gradient (raw float32, as `sparsefuse "
       "profile-model --gradients-out` writes it) instead of Gaussian draws: top-k's radix select runs faster "
       "on real gradients than on Gaussian values of the same size (tools/train/README.md)")
      ("tensors", po::value<std::string>(),
       "cpu, with --gradients: the trace of the model whose gradient that is (profile-model's); every tensor of "
       ">= 1e5 elements and two dimensions also has ADTopk timed on its own gradient and on Gaussian values of "
       "its shape (adtopk_tensors), whose ratio the simulator applies to that tensor")
      ("processes", po::value<int>()->default_value(1),
       "cpu: measure in P processes at once, every point timed by all of them together (a barrier before each), "
       "as P ranks compress side by side; needs --out: this process's profile goes there, the others' to "
       "OUT.rankR.json");
}

}  // namespace

int run_profile_kernels(const Args& args) {
  po::options_description options("sparsefuse profile-kernels options");
  options.add_options()
      ("device", po::value<std::string>()->default_value("cpu"), "cpu or cuda")
      ("out", po::value<std::string>(), "write the profile (sparsefuse-profile/1) to FILE")
      ("max-elements", po::value<int64_t>()->default_value(0), "leave out sizes above N (0: up to 1e8, 5e8 on cuda)")
      ("repetitions", po::value<int>()->default_value(5), "timed repetitions at n <= 1e6 (fewer for larger n)")
      ("rounds", po::value<int>()->default_value(1), "passes over the whole grid; each point keeps the median of its passes")
      ("sizes", po::value<std::vector<int64_t>>()->multitoken(), "measure these sizes (elements) instead of the decades")
      ("kernels", po::value<std::vector<std::string>>()->multitoken(), "measure only these kernels (names as printed)");
  add_cpu_options(options);
  po::positional_options_description none;
  po::variables_map vm;
  if (!parse_command_line(args, "usage: sparsefuse profile-kernels --device cpu|cuda [--out profiles/NAME.json] [--sizes N...] [--kernels K...]\n"
                                "       [--working-set B] [--after-compute B] [--gradients FILE [--tensors TRACE]] [--processes P]\n\n"
                                "Measures every compression kernel over sizes and densities, prints a table (time,\n"
                                "GB/s, ratio to the memory floor) and writes cost curves the simulator reads\n"
                                "(scenario key compression.profile or compression.cpu_profile).",
                          options, none, vm)) {
    return 0;
  }
  kernels::ProfileOptions o;
  o.device = vm["device"].as<std::string>();
  if (o.device != "cpu" && o.device != "cuda") throw InputError("--device", "", "expected cpu or cuda, got " + o.device);
  o.max_elements = vm["max-elements"].as<int64_t>();
  o.repetitions = vm["repetitions"].as<int>();
  o.rounds = vm["rounds"].as<int>();
  if (o.max_elements < 0 || o.repetitions < 1) {
    throw InputError("--max-elements/--repetitions", "", "expected max-elements >= 0 and repetitions >= 1");
  }
  if (o.rounds < 1) throw InputError("--rounds", "", fmt::format("expected >= 1, got {}", o.rounds));
  if (vm.count("sizes")) o.sizes = vm["sizes"].as<std::vector<int64_t>>();
  if (vm.count("kernels")) o.kernels = vm["kernels"].as<std::vector<std::string>>();
  o.working_set_bytes = vm["working-set"].as<int64_t>();
  o.after_compute_evict_bytes = vm["after-compute"].as<int64_t>();
  if (vm.count("gradients")) use_gradients(vm["gradients"].as<std::string>(), o);
  if (vm.count("tensors")) use_tensors(vm["tensors"].as<std::string>(), o);
  try {
    kernels::validate_profile_options(o);
  } catch (const std::invalid_argument& e) {
    throw InputError("--sizes/--kernels/--working-set/--after-compute", "", e.what());
  }
  // A missing GPU is a problem with the request, not an internal error.
  std::string reason;
  if (o.device == "cuda" && !kernels::cuda::device_available(&reason)) {
    throw InputError("--device cuda", "", "no usable CUDA device here (" + reason + ")");
  }
  if (vm.count("out")) {
    if (const std::string problem = unwritable(vm["out"].as<std::string>()); !problem.empty()) {
      throw InputError("--out", vm["out"].as<std::string>(), "cannot write the profile there: " + problem);
    }
  }
  const int processes = vm["processes"].as<int>();
  if (processes < 1 || processes > 64) throw InputError("--processes", "", "expected 1 to 64, got " + std::to_string(processes));
  if (processes > 1 && (o.device != "cpu" || !vm.count("out"))) {
    throw InputError("--processes", "", "several processes profile the cpu and need --out for their profiles");
  }
  const kernels::ProfileRun run =
      processes > 1 ? profile_together(o, processes, vm["out"].as<std::string>()) : measure(o);
  kernels::print_profile_table(run, stdout);
  std::fflush(stdout);
  print_bookkeeping(run.profile);
  if (vm.count("out")) {
    write_file_atomically(vm["out"].as<std::string>(), run.profile.dump(2) + "\n");
    std::cout << "wrote " << vm["out"].as<std::string>() << "\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
