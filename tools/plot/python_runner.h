// Runs a Python package embedded in the binary with Debian's python3: the
// plotting package sparsefuse_plot (figures and reports from result.json
// files, matplotlib) and others built the same way (sparsefuse_profile).
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

// An embedded package: NAME.cli.main(argv) is its entry point.
struct EmbeddedPackage {
  std::string_view name;       // e.g. "sparsefuse_plot"
  std::string_view role;       // in messages: "the plotting code"
  std::string_view needs;      // in messages: "python3-matplotlib"
  const std::vector<EmbeddedFile>& (*files)();
};

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

// The same for any embedded package: writes PACKAGE's files to a temporary
// directory and runs `python3 -I -B -c <bootstrap> ARGS` calling
// PACKAGE.name.cli.main(ARGS); the exit status as for run_plot_python.
int run_python_package(const EmbeddedPackage& package, const std::vector<std::string>& args);

}  // namespace sparsefuse::plot
