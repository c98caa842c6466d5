// sparsefuse validate RESULT.json: re-simulates the scenario a real run
// (`sparsefuse run`) recorded — the same plan, with the hardware model the
// --set options give (a measured collective table, a CPU kernel profile) —
// and prints measured against simulated, metric by metric and bucket by
// bucket (sim/validation.h).
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/trace.h"
#include "model/recorded_run.h"
#include "model/scenario.h"
#include "sim/simulator.h"
#include "model/validation.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

namespace {

// `sparsefuse run --time-scale X` replays every compute time of the trace
// multiplied by X; the simulation must see the same times. Reads the
// result's executor.time_scale (1 when absent: a simulation, or a run
// without it) and scales the scenario's trace.
double recorded_time_scale(const JsonNode& measured) {
  const auto executor = measured.optional_child("executor");
  if (!executor || !executor->json().is_object()) return 1.0;
  const auto scale = executor->optional_child("time_scale");
  if (!scale) return 1.0;
  return scale->as_number(0, 1e6, /*min_exclusive=*/true);
}

void scale_compute_times(Trace& trace, double x) {
  const auto scaled = [x](TimeNs ns) { return TimeNs(std::llround(double(ns) * x)); };
  trace.forward_ns = scaled(trace.forward_ns);
  trace.backward_ns = scaled(trace.backward_ns);
  trace.optimizer_ns = scaled(trace.optimizer_ns);
  trace.iteration_ns = scaled(trace.iteration_ns);
  // The replay sleeps through the whole planned optimizer phase, write-back included.
  if (trace.runtime_write_back_us) *trace.runtime_write_back_us *= x;
  for (TraceTensor& t : trace.tensors) {
    t.ready_ns = scaled(t.ready_ns);
    t.forward_ns = scaled(t.forward_ns);
    t.ready_spread_ns = scaled(t.ready_spread_ns);
  }
}

std::string error_text(const std::optional<double>& e) { return e ? fmt::format("{:+.1f}%", *e * 100) : "n/a"; }

std::string describe_executor(const Json& result) {
  if (!result.contains("executor") || !result["executor"].is_object()) return "a simulation";
  const Json& x = result["executor"];
  return fmt::format("{}, {} ranks on {}", x.value("name", "?"), x.value("ranks", 0), x.value("host", "?"));
}

// "WHAT: mean |error| M%; worst #K (tensors a-bDETAIL): x ms measured, y ms simulated".
void print_bucket_errors(const char* what, double mean_abs, const model::BucketComparison& worst,
                         const std::string& detail, double measured_s, double simulated_s) {
  std::cout << fmt::format("            {}: mean |error| {:.1f}%; worst #{} (tensors {}-{}{}): {:.3f} ms measured, "
                           "{:.3f} ms simulated\n",
                           what, mean_abs * 100, worst.index, worst.first_tensor,
                           worst.first_tensor + worst.tensors - 1, detail, measured_s * 1e3, simulated_s * 1e3);
}

void print(const model::Validation& v, const std::string& measured_path, const Json& measured, const Json& simulated,
           const Trace& trace, const std::vector<std::string>& overrides, double time_scale) {
  std::string sets;
  for (const auto& o : overrides) sets += " --set " + o;
  std::cout << fmt::format("measured    {} ({})\n", measured_path, describe_executor(measured));
  std::cout << fmt::format("simulated   its recorded scenario{}\n", sets.empty() ? "" : " with" + sets);
  if (time_scale != 1.0) {
    std::cout << fmt::format("            compute times x {} (the run's executor.time_scale)\n", time_scale);
  }
  std::cout << fmt::format("            network {}, compression costs: {}\n", simulated["network"].value("model", "?"),
                           simulated.value("compression_costs", "?"));
  if (trace.runtime_write_back_us) {
    std::cout << fmt::format("            optimizer: the trace's step and the runtime's write-back of the averages, "
                             "{:.3f} ms (the trace's runtime_flush, measured in situ)\n",
                             *trace.runtime_write_back_us / 1e3);
  }
  std::cout << "\n";
  std::cout << fmt::format("{:<44}{:>12}{:>12}{:>10}\n", "metric", "measured", "simulated", "error");
  for (const auto& m : v.metrics) {
    std::cout << fmt::format("{:<44}{:>12.3f}{:>12.3f}{:>10}\n", m.name, m.measured, m.simulated,
                             error_text(m.relative_error));
  }
  std::cout << "\n";
  if (!v.same_buckets) {
    std::cout << "buckets     the executors flushed different sequences: " << v.bucket_difference << "\n";
    return;
  }
  std::cout << fmt::format("buckets     the same {} collectives in the same order\n", v.buckets.size());
  if (v.worst_bucket >= 0) {
    const auto& w = v.buckets[size_t(v.worst_bucket)];
    print_bucket_errors("collective durations", *v.mean_abs_bucket_error, w, ", " + w.collective,
                        w.measured_duration_s, w.simulated_duration_s);
  }
  if (v.worst_compression_bucket >= 0) {
    const auto& w = v.buckets[size_t(v.worst_compression_bucket)];
    print_bucket_errors("compression per bucket", *v.mean_abs_compression_error, w, "", w.measured_compression_s,
                        w.simulated_compression_s);
    std::cout << fmt::format("            compression per bucket, weighted by measured time: |error| {:.1f}%\n",
                             100 * *v.time_weighted_compression_error);
    std::string kinds;
    for (const auto& k : v.compression_by_kind) {
      if (!k.mean_abs_error) continue;
      kinds += fmt::format("{}{} {:.1f}% ({})", kinds.empty() ? "" : ", ", k.kind, 100 * *k.mean_abs_error, k.buckets);
    }
    std::cout << "            compression per bucket by kind: mean |error| " << kinds << "\n";
  }
}

}  // namespace

int run_validate(const Args& args) {
  po::options_description options("sparsefuse validate options");
  options.add_options()
      ("result", po::value<std::string>()->required(), "result.json of a real run (sparsefuse run --out)")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override KEY=VALUE in the recorded scenario before simulating it (the hardware model: "
       "network.model=calibrated, network.profile=FILE, compression.profile=NAME|FILE, ...)")
      ("out", po::value<std::string>(), "write DIR/validation.json and DIR/simulated/result.json");
  po::positional_options_description positional;
  positional.add("result", 1);
  po::variables_map vm;
  if (!parse_command_line(args,
                          "usage: sparsefuse validate RESULT.json [--set KEY=VALUE]... [--out DIR]\n\n"
                          "Simulates the scenario recorded in RESULT.json (a real run's, or any result's) and\n"
                          "compares: iteration time, each part of the breakdown (exposed communication and\n"
                          "sync wait as one sum: a real run cannot separate them), bytes, losses and, when\n"
                          "both flushed the same buckets, each bucket's collective duration. Errors are\n"
                          "(simulated - measured) / measured.",
                          options, positional, vm)) {
    return 0;
  }
  const std::string path = vm["result"].as<std::string>();
  const auto overrides = vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  model::RecordedRun recorded = model::load_recorded_run(path, overrides);
  const Json& measured = recorded.document;
  model::Scenario& scenario = recorded.scenario;
  const JsonNode root(measured, path, "");
  const double time_scale = recorded_time_scale(root);
  scale_compute_times(scenario.trace, time_scale);
  const Json simulated = sim::simulate(scenario).to_json(/*timing=*/false);
  const model::Validation v = model::compare_results(root, JsonNode(simulated, "the simulation", ""));
  print(v, path, measured, simulated, scenario.trace, overrides, time_scale);
  if (vm.count("out")) {
    const std::string dir = vm["out"].as<std::string>();
    write_file_atomically(dir + "/simulated/result.json", simulated.dump(2) + "\n");
    Json out = v.to_json();
    out["measured"] = path;
    out["overrides"] = overrides;
    out["time_scale"] = time_scale;
    out["simulated"] = "simulated/result.json";
    write_file_atomically(dir + "/validation.json", out.dump(2) + "\n");
    std::cout << "wrote " << dir << "/validation.json and " << dir << "/simulated/result.json\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
