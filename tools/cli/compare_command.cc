#include <iostream>
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "model/scenario.h"
#include "sim/simulator.h"
#include "sim/sweep.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

// How a --schemes entry is shown and filed: NAME, or NAME{knob=value;...}
// for a variant, with a directory name of portable characters.
struct SchemeLabel {
  std::string text, directory;
};

static SchemeLabel scheme_label(const std::string& spec) {
  std::string text = spec;
  const size_t brace = spec.find('{');
  Json knobs = brace == std::string::npos ? Json() : Json::parse(spec.substr(brace), nullptr, false);
  if (knobs.is_object()) {
    text = spec.substr(0, brace) + "{";
    for (auto it = knobs.begin(); it != knobs.end(); ++it) {
      text += (it == knobs.begin() ? "" : ";") + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
    }
    text += "}";
  }
  std::string directory = text;
  for (char& ch : directory) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_' && ch != '=') ch = '_';
  }
  return {text, directory};
}

int run_compare(const Args& args) {
  po::options_description options("sparsefuse compare options");
  options.add_options()
      ("scenario", po::value<std::string>()->required(), "scenario JSON file")
      ("schemes", po::value<std::string>()->required(),
       "comma-separated presets, each NAME or NAME{\"knob\": value, ...} (a variant); the first is the baseline; "
       "knobs the scenario's scheme object sets apply to every preset that has them")
      ("set", po::value<std::vector<std::string>>()->composing(), "override KEY=VALUE, applied to every scheme")
      ("out", po::value<std::string>(), "write DIR/SCHEME/result.json and DIR/compare.csv");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  if (!parse_command_line(args, "usage: sparsefuse compare SCENARIO.json --schemes a,b,c [--set KEY=VALUE]... [--out DIR]",
                          options, positional, vm)) {
    return 0;
  }
  const std::vector<std::string> schemes = sim::schemes_axis(vm["schemes"].as<std::string>()).values;
  if (vm.count("out")) prepare_output_directory("--out", vm["out"].as<std::string>());
  auto user_overrides = vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  const std::string file = vm["scenario"].as<std::string>();

  struct Row {
    SchemeLabel scheme;
    model::RunResult result;
  };
  std::vector<Row> rows;
  for (const auto& name : schemes) {
    std::vector<std::string> overrides = {"scheme=" + name};
    overrides.insert(overrides.end(), user_overrides.begin(), user_overrides.end());
    model::Scenario scenario = model::load_scenario(file, overrides);
    print_notes(scenario);
    rows.push_back({scheme_label(name), sim::simulate(scenario)});
    if (rows.size() == 1) {
      std::cout << fmt::format("{}: {} on {} workers, {} measured iterations\n", file, scenario.trace.model,
                               scenario.workers, scenario.iterations);
    }
  }

  const double baseline = rows.front().result.mean_iteration_s();
  std::string csv = "scheme,iteration_mean_s,iteration_p99_s,throughput_samples_per_s,speedup,"
                    "communication_exposed_s,sync_wait_s,buckets\n";
  size_t width = 16;
  for (const auto& row : rows) width = std::max(width, row.scheme.text.size());
  std::cout << fmt::format("{:<{}} {:>12} {:>12} {:>14} {:>8} {:>14} {:>12} {:>8}\n", "scheme", width, "iter mean ms",
                           "iter p99 ms", "samples/s", "speedup", "exposed comm ms", "sync wait ms", "buckets");
  for (const auto& row : rows) {
    Json j = row.result.to_json();
    double mean = j["iteration_time_s"]["mean"], p99 = j["iteration_time_s"]["p99"];
    double exposed = j["breakdown_s"]["communication_exposed"], wait = j["breakdown_s"]["sync_wait"];
    double speedup = baseline / mean;
    std::cout << fmt::format("{:<{}} {:>12.3f} {:>12.3f} {:>14.1f} {:>7.3f}x {:>14.3f} {:>12.3f} {:>8}\n", row.scheme.text, width,
                             mean * 1e3, p99 * 1e3, row.result.throughput(), speedup, exposed * 1e3, wait * 1e3,
                             row.result.buckets.size());
    csv += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.6g},{:.9g},{:.9g},{}\n", row.scheme.text, mean, p99,
                       row.result.throughput(), speedup, exposed, wait, row.result.buckets.size());
    if (vm.count("out")) {
      write_file_atomically(vm["out"].as<std::string>() + "/" + row.scheme.directory + "/result.json", j.dump(2) + "\n");
    }
  }
  if (vm.count("out")) {
    write_file_atomically(vm["out"].as<std::string>() + "/compare.csv", csv);
    std::cout << "wrote " << vm["out"].as<std::string>() << "/compare.csv\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
