// sparsefuse: design and evaluate gradient tensor fusion and sparsification
// schemes. Exit status: 0 success, 2 bad input, 1 internal error.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include <boost/program_options/errors.hpp>

#include "common/input_error.h"
#include "tools/cli/commands.h"

namespace {

// Bumped with each release of the result and scenario schemas.
constexpr const char* kVersion = "0.11.0";

constexpr const char* kUsage = R"(usage: sparsefuse COMMAND [ARGS] [--help] | --version

commands:
  simulate SCENARIO.json   simulate one scheme; print a summary, write result.json
  compare SCENARIO.json    simulate several schemes on one scenario, side by side
  sweep SCENARIO.json      run a grid of scenario variants (threads, mpirun, resumable); write results.csv
  run SCENARIO.json        execute the scheme for real: mpirun -np P, CPU kernels, MPI collectives
  validate RESULT.json     simulate a real run's recorded scenario and compare, metric by metric and bucket by bucket
  models                   list built-in model traces
  presets                  list scheme presets and their knobs
  plot RESULTS_DIR         draw figures (PNG, PDF, JSON data) from the result.json files under a directory
  report RESULTS_DIR       write report.md and report.html: tables, ranking in words, figures
  profile-kernels          measure the compression kernels (cpu or cuda); write a cost profile
  profile-collectives      measure the runtime's MPI collectives (mpirun -np P); write a calibrated network table
  calibrate TABLE...       fit latency and bandwidth per size range to nccl-tests / OSU / profile tables
  fidelity                 run the fidelity suite: predicted against published measurements
  profile-model            train a PyTorch model briefly; write a measured trace (per-tensor gradient-ready times)
  train                    train a PyTorch model with a scheme under the runtime (mpirun -np P); write result.json

'sparsefuse COMMAND --help' describes each command.)";

}  // namespace

int main(int argc, char** argv) {
  using namespace sparsefuse::cli;
  const std::map<std::string, int (*)(const Args&)> commands = {
      {"simulate", run_simulate}, {"compare", run_compare}, {"models", run_models}, {"presets", run_presets},
      {"sweep", run_sweep}, {"plot", run_plot}, {"report", run_report}, {"profile-kernels", run_profile_kernels},
      {"run", run_runtime}, {"validate", run_validate}, {"profile-collectives", run_profile_collectives},
      {"calibrate", run_calibrate}, {"fidelity", run_fidelity},
      {"profile-model", run_profile_model}, {"train", run_train}};
  // Line-buffered even when piped, so progress and results interleave in order.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Under `bazel run` the working directory is the runfiles tree; relative
  // paths on the command line mean the caller's directory.
  if (const char* caller = std::getenv("BUILD_WORKING_DIRECTORY"); caller && chdir(caller) != 0) {
    std::cerr << "sparsefuse: error: cannot enter BUILD_WORKING_DIRECTORY " << caller << "\n";
    return 2;
  }
  if (argc >= 2 && std::string(argv[1]) == "--version") {
    std::cout << "sparsefuse " << kVersion << "\n";
    return 0;
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage << "\n";
    return argc < 2 ? 2 : 0;
  }
  auto command = commands.find(argv[1]);
  if (command == commands.end()) {
    std::cerr << "sparsefuse: unknown command \"" << argv[1] << "\"\n" << kUsage << "\n";
    return 2;
  }
  try {
    return command->second(Args(argv + 2, argv + argc));
  } catch (const sparsefuse::InputError& e) {
    std::cerr << "sparsefuse: error: " << e.what() << "\n";
    return 2;
  } catch (const boost::program_options::error& e) {
    std::cerr << "sparsefuse " << argv[1] << ": error: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sparsefuse: internal error: " << e.what() << "\n";
    return 1;
  }
}
