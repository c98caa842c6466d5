// sparsefuse plot RESULTS_DIR [--out DIR]: figures from result.json files,
// drawn by the embedded Python package tools/plot/sparsefuse_plot.
#include <iostream>

#include "common/input_error.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/plot/python_runner.h"

namespace sparsefuse::cli {

int run_plot(const Args& args) {
  po::options_description options("sparsefuse plot options");
  options.add_options()
      ("results", po::value<std::string>()->required(), "results directory, searched recursively for result.json")
      ("out", po::value<std::string>(), "directory for the figures (default: RESULTS_DIR/figures)")
      ("baseline", po::value<std::string>(),
       "scheme speedups are relative to (default: the first scheme of compare.csv, else the first preset)")
      ("workers", po::value<int>(), "scale of the per-model figures: speedup bars, partition (default: the largest)")
      ("heatmap-metric", po::value<std::string>()->default_value("time"),
       "value of two-key sweep heatmaps: time (mean iteration time) or throughput");
  po::positional_options_description positional;
  positional.add("results", 1);
  po::variables_map vm;
  if (!parse_command_line(args,
                          "usage: sparsefuse plot RESULTS_DIR [--out DIR] [--baseline SCHEME] [--workers N] "
                          "[--heatmap-metric time|throughput]\n\n"
                          "Draws PNG (1600x1000 px, 200 dpi) and PDF figures, each with a JSON sidecar of the\n"
                          "plotted numbers: scaling and speedup against workers, speedup bars per model, per-iteration\n"
                          "breakdown, one-iteration timeline (from a timeline.json beside a result.json), buffer\n"
                          "partition, and heatmaps of two-key sweeps (sweep.json). Needs /usr/bin/python3 with\n"
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
  std::vector<std::string> py = {"plot", results, "--heatmap-metric", metric};
  if (vm.count("out")) py.insert(py.end(), {"--out", vm["out"].as<std::string>()});
  if (vm.count("baseline")) py.insert(py.end(), {"--baseline", vm["baseline"].as<std::string>()});
  if (vm.count("workers")) py.insert(py.end(), {"--workers", std::to_string(vm["workers"].as<int>())});
  return plot::run_plot_python(py);
}

}  // namespace sparsefuse::cli
