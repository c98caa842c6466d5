// sparsefuse validate RESULT.json: re-simulates the scenario a real run
// (`sparsefuse run`) recorded — the same plan, with the hardware model the
// --set options give (a measured collective table, a CPU kernel profile) —
// and prints measured against simulated, metric by metric and bucket by
// bucket (sim/validation.h).
#include <iostream>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "model/recorded_run.h"
#include "model/scenario.h"
#include "sim/simulator.h"
#include "model/validation.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

namespace {

std::string error_text(const std::optional<double>& e) { return e ? fmt::format("{:+.1f}%", *e * 100) : "n/a"; }

std::string describe_executor(const Json& result) {
  if (!result.contains("executor") || !result["executor"].is_object()) return "a simulation";
  const Json& x = result["executor"];
  return fmt::format("{}, {} ranks on {}", x.value("name", "?"), x.value("ranks", 0), x.value("host", "?"));
}

void print(const model::Validation& v, const std::string& measured_path, const Json& measured, const Json& simulated,
           const std::vector<std::string>& overrides) {
  std::string sets;
  for (const auto& o : overrides) sets += " --set " + o;
  std::cout << fmt::format("measured    {} ({})\n", measured_path, describe_executor(measured));
  std::cout << fmt::format("simulated   its recorded scenario{}\n", sets.empty() ? "" : " with" + sets);
  std::cout << fmt::format("            network {}, compression costs: {}\n\n", simulated["network"].value("model", "?"),
                           simulated.value("compression_costs", "?"));
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
    std::cout << fmt::format(
        "            collective durations: mean |error| {:.1f}%; worst #{} (tensors {}-{}, {}): {:.3f} ms measured, "
        "{:.3f} ms simulated\n",
        *v.mean_abs_bucket_error * 100, w.index, w.first_tensor, w.first_tensor + w.tensors - 1, w.collective,
        w.measured_duration_s * 1e3, w.simulated_duration_s * 1e3);
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
  const model::RecordedRun recorded = model::load_recorded_run(path, overrides);
  const Json& measured = recorded.document;
  const model::Scenario& scenario = recorded.scenario;
  const Json simulated = sim::simulate(scenario).to_json(/*timing=*/false);
  const model::Validation v =
      model::compare_results(JsonNode(measured, path, ""), JsonNode(simulated, "the simulation", ""));
  print(v, path, measured, simulated, overrides);
  if (vm.count("out")) {
    const std::string dir = vm["out"].as<std::string>();
    write_file_atomically(dir + "/simulated/result.json", simulated.dump(2) + "\n");
    Json out = v.to_json();
    out["measured"] = path;
    out["overrides"] = overrides;
    out["simulated"] = "simulated/result.json";
    write_file_atomically(dir + "/validation.json", out.dump(2) + "\n");
    std::cout << "wrote " << dir << "/validation.json and " << dir << "/simulated/result.json\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
