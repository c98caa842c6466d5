// sparsefuse report RESULTS_DIR [--out DIR]: report.md and report.html (with
// the figures) from result.json files, by the embedded Python package
// tools/plot/sparsefuse_plot.
#include <iostream>

#include "common/input_error.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/plot/python_runner.h"

namespace sparsefuse::cli {

namespace {

std::string shell_quoted(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_-+=:,./") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

int run_report(const Args& args) {
  po::options_description options("sparsefuse report options");
  options.add_options()
      ("results", po::value<std::string>()->required(), "results directory, searched recursively for result.json")
      ("out", po::value<std::string>(), "directory for report.md, report.html and figures/ (default: RESULTS_DIR)")
      ("baseline", po::value<std::string>(),
       "scheme speedups are relative to (default: the first scheme of compare.csv, else the first preset)")
      ("workers", po::value<int>(), "scale of the per-model figures: speedup bars, partition (default: the largest)")
      ("heatmap-metric", po::value<std::string>()->default_value("time"),
       "value of two-key sweep heatmaps: time (mean iteration time) or throughput");
  po::positional_options_description positional;
  positional.add("results", 1);
  po::variables_map vm;
  if (!parse_command_line(args,
                          "usage: sparsefuse report RESULTS_DIR [--out DIR] [--baseline SCHEME] [--workers N] "
                          "[--heatmap-metric time|throughput]\n\n"
                          "Writes OUT/report.md and OUT/report.html (self-contained: figures inlined) with the\n"
                          "scenario summary, a ranking of the schemes in words per model and scale, result tables\n"
                          "and the figures of 'sparsefuse plot' (drawn into OUT/figures). Needs /usr/bin/python3 with\n"
                          "python3-matplotlib.",
                          options, positional, vm)) {
    return 0;
  }
  const std::string results = vm["results"].as<std::string>();
  const std::string metric = vm["heatmap-metric"].as<std::string>();
  if (metric != "time" && metric != "throughput") {
    throw InputError("--heatmap-metric", "", "expected time or throughput, got \"" + metric + "\"");
  }
  if (vm.count("workers") && vm["workers"].as<int>() < 1) {
    throw InputError("--workers", "", "expected an integer >= 1");
  }
  plot::require_results_dir(results);
  std::string command = "sparsefuse report";
  for (const auto& a : args) command += " " + shell_quoted(a);
  std::vector<std::string> py = {"report", results, "--heatmap-metric", metric, "--command-line", command};
  if (vm.count("out")) py.insert(py.end(), {"--out", vm["out"].as<std::string>()});
  if (vm.count("baseline")) py.insert(py.end(), {"--baseline", vm["baseline"].as<std::string>()});
  if (vm.count("workers")) py.insert(py.end(), {"--workers", std::to_string(vm["workers"].as<int>())});
  return plot::run_plot_python(py);
}

}  // namespace sparsefuse::cli
