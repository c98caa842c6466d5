// sparsefuse plot / report RESULTS_DIR: figures, and a Markdown + HTML report
// with them, from the result.json files under a directory, drawn by the
// embedded Python package tools/plot/sparsefuse_plot. The two commands take
// the same options; report also records its own command line.
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

// VERB is "plot" or "report"; OUT_HELP and DESCRIPTION differ between them.
int run_figures(const Args& args, const std::string& verb, const char* out_help, const char* description) {
  po::options_description options("sparsefuse " + verb + " options");
  options.add_options()
      ("results", po::value<std::string>()->required(), "results directory, searched recursively for result.json")
      ("out", po::value<std::string>(), out_help)
      ("baseline", po::value<std::string>(),
       "scheme speedups are relative to (default: the first scheme of compare.csv, else the first preset)")
      ("workers", po::value<int>(), "scale of the per-model figures: speedup bars, partition (default: the largest)")
      ("heatmap-metric", po::value<std::string>()->default_value("time"),
       "value of two-key sweep heatmaps: time (mean iteration time) or throughput");
  po::positional_options_description positional;
  positional.add("results", 1);
  po::variables_map vm;
  const std::string usage = "usage: sparsefuse " + verb +
                            " RESULTS_DIR [--out DIR] [--baseline SCHEME] [--workers N] "
                            "[--heatmap-metric time|throughput]\n\n" + description;
  if (!parse_command_line(args, usage, options, positional, vm)) return 0;
  const std::string results = vm["results"].as<std::string>();
  const std::string metric = vm["heatmap-metric"].as<std::string>();
  if (metric != "time" && metric != "throughput") {
    throw InputError("--heatmap-metric", "", "expected time or throughput, got \"" + metric + "\"");
  }
  if (vm.count("workers") && vm["workers"].as<int>() < 1) throw InputError("--workers", "", "expected an integer >= 1");
  plot::require_results_dir(results);
  std::vector<std::string> py = {verb, results, "--heatmap-metric", metric};
  if (verb == "report") {
    std::string command = "sparsefuse report";
    for (const auto& a : args) command += " " + shell_quoted(a);
    py.insert(py.end(), {"--command-line", command});
  }
  if (vm.count("out")) py.insert(py.end(), {"--out", vm["out"].as<std::string>()});
  if (vm.count("baseline")) py.insert(py.end(), {"--baseline", vm["baseline"].as<std::string>()});
  if (vm.count("workers")) py.insert(py.end(), {"--workers", std::to_string(vm["workers"].as<int>())});
  return plot::run_plot_python(py);
}

}  // namespace

int run_plot(const Args& args) {
  return run_figures(args, "plot", "directory for the figures (default: RESULTS_DIR/figures)",
                     "Draws PNG (1600x1000 px, 200 dpi) and PDF figures, each with a JSON sidecar of the\n"
                     "plotted numbers: scaling and speedup against workers, speedup bars per model, per-iteration\n"
                     "breakdown, one-iteration timeline (from a timeline.json beside a result.json), buffer\n"
                     "partition, and heatmaps of two-key sweeps (sweep.json). Needs /usr/bin/python3 with\n"
                     "python3-matplotlib.");
}

int run_report(const Args& args) {
  return run_figures(args, "report", "directory for report.md, report.html and figures/ (default: RESULTS_DIR)",
                     "Writes OUT/report.md and OUT/report.html (self-contained: figures inlined) with the\n"
                     "scenario summary, a ranking of the schemes in words per model and scale, result tables\n"
                     "and the figures of 'sparsefuse plot' (drawn into OUT/figures). Needs /usr/bin/python3 with\n"
                     "python3-matplotlib.");
}

}  // namespace sparsefuse::cli
