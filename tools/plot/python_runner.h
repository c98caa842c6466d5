// Runs the embedded sparsefuse_plot Python package (figures and reports from
// result.json files) with Debian's python3 and matplotlib.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sparsefuse::plot {

struct EmbeddedFile {
  std::string_view path;  // relative, e.g. "sparsefuse_plot/cli.py"
  std::string_view content;
};

// The package sources, embedded at build time (common/embed_files.py).
const std::vector<EmbeddedFile>& embedded_python_files();

// Throws InputError unless DIR is a directory with a result.json somewhere below it.
void require_results_dir(const std::string& dir);

// The interpreter: $SPARSEFUSE_PYTHON if set, else /usr/bin/python3.
std::string python_interpreter();

// Writes the package to a fresh temporary directory, runs
// `python3 -I -B -c <bootstrap> ARGS` there (ARGS as for sparsefuse_plot's
// main: "plot"|"report", RESULTS_DIR, options), removes the directory and
// returns the exit status: 0 success, 2 bad input (the Python side exited 2),
// 1 anything else (interpreter missing, matplotlib missing, a crash).
int run_plot_python(const std::vector<std::string>& args);

}  // namespace sparsefuse::plot
