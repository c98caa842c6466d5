#include <iostream>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/progress.h"
#include "tools/cli/summary.h"

namespace sparsefuse::cli {

// The timeline's workers and iterations must exist in the scenario (a
// default range is cut to the workers there are).
static std::unique_ptr<sim::Timeline> make_timeline(const po::variables_map& vm, const model::Scenario& scenario) {
  auto workers = sim::parse_index_list("--timeline-workers", vm["timeline-workers"].as<std::string>());
  if (vm["timeline-workers"].defaulted()) {
    workers.erase(workers.lower_bound(scenario.workers), workers.end());
  } else if (*workers.rbegin() >= scenario.workers) {
    throw InputError("--timeline-workers", "", fmt::format("worker {} does not exist; the scenario has {} (0-{})",
                                                           *workers.rbegin(), scenario.workers, scenario.workers - 1));
  }
  const int total = scenario.warmup_iterations + scenario.iterations;
  auto iterations = vm.count("timeline-iterations")
                        ? sim::parse_index_list("--timeline-iterations", vm["timeline-iterations"].as<std::string>())
                        : std::set<int>{scenario.warmup_iterations};
  if (*iterations.rbegin() >= total) {
    throw InputError("--timeline-iterations", "", fmt::format("iteration {} does not exist; the scenario runs {} (0-{})",
                                                              *iterations.rbegin(), total, total - 1));
  }
  return std::make_unique<sim::Timeline>(workers, iterations);
}

int run_simulate(const Args& args) {
  po::options_description options("sparsefuse simulate options");
  options.add_options()
      ("scenario", po::value<std::string>()->required(), "scenario JSON file")
      ("set", po::value<std::vector<std::string>>()->composing(), "override KEY=VALUE (dotted KEY, JSON VALUE)")
      ("out", po::value<std::string>(), "write DIR/result.json")
      ("timeline", po::value<std::string>(), "write a Chrome-trace/Perfetto timeline to FILE")
      ("timeline-workers", po::value<std::string>()->default_value("0-3"), "workers in the timeline, e.g. 0-3,7")
      ("timeline-iterations", po::value<std::string>(),
       "iterations in the timeline (default: the first measured one)");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  if (!parse_command_line(args, "usage: sparsefuse simulate SCENARIO.json [--set KEY=VALUE]... [--out DIR] "
                                "[--timeline FILE]",
                          options, positional, vm)) {
    return 0;
  }
  auto overrides = vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  model::Scenario scenario = model::load_scenario(vm["scenario"].as<std::string>(), overrides);
  print_notes(scenario);

  if (vm.count("out")) prepare_output_directory("--out", vm["out"].as<std::string>());
  std::unique_ptr<sim::Timeline> timeline;
  if (vm.count("timeline")) timeline = make_timeline(vm, scenario);
  model::RunResult result = sim::simulate(scenario, timeline.get(), ProgressLine("simulate", "iterations"));
  std::cout << format_summary(scenario, result);
  if (vm.count("out")) {
    std::string path = vm["out"].as<std::string>() + "/result.json";
    write_file_atomically(path, result.to_json().dump(2) + "\n");
    std::cout << "wrote " << path << "\n";
  }
  if (timeline) {
    write_file_atomically(vm["timeline"].as<std::string>(), timeline->to_json().dump() + "\n");
    std::cout << "wrote " << vm["timeline"].as<std::string>() << " (open in https://ui.perfetto.dev)\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
